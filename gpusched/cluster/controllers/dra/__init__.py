"""DRA controllers: what kube-controller-manager and the DRA drivers keep for
``resource.k8s.io``.

- ``claims``: kube-controller-manager's resourceclaim controller (``pkg/controller/
  resourceclaim``): ResourceClaims from templates per pod, ``status.resourceClaimStatuses``,
  stale reservations released;
- ``slices``: NVIDIA's DRA driver (``gpu-kubelet-plugin``) publishing each DRA-managed node's
  GPUs as ResourceSlices, and the driver's DeviceClasses.

Neighbours: ``controllers.registry`` (order, work-queue keys); the DynamicResources scheduler
plugin allocates and reserves the claims; ``devices.dra_slices`` shapes the slices.
"""
