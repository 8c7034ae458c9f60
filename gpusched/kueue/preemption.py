"""Classical preemption target selection, as Kueue's ``pkg/scheduler/preemption/preemption.go``
(``classicalPreemptions``, ``fillBackWorkloads``) and ``preemption_oracle.go``.

Candidates: admitted workloads that use a flavor-resource the preemptor needs to preempt for,
from its own ClusterQueue when ``withinClusterQueue`` allows them (``InClusterQueue``), and from
other ClusterQueues of the cohort tree that are borrowing in those flavor-resources when
``reclaimWithinCohort`` allows them. Ordered (``CandidatesOrdering``): other queues' first, then
lower priority, then the most recently admitted, then UID.

Targets are taken greedily, each removed from the simulated usage, until the preemptor fits
(first allowing borrowing, then not, or the other way round as upstream decides); then the set
is minimised by adding targets back in reverse and dropping every one the preemptor still fits
without. While the preemptor would borrow, another queue's candidate is only taken under
``borrowWithinCohort`` (lower priority, at most ``maxPriorityThreshold``):
``InCohortReclaimWhileBorrowing``; otherwise ``InCohortReclamation``.

Simplification: the hierarchical advantage of ``classical/hierarchical_preemption.go`` is read
as "the preemptor reclaims without borrowing"; on one-level cohorts the two agree.

Neighbours: ``quota`` (the simulation mutates and restores usage), ``inputs.QueuePolicy``;
``FlavorAssigner`` calls ``oracle`` through ``flavors.PreemptionOracle``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from gpusched.kueue.flavors import NO_CANDIDATES, PREEMPT, RECLAIM, PreemptionOracle
from gpusched.kueue.inputs import NEVER, QueuePolicy
from gpusched.kueue.quota import (CohortForest, FlavorResource, QuotaNode, add_usage, available,
                                  lowest_fitting_subtree, remove_usage)

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
    cluster_queue: str
    request: Mapping[FlavorResource, int]
    priority: int = 0
    timestamp: float = 0.0


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


def _borrowing(node: QuotaNode, frs: Sequence[FlavorResource]) -> bool:
    return node.parent is not None and any(node.usage.get(fr, 0) > node.subtree_quota.get(fr, 0) for fr in frs)


def _change_usage(forest: CohortForest, workload: Admitted,
                  change: Callable[[QuotaNode, FlavorResource, int], None]) -> None:
    for fr, amount in workload.usage.items():
        change(forest.queues[workload.cluster_queue], fr, amount)


@contextmanager
def _removed(forest: CohortForest, workloads: Sequence[Admitted]) -> Iterator[None]:
    """Simulate ``workloads`` gone, and restore their usage afterwards."""
    for wl in workloads:
        for fr, amount in wl.usage.items():
            remove_usage(forest.queues[wl.cluster_queue], fr, amount)
    try:
        yield
    finally:
        for wl in workloads:
            for fr, amount in wl.usage.items():
                add_usage(forest.queues[wl.cluster_queue], fr, amount)


class ClassicalPreemption:
    """Target selection for one preemptor in one forest (usage restored on return)."""

    def __init__(self, forest: CohortForest, policies: Mapping[str, QueuePolicy],
                 admitted: Sequence[Admitted], preemptor: Preemptor) -> None:
        self.forest, self.preemptor = forest, preemptor
        self.policy = policies[preemptor.cluster_queue]
        self.node = forest.queues[preemptor.cluster_queue]
        self.frs = sorted(preemptor.request)
        self.candidates = self._candidates(admitted)

    def _candidates(self, admitted: Sequence[Admitted]) -> list[Admitted]:
        own, others = [], []
        mine, frs, reclaim = self.preemptor.cluster_queue, self.frs, self.policy.reclaim_within_cohort
        root = self.node.root() if self.node.parent is not None else None
        in_tree: dict[str, bool] = {}    # per ClusterQueue: in the preemptor's cohort tree
        for wl in admitted:
            usage = wl.usage
            for fr in frs:
                if usage.get(fr, 0) > 0:
                    break
            else:
                continue                 # uses nothing the preemptor needs
            cq = wl.cluster_queue
            if cq == mine:
                if satisfies_policy(self.policy.within_cluster_queue, self.preemptor, wl):
                    own.append(wl)
                continue
            if root is None or reclaim == NEVER:
                continue
            if cq not in in_tree:
                other = self.forest.queues.get(cq)
                in_tree[cq] = other is not None and other.root() is root
            if in_tree[cq] and satisfies_policy(reclaim, self.preemptor, wl):
                others.append(wl)
        order = lambda wl: (wl.priority, -wl.admitted_at, wl.uid)  # noqa: E731
        return sorted(others, key=order) + sorted(own, key=order)

    def _fits(self, allow_borrowing: bool) -> bool:
        for fr, amount in self.preemptor.request.items():
            if not allow_borrowing and self.node.borrowing_with(fr, amount):
                return False
            if amount > available(self.node, fr):
                return False
        return True

    def _valid(self, wl: Admitted, borrow: bool) -> str:
        """The reason ``wl`` may be taken now ("" when it may not)."""
        if wl.cluster_queue == self.preemptor.cluster_queue:
            return IN_CLUSTER_QUEUE
        if not _borrowing(self.forest.queues[wl.cluster_queue], self.frs):
            return ""
        if not borrow:
            return IN_COHORT_RECLAMATION
        threshold = self.policy.borrow_max_priority
        if self.policy.borrow_within_cohort == NEVER or wl.priority >= self.preemptor.priority or (
                threshold is not None and wl.priority > threshold):
            return ""
        return IN_COHORT_RECLAIM_WHILE_BORROWING

    def _attempts(self) -> tuple[bool, ...]:
        own = self.preemptor.cluster_queue
        no_others = all(wl.cluster_queue == own for wl in self.candidates)
        forbidden = self.policy.borrow_within_cohort == NEVER
        under_nominal = all(self.node.usage.get(fr, 0) < self.node.quotas[fr].nominal
                            for fr in self.frs if fr in self.node.quotas)
        if no_others or (forbidden and not under_nominal):
            return (True,)
        return (False, True) if forbidden else (True, False)

    def _attempt(self, borrow: bool) -> list[Target]:
        """Candidates in order, each taken out of the usage as it is chosen (so the next is judged
        without it), until the preemptor fits; the usage is restored before minimising."""
        targets: list[Target] = []
        fits = False
        try:
            for wl in self.candidates:
                reason = self._valid(wl, borrow)
                if not reason:
                    continue
                targets.append(Target(wl, reason))
                _change_usage(self.forest, wl, remove_usage)
                if self._fits(borrow):
                    fits = True
                    break
        finally:
            for target in targets:
                _change_usage(self.forest, target.workload, add_usage)
        return self._minimise(targets, borrow) if fits else []

    def _minimise(self, targets: list[Target], borrow: bool) -> list[Target]:
        """``fillBackWorkloads``: walk back from the second-to-last, keep only what is needed."""
        kept = list(targets)
        for index in range(len(targets) - 2, -1, -1):
            trial = [t.workload for t in kept if t is not targets[index]]
            with _removed(self.forest, trial):
                if self._fits(borrow):
                    kept.remove(targets[index])
        return kept

    def targets(self) -> list[Target]:
        for borrow in self._attempts():
            found = self._attempt(borrow)
            if found:
                return found
        return []


def oracle(forest: CohortForest, policies: Mapping[str, QueuePolicy], admitted: Sequence[Admitted],
           cluster_queue: str, priority: int = 0, timestamp: float = 0.0) -> PreemptionOracle:
    """A ``flavors.PreemptionOracle`` for one preemptor (``SimulatePreemption``)."""
    node = forest.queues[cluster_queue]

    def simulate(fr: FlavorResource, quantity: int) -> tuple[int, int]:
        preemptor = Preemptor(cluster_queue, {fr: quantity}, priority, timestamp)
        found = ClassicalPreemption(forest, policies, admitted, preemptor).targets()
        if not found:
            return NO_CANDIDATES, lowest_fitting_subtree(node, fr, quantity)[0]
        with _removed(forest, [t.workload for t in found]):
            borrow = lowest_fitting_subtree(node, fr, quantity)[0]
        own = any(t.workload.cluster_queue == cluster_queue for t in found)
        return (PREEMPT if own else RECLAIM), borrow
    return simulate


def preemption_message(preemptor_uid: str, job_uid: str, reason: str, preemptor_path: str,
                       preemptee_path: str) -> str:
    """The Evicted/Preempted condition message on a victim (``preemptionMessage``)."""
    return (f"Preempted to accommodate a workload (UID: {preemptor_uid or 'UNKNOWN'}, JobUID: "
            f"{job_uid or 'UNKNOWN'}) due to {HUMAN_REASONS[reason]}; preemptor path: "
            f"{preemptor_path or 'UNKNOWN'}; preemptee path: {preemptee_path or 'UNKNOWN'}")
