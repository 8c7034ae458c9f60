"""NodeResourcesFit: the pod's requests must fit every node's free allocatable; scores by a
resource-allocation strategy.

Filter (upstream ``fitsRequest``): ``Too many pods`` when the node already runs ``allocatable.pods``
pods; then, for every resource the pod requests (> 0) - cpu, memory, ephemeral-storage and every
extended resource such as ``nvidia.com/gpu``, ``nvidia.com/gpu.shared``, ``nvidia.com/mig-1g.5gb``
- ``Insufficient <resource>`` when ``request > allocatable - requested``. A node that does not
advertise the resource has allocatable 0, so it is insufficient too. Code Unschedulable (removing
pods may help), except on a node where some requested resource exceeds the node's whole
allocatable (upstream ``InsufficientResource.Unresolvable``, ``fit.go`` ``fitsRequest``/``Filter``):
every reason on that node is then UnschedulableAndUnresolvable, so preemption counts the node as
``Preemption is not helpful for scheduling`` (e.g. 16 GPUs asked of an 8-GPU node, or a GPU asked
of a node without GPUs). ``ignoredResources`` / ``ignoredResourceGroups`` args skip resources, as
upstream.

Score (``scoringStrategy.type``; ``resources`` default cpu and memory with weight 1; requested =
node requested + pod request, with upstream's non-zero defaults 100m cpu / 200Mi memory for cpu and
memory; an extended resource the pod does not request, or a node with allocatable 0, is skipped):

- ``LeastAllocated`` (default): per resource ``(alloc - req) * 100 // alloc`` (0 when over),
  weighted mean with integer division. E.g. cpu 4000m alloc, 1000m used + 1000m pod ->
  (4000-2000)*100//4000 = 50.
- ``MostAllocated``: ``min(req, alloc) * 100 // alloc``, weighted mean.
- ``RequestedToCapacityRatio``: utilisation ``req * 100 // alloc`` (100 when over) through the
  broken-linear ``shape`` (scores 0..10 scaled x10), weighted mean of the positive scores, rounded.

Neighbours: reads ``Snapshot.allocatable/requested/nonzero_requested``; reason text from
``scheduler.messages``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.errors import UsageError
from gpusched.objects.types import PodInfo
from gpusched.scheduler import messages
from gpusched.scheduler.framework import (DRA_DELEGATED_KEY, MAX_NODE_SCORE, Code, CycleState,
                                          Rejection, Status, SUCCESS)
from gpusched.scheduler.plugins.helper.resources import allocation_matrix
from gpusched.scheduler.rowops import any_true, take_rows, true_indices
from gpusched.scheduler.snapshot import CPU, MEMORY, PODS, BASE_RESOURCES, Snapshot

NAME = "NodeResourcesFit"
STRATEGIES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
MAX_CUSTOM_PRIORITY_SCORE = 10


class NodeResourcesFit:
    name = NAME

    def __init__(self, strategy: str = "LeastAllocated",
                 resources: tuple[tuple[str, int], ...] = (("cpu", 1), ("memory", 1)),
                 shape: tuple[tuple[int, int], ...] = ((0, 10), (100, 0)),
                 ignored: frozenset[str] = frozenset(), ignored_groups: frozenset[str] = frozenset()):
        self.strategy = strategy
        self.resources = resources
        self.weights = np.array([w for _, w in resources], dtype=np.int64)
        self.shape_util = np.array([u for u, _ in shape], dtype=np.int64)
        self.shape_score = np.array([s * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)
                                     for _, s in shape], dtype=np.int64)
        self.ignored, self.ignored_groups = ignored, ignored_groups

    # ---- PreFilter / Filter ---------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        state.write(NAME, snapshot.request_vector(pod))
        return SUCCESS

    def _checked(self, snapshot: Snapshot, vec: np.ndarray) -> np.ndarray:
        cols = true_indices(vec > 0)
        cols = cols[cols != PODS]
        if self.ignored or self.ignored_groups:
            names = snapshot.resource_names
            cols = np.array([c for c in cols if names[c] not in self.ignored
                             and names[c].split("/", 1)[0] not in self.ignored_groups
                             or names[c] in BASE_RESOURCES], dtype=np.int64)
        return cols

    def filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
               candidates: np.ndarray) -> list[Rejection]:
        vec = state.read(NAME)
        if vec is None:
            vec = snapshot.request_vector(pod)
        every = len(candidates) == snapshot.num_nodes       # all rows: no gather needed
        free = snapshot.free if every else take_rows(snapshot.free, candidates)
        delegated = state.read(DRA_DELEGATED_KEY)
        if delegated:
            free = _delegate_to_dra(snapshot, vec, candidates, free, delegated)
        return self.rejections_for(snapshot, vec, candidates, free, every)

    def rejections_for(self, snapshot: Snapshot, vec: np.ndarray, candidates: np.ndarray,
                       free: np.ndarray, every: bool = False) -> list[Rejection]:
        """Filter's verdict given ``free`` (rows aligned with ``candidates``); preemption's
        pre-check passes ``free`` plus what removing the lower-priority pods would free.
        ``every``: ``candidates`` are all rows in order, so a mask over them is one over rows."""
        too_many = free[:, PODS] < 1
        cols = [int(c) for c in self._checked(snapshot, vec)]
        # per requested resource (column order), the nodes short of it, where there are any
        shorts = [(c, short) for c in cols if any_true(short := free[:, c] < vec[c])]
        if not shorts and not any_true(too_many):
            return []
        alloc = snapshot.allocatable if every else take_rows(snapshot.allocatable, candidates)
        unresolvable = _beyond_allocatable(alloc, cols, vec)
        resolvable = ~unresolvable if any_true(unresolvable) else None    # None: no split
        reasons = [(too_many, messages.TOO_MANY_PODS)] + [
            (short, messages.insufficient(snapshot.resource_names[c])) for c, short in shorts]
        rejections = []
        for hit, reason in reasons:
            parts = ((Code.UNSCHEDULABLE, hit & resolvable),
                     (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, hit & unresolvable)) \
                if resolvable is not None else ((Code.UNSCHEDULABLE, hit),)
            for code, part in parts:
                if any_true(part):
                    nodes = part.copy() if every else snapshot.mask(candidates, part)
                    rejections.append(Rejection(nodes, reason, code))
        return rejections

    # ---- Score ----------------------------------------------------------------------------

    def score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
              nodes: np.ndarray) -> np.ndarray:
        vec = state.read(NAME)
        if vec is None:
            vec = snapshot.request_vector(pod)
        alloc, req = allocation_matrix(snapshot, pod, vec, nodes, self.resources, nonzero=True)
        if self.strategy == "LeastAllocated":
            per = np.where(req > alloc, 0, (alloc - req) * MAX_NODE_SCORE // np.maximum(alloc, 1))
            return weighted_mean(per, alloc != 0, self.weights)
        if self.strategy == "MostAllocated":
            per = np.minimum(req, alloc) * MAX_NODE_SCORE // np.maximum(alloc, 1)
            return weighted_mean(per, alloc != 0, self.weights)
        util = np.where(req > alloc, 100, req * 100 // np.maximum(alloc, 1))
        per = broken_linear(util, self.shape_util, self.shape_score)
        include = (alloc != 0) & (per > 0)
        total = (per * self.weights * include).sum(axis=1)
        wsum = (self.weights * include).sum(axis=1)
        return np.where(wsum > 0, np.floor(total / np.maximum(wsum, 1) + 0.5), 0).astype(np.int64)


def _beyond_allocatable(alloc: np.ndarray, cols: list[int], vec: np.ndarray) -> np.ndarray:
    """The nodes that lack more than their whole allocatable of some requested resource: no
    preemption can help them (they always fail, so this need not be restricted to failing rows).
    Column by column: ``(alloc[:, cols] < need).any(axis=1)`` is ~5x slower on a few columns."""
    beyond = np.zeros(len(alloc), dtype=bool)
    for c in cols:
        beyond |= alloc[:, c] < vec[c]
    return beyond


def weighted_mean(per: np.ndarray, include: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Upstream's ``nodeScore / weightSum`` over included resources (integer division)."""
    total = (per * weights * include).sum(axis=1)
    wsum = (weights * include).sum(axis=1)
    return np.where(wsum > 0, total // np.maximum(wsum, 1), 0).astype(np.int64)


def broken_linear(p: np.ndarray, util: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Upstream ``buildBrokenLinearFunction`` with Go's truncating integer division."""
    out = np.full(p.shape, score[-1], dtype=np.int64)
    done = np.zeros(p.shape, dtype=bool)
    for i in range(len(util)):
        hit = ~done & (p <= util[i])
        if i == 0:
            out[hit] = score[0]
        else:
            num = (score[i] - score[i - 1]) * (p[hit] - util[i - 1])
            den = util[i] - util[i - 1]
            out[hit] = score[i - 1] + np.sign(num) * (np.abs(num) // den)
        done |= hit
    return out


def new(args: dict[str, Any] | None = None) -> NodeResourcesFit:
    args = args or {}
    strategy_args = args.get("scoringStrategy") or {}
    strategy = strategy_args.get("type", "LeastAllocated")
    if strategy not in STRATEGIES:
        raise UsageError(f"NodeResourcesFit: scoringStrategy.type: Unsupported value: \"{strategy}\": "
                         f"supported values: {', '.join(repr(s) for s in STRATEGIES)}")
    resources = tuple((r["name"], int(r.get("weight", 1))) for r in
                      strategy_args.get("resources") or ({"name": "cpu"}, {"name": "memory"}))
    shape_args = (strategy_args.get("requestedToCapacityRatio") or {}).get("shape")
    shape = tuple((int(p["utilization"]), int(p["score"])) for p in shape_args) if shape_args \
        else ((0, 10), (100, 0))
    if strategy == "RequestedToCapacityRatio" and not shape_args:
        shape = ((0, 0), (100, 10))
    return NodeResourcesFit(strategy, resources, shape,
                            frozenset(args.get("ignoredResources") or ()),
                            frozenset(args.get("ignoredResourceGroups") or ()))


def _delegate_to_dra(snapshot: Snapshot, vec: np.ndarray, candidates: np.ndarray,
                     free: np.ndarray, delegated: frozenset[str]) -> np.ndarray:
    """Upstream ``ShouldDelegateResourceToDRA`` (KEP-5004): on a node whose allocatable lacks
    a DeviceClass-backed extended resource, the pod's request for it is not this plugin's to
    check (DynamicResources allocates it): its free amount there reads as the request."""
    out = free.copy()
    for name in delegated:
        column = snapshot.resources.get(name)
        if column is None or column >= len(vec) or not vec[column]:
            continue
        lacking = snapshot.allocatable[candidates, column] <= 0
        out[lacking, column] = vec[column]
    return out
