"""Storage controllers: PersistentVolumeClaims bound to PersistentVolumes.

``volumes`` is kube-controller-manager's persistentvolume-binder (``pkg/controller/volume/
persistentvolume/pv_controller.go``) with dynamic provisioning by the StorageClass and
``WaitForFirstConsumer`` binding; ``volumes_match`` picks the volume for a claim as
``pkg/controller/volume/persistentvolume/index.go`` ``findBestMatchForClaim`` does.

Neighbours: ``controllers.registry``; ``cluster.scheduling`` (the scheduler's VolumeBinding view).
"""
