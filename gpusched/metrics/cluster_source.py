"""GPU samples for every GPU of every node of the gpusched cluster, from the documented model.

What a GPU shows follows from the pods placed on it (``gpu_model`` has the per-pod workload
model and the per-model physics):

- utilization: the sum of its pods' utilization (``cluster.usage``: annotation, load curve or
  workload default; a load-driven pod's current value is used over its whole lifetime for
  energy and temperature, an approximation), capped at 100 (time-sliced pods share the GPU);
  a fractional pod (``gpusched.io/gpu-milli``) contributes util x milli/1000, a MIG instance's pod
  util x its compute slices / the GPU's compute slices (to the parent GPU's power and heat);
- framebuffer used: the sum of its pods' memory, capped at total - reserved; a time-sliced pod's
  default memory is its share of ``total / replicas``;
- power = idle + (TDP - idle) x util (W); temperature moves toward idle + (full - idle) x util
  with a 120 s time constant; energy (mJ) integrates power over the **virtual clock** since the
  node was created. Both are integrated exactly over the pods' lifetimes: running pods (start =
  ``gpusched.io/start-time``) and pods that stopped (``view.stats["ended_pods"]``, recorded by
  the cluster's view), so the energy counter never goes back when a pod is deleted;
- MIG: one sample per instance (``GPU_I_PROFILE``, ``GPU_I_ID`` = the instance's position on its
  GPU, 1-based by start slice) with framebuffer and ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` only;
  the parent GPU keeps temperature, power, energy and clocks but no ``DCGM_FI_DEV_GPU_UTIL``
  (NVML does not report it on MIG-enabled GPUs). Values the model does not produce (PCIe bytes,
  NVLink, vGPU licence, memory temperature on non-HBM parts) are omitted.
- pods on a line: only those dcgm-exporter's pod mapper attributes (``dcgm.PodMapping``:
  ``nvidia.com/gpu``, ``nvidia.com/mig-*`` and its ``--nvidia-resource-names``), with the flags
  read from the cluster's dcgm-exporter DaemonSet (``exporter_mapping``); a renamed
  ``nvidia.com/gpu.shared`` pod still loads the GPU but is not named on its line by default.
- XID: the node annotation ``gpusched.io/gpu-xid: "<gpu>=<code>[,...]"`` injects the last XID
  error of a GPU (for alert drills); otherwise 0.

Neighbours: ``dcgm`` (sample type, rendering); ``cluster.kubelet.device_inputs.node_devices_for``
(the devices of a node); used by ``exposition``, ``cluster_metrics`` and ``cli.monitor``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from gpusched.cluster.kubelet.device_inputs import device_inputs, node_devices_for
from gpusched.cluster.apiserver.store import EPOCH
from gpusched.cluster.usage import Usage
from gpusched.cluster.apiserver.view import View
from gpusched.devices.node import gpu_uuid
from gpusched.metrics import gpu_model as gm
from gpusched.metrics.cluster_source_dra import Carved, dra_holdings
from gpusched.metrics.dcgm import GpuSample, PodMapping, PodRef, mapping_from_container, pci_bus_id
from gpusched.objects.assignment import assignment_of
from gpusched.objects.pod import annotation_seconds
from gpusched.objects.types import ANN_GPU_MILLI, ANN_START_TIME, RESOURCE_GPU_MILLI
from gpusched.objects.digits import is_digits

if TYPE_CHECKING:
    from gpusched.devices.node import Device, NodeDevices

ANN_GPU_XID = "gpusched.io/gpu-xid"
# PCI buses of a DGX A100's eight GPUs; more GPUs continue from 0xC0.
_PCI_BUSES = (0x07, 0x0F, 0x47, 0x4E, 0x87, 0x90, 0xB7, 0xBD)


@dataclass(frozen=True, slots=True)
class Holding:
    """One pod on one device over [start, end) (end None = still running)."""

    pod: PodRef
    uid: str
    gpu: int
    instance: str          # MIG device id, "" for the whole GPU
    start: float
    end: float | None
    util: float            # the pod's own utilization, %
    gpu_share: float       # how much of the physical GPU its util counts for (MIG slices)
    memory_mib: int
    fraction: float = 1.0  # share of the GPU it is billed for (1/replicas, milli/1000, MIG slices)
    priority_class: str = ""
    resource: str = ""     # the device's resource name ("" for gpusched's fractional shares)


@dataclass
class GpuState:
    """One physical GPU now (what ``top`` and the gpusched metrics read)."""

    node: str
    gpu: int
    model: str
    util: float
    fb_used_mib: int
    fb_total_mib: int
    holdings: list[Holding] = field(default_factory=list)     # every pod it had, ended ones too

    @property
    def live(self) -> list[Holding]:
        return [h for h in self.holdings if h.end is None]


def seconds_of(timestamp: str) -> float:
    """RFC 3339 virtual timestamp -> virtual seconds (0 for a missing or foreign value)."""
    try:
        when = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=EPOCH.tzinfo)
    except (TypeError, ValueError):
        return 0.0
    return max(0.0, (when - EPOCH).total_seconds())


def _container(pod: dict[str, Any]) -> str:
    containers = (pod.get("spec") or {}).get("containers") or []
    for container in containers:
        resources = container.get("resources") or {}
        names = {*(resources.get("limits") or {}), *(resources.get("requests") or {})}
        if any(n.startswith("nvidia.com/") or n == ANN_GPU_MILLI for n in names):
            return str(container.get("name", ""))
    return str(containers[0].get("name", "")) if containers else ""


@dataclass(frozen=True, slots=True)
class _Holder:
    """What every holding of one pod shares."""

    ref: PodRef
    uid: str
    start: float
    end: float | None
    util: float
    klass: str


def holdings_of(pod: dict[str, Any], devices: NodeDevices, end: float | None, util: float | None = None) -> list[Holding]:
    """The devices ``pod`` held on its node's ``devices`` (a ``NodeDevices``); ``util`` (%)
    overrides the pod's own model (a running pod's load-driven utilization, ``cluster.usage``).
    A fractional pod's share is read as the kubelet reads it (``objects.assignment.assignment_of``:
    the annotation or the extended resource ``gpusched.io/gpu-milli``)."""
    start = annotation_seconds(pod, ANN_START_TIME)
    held = assignment_of(pod)
    ids = held.device_ids
    if start is None or not ids:
        return []
    holder = _holder(pod, start, end, util)
    total = devices.model.memory_mib if devices.model else 0
    if held.resource == RESOURCE_GPU_MILLI and not any("::" in i or i.startswith("MIG-") for i in ids):
        share = held.milli / 1000
        return [Holding(holder.ref, holder.uid, g, "", holder.start, end, holder.util * share, 1.0,
                        int(gm.pod_memory_mib(pod, total) * share), share, holder.klass)
                for g in held.gpu_indices]
    by_id = {d.device_id: d for d in devices.devices}
    # a device re-advertised away is not attributed any more
    return [_device_holding(pod, devices, by_id[i], holder, total) for i in ids if i in by_id]


def _holder(pod: dict[str, Any], start: float, end: float | None, util: float | None) -> _Holder:
    meta = pod.get("metadata") or {}
    return _Holder(PodRef(meta.get("namespace", "default"), meta.get("name", ""), _container(pod)),
                   meta.get("uid", ""), start, end, gm.pod_util(pod) if util is None else util,
                   str((pod.get("spec") or {}).get("priorityClassName") or ""))


def _device_holding(pod: dict[str, Any], devices: NodeDevices, device: Device, holder: _Holder,
                    total_mib: int) -> Holding:
    """A MIG instance (its slices of the GPU) or a whole / time-sliced GPU (1/replicas)."""
    if device.profile:
        geometry, profile = devices.mig_profile(device.profile)
        slices = profile.compute_slices / geometry.compute_slices
        return Holding(holder.ref, holder.uid, device.gpu_index,
                       device.parent or device.device_id.split("::")[0], holder.start, holder.end,
                       holder.util, slices, gm.pod_memory_mib(pod, profile.memory_mib), slices,
                       holder.klass, device.resource)
    replicas = sum(1 for d in devices.devices if d.parent and d.parent == device.parent) or 1
    return Holding(holder.ref, holder.uid, device.gpu_index, "", holder.start, holder.end,
                   holder.util, 1.0, gm.pod_memory_mib(pod, total_mib // replicas), 1 / replicas,
                   holder.klass, device.resource)


def _gpu_util(holdings: list[Holding], t: float) -> float:
    return min(100.0, sum(h.util * h.gpu_share for h in holdings
                          if h.start <= t and (h.end is None or t < h.end)))


def integrate(physics: gm.Physics, holdings: list[Holding], since: float,
              now: float) -> tuple[float, float]:
    """(energy in mJ, temperature in C) at ``now``, exactly over the piecewise-constant load."""
    times = sorted({since, now, *(h.start for h in holdings if since < h.start < now),
                    *(h.end for h in holdings if h.end is not None and since < h.end < now)})
    energy, temp = 0.0, physics.idle_c
    for a, b in zip(times, times[1:]):
        util = _gpu_util(holdings, a)
        energy += gm.power_w(physics, util) * (b - a) * 1000.0
        steady = gm.steady_temp_c(physics, util)
        temp = steady + (temp - steady) * math.exp(-(b - a) / gm.THERMAL_TIME_CONSTANT_S)
    return energy, temp


class ClusterSource:
    """``GpuSource`` over a cluster ``View``; see the module docstring."""

    def __init__(self, view: View, mapping: PodMapping | None = None, node: str | None = None) -> None:
        self.view = view
        self.now = view.now()
        self.mapping = mapping if mapping is not None else exporter_mapping(view)
        self.node = node            # one node's GPUs only (what its dcgm-exporter pod serves)
        self._states: list[tuple[GpuState, list[GpuSample]]] | None = None

    def _build(self) -> list[tuple[GpuState, list[GpuSample]]]:
        if self._states is not None:
            return self._states
        view, configmaps = self.view, device_inputs(self.view)
        usage = Usage(view)
        by_node: dict[str, list[tuple[dict[str, Any], float | None]]] = defaultdict(list)
        for pod in view.list("Pod"):
            if (pod.get("status") or {}).get("phase") == "Running":
                by_node[pod["spec"].get("nodeName", "")].append((pod, None))
        for record in view.stats.get("ended_pods", []):
            by_node[record["spec"].get("nodeName", "")].append((record, float(record["end"])))
        out = []
        for node in view.list("Node"):
            if self.node is not None and node["metadata"]["name"] != self.node:
                continue
            devices = node_devices_for(node, configmaps)
            if devices is None or not devices.gpu_count:
                continue
            carved: Carved = {}
            holdings = [h for pod, end in by_node.get(node["metadata"]["name"], [])
                        for h in self._holdings(pod, devices, end, usage, carved)]
            out += self._node(node, devices, holdings, carved)
        self._states = out
        return out

    def _holdings(self, pod: dict[str, Any], devices: NodeDevices, end: float | None,
                  usage: Usage, carved: Carved) -> list[Holding]:
        """The device plugin's holdings of ``pod``, else those of its prepared DRA claims."""
        util = None if end is not None else usage.activity(pod) * 100
        found = holdings_of(pod, devices, end, util)
        start = annotation_seconds(pod, ANN_START_TIME)
        if found or end is not None or start is None:
            return found
        return dra_holdings(self.view, pod, devices, _holder(pod, start, end, util), carved, Holding)

    def _node(self, node: dict[str, Any], devices: NodeDevices, holdings: list[Holding],
              carved: Carved | None = None) -> list[tuple[GpuState, list[GpuSample]]]:
        name, model = node["metadata"]["name"], devices.gpu_model
        physics = gm.physics_of(model.name)
        since = seconds_of(node["metadata"].get("creationTimestamp", ""))
        xids = _xids(node)
        out = []
        for index in range(devices.gpu_count):
            mine = [h for h in holdings if h.gpu == index]
            live = [h for h in mine if h.end is None]
            energy, temp = integrate(physics, mine, since, self.now)
            util = _gpu_util(live, self.now)
            total, reserved = model.memory_mib, gm.reserved_mib(model.memory_mib)
            used = min(total - reserved, sum(h.memory_mib for h in live))
            state = GpuState(name, index, model.name, util, used, total, mine)
            bus = _PCI_BUSES[index] if index < len(_PCI_BUSES) else 0xC0 + index
            base = dict(gpu=index, uuid=gpu_uuid(name, index), model_name=physics.nvml_name,
                        pci_bus_id=pci_bus_id(0, bus), hostname=name,
                        driver_version=gm.DRIVER_VERSION)
            values: dict[str, float] = {
                "DCGM_FI_DEV_SM_CLOCK": physics.sm_clock_mhz if util > 0 else gm.IDLE_SM_CLOCK_MHZ,
                "DCGM_FI_DEV_MEM_CLOCK": physics.mem_clock_mhz,
                "DCGM_FI_DEV_GPU_TEMP": round(temp),
                "DCGM_FI_DEV_POWER_USAGE": gm.power_w(physics, util),
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": round(energy),
                "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 0,
                "DCGM_FI_DEV_ENC_UTIL": 0, "DCGM_FI_DEV_DEC_UTIL": 0,
                "DCGM_FI_DEV_XID_ERRORS": xids.get(index, 0),
                "DCGM_FI_DEV_FB_FREE": total - reserved - used,
                "DCGM_FI_DEV_FB_USED": used, "DCGM_FI_DEV_FB_RESERVED": reserved}
            if physics.hbm:
                values["DCGM_FI_DEV_MEMORY_TEMP"] = round(temp) + gm.HBM_TEMP_OFFSET_C
            samples = []
            if devices.mig_enabled(index) or (carved or {}).get(index):
                samples.append(GpuSample(**base, values=values))
                samples += self._instances(devices, index, live, base, (carved or {}).get(index))
            else:
                values.update({"DCGM_FI_DEV_GPU_UTIL": round(util),
                               "DCGM_FI_DEV_MEM_COPY_UTIL": round(util * 0.4),
                               "DCGM_FI_PROF_GR_ENGINE_ACTIVE": util / 100,
                               "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": util / 200,
                               "DCGM_FI_PROF_DRAM_ACTIVE": util * 0.4 / 100})
                samples.append(GpuSample(**base, values=values, pods=self._pods(live, mig=False)))
            out.append((state, samples))
        return out

    def _instances(self, devices: NodeDevices, index: int, live: list[Holding], base: dict[str, Any],
                   carved: set[tuple[int, str, str]] | None = None) -> list[GpuSample]:
        """One line per MIG instance: mig-manager's, and the DynamicMIG ones carved for claims."""
        instances = sorted({(d.start, d.parent or d.device_id.split("::")[0], d.profile)
                            for d in devices.devices if d.gpu_index == index and d.profile}
                           | (carved or set()))
        samples = []
        for position, (_start, instance_id, profile_name) in enumerate(instances, start=1):
            _, profile = devices.mig_profile(profile_name)
            mine = [h for h in live if h.instance == instance_id]
            util = min(100.0, sum(h.util for h in mine))
            used = min(profile.memory_mib, sum(h.memory_mib for h in mine))
            pods = self._pods(mine, mig=True)
            samples.append(GpuSample(
                **base, gpu_instance_profile=profile.name, gpu_instance_id=str(position),
                pods=pods, values={"DCGM_FI_DEV_FB_USED": used,
                                   "DCGM_FI_DEV_FB_FREE": profile.memory_mib - used,
                                   "DCGM_FI_PROF_GR_ENGINE_ACTIVE": util / 100}))
        return samples

    def _pods(self, holdings: list[Holding], mig: bool) -> tuple[PodRef, ...]:
        """The pods dcgm-exporter's pod mapper names on a line (``dcgm.PodMapping``);
        gpusched's fractional shares (no device-plugin resource) are always named."""
        mapped = {h.pod for h in holdings if not h.resource or self.mapping.maps(h.resource, mig)}
        return tuple(sorted(mapped, key=lambda p: (p.namespace, p.pod)))

    def samples(self) -> list[GpuSample]:
        return [s for _, samples in self._build() for s in samples]

    def gpus(self) -> list[GpuState]:
        return [state for state, _ in self._build()]


def exporter_mapping(view: View) -> PodMapping:
    """The pod mapping of the cluster's dcgm-exporter: the first DaemonSet (by namespace, name)
    with a container whose image or name contains ``dcgm-exporter`` - its args and env, as
    ``dcgm.mapping_from_container`` reads them; none: dcgm-exporter's defaults."""
    for ds in sorted(view.list("DaemonSet"), key=lambda d: (d["metadata"].get("namespace", ""),
                                                              d["metadata"].get("name", ""))):
        container = _exporter_container(ds)
        if container is not None:
            args = [*(container.get("command") or ()), *(container.get("args") or ())]
            env = {str(e.get("name")): str(e.get("value") or "")
                   for e in container.get("env") or () if isinstance(e, dict)}
            return mapping_from_container([str(a) for a in args], env)
    return PodMapping()


def _exporter_container(ds: dict[str, Any]) -> dict[str, Any] | None:
    """The DaemonSet's first container whose image or name contains ``dcgm-exporter``."""
    spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    for container in spec.get("containers") or ():
        if isinstance(container, dict) and \
                "dcgm-exporter" in f'{container.get("image", "")} {container.get("name", "")}':
            return container
    return None


def _xids(node: dict[str, Any]) -> dict[int, int]:
    raw = ((node.get("metadata") or {}).get("annotations") or {}).get(ANN_GPU_XID, "")
    out = {}
    for item in raw.split(","):
        gpu, _, code = item.partition("=")
        if is_digits(gpu.strip()) and is_digits(code.strip()):
            out[int(gpu)] = int(code)
    return out
