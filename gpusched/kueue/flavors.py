"""The flavor assigner, as Kueue's ``pkg/scheduler/flavorassigner/flavorassigner.go``.

Per PodSet and per resource group, the ClusterQueue's flavors are tried in their listed order:
eligibility first (flavor found, taints tolerated, node affinity matching the flavor's labels),
then quota for each covered resource (``fits_quota``): NoFit (``ExceedsMaxQuota`` past the most
the queue could ever get), Fit (with its borrowing level), or a preemption mode from the
preemption oracle when preemption could help (``WaitingForQuota`` otherwise). flavorFungibility
decides whether the search stops at a flavor or keeps the best one by ``is_preferred``.

Reasons of one PodSet are sorted and joined with ", "; PodSets with "; " (``Assignment.message``).

Neighbours: ``quota`` (available, potentialAvailable, borrowing level), ``inputs`` (the parsed
ClusterQueue, flavors, PodSets), ``amounts`` (quantities in messages).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from gpusched.kueue.amounts import amount_string
from gpusched.kueue.inputs import (NEVER, TRY_NEXT_FLAVOR, Flavor, PodSetRequest, QueuePolicy,
                                   ResourceGroup)
from gpusched.kueue.tas import TopologyAssignment
from gpusched.kueue.quota import (FlavorResource, QuotaNode, available, lowest_fitting_subtree,
                                  potential_available)
from gpusched.objects.selectors import map_matches, term_matches
from gpusched.objects.types import NodeSelectorTerm, Taint

# preemptionMode, worst to best (flavorassigner.go)
NO_FIT, NO_CANDIDATES, PREEMPT, RECLAIM, FIT = range(5)
MODE_NAMES = {NO_FIT: "NoFit", NO_CANDIDATES: "Preempt", PREEMPT: "Preempt", RECLAIM: "Preempt", FIT: "Fit"}

NO_MATCHING_FLAVOR = "NoMatchingFlavor"
EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
WAITING_FOR_QUOTA = "WaitingForQuota"
_SEVERITY = {NO_MATCHING_FLAVOR: 4, EXCEEDS_MAX_QUOTA: 3, WAITING_FOR_QUOTA: 2, "TopologyPlacementFailed": 1, "": 0}

PreemptionOracle = Callable[[FlavorResource, int], tuple[int, int]]
"""(flavor-resource, quantity) -> (NO_CANDIDATES | PREEMPT | RECLAIM, borrowing level after)."""


def no_candidates(fr: FlavorResource, val: int) -> tuple[int, int]:
    """An oracle that finds no victims (nothing is admitted to preempt)."""
    return NO_CANDIDATES, 0


def most_severe(a: str, b: str) -> str:
    return a if _SEVERITY.get(a, 0) >= _SEVERITY.get(b, 0) else b


@dataclass(frozen=True)
class Mode:
    """``granularMode``: a preemption mode and a borrowing level (0 = no borrowing)."""

    preemption: int
    borrow: int


WORST, BEST = Mode(NO_FIT, 1 << 30), Mode(FIT, 0)


def is_preferred(a: Mode, b: Mode, policy: QueuePolicy) -> bool:
    """Whether ``a`` beats ``b``: noFit loses, no-candidates ranks below viable modes, then
    ``BorrowingOverPreemption`` (the default) compares the preemption mode first and
    ``PreemptionOverBorrowing`` the borrowing level first."""
    if a.preemption == NO_FIT:
        return False
    if b.preemption == NO_FIT:
        return True
    if (a.preemption == NO_CANDIDATES) != (b.preemption == NO_CANDIDATES):
        return a.preemption != NO_CANDIDATES
    if policy.preference == "PreemptionOverBorrowing" and a.borrow != b.borrow:
        return a.borrow < b.borrow
    if a.preemption != b.preemption:
        return a.preemption > b.preemption
    return a.borrow < b.borrow


def should_try_next_flavor(mode: Mode, policy: QueuePolicy) -> bool:
    if mode.preemption in (NO_FIT, NO_CANDIDATES):
        return True
    if mode.preemption in (PREEMPT, RECLAIM) and policy.when_can_preempt == TRY_NEXT_FLAVOR:
        return True
    return mode.borrow > 0 and policy.when_can_borrow == TRY_NEXT_FLAVOR


@dataclass(frozen=True)
class FlavorChoice:
    name: str
    mode: int
    borrow: int


@dataclass(frozen=True)
class PodSetAssignment:
    name: str
    count: int
    requests: Mapping[str, int]
    flavors: Mapping[str, FlavorChoice]
    reasons: tuple[str, ...] = ()
    no_fit_reason: str = ""
    topology: TopologyAssignment | None = None     # where TAS put the pods (``tas_cycle``)

    @property
    def assigned(self) -> bool:
        return bool(self.flavors) or not self.requests

    def message(self) -> str:
        return ", ".join(sorted(self.reasons))


@dataclass(frozen=True)
class Assignment:
    podsets: tuple[PodSetAssignment, ...]

    def mode(self) -> int:
        """The representative mode: NO_FIT if a PodSet got no flavor, else the worst choice."""
        if any(not podset.assigned for podset in self.podsets):
            return NO_FIT
        modes = [choice.mode for podset in self.podsets for choice in podset.flavors.values()]
        return min(modes, default=FIT)

    def borrowing(self) -> int:
        return max((c.borrow for ps in self.podsets for c in ps.flavors.values()), default=0)

    def message(self) -> str:
        """``couldn't assign flavors to pod set <name>: <sorted reasons>``, PodSets joined by "; "."""
        return "; ".join(f"couldn't assign flavors to pod set {ps.name}: {ps.message()}"
                         for ps in self.podsets if ps.reasons)

    def no_fit_reason(self) -> str:
        reason = ""
        for podset in self.podsets:
            reason = most_severe(reason, podset.no_fit_reason)
        return reason or WAITING_FOR_QUOTA

    def usage(self) -> dict[FlavorResource, int]:
        total: dict[FlavorResource, int] = {}
        for podset in self.podsets:
            for resource, choice in podset.flavors.items():
                fr = (choice.name, resource)
                total[fr] = total.get(fr, 0) + podset.requests.get(resource, 0)
        return total


@dataclass
class _Search:
    """One resource group's search over its flavors for one PodSet."""

    reasons: list[str] = field(default_factory=list)
    no_fit_reason: str = ""
    best: dict[str, FlavorChoice] | None = None
    best_mode: Mode = WORST


def taint_string(taint: Taint) -> str:
    """A core/v1 Taint as Go's ``%s`` prints the struct (it has ``ToString``, no ``String``):
    ``{instance spot NoSchedule <nil>}`` (flavorassigner_test.go "fits while skipping tainted flavor")."""
    return f"{{{taint.key} {taint.value} {taint.effect} <nil>}}"


def _affinity_matches(podset: PodSetRequest, flavor: Flavor) -> bool:
    """The PodSet's nodeSelector and required terms, kept to this flavor's label keys, match
    its labels (a term left empty makes the terms match anything)."""
    keys = flavor.node_labels.keys()
    selector = {k: v for k, v in podset.node_selector.items() if k in keys}
    if not map_matches(selector, flavor.node_labels):
        return False
    terms: list[NodeSelectorTerm] = []
    for term in podset.affinity_terms:
        kept = tuple(req for req in term.match_expressions if req.key in keys)
        if not kept:
            return True
        terms.append(NodeSelectorTerm(kept))
    return not terms or any(term_matches(term, flavor.node_labels) for term in terms)


def tas_requested(podset: PodSetRequest, tas_only: bool) -> bool:
    """``isTASRequested``: a level, unconstrained or a slice layer asked for, or implied by a
    ClusterQueue whose flavors are all TAS flavors."""
    return (podset.topology is not None and podset.topology.explicit) or tas_only


def tas_mismatch(flavor: Flavor, podset: PodSetRequest, tas_only: bool) -> str:
    """``checkPodSetAndFlavorMatchForTAS`` ("" when the flavor suits the PodSet)."""
    if not tas_requested(podset, tas_only):
        return f'Flavor "{flavor.name}" supports only TopologyAwareScheduling' if flavor.topology_name else ""
    if not (podset.topology is not None and podset.topology.explicit):
        return ""
    if flavor.topology_name is None:
        return f'Flavor "{flavor.name}" does not support TopologyAwareScheduling'
    if flavor.topology_levels is None:
        return f'Flavor "{flavor.name}" information missing in TAS cache'
    if not all(key in flavor.topology_levels for key in podset.topology.level_keys()):
        return f'Flavor "{flavor.name}" does not contain the requested level'
    return ""


def flavor_mismatch(name: str, flavor: Flavor | None, podset: PodSetRequest, tas_only: bool = False) -> str:
    """Why ``flavor`` cannot hold ``podset`` ("" when it can): ``checkFlavorForPodSets``."""
    if flavor is None:
        return f"flavor {name} not found"
    topology = tas_mismatch(flavor, podset, tas_only)
    if topology:
        return topology
    tolerations = podset.tolerations + flavor.tolerations
    for taint in flavor.node_taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not any(t.tolerates(taint) for t in tolerations):
            return f"untolerated taint {taint_string(taint)} in flavor {name}"
    if not _affinity_matches(podset, flavor):
        return f"flavor {name} doesn't match node affinity"
    return ""


@dataclass(frozen=True)
class FlavorAssigner:
    """Assigns flavors to a Workload's PodSets in one ClusterQueue (``AssignFlavors``)."""

    policy: QueuePolicy
    node: QuotaNode
    flavors: Mapping[str, Flavor]
    oracle: PreemptionOracle = no_candidates
    fair_sharing: bool = False
    tas_only: bool = False

    def _can_preempt(self, val: int, nominal: int, may_reclaim: bool) -> bool:
        """Whether preemption may make room (``fitsResourceQuota``): the request is within the
        nominal quota, a reclaim is possible in the hierarchy, or preemption while borrowing is
        on (``canPreemptWhileBorrowing``). ``withinClusterQueue`` alone does not let a request
        past the nominal quota preempt ("A workload is only eligible to do preemptions if it fits
        fully within nominal quota")."""
        while_borrowing = self.policy.borrow_within_cohort != NEVER or (
            self.fair_sharing and self.policy.reclaim_within_cohort != NEVER)
        return nominal >= val or may_reclaim or while_borrowing

    def fits_quota(self, fr: FlavorResource, assumed: int, request: int) -> tuple[Mode, str, str]:
        """``fitsResourceQuota``: the mode, the reason string ("" on Fit), the NoFit reason."""
        resource = fr[1]
        most = potential_available(self.node, fr)
        if assumed + request > most:
            return WORST, (
                f"insufficient quota for {resource} in flavor {fr[0]}, previously considered podsets "
                f"requests ({amount_string(resource, assumed)}) + current podset request "
                f"({amount_string(resource, request)}) > maximum capacity ({amount_string(resource, most)})"
            ), EXCEEDS_MAX_QUOTA
        val = assumed + request
        free = available(self.node, fr)
        borrow, may_reclaim = lowest_fitting_subtree(self.node, fr, val)
        if val <= free:
            return Mode(FIT, borrow), "", ""
        reason = (f"insufficient unused quota for {resource} in flavor {fr[0]}, "
                  f"{amount_string(resource, val - free)} more needed")
        quota = self.node.quotas.get(fr)
        if self._can_preempt(val, quota.nominal if quota else 0, may_reclaim):
            possibility, borrow_after = self.oracle(fr, val)
            return Mode(possibility, borrow_after), reason, ""
        return Mode(NO_FIT, borrow), reason, WAITING_FOR_QUOTA

    def _try_flavor(self, name: str, requests: Mapping[str, int], assumed: Mapping[FlavorResource, int],
                    search: _Search) -> tuple[Mode, dict[str, FlavorChoice]]:
        """One flavor for every resource of the group: the worst mode across them."""
        mode, choices = BEST, {}
        for resource in sorted(requests):
            fr = (name, resource)
            got, reason, no_fit = self.fits_quota(fr, assumed.get(fr, 0), requests[resource])
            if reason:
                search.reasons.append(reason)
                search.no_fit_reason = most_severe(search.no_fit_reason, no_fit)
            if is_preferred(mode, got, self.policy):
                mode = got
            if mode.preemption != NO_FIT:
                choices[resource] = FlavorChoice(name, FIT if got.preemption == FIT else PREEMPT, got.borrow)
        return mode, choices

    def _search_group(self, podset: PodSetRequest, group: ResourceGroup,
                      assumed: Mapping[FlavorResource, int]) -> _Search:
        """``findFlavorForPodSets`` for one group (flavors in listed order, fungibility)."""
        search = _Search()
        requests = {r: v for r, v in podset.requests.items() if r in group.covered}
        for name in group.flavors:
            mismatch = flavor_mismatch(name, self.flavors.get(name), podset, self.tas_only)
            if mismatch:
                search.reasons.append(mismatch)
                search.no_fit_reason = most_severe(search.no_fit_reason, NO_MATCHING_FLAVOR)
                continue
            mode, choices = self._try_flavor(name, requests, assumed, search)
            if not should_try_next_flavor(mode, self.policy):
                search.best, search.best_mode = choices, mode
                break
            if is_preferred(mode, search.best_mode, self.policy):
                search.best, search.best_mode = choices, mode
        if search.best_mode.preemption == FIT:
            search.reasons = []
        return search

    def _assign_podset(self, podset: PodSetRequest, assumed: Mapping[FlavorResource, int]) -> PodSetAssignment:
        flavors: dict[str, FlavorChoice] = {}
        reasons: list[str] = []
        done: set[str] = set()
        for resource in sorted(podset.requests):
            if resource in done or (podset.requests[resource] == 0 and self.policy.group_of(resource) is None):
                continue
            group = self.policy.group_of(resource)
            if group is None:
                return PodSetAssignment(podset.name, podset.count, podset.requests, {},
                                        (f"resource {resource} unavailable in ClusterQueue",), NO_MATCHING_FLAVOR)
            done |= group.covered
            search = self._search_group(podset, group, assumed)
            if search.best is None:
                return PodSetAssignment(podset.name, podset.count, podset.requests, {},
                                        tuple(search.reasons), search.no_fit_reason or NO_MATCHING_FLAVOR)
            flavors.update(search.best)
            reasons += search.reasons
        return PodSetAssignment(podset.name, podset.count, podset.requests, flavors, tuple(reasons))

    def assign(self, podsets: Sequence[PodSetRequest]) -> Assignment:
        """Every PodSet in order; the first that gets no flavor ends the assignment (NoFit)."""
        assumed: dict[FlavorResource, int] = {}
        done: list[PodSetAssignment] = []
        counts_pods = self.policy.group_of("pods") is not None
        for podset in podsets:
            if counts_pods:
                podset = replace(podset, requests={**podset.requests, "pods": podset.count})
            result = self._assign_podset(podset, assumed)
            done.append(result)
            if not result.assigned:
                break
            for resource, choice in result.flavors.items():
                fr = (choice.name, resource)
                assumed[fr] = assumed.get(fr, 0) + podset.requests.get(resource, 0)
        return Assignment(tuple(done))
