"""One Kueue scheduling cycle, pure (``pkg/scheduler/scheduler.go`` ``schedule``): take one head
per active ClusterQueue, nominate each (flavor assignment against a snapshot of the quota tree,
with the preemption oracle), order the entries (``ordering.cycle_order``; with the
Configuration's ``fairSharing``, the tournament of ``fair_iterator``, re-run after each entry),
then process them in turn: a Fit that still fits reserves quota; a Preempt with targets issues the preemptions and
waits (``. Pending the preemption of N workload(s)``); anything else stays pending with its
QuotaReserved=False reason and message.

Inputs are the parsed facts of ``inputs``/``quota``; the controllers in
``cluster/controllers/kueue/`` turn Workload dicts into them and the decisions into writes.

Neighbours: ``flavors``, ``targets`` (classical or fair-sharing preemption), ``ordering``,
``fair_iterator``, ``quota``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from gpusched.kueue.fair_iterator import FairEntry, FairSharingIterator
from gpusched.kueue.fair_sharing import FairSharing
from gpusched.kueue.flavors import FIT, NO_CANDIDATES, NO_FIT, PREEMPT, Assignment, FlavorAssigner
from gpusched.kueue.inputs import Flavor, PodSetRequest, QueuePolicy
from gpusched.kueue.ordering import STRICT_FIFO, Entry, QueuedWorkload, cycle_order, in_queue_order
from gpusched.kueue.preemption import Admitted, AdmittedIndex, Preemptor, Target, removed
from gpusched.kueue.quota import CohortForest, FlavorResource, QuotaNode, add_usage, available, remove_usage
from gpusched.kueue.targets import oracle, select_targets
from gpusched.kueue.tas import TopologySnapshot
from gpusched.kueue.tas_cycle import place, record, tas_only

ADMITTED = "Admitted"
PREEMPTING = "Preempting"
PENDING = "Pending"
WAITING_FOR_PREEMPTED = "WaitingForPreemptedWorkloads"
WAITING_FOR_QUOTA = "WaitingForQuota"
NO_LONGER_FITS = "Workload no longer fits after processing another workload"
OVERLAPPING = "Workload has overlapping preemption targets with another workload"


@dataclass(frozen=True)
class Pending:
    """A pending Workload: its place in the queue and what it asks for."""

    queued: QueuedWorkload
    podsets: tuple[PodSetRequest, ...]


@dataclass(frozen=True)
class Decision:
    key: str
    cluster_queue: str
    outcome: str                       # ADMITTED | PREEMPTING | PENDING
    reason: str = ""                   # QuotaReserved=False reason when not admitted
    message: str = ""
    assignment: Assignment | None = None
    targets: tuple[Target, ...] = ()


@dataclass
class Snapshot:
    """The cycle's world: the quota forest with admitted usage, the queues' policies, flavors,
    each TAS flavor's topology with its admitted pods (``topologies``, by flavor name), and the
    Configuration's ``fairSharing`` (None: off)."""

    forest: CohortForest
    policies: Mapping[str, QueuePolicy]
    flavors: Mapping[str, Flavor]
    admitted: AdmittedIndex = field(default_factory=AdmittedIndex)
    topologies: Mapping[str, TopologySnapshot] = field(default_factory=dict)
    fair_sharing: FairSharing | None = None

    def admit(self, workload: Admitted) -> None:
        """Count an admitted Workload's usage (one that was counted already first leaves)."""
        self.evict(workload.key)
        self.admitted.add(workload)
        for fr, amount in workload.usage.items():
            add_usage(self.forest.queues[workload.cluster_queue], fr, amount)

    def holding(self, key: str) -> Admitted | None:
        """The admitted Workload ``key`` as counted (None when it holds no quota here)."""
        return self.admitted.get(key)

    def evict(self, key: str) -> None:
        """A preempted Workload gives its quota back (gpusched stops its Job at once), so a later
        cycle neither counts its usage nor picks it as a target again."""
        workload = self.admitted.discard(key)
        if workload is None:
            return
        for fr, amount in workload.usage.items():
            remove_usage(self.forest.queues[workload.cluster_queue], fr, amount)


def pick_heads(pending: Mapping[str, Sequence[Pending]], policies: Mapping[str, QueuePolicy],
               inadmissible: frozenset[str] = frozenset()) -> list[Pending]:
    """One head per ClusterQueue: the first in order; under BestEffortFIFO the first not parked
    as inadmissible (StrictFIFO never skips its head)."""
    chosen = []
    for cq in sorted(pending):
        ordered = sorted(pending[cq], key=lambda p: p.queued.order_key())
        strict = policies[cq].strategy == STRICT_FIFO
        head = next((p for p in ordered if strict or p.queued.key not in inadmissible), None)
        if head is not None:
            chosen.append(head)
    return chosen


def _nominate(snapshot: Snapshot, head: Pending) -> Assignment:
    cq = head.queued.cluster_queue
    only_tas = bool(snapshot.topologies) and tas_only(snapshot.policies[cq], snapshot.flavors)
    simulate = oracle(snapshot.forest, snapshot.policies, snapshot.admitted, cq, head.queued.priority,
                      head.queued.timestamp, snapshot.fair_sharing)
    assigner = FlavorAssigner(snapshot.policies[cq], snapshot.forest.queues[cq], snapshot.flavors, simulate,
                              fair_sharing=snapshot.fair_sharing is not None, tas_only=only_tas)
    return place(assigner.assign(head.podsets), head.podsets, snapshot.topologies, only_tas)


def _to_reserve(node: QuotaNode, assignment: Assignment) -> dict[FlavorResource, int]:
    """``resourcesToReserve`` of a Preempt head without targets: what it may still use of its
    nominal quota (or up to its borrowing limit when it borrows), so that heads after it in the
    cycle cannot take it (clamped at 0 where usage is already past the limit)."""
    held: dict[FlavorResource, int] = {}
    for fr, amount in assignment.usage().items():
        quota = node.quotas.get(fr)
        nominal, used = (quota.nominal if quota else 0), node.usage.get(fr, 0)
        if assignment.borrowing() > 0:
            limit = None if quota is None else quota.borrowing_limit
            held[fr] = amount if limit is None else max(0, min(amount, nominal + limit - used))
        else:
            held[fr] = max(0, min(amount, nominal - used))
    return held


@dataclass
class _Cycle:
    """What the cycle's earlier entries left (``processEntry``): the victims of its preemptions
    (``preemptedWorkloads``) and the quota its preemptors hold (``cq.AddUsage`` on the cycle's
    snapshot), given back when the cycle ends, as upstream's next cycle takes a new snapshot."""

    snapshot: Snapshot
    victims: dict[str, Admitted] = field(default_factory=dict)
    held: list[tuple[str, dict[FlavorResource, int]]] = field(default_factory=list)

    def hold(self, cq: str, usage: Mapping[FlavorResource, int]) -> None:
        for fr, amount in usage.items():
            add_usage(self.snapshot.forest.queues[cq], fr, amount)
        self.held.append((cq, dict(usage)))

    def release(self) -> None:
        for cq, usage in reversed(self.held):
            for fr, amount in usage.items():
                remove_usage(self.snapshot.forest.queues[cq], fr, amount)
        self.held.clear()

    def fits(self, cq: str, assignment: Assignment, targets: Sequence[Target] = ()) -> bool:
        """``fits``: the usage fits once every victim of the cycle and ``targets`` are gone."""
        gone = {**self.victims, **{t.workload.key: t.workload for t in targets}}
        node = self.snapshot.forest.queues[cq]
        with removed(self.snapshot.forest, list(gone.values())):
            return all(amount <= available(node, fr) for fr, amount in assignment.usage().items())


def _targets(snapshot: Snapshot, head: Pending, assignment: Assignment) -> tuple[Target, ...]:
    """The preemption targets of a Preempt head, chosen at nomination as upstream does."""
    if assignment.mode() != PREEMPT:
        return ()
    queued = head.queued
    needs = tuple(sorted({(c.name, res) for ps in assignment.podsets for res, c in ps.flavors.items()
                          if c.mode == PREEMPT}))
    preemptor = Preemptor(queued.cluster_queue, assignment.usage(), queued.priority, queued.timestamp, needs)
    return tuple(select_targets(snapshot.forest, snapshot.policies, snapshot.admitted, preemptor,
                                snapshot.fair_sharing))


def _preempt(cycle: _Cycle, head: Pending, assignment: Assignment, targets: tuple[Target, ...]) -> Decision:
    queued = head.queued
    cq = queued.cluster_queue
    if not targets:
        if cycle.snapshot.policies[cq].reclaim_within_cohort != "Any":
            cycle.hold(cq, _to_reserve(cycle.snapshot.forest.queues[cq], assignment))
        return Decision(queued.key, cq, PENDING, WAITING_FOR_QUOTA, assignment.message(), assignment)
    if any(t.workload.key in cycle.victims for t in targets):
        return Decision(queued.key, cq, PENDING, WAITING_FOR_QUOTA, OVERLAPPING, assignment)
    if not cycle.fits(cq, assignment, targets):
        return Decision(queued.key, cq, PENDING, WAITING_FOR_QUOTA, NO_LONGER_FITS, assignment)
    cycle.victims.update({t.workload.key: t.workload for t in targets})
    cycle.hold(cq, assignment.usage())
    message = f"{assignment.message()}. Pending the preemption of {len(targets)} workload(s)"
    return Decision(queued.key, cq, PREEMPTING, WAITING_FOR_PREEMPTED, message, assignment, targets)


def _admit(cycle: _Cycle, head: Pending, assignment: Assignment) -> Decision:
    queued, snapshot = head.queued, cycle.snapshot
    if snapshot.topologies and any(ps.topology is not None for ps in assignment.podsets):
        # placed at nomination; an earlier head of this cycle may have taken its domains since
        assignment = place(assignment, head.podsets, snapshot.topologies,
                           tas_only(snapshot.policies[queued.cluster_queue], snapshot.flavors))
        if assignment.mode() != FIT:
            return Decision(queued.key, queued.cluster_queue, PENDING, WAITING_FOR_QUOTA, NO_LONGER_FITS, assignment)
    if not cycle.fits(queued.cluster_queue, assignment):
        return Decision(queued.key, queued.cluster_queue, PENDING, WAITING_FOR_QUOTA, NO_LONGER_FITS, assignment)
    snapshot.admit(Admitted(queued.key, queued.cluster_queue, assignment.usage(), queued.priority,
                            queued.timestamp, queued.timestamp, queued.uid))
    record(assignment, head.podsets, snapshot.topologies)
    return Decision(queued.key, queued.cluster_queue, ADMITTED, assignment=assignment)


def _process(cycle: _Cycle, head: Pending, assignment: Assignment, targets: tuple[Target, ...]) -> Decision:
    queued = head.queued
    mode = assignment.mode()
    if mode == FIT:
        return _admit(cycle, head, assignment)
    if mode == NO_FIT:
        return Decision(queued.key, queued.cluster_queue, PENDING, assignment.no_fit_reason(),
                        assignment.message(), assignment)
    if mode == NO_CANDIDATES:           # quota fits, the topology is full: wait (tas_cycle)
        return Decision(queued.key, queued.cluster_queue, PENDING, WAITING_FOR_QUOTA, assignment.message(), assignment)
    return _preempt(cycle, head, assignment, targets)


def _in_order(snapshot: Snapshot, nominated: Mapping[str, tuple[Pending, Assignment]]) -> Iterator[str]:
    """The nominated heads' keys in the cycle's order: classical (``cycle_order``), or with fair
    sharing on the tournament of ``fair_iterator``, whose shares follow each admission."""
    if snapshot.fair_sharing is None:
        entries = [Entry(head.queued, assignment.borrowing()) for head, assignment in nominated.values()]
        yield from (entry.workload.key for entry in cycle_order(entries))
        return
    fair = FairSharingIterator(snapshot.forest, [FairEntry(head.queued, assignment.usage())
                                                 for head, assignment in nominated.values()])
    while fair:
        yield fair.pop().workload.key


def run_cycle(snapshot: Snapshot, heads: Sequence[Pending]) -> list[Decision]:
    """Nominate every head (flavors, and the targets of a Preempt head), then process them in
    the cycle's order: an admission adds to the snapshot's usage, a preemptor holds its quota
    until the cycle ends, so a later head sees what an earlier one took."""
    nominated = {}
    for head in heads:
        assignment = _nominate(snapshot, head)
        nominated[head.queued.key] = (head, assignment, _targets(snapshot, head, assignment))
    cycle = _Cycle(snapshot)
    try:
        return [_process(cycle, *nominated[key])
                for key in _in_order(snapshot, {k: (h, a) for k, (h, a, _) in nominated.items()})]
    finally:
        cycle.release()


__all__ = ["ADMITTED", "PENDING", "PREEMPTING", "Decision", "Pending", "Snapshot", "in_queue_order",
           "pick_heads", "run_cycle"]
