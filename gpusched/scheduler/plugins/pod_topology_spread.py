"""PodTopologySpread: spread matching pods evenly across zones, hosts or any node label.

Upstream semantics (``plugins/podtopologyspread``), vectorised over nodes:

- **Which nodes count.** A node takes part in the counting when it matches the incoming pod's
  nodeSelector and required node affinity (``nodeAffinityPolicy: Honor``, the default; taints are
  ignored, ``nodeTaintsPolicy: Ignore``) and carries *every* topology key of the constraints.
- **Domains.** The distinct values of the topology key on those nodes. ``kubernetes.io/hostname``
  is always one domain per node (gpusched nodes are their own host whether labelled or not).
- **Counts.** Pods in the incoming pod's namespace, not terminating, whose labels match the
  constraint's selector (a missing selector matches nothing), summed per domain with ``bincount``.
- **Filter** (``whenUnsatisfiable: DoNotSchedule``): a node without a constraint's key is rejected,
  UnschedulableAndUnresolvable, with ``node(s) didn't match pod topology spread constraints
  (missing required label)``; otherwise ``skew = count(domain of node) + selfMatch - minCount``
  must be <= ``maxSkew``, else Unschedulable with ``node(s) didn't match pod topology spread
  constraints``. With ``minDomains`` and fewer domains than that, ``minCount`` is 0.
  (Upstream shares the minimum between constraints with the same key; here each constraint has
  its own minimum, which is what the API documents.)
- **Score** (``ScheduleAnyway``): per node ``sum(count * log(domains + 2) + maxSkew - 1)``
  over the constraints, rounded, then normalised so fewer matching pods score higher:
  ``100 * (max + min - s) / max`` (100 for all when max is 0); nodes missing a key score 0.
  Cluster-level default constraints (for pods of Services/ReplicaSets) are not modelled.

Neighbours: reads ``snapshot.Snapshot`` label columns and pods; ``plugins.helper`` (topology
domains, node-affinity masks); registered in ``plugins/__init__``.
"""

from __future__ import annotations

import decimal
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from gpusched.objects.selectors import matches
from gpusched.objects.types import PodInfo, TopologySpreadConstraint
from gpusched.scheduler.framework import (
    Code, CycleState, MAX_NODE_SCORE, Rejection, SKIP, SUCCESS, Status,
)
from gpusched.scheduler.plugins.helper.node_affinity import required_mask
from gpusched.scheduler.plugins.helper.spread import HOSTNAME, domain_ids, pods_by_node

if TYPE_CHECKING:
    from gpusched.scheduler.snapshot import Snapshot

NAME = "PodTopologySpread"
REASON_CONSTRAINTS = "node(s) didn't match pod topology spread constraints"
REASON_MISSING_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME


# ---- helpers shared by the topology plugins ----------------------------------------------------


def node_affinity_mask(snapshot: Snapshot, pod: PodInfo) -> np.ndarray:
    """Nodes (bool per row) matching the pod's nodeSelector and required node affinity."""
    return required_mask(snapshot, pod, snapshot.all_nodes())


# ---- the plugin ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Spread:
    """Counting result for a set of constraints (immutable once built; ``clone`` returns self)."""

    constraints: tuple[TopologySpreadConstraint, ...]
    domains: tuple[np.ndarray, ...]        # per constraint: domain id per node (-1 missing)
    counts: tuple[np.ndarray, ...]         # per constraint: matching pods per domain
    present: tuple[np.ndarray, ...]        # per constraint: bool per domain, seen on a counted node
    has_all_keys: np.ndarray               # bool per node
    self_match: tuple[int, ...]

    def clone(self) -> "_Spread":
        return self

    def min_count(self, i: int) -> int | None:
        present = self.present[i]
        if not present.any():
            return None
        minimum = int(self.counts[i][present].min())
        min_domains = self.constraints[i].min_domains
        if min_domains is not None and int(present.sum()) < min_domains:
            return 0
        return minimum


def count_spread(snapshot: Snapshot, pod: PodInfo, constraints: tuple[TopologySpreadConstraint, ...]) -> _Spread:
    """Count matching pods per domain for each constraint over the nodes that take part."""
    domains, sizes = zip(*(domain_ids(snapshot, c.topology_key) for c in constraints))
    has_all = np.ones(snapshot.num_nodes, dtype=bool)
    for ids in domains:
        has_all &= ids >= 0
    counted = has_all & node_affinity_mask(snapshot, pod)
    per_node = np.zeros((len(constraints), snapshot.num_nodes), dtype=np.int64)
    for node, other in pods_by_node(snapshot):
        if not counted[node] or other.namespace != pod.namespace or other.terminating:
            continue
        for i, c in enumerate(constraints):
            if matches(c.label_selector, other.labels):
                per_node[i, node] += 1
    counts, present = [], []
    for i, ids in enumerate(domains):
        rows = ids[counted]
        counts.append(np.bincount(rows, weights=per_node[i][counted], minlength=sizes[i]).astype(np.int64))
        present.append(np.bincount(rows, minlength=sizes[i]) > 0)
    self_match = tuple(int(matches(c.label_selector, pod.labels)) for c in constraints)
    return _Spread(tuple(constraints), tuple(domains), tuple(counts), tuple(present), has_all, self_match)


class PodTopologySpread:
    """PreFilter + Filter for DoNotSchedule constraints, PreScore + Score for ScheduleAnyway."""

    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        self.args = dict(args or {})

    # -- filter --
    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        hard = tuple(c for c in pod.topology_spread if c.when_unsatisfiable == "DoNotSchedule")
        if not hard:
            return SKIP
        state.write(_PRE_FILTER_KEY, count_spread(snapshot, pod, hard))
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, candidates: np.ndarray) -> list[Rejection]:
        candidates = snapshot.mask(candidates)
        spread: _Spread | None = state.read(_PRE_FILTER_KEY)
        if spread is None:
            hard = tuple(c for c in pod.topology_spread if c.when_unsatisfiable == "DoNotSchedule")
            if not hard:
                return []
            spread = count_spread(snapshot, pod, hard)
        missing = candidates & ~spread.has_all_keys
        too_skewed = np.zeros(snapshot.num_nodes, dtype=bool)
        for i, c in enumerate(spread.constraints):
            minimum = spread.min_count(i)
            if minimum is None:
                continue
            ids = spread.domains[i]
            node_count = np.where(ids >= 0, spread.counts[i][np.maximum(ids, 0)], 0)
            too_skewed |= node_count + spread.self_match[i] - minimum > c.max_skew
        too_skewed &= candidates & ~missing
        rejections = []
        if missing.any():
            rejections.append(Rejection(missing, REASON_MISSING_LABEL, Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
        if too_skewed.any():
            rejections.append(Rejection(too_skewed, REASON_CONSTRAINTS, Code.UNSCHEDULABLE))
        return rejections

    # -- score --
    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, nodes: np.ndarray) -> Status:
        soft = tuple(c for c in pod.topology_spread if c.when_unsatisfiable == "ScheduleAnyway")
        if not soft or len(nodes) == 0:
            return SKIP
        spread = count_spread(snapshot, pod, soft)
        nodes = np.asarray(nodes)
        scored = nodes[spread.has_all_keys[nodes]]
        weights = []
        for i, c in enumerate(soft):
            if c.topology_key == HOSTNAME:
                size = len(scored)
            else:
                size = len(np.unique(spread.domains[i][scored]))
            weights.append(normalizing_weight(size))
        state.write(_PRE_SCORE_KEY, (spread, tuple(weights)))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, nodes: np.ndarray) -> np.ndarray:
        entry = state.read(_PRE_SCORE_KEY)
        nodes = np.asarray(nodes)
        if entry is None:
            return np.zeros(len(nodes), dtype=np.int64)
        spread, weights = entry
        total = np.zeros(len(nodes), dtype=np.float64)
        for i, c in enumerate(spread.constraints):
            ids = spread.domains[i][nodes]
            count = np.where(ids >= 0, spread.counts[i][np.maximum(ids, 0)], 0)
            total += count * weights[i] + (c.max_skew - 1)
        scores = np.floor(total + 0.5).astype(np.int64)
        return np.where(spread.has_all_keys[nodes], scores, 0)

    def normalize(self, state: CycleState, pod: PodInfo, nodes: np.ndarray, scores: np.ndarray) -> np.ndarray:
        entry = state.read(_PRE_SCORE_KEY)
        if entry is None or len(scores) == 0:
            return scores
        ignored = ~entry[0].has_all_keys[np.asarray(nodes)]
        kept = scores[~ignored]
        if len(kept) == 0:
            return np.zeros_like(scores)
        low, high = int(kept.min()), int(kept.max())
        if high == 0:
            out = np.full_like(scores, MAX_NODE_SCORE)
        else:
            out = MAX_NODE_SCORE * (high + low - scores) // high
        return np.where(ignored, 0, out).astype(np.int64)


@functools.lru_cache(maxsize=256)
def normalizing_weight(size: int) -> float:
    """Upstream's ``topologyNormalizingWeight``: ``log(size + 2)``, here from ``decimal`` at 40
    digits rounded to a float, so the same bits on every machine (the C library's ``log`` may
    differ in the last bit between builds and processors, and a score rounds at .5). The rest of
    the score is element-wise float ``*`` and ``+``, correctly rounded everywhere."""
    return float(decimal.Context(prec=40).ln(size + 2))


def new(args: Mapping[str, Any] | None = None) -> PodTopologySpread:
    return PodTopologySpread(args)
