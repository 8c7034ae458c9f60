"""GpuDevices: gpusched's GPU device plugin in the framework. Filter checks device-level fit,
Score prefers placements that keep whole GPUs free, Reserve chooses the physical devices.

Filter (PreFilter skips pods without a GPU demand: no ``nvidia.com/*`` request, no
``gpu_milli`` share, no ``gpu_models`` constraint):

1. GPU model: when the pod lists ``gpu_models`` (annotation ``gpusched.io/gpu-model``), nodes
   whose ``gpu_model`` is not listed fail with ``node(s) didn't match Pod's GPU model``
   (UnschedulableAndUnresolvable).
2. Device fit, ``Insufficient <resource>`` (the pod's GPU resource, ``nvidia.com/gpu`` by
   default; Unschedulable). On ``gpu_plain`` nodes (whole, unshared GPUs) it is vectorised over
   ``Snapshot.gpu_free_milli``: a fractional pod (``gpu_milli`` = share) needs one GPU with
   ``free >= share`` (per GPU it asks for); a whole-GPU pod needs ``nvidia.com/gpu`` GPUs with ``free == 1000``.
   Nodes with time-slicing, MPS or MIG ask their ``NodeDevices.fits(pod)`` one by one. A node
   without a ``NodeDevices`` passes whole-GPU pods (NodeResourcesFit counts them) and fails
   fractional ones.

Score, strategy arg ``strategy``: ``binpack`` (default) or ``spread`` (= 100 - binpack):

- fractional pod on a plain node: best fit. With ``f`` the smallest free share >= the pod's
  share ``s``: ``100 - (f - s) * 100 // 1000``; e.g. s=300 on a GPU with 400 free scores 90, on a
  fully free GPU 30: partly used GPUs are filled before whole GPUs are broken.
- whole-GPU pod on a plain node: GPU milli in use after placement, in percent of the node's
  GPU milli (most-allocated): nodes already running GPU work are filled first, whole nodes stay
  free for large pods.
- other nodes (shared or MIG): the pod's GPU resource in use after placement, in percent of its
  allocatable (most-allocated on that resource), which keeps free MIG slots together.

Reserve: ``NodeDevices.allocate(pod, policy)`` picks the devices (policy = strategy), honouring a
choice a score plugin wrote into the cycle state under the framework's ``GPU_SELECTION_KEY``
(node row -> tuple of GPU indices; the FGD policies write it). The assignment is written to the
cycle state under the framework's ``DEVICE_ASSIGNMENT_KEY``; the runner holds it when it assumes the pod into the snapshot
(``Snapshot.add_pod`` calls ``NodeDevices.hold``), and Unreserve drops it.

Neighbours: reads ``Snapshot.gpu_*`` and each node's ``devices.model.DeviceModel``; the runner
reads ``DEVICE_ASSIGNMENT_KEY``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gpusched.errors import UsageError
from gpusched.objects.types import NO_DEVICES, DeviceAssignment, PodInfo
from gpusched.scheduler import messages
from gpusched.scheduler.framework import (DEVICE_ASSIGNMENT_KEY, DRA_DELEGATED_KEY,
                                          GPU_SELECTION_KEY, MAX_NODE_SCORE, Code, CycleState,
                                          Rejection, SKIP, SUCCESS, Status)
from gpusched.scheduler.rowops import any_true, row_counts, take_rows, true_indices
from gpusched.scheduler.snapshot import WHOLE_GPU_MILLI, Snapshot

if TYPE_CHECKING:
    from gpusched.devices.model import DeviceModel

NAME = "GpuDevices"
STRATEGIES = ("binpack", "spread")


def gpu_resource(pod: PodInfo) -> str:
    """The pod's GPU resource name: the first ``nvidia.com/*`` request, else ``nvidia.com/gpu``."""
    names = sorted(r for r, q in pod.requests.items() if r.startswith("nvidia.com/") and q > 0)
    return names[0] if names else "nvidia.com/gpu"


def has_gpu_demand(pod: PodInfo) -> bool:
    return bool(pod.gpu_milli) or any(
        r.startswith("nvidia.com/") and q > 0 for r, q in pod.requests.items())


class GpuDevices:
    name = NAME

    def __init__(self, strategy: str = "binpack"):
        self.strategy = strategy

    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        if not pod.gpu_models and not has_gpu_demand(pod):
            return SKIP
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
               candidates: np.ndarray) -> list[Rejection]:
        rejections: list[Rejection] = []
        nodes = candidates
        if pod.gpu_models:
            allowed = [snapshot.gpu_models.index(m) for m in pod.gpu_models if m in snapshot.gpu_models]
            wrong = ~np.isin(snapshot.gpu_model_id[nodes], np.array(allowed, dtype=np.int32))
            if any_true(wrong):
                rejections.append(Rejection(snapshot.mask(nodes, wrong), messages.GPU_MODEL_MISMATCH,
                                            Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
                nodes = nodes[~wrong]
        if not has_gpu_demand(pod) or not len(nodes):
            return rejections
        nodes = nodes[~_served_by_dra(state, pod, snapshot, nodes)]
        if not len(nodes):
            return rejections
        short = ~self.device_fit(pod, snapshot, nodes)
        if any_true(short):
            rejections.append(Rejection(snapshot.mask(nodes, short),
                                        messages.insufficient(gpu_resource(pod))))
        return rejections

    @staticmethod
    def device_fit(pod: PodInfo, snapshot: Snapshot, nodes: np.ndarray) -> np.ndarray:
        """Per node of ``nodes``: do the node's devices have room for the pod?"""
        free = take_rows(snapshot.gpu_free_milli, nodes)
        if pod.gpu_milli:
            ok = row_counts(free >= pod.gpu_milli) >= (pod.gpu_count or 1)
        else:
            ok = row_counts(free == WHOLE_GPU_MILLI) >= pod.requests.get("nvidia.com/gpu", 0)
        for j in true_indices(~snapshot.gpu_plain[nodes]):
            devices = snapshot.devices[nodes[j]]
            if devices is None:
                ok[j] = not pod.gpu_milli
            else:
                ok[j] = devices.fits(pod) is None      # fits() returns None or a reason
        result: np.ndarray = ok
        return result

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                  nodes: np.ndarray) -> Status:
        return SUCCESS if has_gpu_demand(pod) else SKIP

    def score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
              nodes: np.ndarray) -> np.ndarray:
        free = snapshot.gpu_free_milli[nodes]
        if pod.gpu_milli:
            fitting = np.where(free >= pod.gpu_milli, free, WHOLE_GPU_MILLI * 2)
            best = fitting.min(axis=1, initial=WHOLE_GPU_MILLI * 2)
            packed = MAX_NODE_SCORE - (np.minimum(best, WHOLE_GPU_MILLI) - pod.gpu_milli) \
                * MAX_NODE_SCORE // WHOLE_GPU_MILLI
        else:
            gpus = (free >= 0).sum(axis=1)
            total = np.maximum(gpus, 1) * WHOLE_GPU_MILLI
            used_after = total - np.where(free > 0, free, 0).sum(axis=1) \
                + pod.requests.get("nvidia.com/gpu", 0) * WHOLE_GPU_MILLI
            packed = np.minimum(used_after, total) * MAX_NODE_SCORE // total
        shared = ~snapshot.gpu_plain[nodes]
        if shared.any():
            col = snapshot.resources.get(gpu_resource(pod))
            if col is not None:
                rows = nodes[shared]
                alloc = snapshot.allocatable[rows, col]
                used = snapshot.requested[rows, col] + pod.requests.get(gpu_resource(pod), 0)
                packed[shared] = np.minimum(used, alloc) * MAX_NODE_SCORE // np.maximum(alloc, 1)
        packed = np.clip(packed, 0, MAX_NODE_SCORE).astype(np.int64)
        result: np.ndarray = packed if self.strategy == "binpack" else MAX_NODE_SCORE - packed
        return result

    def reserve(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, node: int) -> Status:
        if not has_gpu_demand(pod) or _served_by_dra(state, pod, snapshot, np.array([node]))[0]:
            state.write(DEVICE_ASSIGNMENT_KEY, NO_DEVICES)
            return SUCCESS
        devices = snapshot.devices[node]
        if devices is None:
            state.write(DEVICE_ASSIGNMENT_KEY, NO_DEVICES)
            return SUCCESS
        chosen = state.read(GPU_SELECTION_KEY)
        selection = chosen[int(node)] if chosen is not None and int(node) in chosen else None
        assignment = allocate(devices, pod, self.strategy, selection)
        if assignment is None:
            return Status(Code.UNSCHEDULABLE, (messages.insufficient(gpu_resource(pod)),))
        state.write(DEVICE_ASSIGNMENT_KEY, assignment)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, node: int) -> None:
        state.write(DEVICE_ASSIGNMENT_KEY, None)


def _served_by_dra(state: CycleState, pod: PodInfo, snapshot: Snapshot,
                   nodes: np.ndarray) -> np.ndarray:
    """Per node, whether DynamicResources serves the pod's GPU resource there (KEP-5004: a
    DeviceClass backs it and the node's allocatable lacks it): no device of the device plugin's
    is the pod's on such a node."""
    delegated = state.read(DRA_DELEGATED_KEY)
    resource = gpu_resource(pod)
    if not delegated or resource not in delegated:
        return np.zeros(len(nodes), dtype=bool)
    column = snapshot.resources.get(resource)
    if column is None:
        return np.ones(len(nodes), dtype=bool)
    lacking: np.ndarray = snapshot.allocatable[nodes, column] <= 0
    return lacking


def allocate(devices: DeviceModel, pod: PodInfo, policy: str,
             selection: tuple[int, ...] | None) -> DeviceAssignment | None:
    """``devices.allocate`` with the score plugins' GPU choice when one was made."""
    return devices.allocate(pod, policy, gpus=None if selection is None else tuple(selection))


def new(args: dict[str, Any] | None = None) -> GpuDevices:
    strategy = (args or {}).get("strategy", "binpack")
    if strategy not in STRATEGIES:
        raise UsageError(f'GpuDevices: strategy: Unsupported value: "{strategy}": '
                         f'supported values: "binpack", "spread"')
    return GpuDevices(strategy)
