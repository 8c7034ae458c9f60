"""InterPodAffinity: place a pod near (affinity) or away from (anti-affinity) other pods.

Upstream semantics (``plugins/interpodaffinity``), vectorised over nodes by topology domain:

- A term matches a pod when the pod is in one of the term's namespaces (empty = the namespace of
  the pod that owns the term) and its labels match the term's selector (a missing selector
  matches nothing). Terminating pods still count, as upstream.
- **PreFilter** counts, per topology domain (``bincount`` over the node rows of matching pods):
  pods matching *all* the incoming pod's required affinity terms; pods matching each required
  anti-affinity term; and the domains where an existing pod's required anti-affinity term matches
  the incoming pod.
- **Filter**, first failure per node, in upstream's order:
  1. ``node(s) didn't match pod affinity rules`` (UnschedulableAndUnresolvable) unless the node
     has every term's topology key and a matching pod in each term's domain. *First pod in a
     series*: when no pod anywhere matches and the pod matches its own terms, any node carrying
     the keys passes.
  2. ``node(s) didn't match pod anti-affinity rules`` (Unschedulable): a matching pod is in the
     node's domain for some anti-affinity term.
  3. ``node(s) didn't satisfy existing pods anti-affinity rules`` (Unschedulable).
- **Score**: per domain, + weight for every existing pod matching one of the incoming pod's
  preferred affinity terms, - weight for preferred anti-affinity; symmetrically existing pods'
  preferred terms matching the incoming pod, and existing pods' *required* affinity terms with
  ``hardPodAffinityWeight`` (arg, default 1). NormalizeScore: ``100 * (s - min) / (max - min)``.

Topology domains come from ``helper.spread.domain_ids`` (``kubernetes.io/hostname`` = one
domain per node). Existing pods with affinity terms come from ``Snapshot.affinity_pods``.

Neighbours: reads ``snapshot.Snapshot``; helpers from ``pod_topology_spread``; registered in
``plugins/__init__``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from gpusched.objects.selectors import matches
from gpusched.objects.types import PodAffinityTerm, PodInfo, WeightedPodAffinityTerm
from gpusched.scheduler.framework import Code, CycleState, MAX_NODE_SCORE, Rejection, SKIP, SUCCESS, Status
from gpusched.scheduler.plugins.helper.spread import domain_ids, pods_by_node

if TYPE_CHECKING:
    from gpusched.scheduler.snapshot import Snapshot

NAME = "InterPodAffinity"
REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME


def term_matches(term: PodAffinityTerm, owner_namespace: str, pod: PodInfo) -> bool:
    """Whether ``pod`` is selected by ``term`` written in a pod of ``owner_namespace``."""
    namespaces = term.namespaces or (owner_namespace,)
    return pod.namespace in namespaces and matches(term.label_selector, pod.labels)


def affinity_pods(snapshot: Snapshot) -> list[tuple[int, PodInfo]]:
    """(row, pod) of every pod in the snapshot that carries pod (anti-)affinity terms.

    Read from ``Snapshot.affinity_pods`` (kept current by ``add_pod``/``remove_pod``, like
    upstream's ``PodsWithAffinity``), so pods without terms cost nothing per cycle.
    """
    rows = snapshot.pod_node
    return [(rows[uid], pod) for uid, pod in snapshot.affinity_pods.items()]


class _Domains:
    """Per topology key: domain id per node row and the number of domains (memoised)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self._cache: dict[str, tuple[np.ndarray, int]] = {}

    def __call__(self, key: str) -> tuple[np.ndarray, int]:
        if key not in self._cache:
            self._cache[key] = domain_ids(self.snapshot, key)
        return self._cache[key]

    def count(self, key: str, rows: Sequence[int], weights: Sequence[float] | None = None) -> np.ndarray:
        """Per domain of ``key``: the number (or weight sum) of ``rows`` falling in it."""
        ids, size = self(key)
        picked = ids[np.asarray(rows, dtype=np.int64)] if len(rows) else np.zeros(0, dtype=np.int64)
        keep = picked >= 0
        w = None if weights is None else np.asarray(weights, dtype=np.float64)[keep]
        return np.bincount(picked[keep], weights=w, minlength=size)

    def per_node(self, key: str, per_domain: np.ndarray) -> np.ndarray:
        """Spread a per-domain array onto node rows (0 where the node lacks ``key``)."""
        ids, _ = self(key)
        return np.where(ids >= 0, per_domain[np.maximum(ids, 0)] if len(per_domain) else 0, 0)


@dataclass(frozen=True)
class _FilterState:
    affinity: np.ndarray          # bool per node: fails the required affinity terms
    anti_affinity: np.ndarray     # bool per node: a pod matching an anti-affinity term is in its domain
    existing_anti: np.ndarray     # bool per node: an existing pod's anti-affinity forbids it

    def clone(self) -> "_FilterState":
        return self


def _filter_state(snapshot: Snapshot, pod: PodInfo) -> _FilterState:
    """PreFilter's counts turned into the three Filter checks (upstream filtering.go:
    satisfyPodAffinity, satisfyPodAntiAffinity, satisfyExistingPodsAntiAffinity); a node fails
    only its first check, in that order."""
    domains = _Domains(snapshot)
    all_pods = list(pods_by_node(snapshot)) if (pod.pod_affinity or pod.pod_anti_affinity) else []
    affinity_fail = _affinity_fails(domains, pod, all_pods)
    anti_fail = _anti_affinity_fails(domains, pod, all_pods)
    existing_fail = _existing_anti_affinity_fails(domains, pod)
    return _FilterState(affinity_fail, anti_fail & ~affinity_fail,
                        existing_fail & ~affinity_fail & ~anti_fail)


def _affinity_fails(domains: _Domains, pod: PodInfo,
                    all_pods: list[tuple[int, PodInfo]]) -> np.ndarray:
    """Nodes lacking a term's topology key, or a pod matching every required affinity term in
    each term's domain (unless the pod is the first of its series)."""
    n = domains.snapshot.num_nodes
    if not pod.pod_affinity:
        return np.zeros(n, dtype=bool)
    rows = [row for row, other in all_pods
            if all(term_matches(t, pod.namespace, other) for t in pod.pod_affinity)]
    has_keys = np.ones(n, dtype=bool)
    pods_exist = np.ones(n, dtype=bool)
    any_match = False
    for term in pod.pod_affinity:
        ids, _ = domains(term.topology_key)
        has_keys &= ids >= 0
        counts = domains.count(term.topology_key, rows)
        any_match |= bool(counts.sum() > 0)
        pods_exist &= domains.per_node(term.topology_key, counts) > 0
    first_of_series = (not any_match
                       and all(term_matches(t, pod.namespace, pod) for t in pod.pod_affinity))
    fails: np.ndarray = ~has_keys | (~pods_exist & (not first_of_series))
    return fails


def _anti_affinity_fails(domains: _Domains, pod: PodInfo,
                         all_pods: list[tuple[int, PodInfo]]) -> np.ndarray:
    """Nodes whose domain holds a pod matching one of the pod's required anti-affinity terms."""
    fails = np.zeros(domains.snapshot.num_nodes, dtype=bool)
    for term in pod.pod_anti_affinity:
        rows = [row for row, other in all_pods if term_matches(term, pod.namespace, other)]
        fails |= domains.per_node(term.topology_key, domains.count(term.topology_key, rows)) > 0
    return fails


def _existing_anti_affinity_fails(domains: _Domains, pod: PodInfo) -> np.ndarray:
    """Nodes in the domain of an existing pod whose required anti-affinity term matches ``pod``."""
    fails = np.zeros(domains.snapshot.num_nodes, dtype=bool)
    for row, other in affinity_pods(domains.snapshot):
        for term in other.pod_anti_affinity:
            if not term_matches(term, other.namespace, pod):
                continue
            ids, _ = domains(term.topology_key)
            if ids[row] >= 0:
                fails |= ids == ids[row]
    return fails


class InterPodAffinity:
    """Required terms as Filter, preferred terms (both directions) as Score."""

    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        args = dict(args or {})
        self.hard_pod_affinity_weight = int(args.get("hardPodAffinityWeight", DEFAULT_HARD_POD_AFFINITY_WEIGHT))

    # -- filter --
    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        if not (pod.pod_affinity or pod.pod_anti_affinity) and not any(
                other.pod_anti_affinity for _, other in affinity_pods(snapshot)):
            return SKIP
        state.write(_PRE_FILTER_KEY, _filter_state(snapshot, pod))
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, candidates: np.ndarray) -> list[Rejection]:
        candidates = snapshot.mask(candidates)     # row indices -> bool per row
        fs: _FilterState | None = state.read(_PRE_FILTER_KEY)
        if fs is None:
            fs = _filter_state(snapshot, pod)
        rejections = []
        for mask, reason, code in ((fs.affinity, REASON_AFFINITY, Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
                                   (fs.anti_affinity, REASON_ANTI_AFFINITY, Code.UNSCHEDULABLE),
                                   (fs.existing_anti, REASON_EXISTING_ANTI_AFFINITY, Code.UNSCHEDULABLE)):
            hit = mask & candidates
            if hit.any():
                rejections.append(Rejection(hit, reason, code))
        return rejections

    # -- score --
    def _add_terms(self, totals: dict[str, np.ndarray], domains: _Domains, row: int,
                   terms: Sequence[WeightedPodAffinityTerm | PodAffinityTerm], owner_ns: str,
                   target: PodInfo, sign: int, weight: int | None = None) -> None:
        for entry in terms:
            term = entry.term if isinstance(entry, WeightedPodAffinityTerm) else entry
            w = entry.weight if isinstance(entry, WeightedPodAffinityTerm) else weight
            if not w or not term_matches(term, owner_ns, target):
                continue
            ids, size = domains(term.topology_key)
            if ids[row] < 0:
                continue
            arr = totals.setdefault(term.topology_key, np.zeros(size, dtype=np.int64))
            arr[ids[row]] += sign * w

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, nodes: np.ndarray) -> Status:
        own = bool(pod.preferred_pod_affinity or pod.preferred_pod_anti_affinity)
        candidates = list(pods_by_node(snapshot)) if own else affinity_pods(snapshot)
        if not candidates:
            return SKIP
        domains = _Domains(snapshot)
        totals: dict[str, np.ndarray] = {}
        for row, other in candidates:
            self._add_terms(totals, domains, row, pod.preferred_pod_affinity, pod.namespace, other, 1)
            self._add_terms(totals, domains, row, pod.preferred_pod_anti_affinity, pod.namespace, other, -1)
            self._add_terms(totals, domains, row, other.pod_affinity, other.namespace, pod, 1,
                            self.hard_pod_affinity_weight)
            self._add_terms(totals, domains, row, other.preferred_pod_affinity, other.namespace, pod, 1)
            self._add_terms(totals, domains, row, other.preferred_pod_anti_affinity, other.namespace, pod, -1)
        if not totals:
            return SKIP
        per_node = np.zeros(snapshot.num_nodes, dtype=np.int64)
        for key in sorted(totals):
            per_node += domains.per_node(key, totals[key]).astype(np.int64)
        state.write(_PRE_SCORE_KEY, per_node)
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, nodes: np.ndarray) -> np.ndarray:
        per_node = state.read(_PRE_SCORE_KEY)
        if per_node is None:
            return np.zeros(len(nodes), dtype=np.int64)
        result: np.ndarray = per_node[np.asarray(nodes)]
        return result

    def normalize(self, state: CycleState, pod: PodInfo, nodes: np.ndarray, scores: np.ndarray) -> np.ndarray:
        if len(scores) == 0:
            return scores
        low, high = int(scores.min()), int(scores.max())
        if high == low:
            return np.zeros_like(scores)
        return (MAX_NODE_SCORE * (scores - low) // (high - low)).astype(np.int64)


def new(args: Mapping[str, Any] | None = None) -> InterPodAffinity:
    return InterPodAffinity(args)
