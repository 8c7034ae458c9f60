"""The cycle's order with fair sharing on, as Kueue's ``pkg/scheduler/fair_sharing_iterator.go``.

Each pop runs a tournament over the cohort tree of one queue with a head left: every queue's
head is given its share *as if admitted* (its assignment's usage added to its queue), and each
cohort on the way up gets the share of its child that holds the head. At each cohort the
children's heads compete; the winner moves up, until one head is left at the root:

1. a head whose node at that level borrows on none of the flavor-resources it asks for beats one
   whose node does (``FairSharingPrioritizeNonBorrowing``, on by default);
2. the lower share (``CompareDRS``: a zero-weight borrower loses to every finite share);
3. the higher priority (``PrioritySortingWithinCohort``, on by default);
4. the earlier queue-order timestamp.

A queue without a cohort pops its head at once. The shares are computed again at each pop, on
the usage the earlier admissions of the cycle left. Upstream visits a cohort's children and the
trees in a set's order; here they go by name, so ties resolve the same way every run.

Worked example (``scheduler_fs_test.go`` "with fair sharing: schedule workload with lowest
share first"): cohort ``eng`` lends 210 CPUs (110 on-demand, 100 spot). eng-alpha (nominal 50
on-demand) uses 50 and heads a 5-CPU workload; eng-beta (nominal 50) uses 55 and heads an older
1-CPU one. As if admitted, alpha borrows 5 (5 * 1000 / 210 = 23.8 per mille) and beta 6 (28.6):
both borrow on on-demand, so the lower share wins and alpha's newer head goes first, where the
classical order (both borrow, same priority) would take beta's older one.

Neighbours: ``fair_sharing`` (shares), ``quota`` (usage simulation); used by ``cycle``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpusched.kueue.fair_sharing import Share, compare, dominant_resource_share
from gpusched.kueue.ordering import QueuedWorkload
from gpusched.kueue.quota import CohortForest, FlavorResource, QuotaNode, add_usage, remove_usage


@dataclass(frozen=True)
class FairEntry:
    """A nominated head and the usage its assignment would add."""

    workload: QueuedWorkload
    usage: Mapping[FlavorResource, int]


def _subtree_queues(node: QuotaNode) -> list[QuotaNode]:
    if not node.is_cohort:
        return [node]
    return [cq for child in sorted(node.children, key=lambda n: n.name) for cq in _subtree_queues(child)]


class FairSharingIterator:
    """Pops the cycle's heads in fair-sharing order (``fairSharingIterator``)."""

    def __init__(self, forest: CohortForest, entries: Sequence[FairEntry]) -> None:
        self.forest = forest
        self.by_queue = {entry.workload.cluster_queue: entry for entry in entries}
        self.shares: dict[tuple[str, str], Share] = {}

    def __bool__(self) -> bool:
        return bool(self.by_queue)

    def pop(self) -> FairEntry:
        cq = self.forest.queues[min(self.by_queue)]
        if cq.parent is None:
            return self.by_queue.pop(cq.name)
        root = cq.root()
        self._compute_shares(root)
        winner = self._tournament(root)
        assert winner is not None, "the root holds the queue the pop started from"
        return self.by_queue.pop(winner.workload.cluster_queue)

    def _compute_shares(self, root: QuotaNode) -> None:
        """``computeDRS``: per (parent cohort, head), the share of the child holding the head,
        with the head's usage added."""
        self.shares = {}
        for cq in _subtree_queues(root):
            entry = self.by_queue.get(cq.name)
            if entry is None:
                continue
            for fr, amount in entry.usage.items():
                add_usage(cq, fr, amount)
            share = dominant_resource_share(cq)
            for ancestor in cq.path_to_root():
                self.shares[(ancestor.name, entry.workload.key)] = share
                share = dominant_resource_share(ancestor)
            for fr, amount in entry.usage.items():
                remove_usage(cq, fr, amount)

    def _tournament(self, cohort: QuotaNode) -> FairEntry | None:
        """``runTournament``: the best head of each child, then the best of those."""
        candidates: list[FairEntry] = []
        children = sorted(cohort.children, key=lambda n: n.name)
        for child in children:
            if child.is_cohort:
                best = self._tournament(child)
                if best is not None:
                    candidates.append(best)
        candidates += [self.by_queue[c.name] for c in children if not c.is_cohort and c.name in self.by_queue]
        if not candidates:
            return None
        best = candidates[0]
        for current in candidates[1:]:
            if self._less(current, best, cohort.name):
                best = current
        return best

    def _less(self, a: FairEntry, b: FairEntry, parent: str) -> bool:
        share_a, share_b = self.shares[(parent, a.workload.key)], self.shares[(parent, b.workload.key)]
        borrows_a, borrows_b = share_a.borrowing_on(a.usage), share_b.borrowing_on(b.usage)
        if borrows_a != borrows_b:
            return not borrows_a
        order = compare(share_a, share_b)
        if order != 0:
            return order < 0
        if a.workload.priority != b.workload.priority:
            return a.workload.priority > b.workload.priority
        return a.workload.timestamp < b.workload.timestamp
