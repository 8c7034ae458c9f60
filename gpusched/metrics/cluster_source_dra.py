"""DCGM attribution of the GPUs and MIG devices pods hold through DRA claims.

A pod on a node whose GPUs NVIDIA's DRA driver publishes holds no device-plugin devices; its
devices are those of its prepared claims (``cluster.kubelet.dra_prepare``). Each becomes a
``cluster_source.Holding``: a whole GPU counts in full (time-sliced or MPS sharers add up,
capped at 100 % as for the device plugin's replicas), a MIG device for its compute slices of
the parent GPU. A DynamicMIG device the driver carved for a claim is a MIG instance of its GPU
while it is held: the GPU's line loses ``DCGM_FI_DEV_GPU_UTIL`` and gets one line per instance
(``GPU_I_PROFILE``, ``GPU_I_ID`` by start slice), as for mig-manager's instances. Pods are named
on those lines whatever dcgm-exporter's resource filter says (its pod mapper reads the kubelet's
pod-resources API, which lists DRA devices apart from device-plugin resources). A pod that ended
is no longer attributed (its claims are released with it).

Neighbours: ``metrics.cluster_source`` (calls ``dra_holdings``), ``cluster.kubelet.dra_prepare``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpusched.cluster.kubelet.dra_prepare import prepared_devices
from gpusched.metrics import gpu_model as gm

if TYPE_CHECKING:
    from gpusched.cluster.apiserver.view import View
    from gpusched.devices.node import NodeDevices
    from gpusched.metrics.cluster_source import Holding

Carved = dict[int, set[tuple[int, str, str]]]    # GPU -> {(start, MIG UUID, profile)}


def dra_holdings(view: View, pod: dict[str, Any], devices: NodeDevices, holder: Any,
                 carved: Carved, holding: type[Holding]) -> list[Holding]:
    """The holdings of ``pod``'s prepared NVIDIA devices on its node (``holder``: the
    ``cluster_source._Holder`` of the pod, ``holding`` its Holding type, passed in: this module
    does not import ``cluster_source``, which imports it); DynamicMIG instances not among
    ``devices`` are added to ``carved``."""
    model = devices.gpu_model
    known = {d.device_id for d in devices.devices}
    out = []
    for device in prepared_devices(view, pod):
        if device.gpu_index >= devices.gpu_count:
            continue
        if not device.mig:
            out.append(holding(holder.ref, holder.uid, device.gpu_index, "", holder.start,
                               holder.end, holder.util, 1.0,
                               gm.pod_memory_mib(pod, model.memory_mib), 1.0, holder.klass))
            continue
        name, uuid = device.profile(model), device.uuid(model)
        profile = model.mig.find(name) if model.mig is not None else None
        if profile is None or model.mig is None:
            continue
        if uuid not in known:
            carved.setdefault(device.gpu_index, set()).add((device.start, uuid, name))
        share = profile.compute_slices / model.mig.compute_slices
        out.append(holding(holder.ref, holder.uid, device.gpu_index, uuid, holder.start,
                           holder.end, holder.util, share,
                           gm.pod_memory_mib(pod, profile.memory_mib), share, holder.klass))
    return out
