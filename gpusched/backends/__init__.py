"""gpusched.backends: the scheduler driving a real Kubernetes cluster instead of the embedded one.

``gpusched scheduler --kubeconfig ...`` runs gpusched's scheduler as a secondary scheduler of a
cluster through the official ``kubernetes`` client: ``kube`` watches the API, binds through the
``binding`` subresource after writing the device-assignment annotations, and records events;
``secondary`` keeps the cluster's nodes, pods and device-plugin ConfigMaps as a scheduler snapshot.
The scheduler itself is the same code the embedded cluster runs (no mode switch).

Neighbours: ``scheduler`` (runner, snapshot), ``objects`` (pod_info, assignment); driven by
``cli.scheduler_cmd``.
"""
