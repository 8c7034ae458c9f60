"""Which preemption algorithm picks the targets, and the preemption oracle the flavor assigner
asks, as Kueue's ``Preemptor.getTargets`` and ``preemption_oracle.go`` (``SimulatePreemption``):
fair-sharing preemption when the Configuration has ``fairSharing``, classical otherwise.

Neighbours: ``preemption`` (classical), ``fair_preemption``; ``cycle`` and ``flavors`` (through
``flavors.PreemptionOracle``) call it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gpusched.kueue.fair_preemption import FairPreemption
from gpusched.kueue.fair_sharing import FairSharing
from gpusched.kueue.flavors import NO_CANDIDATES, PREEMPT, RECLAIM, PreemptionOracle
from gpusched.kueue.inputs import QueuePolicy
from gpusched.kueue.preemption import Admitted, ClassicalPreemption, Preemptor, Target, removed
from gpusched.kueue.quota import CohortForest, FlavorResource, lowest_fitting_subtree


def select_targets(forest: CohortForest, policies: Mapping[str, QueuePolicy], admitted: Iterable[Admitted],
                   preemptor: Preemptor, fair_sharing: FairSharing | None = None) -> list[Target]:
    """``getTargets``: the workloads to evict so that ``preemptor`` fits (empty: none will do)."""
    if fair_sharing is not None:
        return FairPreemption(forest, policies, admitted, preemptor, fair_sharing.preemption_strategies).targets()
    return ClassicalPreemption(forest, policies, admitted, preemptor).targets()


def oracle(forest: CohortForest, policies: Mapping[str, QueuePolicy], admitted: Iterable[Admitted],
           cluster_queue: str, priority: int = 0, timestamp: float = 0.0,
           fair_sharing: FairSharing | None = None) -> PreemptionOracle:
    """A ``flavors.PreemptionOracle`` for one preemptor (``SimulatePreemption``)."""
    node = forest.queues[cluster_queue]

    def simulate(fr: FlavorResource, quantity: int) -> tuple[int, int]:
        preemptor = Preemptor(cluster_queue, {fr: quantity}, priority, timestamp)
        found = select_targets(forest, policies, admitted, preemptor, fair_sharing)
        if not found:
            return NO_CANDIDATES, lowest_fitting_subtree(node, fr, quantity)[0]
        with removed(forest, [t.workload for t in found]):
            borrow = lowest_fitting_subtree(node, fr, quantity)[0]
        own = any(t.workload.cluster_queue == cluster_queue for t in found)
        return (PREEMPT if own else RECLAIM), borrow
    return simulate
