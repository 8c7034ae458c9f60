"""What a container sees of the GPUs and MIG devices its prepared DRA claims hand it.

NVIDIA's DRA driver injects one CDI device per allocated device of the claim requests a
container lists (``cluster.kubelet.dra_prepare``): a whole GPU appears as that GPU, a MIG device
(static, or carved under DynamicMIG) as a MIG-enabled GPU showing only that instance, the way
``nvidia-smi`` shows a MIG device inside a container. ``NVIDIA_VISIBLE_DEVICES`` lists the GPU
or MIG UUIDs in the order of the container's GPUs. GPU instance ids are the instances'
positions by start slice among the MIG devices the container holds on that GPU (the driver
creates them; NVML's numbering is not modelled).

Neighbours: ``metrics.container`` (the views and the rendering; calls ``dra_view_parts``),
``cluster.kubelet.dra_prepare``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable

from gpusched.metrics import gpu_model as gm

if TYPE_CHECKING:
    from gpusched.cluster.kubelet.dra_prepare import PreparedDevice
    from gpusched.metrics.container import GpuView, MigView, Process

GpuViewOf = Callable[[Any, int, int, list[Any]], "tuple[GpuView, list[Process]]"]
ProcessOf = Callable[[Any, int, str, int], "Process"]


def dra_view_parts(scene: Any, prepared: list[PreparedDevice], gpu_view: GpuViewOf, process_of: ProcessOf,
                   mig_view: type[MigView]) -> tuple[list[GpuView], list[Process], list[str]]:
    """The container's GPUs (renumbered from 0 by host index), processes and visible UUIDs;
    ``gpu_view`` is ``metrics.container``'s builder of one GPU's view (``scene`` its
    ``_Scene``), ``process_of(scene, gpu, gi, used_mib)`` its process row, ``mig_view`` its MIG
    view type (passed in: this module does not import ``metrics.container``, which imports it)."""
    model = scene.devices.gpu_model
    gpus: list[GpuView] = []
    processes: list[Process] = []
    visible: list[str] = []
    for index, host in enumerate(sorted({d.gpu_index for d in prepared})):
        mine = sorted((d for d in prepared if d.gpu_index == host), key=lambda d: d.start)
        gpu, own = gpu_view(scene, index, host, [])
        migs = [_mig_view(scene, d, position, model, mig_view) for position, d in
                enumerate((d for d in mine if d.mig), start=1)]
        if not migs:
            gpus.append(gpu)
            processes.extend(own)
            visible.append(gpu.uuid)
            continue
        gpus.append(replace(gpu, mig=tuple(migs), util=None, mig_capable=True))
        processes.extend(process_of(scene, index, str(m.gi), m.used_mib) for m in migs)
        visible.extend(m.uuid for m in migs)
    return gpus, processes, visible


def _mig_view(scene: Any, device: PreparedDevice, position: int, model: Any, mig_view: type[MigView]
              ) -> MigView:
    profile = model.mig.find(device.profile(model))
    used = gm.pod_memory_mib(scene.pod, profile.memory_mib)
    return mig_view(position, position - 1, profile.name, device.uuid(model), profile.memory_mib,
                   min(used, profile.memory_mib), profile.sms, profile.memory_slices,
                   (profile.copy_engines, profile.encoders, profile.decoders, profile.ofa,
                    profile.jpeg))
