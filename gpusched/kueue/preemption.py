"""Classical preemption target selection, as Kueue's ``pkg/scheduler/preemption/preemption.go``
(``classicalPreemptions``, ``fillBackWorkloads``) and ``classical/hierarchical_preemption.go``,
``classical/candidate_generator.go``.

Candidates use a flavor-resource the preemptor needs to preempt for and satisfy the policy
(``withinClusterQueue`` for its own ClusterQueue, ``reclaimWithinCohort`` for the others). The
other queues' are found by walking up from the preemptor's ClusterQueue: at each ancestor, the
queues of the subtrees not yet visited whose usage exceeds their quota (subtrees within quota
are skipped whole). Once the preemptor's request fits in the quota of a subtree on its path
(``QuantitiesFitInQuota``, with what each level keeps local), it has the *hierarchical advantage*
over every candidate found from there on: it reclaims quota its own subtree lends, whatever the
candidate's priority (``InCohortReclamation``). Before that, a candidate may only be taken
without borrowing (``InCohortReclamation``), or while borrowing under ``borrowWithinCohort``
when its priority is lower than the preemptor's and at most ``maxPriorityThreshold``
(``InCohortReclaimWhileBorrowing``). Own-queue candidates are ``InClusterQueue``.

Order: hierarchical candidates, then the others, then the own queue's; each list by lower
priority, then the most recently admitted, then UID (``CandidatesOrdering``). A candidate stays
valid only while its queue, and each ancestor below the common one, still exceeds its quota.
Targets are taken greedily, each removed from the simulated usage, until the preemptor fits
(first allowing borrowing, then not, or the other way round as upstream decides), then
minimised: walking back from the second-to-last, every target the preemptor fits without is
given back.

Worked example (``preemption_hierarchical_test.go`` "preempt with hierarchical advantage"): root
``r`` holds cohort ``c`` (2 CPUs) with queue ``q``, and queue ``q_borrowing`` (no quota) using
2 CPUs lent by ``c``. ``q`` asks for 2: ``q`` has no quota, but ``c`` does, so the request fits
in ``q``'s subtree: ``q`` has the advantage over ``q_borrowing`` and reclaims at any priority.

Neighbours: ``quota`` (the simulation mutates and restores usage), ``inputs.QueuePolicy``;
``fair_preemption`` (the other algorithm), ``targets`` (choosing one, and the oracle).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from gpusched.kueue.inputs import NEVER, QueuePolicy
from gpusched.kueue.quota import (CohortForest, FlavorResource, QuotaNode, add_usage, available,
                                  local_available, remove_usage)

IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
HUMAN_REASONS = {
    IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    IN_COHORT_RECLAMATION: "reclamation within the cohort",
    IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
    IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
}

# preemptionVariant (hierarchical_preemption.go)
WITHIN_CQ, HIERARCHICAL_RECLAIM, RECLAIM_WITHOUT_BORROWING, RECLAIM_WHILE_BORROWING = range(1, 5)
VARIANT_REASONS = {WITHIN_CQ: IN_CLUSTER_QUEUE, HIERARCHICAL_RECLAIM: IN_COHORT_RECLAMATION,
                   RECLAIM_WITHOUT_BORROWING: IN_COHORT_RECLAMATION,
                   RECLAIM_WHILE_BORROWING: IN_COHORT_RECLAIM_WHILE_BORROWING}


@dataclass(frozen=True)
class Admitted:
    """An admitted workload as preemption sees it."""

    key: str
    cluster_queue: str
    usage: Mapping[FlavorResource, int]
    priority: int = 0
    admitted_at: float = 0.0    # when QuotaReserved became True
    timestamp: float = 0.0      # queue-order timestamp (creation)
    uid: str = ""


@dataclass(frozen=True)
class Preemptor:
    """The incoming workload: its whole request, and the flavor-resources whose flavor the
    assigner chose in Preempt mode (``frsNeedPreemption``; empty: all of ``request``)."""

    cluster_queue: str
    request: Mapping[FlavorResource, int]
    priority: int = 0
    timestamp: float = 0.0
    needs: tuple[FlavorResource, ...] = ()

    def frs(self) -> list[FlavorResource]:
        return sorted(self.needs or self.request)


@dataclass(frozen=True)
class Target:
    workload: Admitted
    reason: str


def satisfies_policy(policy: str, preemptor: Preemptor, candidate: Admitted) -> bool:
    """``SatisfiesPreemptionPolicy``: Any, LowerPriority, LowerOrNewerEqualPriority."""
    if policy == "Any":
        return True
    if policy == "LowerPriority":
        return candidate.priority < preemptor.priority
    if policy == "LowerOrNewerEqualPriority":
        return candidate.priority < preemptor.priority or (
            candidate.priority == preemptor.priority and candidate.timestamp > preemptor.timestamp)
    return False


def candidate_order(wl: Admitted) -> tuple[int, float, str]:
    """``CandidatesOrdering`` among one kind of candidate: lower priority, the most recently
    admitted, then UID."""
    return wl.priority, -wl.admitted_at, wl.uid


class AdmittedIndex:
    """The admitted Workloads by key and by ClusterQueue, as Kueue's scheduler cache keeps them
    per ClusterQueue (``pkg/cache/scheduler/clusterqueue.go`` ``Workloads``, which
    ``candidate_generator.go`` walks for the queues it visits): each queue's list in
    ``candidate_order`` is kept until that queue changes, so a candidate search reads only the
    queues it visits instead of grouping every admitted Workload first. Iteration yields every
    Workload in the order it was admitted (a re-admitted one moves to the end), as the list
    this replaced, so stable sorts elsewhere break ties the same way."""

    def __init__(self, workloads: Iterable[Admitted] = ()) -> None:
        self._by_key: dict[str, Admitted] = {}
        self._by_queue: dict[str, dict[str, Admitted]] = {}
        self._ordered: dict[str, list[Admitted]] = {}
        for workload in workloads:
            self.add(workload)

    def add(self, workload: Admitted) -> None:
        """Count ``workload`` (one with the same key first leaves)."""
        self.discard(workload.key)
        self._by_key[workload.key] = workload
        self._by_queue.setdefault(workload.cluster_queue, {})[workload.key] = workload
        self._ordered.pop(workload.cluster_queue, None)

    def discard(self, key: str) -> Admitted | None:
        """Forget the Workload ``key``; returns it (None when absent)."""
        workload = self._by_key.pop(key, None)
        if workload is not None:
            del self._by_queue[workload.cluster_queue][key]
            self._ordered.pop(workload.cluster_queue, None)
        return workload

    def get(self, key: str) -> Admitted | None:
        return self._by_key.get(key)

    def in_queue(self, cluster_queue: str) -> Sequence[Admitted]:
        """``cluster_queue``'s admitted Workloads in ``candidate_order`` (ties: admission order)."""
        ordered = self._ordered.get(cluster_queue)
        if ordered is None:
            ordered = sorted(self._by_queue.get(cluster_queue, {}).values(), key=candidate_order)
            self._ordered[cluster_queue] = ordered
        return ordered

    def __iter__(self) -> Iterator[Admitted]:
        return iter(self._by_key.values())

    def __len__(self) -> int:
        return len(self._by_key)


def index_of(admitted: Iterable[Admitted]) -> AdmittedIndex:
    """``admitted`` as an index (itself when it is one)."""
    return admitted if isinstance(admitted, AdmittedIndex) else AdmittedIndex(admitted)


def uses_any(wl: Admitted, frs: Sequence[FlavorResource]) -> bool:
    """``WorkloadUsesResources``."""
    return any(wl.usage.get(fr, 0) > 0 for fr in frs)


def within_nominal(node: QuotaNode, frs: Sequence[FlavorResource]) -> bool:
    """``IsWithinNominalInResources``: usage at most the subtree quota in every one of ``frs``."""
    return all(node.usage.get(fr, 0) <= node.subtree_quota.get(fr, 0) for fr in frs)


def fits_in_quota(node: QuotaNode, request: Mapping[FlavorResource, int]) -> tuple[bool, dict[FlavorResource, int]]:
    """``QuantitiesFitInQuota``: whether ``request`` fits in ``node``'s subtree quota, and what
    of it is left for the parent once ``node``'s free local quota is used."""
    fits = all(node.usage.get(fr, 0) + v <= node.subtree_quota.get(fr, 0) for fr, v in request.items())
    return fits, {fr: max(0, v - local_available(node, fr)) for fr, v in request.items()}


def fits(node: QuotaNode, request: Mapping[FlavorResource, int], allow_borrowing: bool) -> bool:
    """``workloadFits`` (quota only)."""
    for fr, amount in request.items():
        if not allow_borrowing and node.borrowing_with(fr, amount):
            return False
        if amount > available(node, fr):
            return False
    return True


def change_usage(forest: CohortForest, workload: Admitted,
                 change: Callable[[QuotaNode, FlavorResource, int], None]) -> None:
    for fr, amount in workload.usage.items():
        change(forest.queues[workload.cluster_queue], fr, amount)


@contextmanager
def removed(forest: CohortForest, workloads: Sequence[Admitted]) -> Iterator[None]:
    """Simulate ``workloads`` gone, and restore their usage afterwards."""
    for wl in workloads:
        change_usage(forest, wl, remove_usage)
    try:
        yield
    finally:
        for wl in workloads:
            change_usage(forest, wl, add_usage)


def fill_back(forest: CohortForest, targets: list[Target], still_fits: Callable[[], bool]) -> list[Target]:
    """``fillBackWorkloads``, with every target's usage in place: walk back from the
    second-to-last, keep only what is needed."""
    kept = list(targets)
    for index in range(len(targets) - 2, -1, -1):
        trial = [t.workload for t in kept if t is not targets[index]]
        with removed(forest, trial):
            if still_fits():
                kept.remove(targets[index])
    return kept


@dataclass(frozen=True)
class Candidate:
    workload: Admitted
    lca: QuotaNode | None      # the subtree root it was found under (None: own queue)
    variant: int


class ClassicalPreemption:
    """Target selection for one preemptor in one forest (usage restored on return)."""

    def __init__(self, forest: CohortForest, policies: Mapping[str, QueuePolicy],
                 admitted: Iterable[Admitted], preemptor: Preemptor) -> None:
        self.forest, self.preemptor = forest, preemptor
        self.policy = policies[preemptor.cluster_queue]
        self.node = forest.queues[preemptor.cluster_queue]
        self.frs = preemptor.frs()
        self.admitted = index_of(admitted)
        self.hierarchy, self.others = self._collect_hierarchical()
        self.candidates = self.hierarchy + self.others + self._own()

    def _classify(self, wl: Admitted, advantage: bool) -> int:
        """``classifyPreemptionVariant`` (0: never)."""
        own = wl.cluster_queue == self.preemptor.cluster_queue
        policy = self.policy.within_cluster_queue if own else self.policy.reclaim_within_cohort
        if not uses_any(wl, self.frs) or not satisfies_policy(policy, self.preemptor, wl):
            return 0
        if own:
            return WITHIN_CQ
        if advantage:
            return HIERARCHICAL_RECLAIM
        threshold = self.policy.borrow_max_priority
        if self.policy.borrow_within_cohort == NEVER or wl.priority >= self.preemptor.priority or (
                threshold is not None and wl.priority > threshold):
            return RECLAIM_WITHOUT_BORROWING
        return RECLAIM_WHILE_BORROWING

    def _from_queue(self, queue: str, lca: QuotaNode | None, advantage: bool) -> list[Candidate]:
        found = []
        for wl in self.admitted.in_queue(queue):
            variant = self._classify(wl, advantage)
            if variant:
                found.append(Candidate(wl, lca, variant))
        return found

    def _own(self) -> list[Candidate]:
        if self.policy.within_cluster_queue == NEVER:
            return []
        return self._from_queue(self.preemptor.cluster_queue, None, False)

    def _collect_hierarchical(self) -> tuple[list[Candidate], list[Candidate]]:
        """``collectCandidatesForHierarchicalReclaim``: (with the advantage, without)."""
        hierarchy: list[Candidate] = []
        others: list[Candidate] = []
        if self.node.parent is None or self.policy.reclaim_within_cohort == NEVER:
            return hierarchy, others
        advantage, remaining = fits_in_quota(self.node, self.preemptor.request)
        previous: QuotaNode | None = None
        for subtree_root in self.node.path_to_root():
            self._collect_in_subtree(subtree_root, subtree_root, previous, advantage,
                                     hierarchy if advantage else others)
            subtree_fits, remaining = fits_in_quota(subtree_root, remaining)
            advantage = advantage or subtree_fits
            previous = subtree_root
        order = lambda c: candidate_order(c.workload)  # noqa: E731
        return sorted(hierarchy, key=order), sorted(others, key=order)

    def _collect_in_subtree(self, current: QuotaNode, subtree_root: QuotaNode, skip: QuotaNode | None,
                            advantage: bool, out: list[Candidate]) -> None:
        """``collectCandidatesInSubtree``: queues over quota, skipping subtrees within quota
        and the one already visited (children by name: upstream's order is a set's)."""
        children = sorted(current.children, key=lambda n: n.name)
        for child in children:
            if child.is_cohort and child is not skip and not within_nominal(child, self.frs):
                self._collect_in_subtree(child, subtree_root, skip, advantage, out)
        for child in children:
            if not child.is_cohort and child is not self.node and not within_nominal(child, self.frs):
                out.extend(self._from_queue(child.name, subtree_root, advantage))

    def _valid(self, candidate: Candidate, borrow: bool) -> bool:
        """``candidateIsValid``, on the usage left by the targets taken so far."""
        if candidate.variant == WITHIN_CQ:
            return True
        if borrow and candidate.variant == RECLAIM_WITHOUT_BORROWING:
            return False
        node: QuotaNode | None = self.forest.queues[candidate.workload.cluster_queue]
        while node is not None and node is not candidate.lca:
            if within_nominal(node, self.frs):
                return False
            node = node.parent
        return True

    def _attempts(self) -> tuple[bool, ...]:
        forbidden = self.policy.borrow_within_cohort == NEVER
        under_nominal = all(self.node.usage.get(fr, 0) < (q.nominal if (q := self.node.quotas.get(fr)) else 0)
                            for fr in self.frs)
        if not (self.hierarchy or self.others) or (forbidden and not under_nominal):
            return (True,)
        if forbidden and not self.hierarchy:
            return (False, True)
        return (True, False)

    def _attempt(self, borrow: bool) -> list[Target]:
        """Candidates in order, each taken out of the usage as it is chosen (so the next is judged
        without it), until the preemptor fits; the usage is restored before minimising."""
        targets: list[Target] = []
        found = False
        try:
            for candidate in self.candidates:
                if not self._valid(candidate, borrow):
                    continue
                targets.append(Target(candidate.workload, VARIANT_REASONS[candidate.variant]))
                change_usage(self.forest, candidate.workload, remove_usage)
                if fits(self.node, self.preemptor.request, borrow):
                    found = True
                    break
        finally:
            for target in targets:
                change_usage(self.forest, target.workload, add_usage)
        if not found:
            return []
        return fill_back(self.forest, targets, lambda: fits(self.node, self.preemptor.request, borrow))

    def targets(self) -> list[Target]:
        for borrow in self._attempts():
            found = self._attempt(borrow)
            if found:
                return found
        return []


def preemption_message(preemptor_uid: str, job_uid: str, reason: str, preemptor_path: str,
                       preemptee_path: str) -> str:
    """The Evicted/Preempted condition message on a victim (``preemptionMessage``)."""
    return (f"Preempted to accommodate a workload (UID: {preemptor_uid or 'UNKNOWN'}, JobUID: "
            f"{job_uid or 'UNKNOWN'}) due to {HUMAN_REASONS.get(reason, 'UNKNOWN')}; preemptor path: "
            f"{preemptor_path or 'UNKNOWN'}; preemptee path: {preemptee_path or 'UNKNOWN'}")
