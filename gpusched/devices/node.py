"""``NodeDevices``: the physical GPU devices of one node, what the device plugin advertises for
them, and which pod holds which device.

Devices, by how the device plugin exposes a GPU (nvidia-gpu-stack.md 1.3-1.5):

- whole GPU ``GPU-<uuid>`` as ``nvidia.com/gpu``;
- a shared (time-slicing / MPS) device with k replicas ``<id>::0 .. <id>::k-1`` under the
  resource's name or its ``.shared`` rename;
- a MIG instance ``MIG-<uuid>`` as ``nvidia.com/gpu`` (single) or ``nvidia.com/mig-<profile>``
  (mixed); under strategy ``none`` a MIG-enabled GPU is advertised as one whole GPU.

UUIDs are deterministic: ``GPU-`` + uuid5 of the node name and GPU index (MIG: + start/profile).

Fractional pods (``PodInfo.gpu_milli`` > 0, the FGD/Alibaba-trace model) take a milli-GPU share
of a *plain whole* GPU: never of a MIG-enabled GPU, never of a GPU shared by time-slicing or MPS
(its capacity is already expressed as replicas), never of a GPU held whole. ``free_milli()`` is
0 for those GPUs. A GPU with any fractional holder cannot be taken whole.

Allocation (``allocate``, pure; ``hold`` applies it):

- whole GPUs: inside one NVLink domain when one has room, the tightest, else the lowest free
  indices (binpack and spread alike; ``devices.interconnect``);
- replicas: the device plugin's ``sharedDevicesAllocationPolicy``: ``distributed`` (default)
  prefers the GPU with the fewest replicas held, ties to the GPU chosen least often in this
  request, then lowest index; ``packed`` prefers the GPU with the most replicas held (this
  request's picks included), then lowest index; within a GPU the lowest free replica;
- MIG: a free instance of the requested profile; ``binpack`` prefers the GPU with the most MIG
  instances held, ``spread`` the fewest; ties lowest GPU index, then lowest start;
- fractional: best fit, the GPU with the least free milli that still fits; ties lowest index.

Neighbours: built by ``devices.advertise`` (and tests, the sim) from ``devices.catalog``,
``devices.mig`` and ``devices.plugin_config``; the scheduler's snapshot keeps one per node.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np

from gpusched.devices.catalog import GpuModel
from gpusched.devices.interconnect import interconnect_of, pick_whole_gpus
from gpusched.devices.mig import mig_resource_name, place, single_strategy_problem
from gpusched.devices.mig_profiles import MigGeometry, MigProfile
from gpusched.devices.plugin_config import (DEFAULT_CONFIG, DevicePluginConfig,
                                            DevicePluginConfigError, check_for_node)
from gpusched.errors import UsageError
from gpusched.objects.assignment import device_requests
from gpusched.objects.types import NO_DEVICES, RESOURCE_GPU_MILLI, DeviceAssignment, PodInfo
from gpusched.objects.uids import namespace_bytes, uuid5

GPU_RESOURCE = "nvidia.com/gpu"
_UUID_NAMESPACE = namespace_bytes("6f1c3a52-2d0e-4c8b-9a57-4b0a1c9e7d10")


@functools.lru_cache(maxsize=65_536)
def gpu_uuid(node_name: str, index: int) -> str:
    """A GPU's stable UUID (uuid5 of node and index); memoized: every re-advertisement of a node
    (a device-plugin pass, a scheduler snapshot) asks for the same ones again."""
    return "GPU-" + uuid5(_UUID_NAMESPACE, f"{node_name}/gpu/{index}")


def mig_uuid(node_name: str, index: int, profile: str, start: int) -> str:
    return "MIG-" + uuid5(_UUID_NAMESPACE, f"{node_name}/gpu/{index}/mig/{start}/{profile}")


@dataclass(frozen=True, slots=True)
class Device:
    """One device the plugin registers with the kubelet."""

    device_id: str       # GPU-<uuid>, MIG-<uuid>, or either with a ::<k> replica suffix
    gpu_index: int
    resource: str        # the advertised resource name
    profile: str = ""    # MIG profile, "" for a whole GPU
    start: int = -1      # MIG start slice
    replica: int = -1    # replica index, -1 when not shared
    parent: str = ""     # the physical device (GPU or MIG UUID) behind a replica

    @property
    def whole_gpu(self) -> bool:
        return not self.profile and self.replica < 0


@dataclass(frozen=True, slots=True)
class DeviceRow:
    """One line of ``describe node``'s per-GPU assignment table."""

    gpu_index: int
    device_id: str
    resource: str
    profile: str
    replica: int
    holder: str          # pod uid, "" when free
    milli: int           # 1000 for a whole GPU held, the share for fractional holders, else 0


@dataclass(slots=True, eq=False, repr=False)
class NodeDevices:
    """The devices of one node and their holders; see the module docstring.

    Built by ``build``; the fields after ``devices`` are indexes over it and the holder state
    (identity equality, as a mutable holder table)."""

    node_name: str
    model: GpuModel | None
    gpu_count: int
    config: DevicePluginConfig
    mig_strategy: str
    mig_layout: list[list[str] | None]
    devices: tuple[Device, ...]
    _by_id: dict[str, Device]
    _by_resource: dict[str, tuple[Device, ...]]
    _mig_enabled: tuple[bool, ...]
    _shared_gpu: tuple[bool, ...]
    _gpu_ids: tuple[str, ...]
    _holder: dict[str, str] = field(default_factory=dict)               # device id -> pod uid
    _held: dict[str, DeviceAssignment] = field(default_factory=dict)    # pod uid -> assignment
    _frac: list[dict[str, int]] = field(default_factory=list)           # per GPU: pod uid -> milli
    # mig-manager holds a layout change (state pending) with the device plugin paused
    # (``nvidia.com/gpu.deploy.device-plugin=paused-for-mig-change``): held devices stay held,
    # nothing new is allocated, so no new pod takes a device the change waits on
    paused: bool = False

    # ---- construction -----------------------------------------------------------------------

    @classmethod
    def build(cls, node_name: str, model: GpuModel | None, gpu_count: int,
              config: DevicePluginConfig | None = None,
              mig_layout: list[list[str] | None] | None = None,
              mig_strategy: str | None = None) -> "NodeDevices":
        """Devices of a node; ``mig_layout`` per GPU (None entry = MIG disabled, see devices.mig).

        ``mig_strategy`` applies when the config does not set ``flags.migStrategy``.
        Raises ``DevicePluginConfigError`` where the device plugin would refuse to start.
        """
        config = config or DEFAULT_CONFIG
        strategy = config.mig_strategy or mig_strategy or "none"
        if model is None:
            gpu_count = 0
        layout = _checked_layout(node_name, model, gpu_count, config, mig_layout, strategy)
        mig_enabled = tuple(entry is not None for entry in layout)
        devices, shared_gpu = _node_devices(node_name, model, config, layout, strategy)
        by_resource: dict[str, list[Device]] = {}
        for device in devices:
            by_resource.setdefault(device.resource, []).append(device)
        return cls(node_name, model, gpu_count, config, strategy,
                   [None if e is None else list(e) for e in layout], tuple(devices),
                   {d.device_id: d for d in devices}, {r: tuple(ds) for r, ds in by_resource.items()},
                   mig_enabled, tuple(shared_gpu), tuple(gpu_uuid(node_name, i) for i in range(gpu_count)),
                   _frac=[{} for _ in range(gpu_count)])

    def clone(self) -> "NodeDevices":
        """A copy whose holder state is its own (the device tables are shared, never mutated)."""
        return replace(self, _holder=dict(self._holder), _held=dict(self._held),
                       _frac=[dict(f) for f in self._frac])

    # ---- what the plugin advertises ----------------------------------------------------------

    @property
    def advertised(self) -> dict[str, int]:
        """Extended resource -> count the device plugin registers (sorted by name)."""
        return {resource: len(found) for resource, found in sorted(self._by_resource.items())}

    def allocated(self) -> dict[str, int]:
        """Resource -> devices held (fractional holders count under ``gpusched.io/gpu-milli``)."""
        counts = Counter(self._by_id[i].resource for i in self._holder)
        milli = sum(sum(f.values()) for f in self._frac)
        if milli:
            counts[RESOURCE_GPU_MILLI] = milli
        return dict(sorted(counts.items()))

    @property
    def gpu_model(self) -> GpuModel:
        """``model`` where the caller has GPUs in hand (a node without a model has none)."""
        if self.model is None:
            raise UsageError(f"node {self.node_name} has no GPU model")
        return self.model

    def mig_profile(self, profile: str) -> tuple[MigGeometry, MigProfile]:
        """The MIG geometry and the profile of one of this node's MIG devices (``build`` placed
        them, so both exist for every device it made)."""
        geometry = self.gpu_model.mig
        found = geometry.find(profile) if geometry is not None else None
        if geometry is None or found is None:
            raise UsageError(f"node {self.node_name}: GPU model {self.gpu_model.name} has no MIG profile {profile}")
        return geometry, found

    def mig_enabled(self, gpu_index: int) -> bool:
        return self._mig_enabled[gpu_index]

    def free_milli(self) -> np.ndarray:
        """Per physical GPU: 1000 minus fractional shares; 0 if held whole, MIG or shared, and
        on a paused node (nothing new is allocated there)."""
        return self._unpaused_free_milli() * (not self.paused)

    def _unpaused_free_milli(self) -> np.ndarray:
        out = np.zeros(self.gpu_count, dtype=np.int32)
        for index in range(self.gpu_count):
            if self._fraction_capable(index) and not self._whole_held(index):
                out[index] = 1000 - sum(self._frac[index].values())
        return out

    def _fraction_capable(self, index: int) -> bool:
        return not self._mig_enabled[index] and not self._shared_gpu[index]

    def _whole_held(self, index: int) -> bool:
        return self._gpu_ids[index] in self._holder

    # ---- fitting and allocating --------------------------------------------------------------

    def fits(self, pod: PodInfo) -> str | None:
        """None if the node's devices can serve ``pod`` now, else the reason.

        The reason is kube-scheduler style: ``Insufficient <resource>`` for the first requested
        device resource (sorted by name) that is short; fractional pods report
        ``Insufficient nvidia.com/gpu``. Note: a *fit* is ``None`` (falsy).
        """
        if pod.gpu_milli > 0:
            return None if self._pick_fractional(pod.gpu_count or 1, pod.gpu_milli) else \
                f"Insufficient {GPU_RESOURCE}"
        if self.paused and device_requests(pod):
            return f"Insufficient {next(iter(device_requests(pod)))}"
        taken: set[str] = set()
        for resource, count in device_requests(pod).items():
            picked = self._pick(resource, count, "binpack", taken)
            if picked is None:
                return f"Insufficient {resource}"
            taken.update(picked)
        return None

    def allocate(self, pod: PodInfo, policy: str = "binpack",
                 gpus: tuple[int, ...] | None = None) -> DeviceAssignment | None:
        """The devices ``pod`` would get (does not mutate); None if it does not fit.

        ``gpus`` (the score plugins' choice, e.g. FGD's) restricts the candidates to those GPU
        indices; for whole-GPU and fractional pods exactly those GPUs are used.
        """
        if policy not in ("binpack", "spread"):
            raise UsageError(f'unknown device allocation policy "{policy}" (binpack or spread)')
        allowed = None if gpus is None else frozenset(int(g) for g in gpus)
        requests = device_requests(pod)
        if self.paused and (pod.gpu_milli > 0 or requests):
            return None
        if pod.gpu_milli > 0:
            return self._allocate_share(pod, allowed)
        if not requests:
            return NO_DEVICES
        taken: list[str] = []
        for resource, count in requests.items():
            picked = self._pick(resource, count, policy, set(taken), allowed)
            if picked is None:
                return None
            taken.extend(picked)
        chosen = [self._by_id[i] for i in taken]
        whole = all(d.whole_gpu for d in chosen)
        return DeviceAssignment(",".join(requests), tuple(taken),
                                tuple(sorted({d.gpu_index for d in chosen})), 1000 if whole else 0)

    def _allocate_share(self, pod: PodInfo, allowed: frozenset[int] | None) -> DeviceAssignment | None:
        indices = self._pick_fractional(pod.gpu_count or 1, pod.gpu_milli, allowed)
        if indices is None:
            return None
        return DeviceAssignment(RESOURCE_GPU_MILLI, tuple(self._gpu_ids[i] for i in indices),
                                tuple(indices), pod.gpu_milli)

    def _free(self, resource: str, taken: set[str], allowed: frozenset[int] | None) -> list[Device]:
        return [d for d in self._by_resource.get(resource, ())
                if d.device_id not in self._holder and d.device_id not in taken
                and not (d.whole_gpu and self._frac[d.gpu_index])
                and (allowed is None or d.gpu_index in allowed)]

    def _pick(self, resource: str, count: int, policy: str, taken: set[str],
              allowed: frozenset[int] | None = None) -> list[str] | None:
        free = self._free(resource, taken, allowed)
        if len(free) < count:
            return None
        if allowed is not None and free[0].whole_gpu and len(free) != count:
            return None     # a whole-GPU choice names exactly the GPUs to use
        if free[0].replica >= 0:
            return self._pick_replicas(resource, free, count)
        if free[0].profile:
            return self._pick_mig(free, count, policy)
        if allowed is not None or self.model is None:
            return [d.device_id for d in free[:count]]
        by_index = {d.gpu_index: d.device_id for d in free}
        chosen = pick_whole_gpus(interconnect_of(self.model.name), self.gpu_count, list(by_index), count)
        return [by_index[i] for i in chosen]

    def _pick_replicas(self, resource: str, free: list[Device], count: int) -> list[str]:
        held = Counter(d.parent for d in self._by_resource[resource] if d.device_id in self._holder)
        order = {d.parent: n for n, d in reversed(list(enumerate(self._by_resource[resource])))}
        packed = self.config.allocation_policy == "packed"
        chosen: list[str] = []
        picked_here: Counter[str] = Counter()
        available = list(free)
        for _ in range(count):
            parents = {d.parent for d in available}
            if packed:
                parent = min(parents, key=lambda p: (-(held[p] + picked_here[p]), order[p]))
            else:
                parent = min(parents, key=lambda p: (held[p], picked_here[p], order[p]))
            device = next(d for d in available if d.parent == parent)
            available.remove(device)
            chosen.append(device.device_id)
            picked_here[parent] += 1
        return chosen

    def _pick_mig(self, free: list[Device], count: int, policy: str) -> list[str]:
        used = Counter(self._by_id[i].gpu_index for i in self._holder if self._by_id[i].profile)
        available = sorted(free, key=lambda d: (d.gpu_index, d.start))
        chosen = []
        for _ in range(count):
            sign = -1 if policy == "binpack" else 1
            device = min(available, key=lambda d: (sign * used[d.gpu_index], d.gpu_index, d.start))
            available.remove(device)
            used[device.gpu_index] += 1
            chosen.append(device.device_id)
        return chosen

    def _pick_fractional(self, count: int, milli: int,
                         allowed: frozenset[int] | None = None) -> list[int] | None:
        free = self.free_milli()
        candidates = sorted((int(free[i]), i) for i in range(self.gpu_count)
                            if self._whole_device(i) and free[i] >= milli
                            and (allowed is None or i in allowed))
        if len(candidates) < count or (allowed is not None and len(allowed) != count):
            return None
        return sorted(i for _, i in candidates[:count])

    def _whole_device(self, index: int) -> bool:
        return self._fraction_capable(index) and self._gpu_ids[index] in self._by_id

    # ---- holding -----------------------------------------------------------------------------

    def hold(self, uid: str, assignment: DeviceAssignment) -> None:
        """Record that pod ``uid`` holds ``assignment`` (idempotent for the same assignment)."""
        if uid in self._held:
            if self._held[uid] == assignment:
                return
            raise UsageError(f"pod {uid} already holds devices on node {self.node_name}")
        if assignment.empty:
            return
        if assignment.resource == RESOURCE_GPU_MILLI:
            self._hold_fractional(uid, assignment)
        else:
            for device_id in assignment.device_ids:
                device = self._by_id.get(device_id)
                if device is None:
                    raise UsageError(f"node {self.node_name}: invalid request: unknown device: {device_id}")
                if device_id in self._holder:
                    raise UsageError(f"node {self.node_name}: device {device_id} is already held "
                                     f"by pod {self._holder[device_id]}")
                if device.whole_gpu and self._frac[device.gpu_index]:
                    raise UsageError(f"node {self.node_name}: GPU {device.gpu_index} is shared by "
                                     f"fractional pods and cannot be held whole")
            for device_id in assignment.device_ids:
                self._holder[device_id] = uid
        self._held[uid] = assignment

    def _hold_fractional(self, uid: str, assignment: DeviceAssignment) -> None:
        free = self._unpaused_free_milli()
        for index in assignment.gpu_indices:
            if not 0 <= index < self.gpu_count or not self._whole_device(index):
                raise UsageError(f"node {self.node_name}: GPU {index} cannot take a fractional share")
            if free[index] < assignment.milli:
                raise UsageError(f"node {self.node_name}: GPU {index} has {int(free[index])} "
                                 f"milli-GPU free, {assignment.milli} requested")
        for index in assignment.gpu_indices:
            self._frac[index][uid] = assignment.milli

    def release(self, uid: str) -> DeviceAssignment | None:
        """Free what pod ``uid`` holds; returns that assignment (None if it held nothing)."""
        assignment = self._held.pop(uid, None)
        if assignment is None:
            return None
        for device_id in assignment.device_ids:
            if self._holder.get(device_id) == uid:
                del self._holder[device_id]
        for shares in self._frac:
            shares.pop(uid, None)
        return assignment

    def holder_of(self, device_id: str) -> str | None:
        return self._holder.get(device_id)

    def assignment_of(self, uid: str) -> DeviceAssignment | None:
        return self._held.get(uid)

    @property
    def holders(self) -> tuple[str, ...]:
        return tuple(sorted(self._held))

    def fractional_holders(self, gpu_index: int) -> dict[str, int]:
        return dict(sorted(self._frac[gpu_index].items()))

    # ---- describe and kubelet admission ------------------------------------------------------

    def rows(self) -> list[DeviceRow]:
        """Every device and fractional share with its holder, by GPU index then device order."""
        rows = []
        for index in range(self.gpu_count):
            for device in (d for d in self.devices if d.gpu_index == index):
                holder = self._holder.get(device.device_id, "")
                milli = 1000 if holder and device.whole_gpu else 0
                rows.append(DeviceRow(index, device.device_id, device.resource, device.profile,
                                      device.replica, holder, milli))
            for uid, milli in sorted(self._frac[index].items()):
                rows.append(DeviceRow(index, self._gpu_ids[index], RESOURCE_GPU_MILLI,
                                      "", -1, uid, milli))
        return rows

    def fail_requests_greater_than_one(self, pod: PodInfo) -> str | None:
        """The kubelet's UnexpectedAdmissionError message when ``pod`` asks for >1 replica of a
        shared resource and ``failRequestsGreaterThanOne`` is on (checked at Allocate, after
        scheduling); None otherwise."""
        if not self.config.fail_requests_greater_than_one:
            return None
        for resource, count in device_requests(pod).items():
            shared = any(d.replica >= 0 for d in self._by_resource.get(resource, ()))
            if shared and count > 1:
                return ("Allocate failed due to rpc error: code = Unknown desc = invalid allocation "
                        f'request for "{resource}": invalid request: maximum request size for '
                        f"shared resources is 1; found {count}, which is unexpected")
        return None


def _physical_units(node_name: str, model: GpuModel | None, index: int,
                    profiles: list[str] | None, strategy: str) -> list[tuple[str, str, str, int]]:
    """(device id, un-renamed resource, profile, start) of the physical devices of one GPU."""
    if profiles is None or strategy == "none" or model is None:
        return [(gpu_uuid(node_name, index), GPU_RESOURCE, "", -1)]
    placed = sorted(place(model, profiles), key=lambda ps: ps[1])
    return [(mig_uuid(node_name, index, profile, start),
             GPU_RESOURCE if strategy == "single" else mig_resource_name(profile), profile, start)
            for profile, start in placed]


def _checked_layout(node_name: str, model: GpuModel | None, gpu_count: int, config: DevicePluginConfig,
                    mig_layout: list[list[str] | None] | None, strategy: str) -> list[list[str] | None]:
    """The per-GPU MIG layout (all disabled by default) once the node and the device plugin accept
    it: one entry per GPU, MIG only on a MIG model, the ``single`` strategy's rule, the config's
    checks for this GPU."""
    layout: list[list[str] | None] = list(mig_layout) if mig_layout is not None else [None] * gpu_count
    if len(layout) != gpu_count:
        raise UsageError(f"node {node_name}: MIG layout lists {len(layout)} GPUs, "
                         f"the node has {gpu_count}")
    any_mig = any(entry is not None for entry in layout)
    if any_mig and (model is None or model.mig is None):
        raise UsageError(f"node {node_name}: GPU model "
                         f"{model.name if model else '(none)'} does not support MIG")
    if strategy == "single":
        problem = single_strategy_problem(layout)
        if problem:
            raise DevicePluginConfigError(f"invalid MIG configuration: {problem}")
    if model is not None:
        check_for_node(config, model.compute_capability, any_mig and strategy != "none")
    return layout


def _node_devices(node_name: str, model: GpuModel | None, config: DevicePluginConfig,
                  layout: list[list[str] | None], strategy: str) -> tuple[list[Device], list[bool]]:
    """Every device the plugin registers (replicas expanded), in GPU order, and per GPU whether a
    whole-GPU unit of it is shared by replicas."""
    devices: list[Device] = []
    shared_gpu: list[bool] = []
    for index, entry in enumerate(layout):
        units = _physical_units(node_name, model, index, entry, strategy)
        shared_gpu.append(any(not p and config.replicated(r) for _, r, p, _ in units))
        for device_id, resource, profile, start in units:
            replicated = config.replicated(resource)
            if replicated is None:
                devices.append(Device(device_id, index, resource, profile, start))
                continue
            devices.extend(Device(f"{device_id}::{k}", index, replicated.advertised, profile, start,
                                  k, device_id) for k in range(replicated.replicas))
    return devices, shared_gpu
