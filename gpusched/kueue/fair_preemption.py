"""Fair-sharing preemption, as Kueue's ``pkg/scheduler/preemption/preemption.go``
(``fairPreemptions``, ``runFirstFsStrategy``, ``runSecondFsStrategy``) and
``preemption/fairsharing/`` (the target ordering, the almost-least-common ancestors, the
strategies).

Candidates are the preemptor's own queue's (``withinClusterQueue``) and those of every queue of
its cohort tree that borrows in a flavor-resource the preemptor needs (``reclaimWithinCohort``);
``borrowWithinCohort`` plays no part. With the preemptor's request added to its queue, the
queues are visited from the root down, always into the child with the highest share (a child
neither borrowing nor on the preemptor's path is pruned; a cohort wins ties against a queue):

- own queue: its candidates go in priority order (``InClusterQueue``);
- the preemptor's queue within its nominal quota in every contested flavor-resource
  (``FairSharingPreemptWithinNominal``, on by default): the candidate is reclaimed
  (``InCohortReclamation``);
- otherwise the first strategy compares the shares of the two *almost-LCAs* (the children of
  the lowest cohort holding both queues): ``LessThanOrEqualToFinalShare`` takes a candidate when
  the preemptor's share with its request is at most the target's after losing the candidate,
  ``LessThanInitialShare`` when it is below the target's share before (``InCohortFairSharing``).
  After each taken candidate the walk starts again from the root (shares changed).

When the first strategy ends without room, the second (if configured) retries the candidates the
first refused, one per queue. Then the targets are minimised as in classical preemption.

Neighbours: ``preemption`` (types, usage simulation, minimising), ``fair_sharing`` (shares).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from gpusched.kueue.fair_sharing import (LESS_THAN_INITIAL_SHARE, NEGATIVE, Share, compare,
                                         dominant_resource_share)
from gpusched.kueue.inputs import NEVER, QueuePolicy
from gpusched.kueue.preemption import (IN_CLUSTER_QUEUE, IN_COHORT_FAIR_SHARING, IN_COHORT_RECLAMATION,
                                       Admitted, Preemptor, Target, candidate_order, change_usage,
                                       fill_back, fits, satisfies_policy, uses_any)
from gpusched.kueue.quota import CohortForest, FlavorResource, QuotaNode, add_usage, remove_usage


def strategy_passes(strategy: str, preemptor_new: Share, target_old: Share, target_new: Share) -> bool:
    """Rule S2-a (``LessThanOrEqualToFinalShare``) or S2-b (``LessThanInitialShare``)."""
    if strategy == LESS_THAN_INITIAL_SHARE:
        return compare(preemptor_new, target_old) < 0
    return compare(preemptor_new, target_new) <= 0


def _over_nominal(node: QuotaNode, frs: Sequence[FlavorResource]) -> bool:
    """A ClusterQueue's ``Borrowing`` in any of ``frs``: usage past its nominal quota."""
    return any(node.usage.get(fr, 0) > (q.nominal if (q := node.quotas.get(fr)) else 0) for fr in frs)


def _borrowing_in(node: QuotaNode, frs: Sequence[FlavorResource]) -> bool:
    """``cqIsBorrowing``: a ClusterQueue with a parent using more than its nominal quota."""
    return node.parent is not None and _over_nominal(node, frs)


def find_candidates(forest: CohortForest, policy: QueuePolicy, admitted: Iterable[Admitted],
                    preemptor: Preemptor) -> list[Admitted]:
    """``findCandidates``, sorted by ``CandidatesOrdering`` (other queues' first)."""
    frs = preemptor.frs()
    node = forest.queues[preemptor.cluster_queue]
    root = node.root() if node.parent is not None else None
    own, others = [], []
    for wl in admitted:
        if not uses_any(wl, frs):
            continue
        if wl.cluster_queue == preemptor.cluster_queue:
            if policy.within_cluster_queue != NEVER and satisfies_policy(policy.within_cluster_queue, preemptor, wl):
                own.append(wl)
            continue
        other = forest.queues.get(wl.cluster_queue)
        if (root is not None and policy.reclaim_within_cohort != NEVER and other is not None
                and other.root() is root and _borrowing_in(other, frs)
                and satisfies_policy(policy.reclaim_within_cohort, preemptor, wl)):
            others.append(wl)
    return sorted(others, key=candidate_order) + sorted(own, key=candidate_order)


class TargetOrdering:
    """``TargetClusterQueueOrdering``: which queue to take the next candidate from."""

    def __init__(self, forest: CohortForest, preemptor_cq: QuotaNode, candidates: Sequence[Admitted]) -> None:
        self.forest, self.preemptor_cq = forest, preemptor_cq
        self.ancestors = set(map(id, preemptor_cq.path_to_root()))
        self.queued: dict[str, list[Admitted]] = {}
        for wl in candidates:
            self.queued.setdefault(wl.cluster_queue, []).append(wl)
        self.pruned: set[int] = set()

    def has_workload(self, cq: QuotaNode) -> bool:
        return bool(self.queued.get(cq.name))

    def pop(self, cq: QuotaNode) -> Admitted:
        return self.queued[cq.name].pop(0)

    def drop(self, cq: QuotaNode) -> None:
        self.pruned.add(id(cq))

    def __iter__(self) -> Iterator[QuotaNode]:
        if self.preemptor_cq.parent is None:
            while id(self.preemptor_cq) not in self.pruned and self.has_workload(self.preemptor_cq):
                yield self.preemptor_cq
            return
        root = self.preemptor_cq.root()
        while id(root) not in self.pruned:
            target = self._next(root)
            if target is not None:
                yield target

    def _head_order(self, cq: QuotaNode) -> tuple[bool, int, float, str]:
        """``CandidatesOrdering`` of a queue's next candidate (other queues' first)."""
        head = self.queued[cq.name][0]
        return (cq is self.preemptor_cq, *candidate_order(head))

    def _highest_queue(self, cohort: QuotaNode) -> tuple[QuotaNode | None, Share]:
        best, best_share = None, NEGATIVE
        for cq in sorted((c for c in cohort.children if not c.is_cohort), key=lambda n: n.name):
            if id(cq) in self.pruned:
                continue
            share = dominant_resource_share(cq)
            if (not share.borrowing and cq is not self.preemptor_cq) or not self.has_workload(cq):
                self.pruned.add(id(cq))
            elif best is not None and compare(share, best_share) == 0:
                if self._head_order(cq) < self._head_order(best):
                    best = cq
            elif compare(share, best_share) == 1:
                best, best_share = cq, share
        return best, best_share

    def _next(self, cohort: QuotaNode) -> QuotaNode | None:
        """``nextTarget``: the child with the highest share, recursing into cohorts."""
        best_cq, cq_share = self._highest_queue(cohort)
        best_cohort, cohort_share = None, NEGATIVE
        for child in sorted((c for c in cohort.children if c.is_cohort), key=lambda n: n.name):
            if id(child) in self.pruned:
                continue
            share = dominant_resource_share(child)
            if not share.borrowing and id(child) not in self.ancestors:
                self.pruned.add(id(child))
            elif compare(share, cohort_share) >= 0:
                best_cohort, cohort_share = child, share
        if best_cohort is None and best_cq is None:
            self.pruned.add(id(cohort))
            return None
        if best_cohort is not None and compare(cohort_share, cq_share) >= 0:
            return self._next(best_cohort)
        return best_cq

    def almost_lcas(self, target: QuotaNode) -> tuple[QuotaNode, QuotaNode]:
        """The preemptor's and the target's nodes just below their lowest common cohort."""
        lca = next(node for node in target.path_to_root() if id(node) in self.ancestors)
        return _below(self.preemptor_cq, lca), _below(target, lca)


def _below(cq: QuotaNode, lca: QuotaNode) -> QuotaNode:
    node = cq
    while node.parent is not lca:
        assert node.parent is not None, "the lowest common cohort is an ancestor"
        node = node.parent
    return node


class FairPreemption:
    """Target selection under fair sharing for one preemptor (usage restored on return)."""

    def __init__(self, forest: CohortForest, policies: Mapping[str, QueuePolicy],
                 admitted: Iterable[Admitted], preemptor: Preemptor, strategies: Sequence[str]) -> None:
        self.forest, self.preemptor, self.strategies = forest, preemptor, tuple(strategies)
        self.node = forest.queues[preemptor.cluster_queue]
        self.frs = preemptor.frs()
        self.candidates = find_candidates(forest, policies[preemptor.cluster_queue], admitted, preemptor)
        self.targets_taken: list[Target] = []

    def _fits_for_fair_sharing(self) -> bool:
        """``workloadFitsForFairSharing``: without the preemptor's simulated request."""
        self._change_request(remove_usage)
        try:
            return fits(self.node, self.preemptor.request, True)
        finally:
            self._change_request(add_usage)

    def _change_request(self, change: Callable[[QuotaNode, FlavorResource, int], None]) -> None:
        for fr, amount in self.preemptor.request.items():
            change(self.node, fr, amount)

    def _take(self, wl: Admitted, reason: str) -> bool:
        change_usage(self.forest, wl, remove_usage)
        self.targets_taken.append(Target(wl, reason))
        return self._fits_for_fair_sharing()

    def _first(self, strategy: str) -> tuple[bool, list[Admitted]]:
        """``runFirstFsStrategy``: (fits, the candidates to retry)."""
        ordering = TargetOrdering(self.forest, self.node, self.candidates)
        retry: list[Admitted] = []
        within_nominal = not _over_nominal(self.node, self.frs)
        for cq in ordering:
            if cq is self.node:
                if self._take(ordering.pop(cq), IN_CLUSTER_QUEUE):
                    return True, []
                continue
            if within_nominal:
                if self._take(ordering.pop(cq), IN_COHORT_RECLAMATION):
                    return True, []
                continue
            mine, theirs = ordering.almost_lcas(cq)
            preemptor_new, target_old = dominant_resource_share(mine), dominant_resource_share(theirs)
            if math.isinf(preemptor_new.precise()) and not math.isinf(target_old.precise()):
                while ordering.has_workload(cq):
                    retry.append(ordering.pop(cq))
                continue
            while ordering.has_workload(cq):
                wl = ordering.pop(cq)
                if strategy_passes(strategy, preemptor_new, target_old, self._share_without(theirs, cq, wl)):
                    if self._take(wl, IN_COHORT_FAIR_SHARING):
                        return True, []
                    break                  # shares changed: walk again from the root
                retry.append(wl)
        return False, retry

    def _share_without(self, almost_lca: QuotaNode, cq: QuotaNode, wl: Admitted) -> Share:
        """``ComputeTargetShareAfterRemoval``."""
        change_usage(self.forest, wl, remove_usage)
        try:
            return dominant_resource_share(almost_lca)
        finally:
            change_usage(self.forest, wl, add_usage)

    def _second(self, retry: list[Admitted]) -> bool:
        """``runSecondFsStrategy`` (rule S2-b once per queue)."""
        ordering = TargetOrdering(self.forest, self.node, retry)
        for cq in ordering:
            mine, theirs = ordering.almost_lcas(cq)
            passed = compare(dominant_resource_share(mine), dominant_resource_share(theirs)) < 0
            wl = ordering.pop(cq)
            if passed and self._take(wl, IN_COHORT_FAIR_SHARING):
                return True
            ordering.drop(cq)
        return False

    def targets(self) -> list[Target]:
        if not self.candidates:
            return []
        self._change_request(add_usage)
        try:
            found, retry = self._first(self.strategies[0])
            if not found and len(self.strategies) > 1:
                found = self._second(retry)
        finally:
            self._change_request(remove_usage)
            for target in self.targets_taken:
                change_usage(self.forest, target.workload, add_usage)
        if not found:
            return []
        return fill_back(self.forest, self.targets_taken,
                         lambda: fits(self.node, self.preemptor.request, True))
