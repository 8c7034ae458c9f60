"""The scheduler's view of the cluster: node rows in NumPy arrays, updated incrementally.

One row per node, in insertion order (row order is the scheduler's node order; removing a node
shifts the rows after it). Columns:

- ``allocatable``, ``requested``: int64 (nodes x resources). Resource columns are registered on
  first sight (a node advertising it, or a pod requesting it) and the arrays widen; ``resources``
  maps a name to its column. ``pods`` is a column too: a pod requests 1 of it. A node without a
  ``pods`` allocatable gets the kubelet default of 110.
- ``free``: ``allocatable - requested``, kept incrementally (what NodeResourcesFit compares).
- ``nonzero_requested``: int64 (nodes x 2), cpu and memory summed with upstream's non-zero
  defaults (100m cpu, 200Mi memory for a pod that requests none); what scoring uses.
- ``unschedulable``: bool; ``taint_group``: int32 index into ``taint_groups`` (distinct taint
  tuples, group 0 is "no taints") so TaintToleration evaluates each taint set once.
- ``gpu_free_milli``: int32 (nodes x max GPUs), free milli-GPU per physical GPU, -1 where the node
  has no such GPU; ``gpu_model_id``: int32 into ``gpu_models`` (-1 for CPU-only nodes);
  ``gpu_plain``: the node's GPUs are whole, unshared devices (no time-slicing, MPS or MIG), so
  ``gpu_free_milli`` alone decides device fit.
- ``min_pod_priority``: int64, the lowest priority among the node's pods (``NO_PODS_PRIORITY``
  when it has none): ``min_pod_priority < p`` tells preemption which nodes have victims at all.
- requests per priority level: one (nodes x resources) int64 array per distinct pod priority
  present (levels appear and disappear with their pods; clusters have few), so
  ``requested_below(p, rows)`` - what removing every pod of priority < p would free - is a sum
  of a few gathers. Preemption's resource pre-check reads it.
- label columns, built lazily per key: ``label_ids(key) -> (ids, vocab)``.
- a journal of touched rows: every mutation bumps ``generation`` and notes its row, so a cache
  derived from per-node state (FGD's per-node fragmentation) asks ``rows_touched_since(mark)``
  instead of comparing whole arrays. Removing a node shifts rows, so it starts a new journal
  epoch and a mark from before it answers None ("resync everything").

Per node it keeps the ``NodeInfo``, the ``NodeDevices`` (or None) and the pods on it; per pod only
its row (``pod_node``) and its ``DeviceAssignment`` (``assignments``); PodInfo objects are shared,
never copied. ``add_pod``/``remove_pod`` are exact inverses, which is what preemption's what-if
checks rely on (remove victims, re-run filters, add them back).

Neighbours: reads ``objects.types`` and the ``devices.node.NodeDevices`` interface (``advertised``,
``free_milli()``, ``hold``, ``release``); read by every plugin and the runner.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

import numpy as np

from gpusched.objects.types import (NO_DEVICES, RESOURCE_GPU_MILLI, DeviceAssignment, NodeInfo,
                                    PodInfo, Taint)

if TYPE_CHECKING:
    from gpusched.devices.model import DeviceModel

BASE_RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage")
CPU, MEMORY, PODS, EPHEMERAL = 0, 1, 2, 3
DEFAULT_MAX_PODS = 110                       # kubelet --max-pods default
DEFAULT_MILLI_CPU_REQUEST = 100              # upstream schedutil.DefaultMilliCPURequest
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024   # upstream schedutil.DefaultMemoryRequest
WHOLE_GPU_MILLI = 1000
NO_PODS_PRIORITY = np.iinfo(np.int64).max     # min_pod_priority of a node without pods
_INTEGER = re.compile(r"^[+-]?[0-9]+$")


class Snapshot:
    """Node rows as NumPy arrays plus the pods on each node; see the module docstring."""

    # capacity-sized buffers (``_allocate_buffers``); the public arrays are views of their first rows
    _alloc_buf: np.ndarray
    _req_buf: np.ndarray
    _free_buf: np.ndarray
    _nonzero_buf: np.ndarray
    _unsched_buf: np.ndarray
    _gpu_buf: np.ndarray
    _model_buf: np.ndarray
    _taint_buf: np.ndarray
    _plain_buf: np.ndarray
    _min_prio_buf: np.ndarray

    def __init__(self) -> None:
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.nodes: list[NodeInfo] = []
        self.devices: list[DeviceModel | None] = []
        self.resources: dict[str, int] = {name: col for col, name in enumerate(BASE_RESOURCES)}
        self.resource_names: list[str] = list(BASE_RESOURCES)
        self.gpu_models: list[str] = []
        self._gpu_model_ids: dict[str, int] = {}
        self.taint_groups: list[tuple[Taint, ...]] = [()]
        self._taint_group_ids: dict[tuple[Taint, ...], int] = {(): 0}
        self.pod_node: dict[str, int] = {}
        self.assignments: dict[str, DeviceAssignment] = {}
        self.affinity_pods: dict[str, PodInfo] = {}   # pods with pod (anti-)affinity terms (InterPodAffinity)
        self._pods_on: list[dict[str, PodInfo]] = []
        self._labels: dict[str, tuple[np.ndarray, dict[str, int]]] = {}
        self._label_numbers: dict[str, np.ndarray] = {}
        self._prio_req_buf: dict[int, np.ndarray] = {}   # priority -> (capacity x resources) requests
        self._prio_pods: dict[int, int] = {}              # priority -> pods of that priority
        self._vectors: dict[str, tuple[PodInfo, np.ndarray, np.ndarray]] = {}   # _pod_vectors'
        self.generation = 0                  # bumped by every mutation
        self._journal: list[int] = []        # rows touched, one entry per mutation of a row
        self._journal_epoch = 0              # bumped when rows shift or the journal is trimmed
        self._n = 0
        self._allocate_buffers(capacity=16, resources=len(BASE_RESOURCES), gpus=1)

    # ---- buffers --------------------------------------------------------------------------

    def _allocate_buffers(self, capacity: int, resources: int, gpus: int) -> None:
        n = self._n
        old = getattr(self, "_alloc_buf", None)
        alloc = np.zeros((capacity, resources), dtype=np.int64)
        req = np.zeros((capacity, resources), dtype=np.int64)
        free = np.zeros((capacity, resources), dtype=np.int64)
        nonzero = np.zeros((capacity, 2), dtype=np.int64)
        unsched = np.zeros(capacity, dtype=bool)
        gpu_free = np.full((capacity, gpus), -1, dtype=np.int32)
        gpu_model = np.full(capacity, -1, dtype=np.int32)
        taint_group = np.zeros(capacity, dtype=np.int32)
        gpu_plain = np.zeros(capacity, dtype=bool)
        min_priority = np.full(capacity, NO_PODS_PRIORITY, dtype=np.int64)
        if old is not None:
            r, g = self._alloc_buf.shape[1], self._gpu_buf.shape[1]
            alloc[:n, :r] = self._alloc_buf[:n]
            req[:n, :r] = self._req_buf[:n]
            free[:n, :r] = self._free_buf[:n]
            nonzero[:n] = self._nonzero_buf[:n]
            unsched[:n] = self._unsched_buf[:n]
            gpu_free[:n, :g] = self._gpu_buf[:n]
            gpu_model[:n] = self._model_buf[:n]
            taint_group[:n] = self._taint_buf[:n]
            gpu_plain[:n] = self._plain_buf[:n]
            min_priority[:n] = self._min_prio_buf[:n]
            for prio, level in list(self._prio_req_buf.items()):
                grown_level = np.zeros((capacity, resources), dtype=np.int64)
                grown_level[:n, : level.shape[1]] = level[:n]
                self._prio_req_buf[prio] = grown_level
            for key, (ids, vocab) in list(self._labels.items()):
                grown = np.full(capacity, -1, dtype=np.int32)
                grown[:n] = ids[:n]
                self._labels[key] = (grown, vocab)
        self._alloc_buf, self._req_buf, self._nonzero_buf = alloc, req, nonzero
        self._free_buf = free
        self._unsched_buf, self._gpu_buf, self._model_buf = unsched, gpu_free, gpu_model
        self._taint_buf, self._plain_buf = taint_group, gpu_plain
        self._min_prio_buf = min_priority
        self._refresh_views()

    def _refresh_views(self) -> None:
        n = self._n
        self.allocatable = self._alloc_buf[:n]
        self.requested = self._req_buf[:n]
        self.free = self._free_buf[:n]
        self.nonzero_requested = self._nonzero_buf[:n]
        self.unschedulable = self._unsched_buf[:n]
        self.gpu_free_milli = self._gpu_buf[:n]
        self.gpu_model_id = self._model_buf[:n]
        self.taint_group = self._taint_buf[:n]
        self.gpu_plain = self._plain_buf[:n]
        self.min_pod_priority = self._min_prio_buf[:n]

    def _ensure(self, rows: int = 0, resources: int = 0, gpus: int = 0) -> None:
        cap, r = self._alloc_buf.shape
        g = self._gpu_buf.shape[1]
        if rows > cap or resources > r or gpus > g:
            self._allocate_buffers(max(cap * 2 if rows > cap else cap, rows),
                                   max(r, resources), max(g, gpus))

    # ---- journal of touched rows ---------------------------------------------------------

    JOURNAL_LIMIT = 1 << 16

    def _touch(self, row: int) -> None:
        self.generation += 1
        if len(self._journal) >= self.JOURNAL_LIMIT:     # bound memory: old marks resync
            self._journal.clear()
            self._journal_epoch += 1
        self._journal.append(row)

    def journal_mark(self) -> tuple[int, int]:
        """An opaque position in the journal for ``rows_touched_since``."""
        return self._journal_epoch, len(self._journal)

    def rows_touched_since(self, mark: tuple[int, int] | None) -> np.ndarray | None:
        """Rows mutated since ``mark`` (sorted, unique), or None when the caller must resync all
        rows (no mark, or rows shifted / the journal was trimmed since)."""
        if mark is None or mark[0] != self._journal_epoch:
            return None
        # sorted(set()) of a few Python ints: np.unique costs ~10x on the usual 1-3 rows
        return np.array(sorted(set(self._journal[mark[1]:])), dtype=np.int64)

    def resource_column(self, resource: str) -> int:
        """The column of ``resource``, registering it (arrays widen) on first sight."""
        col = self.resources.get(resource)
        if col is None:
            col = len(self.resource_names)
            self.resources[resource] = col
            self.resource_names.append(resource)
            self._ensure(resources=col + 1)
        return col

    # ---- queries --------------------------------------------------------------------------

    @property
    def num_nodes(self) -> int:
        return self._n

    def all_nodes(self) -> np.ndarray:
        """Every row index, ascending (int64)."""
        return np.arange(self._n, dtype=np.int64)

    def mask(self, nodes: np.ndarray, selected: np.ndarray | None = None) -> np.ndarray:
        """A bool mask over all rows, True at ``nodes`` (or at ``nodes[selected]``)."""
        out = np.zeros(self._n, dtype=bool)
        out[nodes if selected is None else nodes[selected]] = True
        return out

    def pods_on(self, node: int | str) -> list[PodInfo]:
        """The pods on ``node`` (row or name), in the order they were added."""
        return list(self._pods_on[self._row(node)].values())

    def pod_count(self, node: int | str) -> int:
        return len(self._pods_on[self._row(node)])

    def node_of(self, uid: str) -> str | None:
        row = self.pod_node.get(uid)
        return None if row is None else self.names[row]

    def pod(self, uid: str) -> PodInfo | None:
        row = self.pod_node.get(uid)
        return None if row is None else self._pods_on[row][uid]

    def request_vector(self, pod: PodInfo) -> np.ndarray:
        """The pod's requests as an int64 row over the current resource columns (pods = 1)."""
        for resource in pod.requests:
            if resource not in self.resources:
                self.resource_column(resource)
        vec = np.zeros(len(self.resource_names), dtype=np.int64)
        for resource, amount in pod.requests.items():
            vec[self.resources[resource]] = amount
        vec[PODS] = 1
        return vec

    @staticmethod
    def nonzero_vector(pod: PodInfo) -> np.ndarray:
        """cpu and memory with upstream's defaults for a pod requesting none (used in scoring)."""
        return np.array([pod.requests.get("cpu", 0) or DEFAULT_MILLI_CPU_REQUEST,
                         pod.requests.get("memory", 0) or DEFAULT_MEMORY_REQUEST], dtype=np.int64)

    def _pod_vectors(self, pod: PodInfo) -> tuple[np.ndarray, np.ndarray]:
        """``request_vector`` and ``nonzero_vector``, kept per PodInfo object (and column count):
        nominated pods are added and removed at every attempt. Gone pods' entries are dropped."""
        kept = self._vectors.get(pod.uid)
        if kept is None or kept[0] is not pod or len(kept[1]) != len(self.resource_names):
            if len(self._vectors) > 2 * len(self.pod_node) + 4096:
                self._vectors = {u: v for u, v in self._vectors.items() if u in self.pod_node}
            request = self.request_vector(pod)
            kept = self._vectors[pod.uid] = (pod, request, self.nonzero_vector(pod))
        return kept[1], kept[2]

    def priority_levels(self) -> list[int]:
        """The distinct priorities of the pods in the snapshot, ascending."""
        return sorted(self._prio_req_buf)

    def requested_below(self, priority: int, rows: np.ndarray) -> np.ndarray:
        """Summed requests of the pods with priority strictly below ``priority`` on ``rows``:
        (len(rows) x resources) int64, the room preemption could free there at most."""
        out = np.zeros((len(rows), len(self.resource_names)), dtype=np.int64)
        for prio, level in self._prio_req_buf.items():
            if prio < priority:
                out += level[rows, : out.shape[1]]
        return out

    def label_ids(self, key: str) -> tuple[np.ndarray, dict[str, int]]:
        """Per row the id of the node's value for label ``key`` (-1 when absent), and the vocab;
        ids in order of first appearance over rows, so they are deterministic."""
        cached = self._labels.get(key)
        if cached is None:
            ids = np.full(self._alloc_buf.shape[0], -1, dtype=np.int32)
            vocab: dict[str, int] = {}
            for row, info in enumerate(self.nodes):
                value = info.labels.get(key)
                if value is not None:
                    ids[row] = vocab.setdefault(value, len(vocab))
            cached = self._labels[key] = (ids, vocab)
        return cached[0][: self._n], cached[1]

    def label_numbers(self, key: str) -> np.ndarray:
        """For each vocab id of ``key``, the value as a number (NaN if not an integer), for Gt/Lt."""
        _, vocab = self.label_ids(key)
        numbers = self._label_numbers.get(key)
        if numbers is None or len(numbers) != len(vocab):
            numbers = np.full(len(vocab), np.nan)
            for value, vid in vocab.items():
                numbers[vid] = _parse_int(value)
            self._label_numbers[key] = numbers
        return numbers

    # ---- nodes ----------------------------------------------------------------------------

    def _row(self, node: int | str) -> int:
        return node if isinstance(node, (int, np.integer)) else self.index[node]

    def add_node(self, info: NodeInfo, devices: DeviceModel | None = None) -> int:
        """Append a node row; returns its row index. ``devices`` is its ``NodeDevices`` or None."""
        if info.name in self.index:
            raise ValueError(f"node {info.name!r} is already in the snapshot")
        row = self._n
        self._ensure(rows=row + 1)
        self._n += 1
        self.names.append(info.name)
        self.index[info.name] = row
        self.nodes.append(info)
        self.devices.append(devices)
        self._pods_on.append({})
        self._refresh_views()
        self._write_row(row, info, devices)
        return row

    def update_node(self, info: NodeInfo, devices: DeviceModel | None = None) -> int:
        """Replace a node's info (labels, taints, allocatable, cordon) keeping its pods.

        ``devices=None`` keeps the current ``NodeDevices``; a new one must already hold the
        node's pods (e.g. built from the old one) - the snapshot does not re-hold them.
        """
        row = self.index[info.name]
        self.nodes[row] = info
        if devices is not None:
            self.devices[row] = devices
        self._write_row(row, info, self.devices[row])
        return row

    def remove_node(self, name: str) -> list[PodInfo]:
        """Delete a node row (later rows shift up); returns the pods that were on it."""
        row = self.index[name]
        pods = list(self._pods_on[row].values())
        for pod in pods:
            del self.pod_node[pod.uid]
            self.affinity_pods.pop(pod.uid, None)
            self.assignments.pop(pod.uid, None)
            self._prio_pods[pod.priority] -= 1
            if not self._prio_pods[pod.priority]:
                del self._prio_pods[pod.priority], self._prio_req_buf[pod.priority]
        n = self._n
        for buf in (self._alloc_buf, self._req_buf, self._free_buf, self._nonzero_buf, self._unsched_buf,
                    self._gpu_buf, self._model_buf, self._taint_buf, self._plain_buf,
                    self._min_prio_buf, *self._prio_req_buf.values()):
            buf[row:n - 1] = buf[row + 1:n]
        self._clear_row(n - 1)
        for name_i in self.names[row + 1:]:
            self.index[name_i] -= 1
        del self.names[row], self.nodes[row], self.devices[row], self._pods_on[row]
        del self.index[name]
        for uid, r in self.pod_node.items():
            if r > row:
                self.pod_node[uid] = r - 1
        self._n -= 1
        self._labels.clear()
        self._label_numbers.clear()
        self._refresh_views()
        self.generation += 1
        self._journal.clear()
        self._journal_epoch += 1
        return pods

    def _clear_row(self, row: int) -> None:
        """Reset a row past the end to what a fresh buffer holds (add_node relies on it)."""
        for buf in (self._alloc_buf, self._req_buf, self._free_buf, self._nonzero_buf,
                    self._unsched_buf, self._taint_buf, self._plain_buf, *self._prio_req_buf.values()):
            buf[row] = 0
        self._gpu_buf[row] = -1
        self._model_buf[row] = -1
        self._min_prio_buf[row] = NO_PODS_PRIORITY

    def _write_row(self, row: int, info: NodeInfo, devices: DeviceModel | None) -> None:
        for resource in info.allocatable:
            self.resource_column(resource)
        alloc = self._alloc_buf[row]
        alloc[:] = 0
        for resource, amount in info.allocatable.items():
            alloc[self.resources[resource]] = amount
        if "pods" not in info.allocatable:
            alloc[PODS] = DEFAULT_MAX_PODS
        self._free_buf[row] = alloc - self._req_buf[row]
        self._unsched_buf[row] = info.unschedulable
        model = info.gpu_model
        if model:
            model_id = self._gpu_model_ids.get(model)
            if model_id is None:
                model_id = self._gpu_model_ids[model] = len(self.gpu_models)
                self.gpu_models.append(model)
            self._model_buf[row] = model_id
        else:
            self._model_buf[row] = -1
        taints = tuple(info.taints)
        group = self._taint_group_ids.get(taints)
        if group is None:
            group = self._taint_group_ids[taints] = len(self.taint_groups)
            self.taint_groups.append(taints)
        self._taint_buf[row] = group
        for key, (ids, vocab) in self._labels.items():
            value = info.labels.get(key)
            ids[row] = -1 if value is None else vocab.setdefault(value, len(vocab))
        self._plain_buf[row] = _plain_devices(devices)
        self._refresh_gpu_row(row)
        self._touch(row)

    def _update_gpu_row(self, row: int, assignment: DeviceAssignment, taken: bool) -> None:
        """After hold/release: on plain nodes update the touched GPUs in place (exactly what
        ``free_milli()`` would give: 0 when held whole, 1000 - shares otherwise); else re-read."""
        if not self._plain_buf[row] or not assignment.gpu_indices:
            self._refresh_gpu_row(row)
            return
        gpu_row = self._gpu_buf[row]
        for index in assignment.gpu_indices:
            if assignment.resource == RESOURCE_GPU_MILLI:
                gpu_row[index] += -assignment.milli if taken else assignment.milli
            else:
                gpu_row[index] = 0 if taken else WHOLE_GPU_MILLI

    def _refresh_gpu_row(self, row: int) -> None:
        devices = self.devices[row]
        free = [] if devices is None else list(devices.free_milli())
        self._ensure(gpus=len(free))
        gpu_row = self._gpu_buf[row]
        gpu_row[:] = -1
        gpu_row[: len(free)] = free

    # ---- pods -----------------------------------------------------------------------------

    def add_pod(self, pod: PodInfo, node: int | str,
                assignment: DeviceAssignment = NO_DEVICES) -> int:
        """Account ``pod`` on ``node`` (row or name) holding ``assignment``; returns the row."""
        row = self._row(node)
        if pod.uid in self.pod_node:
            raise ValueError(f"pod {pod.key} ({pod.uid}) is already on a node")
        vec, nonzero = self._pod_vectors(pod)
        self._req_buf[row, : len(vec)] += vec
        self._free_buf[row, : len(vec)] -= vec
        self._nonzero_buf[row] += nonzero
        self._pods_on[row][pod.uid] = pod
        if (pod.pod_affinity or pod.pod_anti_affinity or pod.preferred_pod_affinity
                or pod.preferred_pod_anti_affinity):
            self.affinity_pods[pod.uid] = pod
        self.pod_node[pod.uid] = row
        self.assignments[pod.uid] = assignment
        if pod.priority < self._min_prio_buf[row]:
            self._min_prio_buf[row] = pod.priority
        level = self._prio_req_buf.get(pod.priority)
        if level is None:
            level = self._prio_req_buf[pod.priority] = np.zeros_like(self._req_buf)
        level[row, : len(vec)] += vec
        self._prio_pods[pod.priority] = self._prio_pods.get(pod.priority, 0) + 1
        devices = self.devices[row]
        if devices is not None and not assignment.empty:
            devices.hold(pod.uid, assignment)
            self._update_gpu_row(row, assignment, taken=True)
        self._touch(row)
        return row

    def remove_pod(self, uid: str) -> tuple[int, DeviceAssignment]:
        """Undo ``add_pod`` exactly; returns (row, assignment) so the caller can add it back."""
        row = self.pod_node.pop(uid)
        pod = self._pods_on[row].pop(uid)
        self.affinity_pods.pop(uid, None)
        assignment = self.assignments.pop(uid)
        vec, nonzero = self._pod_vectors(pod)
        self._req_buf[row, : len(vec)] -= vec
        self._free_buf[row, : len(vec)] += vec
        self._nonzero_buf[row] -= nonzero
        left = self._prio_pods[pod.priority] - 1
        if left:
            self._prio_pods[pod.priority] = left
            self._prio_req_buf[pod.priority][row, : len(vec)] -= vec
        else:                                   # last pod of that priority: drop the level
            del self._prio_pods[pod.priority], self._prio_req_buf[pod.priority]
        if pod.priority == self._min_prio_buf[row]:
            self._min_prio_buf[row] = min((p.priority for p in self._pods_on[row].values()),
                                          default=NO_PODS_PRIORITY)
        devices = self.devices[row]
        if devices is not None and not assignment.empty:
            devices.release(uid)
            self._update_gpu_row(row, assignment, taken=False)
        self._touch(row)
        return row, assignment


def _plain_devices(devices: DeviceModel | None) -> bool:
    """True when every advertised GPU resource is one whole, unshared GPU (``nvidia.com/gpu``)."""
    if devices is None:
        return False
    advertised = dict(devices.advertised)
    gpus = len(list(devices.free_milli()))
    gpu_resources = {k: v for k, v in advertised.items() if k.startswith("nvidia.com/")}
    if any(devices.mig_enabled(i) for i in range(gpus)):
        return False
    return gpus > 0 and gpu_resources == {"nvidia.com/gpu": gpus}


def _parse_int(value: str) -> float:
    """Go's strconv.ParseInt(value, 10, 64) as a float, NaN when it fails."""
    return float(int(value)) if _INTEGER.match(value) else math.nan
