"""Kueue's Topology-Aware Scheduling, pure: where in a Topology the pods of one PodSet go
(``pkg/cache/scheduler/tas_flavor_snapshot.go`` ``findTopologyAssignment``).

A ``TopologySnapshot`` is one TAS ResourceFlavor's nodes arranged as a tree by the Topology's
levels (e.g. block > rack > ``kubernetes.io/hostname``), each leaf with its free capacity:
allocatable minus non-TAS pods (``free``) minus admitted TAS workloads (``usage``).

``find(request)``, for ``count`` pods of ``per_pod`` requests (plus one ``pods``):

1. Phase 1 (``_fill``): each leaf's pod count (how often one pod fits in what is left; a leaf
   that fits none records its limiting resource), then counts bubble up: a domain's pods is the
   sum of its children's, its slices the sum of its children's slices, and at the slice level
   ``pods // slice_size``. When the lowest level is the hostname, leaves whose taints the
   PodSet does not tolerate, or whose labels miss its nodeSelector or required affinity, are
   excluded and counted for the message.
2. Phase 2 (``_fit_level``): the domains of the requested level sorted BestFit (slices
   descending, pods ascending, level values ascending; LeastFreeCapacity, slices ascending, for
   an unconstrained or implied request). BestFit: if the first fits, the fitting one with the
   **fewest** slices wins (the tightest fit). Required: no single domain fits -> fail. Preferred:
   go one level up and retry; at the top, take domains greedily, the last one best-fit.
3. Descend (``_descend``): level by level, the fewest child domains, each time best-fit for
   the rest; the assignment lists the leaves with their pod counts (hostname only, when the
   lowest level is the hostname), sorted by level values.

Worked example (``tas_cache_test.go`` "rack required; single Pod fits in a rack; BestFit"):
racks r1 (free for 2 pods), r2 (for 1), r3 (for 3); 1 pod required in a rack: sorted r3, r1,
r2, the top fits, so the tightest fitting rack wins: r2.

Messages (``notFitMessage``): ``topology "<name>" doesn't allow to fit any of <N> pod(s)``, or
``allows to fit only <k> out of <N> pod(s)`` (``slice(s)`` when the slice size is above 1), plus
``. Total nodes: <T>; excluded: <reasons sorted, comma-joined>`` when nodes were excluded.

Left out (upstream's alpha or niche paths): leader/worker PodSet groups, multi-layer slice
constraints, balanced placement, preferred node affinity, node-failure replacement.

Neighbours: ``tas_request`` (the request), ``tas_cycle`` (runs it in flavor assignment),
``objects`` (selectors, taints); the controllers build snapshots from nodes and pods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gpusched.kueue.tas_request import HOSTNAME
from gpusched.objects.selectors import map_matches, term_matches
from gpusched.objects.types import NodeSelectorTerm, Taint, Toleration

Key = tuple[str, ...]
_BIG = 1 << 31


@dataclass(frozen=True)
class TasNode:
    """One Ready, schedulable node of a TAS flavor: its labels, taints and free capacity
    (allocatable minus non-TAS pods, canonical units, ``pods`` included)."""

    name: str
    labels: Mapping[str, str]
    free: Mapping[str, int]
    taints: tuple[Taint, ...] = ()


@dataclass(frozen=True)
class PodSetTopology:
    """What one PodSet asks of a Topology: pods, per-pod requests and constraints."""

    name: str
    count: int
    per_pod: Mapping[str, int]
    required: str | None = None
    preferred: str | None = None
    unconstrained: bool = False
    slice_level: str | None = None
    slice_size: int = 1
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity_terms: tuple[NodeSelectorTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True)
class DomainCount:
    values: Key
    count: int


@dataclass(frozen=True)
class TopologyAssignment:
    """``utiltas.TopologyAssignment``: the levels written and the domains with pod counts."""

    levels: tuple[str, ...]
    domains: tuple[DomainCount, ...]


def taint_text(taint: Taint) -> str:
    """core/v1 ``Taint.ToString``: ``key=value:effect``, or ``key:effect`` without a value."""
    return f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"


@dataclass
class _Exclusions:
    total: int = 0
    node_selector: int = 0
    affinity: int = 0
    taints: dict[str, int] = field(default_factory=dict)
    resources: dict[str, int] = field(default_factory=dict)

    def text(self) -> str:
        """``formatReasons``: every reason, sorted, joined by ", " ("" when none)."""
        reasons = [f"{name}: {n}" for name, n in (("nodeSelector", self.node_selector), ("affinity", self.affinity)) if n]
        reasons += [f'taint "{t}": {n}' for t, n in self.taints.items()]
        reasons += [f'resource "{r}": {n}' for r, n in self.resources.items()]
        return ", ".join(sorted(reasons))


def count_in(requests: Mapping[str, int], capacity: Mapping[str, int]) -> tuple[int, str]:
    """``CountInWithLimitingResource``: how often ``requests`` fits, and the resource that
    limits it (ties to the alphabetically first)."""
    best, limiting = _BIG, ""
    for name in sorted(requests):
        need = requests[name]
        fits = _BIG if need == 0 else max(0, capacity.get(name, 0) // need)
        if fits < best:
            best, limiting = fits, name
    return (best if limiting else 0), limiting


def _merged(leaf: TasNode, node: TasNode) -> TasNode:
    """Two nodes in one leaf domain (a Topology without the hostname level): their free
    capacity adds up, as the topology tree's ``addCapacity`` does."""
    free = dict(leaf.free)
    for name, amount in node.free.items():
        free[name] = free.get(name, 0) + amount
    return TasNode(leaf.name, leaf.labels, free, leaf.taints)


@dataclass
class _Search:
    """One ``find``: the request and the per-domain pod and slice counts it computes."""

    request: PodSetTopology
    unconstrained: bool
    slice_idx: int
    pods: dict[Key, int] = field(default_factory=dict)
    slices: dict[Key, int] = field(default_factory=dict)
    excluded: _Exclusions = field(default_factory=_Exclusions)

    @property
    def wanted(self) -> int:
        return self.request.count // self.request.slice_size

    def order(self, domains: Sequence[Key]) -> list[Key]:
        """``sortedDomains``: BestFit (slices descending) or LeastFreeCapacity (ascending)."""
        sign = 1 if self.unconstrained else -1
        return sorted(domains, key=lambda d: (sign * self.slices.get(d, 0), self.pods.get(d, 0), d))

    def best_fit(self, domains: Sequence[Key], needed: int, counts: Mapping[Key, int]) -> Key:
        """``findBestFitDomainBy``: the first domain with the fewest ``counts`` >= needed (the
        first domain when none fits)."""
        best, best_count = domains[0], _BIG
        for domain in domains:
            have = counts.get(domain, 0)
            if needed <= have < best_count:
                best, best_count = domain, have
        return best


class TopologySnapshot:
    """One TAS flavor's nodes as a topology tree; see the module docstring."""

    def __init__(self, topology: str, levels: Sequence[str], nodes: Sequence[TasNode],
                 flavor_tolerations: Sequence[Toleration] = ()):
        self.topology = topology
        self.levels = tuple(levels)
        self.flavor_tolerations = tuple(flavor_tolerations)
        self.hostname_lowest = bool(levels) and levels[-1] == HOSTNAME
        self.leaves: dict[Key, TasNode] = {}
        for node in sorted(nodes, key=lambda n: n.name):
            if all(level in node.labels for level in self.levels):
                key = tuple(node.labels[level] for level in self.levels)
                self.leaves[key] = _merged(self.leaves[key], node) if key in self.leaves else node
        self.by_host = {key[-1]: key for key in self.leaves} if self.hostname_lowest else {}
        self.per_level: list[list[Key]] = [sorted({key[:n + 1] for key in self.leaves}) for n in range(len(self.levels))]
        self.children: dict[Key, list[Key]] = {}
        for n in range(1, len(self.levels)):
            for key in self.per_level[n]:
                self.children.setdefault(key[:-1], []).append(key)
        self.usage: dict[Key, dict[str, int]] = {}

    def leaf_of(self, values: Sequence[str]) -> Key | None:
        """The leaf an assignment's domain values name (a hostname alone, or every level)."""
        key = self.by_host.get(values[-1]) if self.hostname_lowest and len(values) == 1 else tuple(values)
        return key if key in self.leaves else None

    def add_usage(self, assignment: TopologyAssignment, per_pod: Mapping[str, int], sign: int = 1) -> None:
        """Count an admitted PodSet's pods (requests plus one ``pods`` each) on its leaves."""
        for domain in assignment.domains:
            leaf = self.leaf_of(domain.values)
            if leaf is None:
                continue
            used = self.usage.setdefault(leaf, {})
            for name, amount in {**per_pod, "pods": 1 + per_pod.get("pods", 0)}.items():
                used[name] = used.get(name, 0) + sign * amount * domain.count

    # ---- phase 1 ---------------------------------------------------------------------------

    def _feasible(self, node: TasNode, search: _Search) -> bool:
        """``FindFeasibleNodes``: taints, then nodeSelector, then required node affinity."""
        request = search.request
        tolerations = request.tolerations + self.flavor_tolerations
        for taint in node.taints:
            if taint.effect in ("NoSchedule", "NoExecute") and not any(t.tolerates(taint) for t in tolerations):
                text = taint_text(taint)
                search.excluded.taints[text] = search.excluded.taints.get(text, 0) + 1
                return False
        if not map_matches(request.node_selector, node.labels):
            search.excluded.node_selector += 1
            return False
        if request.affinity_terms and not any(term_matches(t, node.labels, node.name) for t in request.affinity_terms):
            search.excluded.affinity += 1
            return False
        return True

    def _fill(self, search: _Search, simulate_empty: bool, assumed: Mapping[Key, Mapping[str, int]]) -> None:
        per_pod = {**search.request.per_pod, "pods": 1 + search.request.per_pod.get("pods", 0)}
        search.excluded.total = len(self.leaves)
        for key, node in self.leaves.items():
            if self.hostname_lowest and not self._feasible(node, search):
                continue
            left = dict(node.free)
            for used in (() if simulate_empty else (self.usage.get(key, {}),)) + (assumed.get(key, {}),):
                for name, amount in used.items():
                    left[name] = left.get(name, 0) - amount
            fits, limiting = count_in(per_pod, left)
            if fits == 0 and limiting:
                search.excluded.resources[limiting] = search.excluded.resources.get(limiting, 0) + 1
            search.pods[key] = fits
        last = len(self.levels) - 1
        for level in range(last, -1, -1):
            for key in self.per_level[level]:
                kids = self.children.get(key, [])
                if kids:
                    search.pods[key] = sum(search.pods.get(k, 0) for k in kids)
                    search.slices[key] = sum(search.slices.get(k, 0) for k in kids)
                if level == search.slice_idx:
                    search.slices[key] = search.pods.get(key, 0) // search.request.slice_size

    # ---- phase 2 ---------------------------------------------------------------------------

    def not_fit(self, fit: int, wanted: int, slice_size: int, excluded: _Exclusions) -> str:
        """``notFitMessage``."""
        unit = "pod" if slice_size == 1 else "slice"
        text = (f'topology "{self.topology}" doesn\'t allow to fit any of {wanted} {unit}(s)' if fit == 0 else
                f'topology "{self.topology}" allows to fit only {fit} out of {wanted} {unit}(s)')
        reasons = excluded.text()
        return f"{text}. Total nodes: {excluded.total}; excluded: {reasons}" if reasons else text

    def _greedy(self, search: _Search, ordered: list[Key]) -> tuple[list[Key], int]:
        """Domains largest first, the last one best-fit; returns them and what is left."""
        chosen: list[Key] = []
        remaining = search.wanted
        for index, domain in enumerate(ordered):
            if remaining <= 0:
                break
            if not search.unconstrained and search.slices.get(domain, 0) >= remaining:
                domain = search.best_fit(ordered[index:], remaining, search.slices)
            chosen.append(domain)
            remaining -= search.slices.get(domain, 0)
        return chosen, remaining

    def _fit_level(self, level: int, search: _Search, required: bool) -> tuple[int, list[Key], str]:
        """``findLevelWithFitDomains``: the level and domains that hold every slice, or why not."""
        if not self.per_level[level]:
            return 0, [], f"no topology domains at level: {self.levels[level]}"
        ordered = search.order(self.per_level[level])
        wanted, size = search.wanted, search.request.slice_size
        if search.unconstrained:
            found = next((d for d in ordered if search.slices.get(d, 0) >= wanted), None)
            if found is not None:
                return level, [found], ""
            if required:
                return 0, [], self.not_fit(search.pods.get(ordered[-1], 0), wanted, size, search.excluded)
        top = ordered[0]
        if not search.unconstrained and search.slices.get(top, 0) >= wanted:
            top = search.best_fit(ordered, wanted, search.slices)
        if search.slices.get(top, 0) >= wanted:
            return level, [top], ""
        if required:
            return 0, [], self.not_fit(search.slices.get(top, 0), wanted, size, search.excluded)
        if level > 0 and not search.unconstrained:
            return self._fit_level(level - 1, search, required)
        chosen, remaining = self._greedy(search, ordered)
        if remaining > 0:
            return 0, [], self.not_fit(wanted - remaining, wanted, size, search.excluded)
        return level, chosen, ""

    def _to_minimum(self, search: _Search, domains: list[Key], count: int, size: int) -> list[Key]:
        """``updateCountsToMinimumGeneric`` (no leaders): the fewest domains for ``count`` pods,
        counted in slices of ``size`` (in pods when ``size`` is 0), each time best-fit for the
        rest; sets the chosen domains' counts to what they take."""
        counts = search.slices if size else search.pods
        unit = size or 1
        remaining = count // unit
        chosen: list[Key] = []
        for index, domain in enumerate(domains):
            if not search.unconstrained and counts.get(domain, 0) >= remaining:
                domain = search.best_fit(domains[index:], remaining, counts)
            take = min(counts.get(domain, 0), remaining)
            search.pods[domain] = take * unit
            counts[domain] = take
            chosen.append(domain)
            remaining -= take
            if remaining <= 0:
                break
        return chosen

    def _descend(self, search: _Search, level: int, domains: list[Key]) -> list[Key]:
        """Level by level down to the leaves: greedily across all chosen domains' children
        down to the slice level, then within each domain for its own pod count."""
        size = search.request.slice_size
        current = self._to_minimum(search, domains, search.request.count, size)
        last = len(self.levels) - 1
        while level < min(last, search.slice_idx):
            lower = search.order([k for d in current for k in self.children.get(d, [])])
            current = self._to_minimum(search, lower, search.request.count, size)
            level += 1
        while level < last:
            current = [k for d in current
                       for k in self._to_minimum(search, search.order(self.children.get(d, [])), search.pods.get(d, 0), 0)]
            level += 1
        return current

    def _assignment(self, search: _Search, leaves: list[Key]) -> TopologyAssignment:
        first = len(self.levels) - 1 if self.hostname_lowest else 0
        domains = tuple(DomainCount(key[first:], search.pods[key]) for key in sorted(leaves) if search.pods.get(key, 0) > 0)
        return TopologyAssignment(self.levels[first:], domains)

    def find(self, request: PodSetTopology, simulate_empty: bool = False,
             assumed: Mapping[Key, Mapping[str, int]] | None = None) -> tuple[TopologyAssignment | None, str]:
        """The assignment for ``request``, or None and the reason (see the module docstring)."""
        slice_only = request.slice_level is not None and not request.required and not request.preferred
        unconstrained = request.unconstrained or slice_only or not (request.required or request.preferred)
        key = request.required or request.preferred or (self.levels[0] if slice_only else self.levels[-1])
        if key not in self.levels:
            return None, f"no requested topology level: {key}"
        slice_key = request.slice_level or self.levels[-1]
        if slice_key not in self.levels:
            return None, f"no requested topology level for slices: {slice_key}"
        level, slice_idx = self.levels.index(key), self.levels.index(slice_key)
        if level > slice_idx:
            return None, f"podset slice topology {slice_key} is above the podset topology {key}"
        search = _Search(request, unconstrained, slice_idx)
        self._fill(search, simulate_empty, assumed or {})
        fit_level, domains, reason = self._fit_level(level, search, request.required is not None)
        if reason:
            return None, reason
        return self._assignment(search, self._descend(search, fit_level, domains)), ""
