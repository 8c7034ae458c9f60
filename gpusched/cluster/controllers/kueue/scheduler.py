"""Kueue's scheduler on the embedded cluster (``pkg/scheduler/scheduler.go``): a pass brings the
kept queue manager and quota cache up to what changed (``queues``), then runs scheduling cycles,
one head per ClusterQueue each, until one admits and preempts nothing new, then writes the
ClusterQueue and LocalQueue ``Active`` conditions and counts. Under BestEffortFIFO a head that
cannot be admitted is parked in its queue's inadmissible set until an event requeues its cohort
tree (``gpusched.kueue.manager``); StrictFIFO keeps it at the front.

What it writes (through ``apiserver.write``): an admitted Workload's ``status.admission`` with
QuotaReserved and Admitted True and their events; a pending one's QuotaReserved False with the
cycle's reason and message (a Warning event when it changes); a preempted one's Evicted and
Preempted conditions with upstream's message, its admission cleared and Requeued True (its
quota is given back at once; it and its preemptor are pushed back to their heaps, and its
cohort tree requeued, at the next pass, as upstream requeues them once the victim's Job has
stopped). Each cycle is counted by result in ``view.stats`` (``kueue_admission_attempts_total``).

Neighbours: ``queues`` (the kept state), ``snapshot`` (the inputs), ``gpusched.kueue.cycle``;
``jobs`` acts on what it writes.
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.apiserver.view import View
from gpusched.cluster.controllers.kueue.queues import (MEMO, NOT_A_SHAPE_VERDICT, State, end_pass, note_pending,
                                                       start_pass, state_of)
from gpusched.cluster.controllers.kueue.snapshot import World, seconds
from gpusched.cluster.controllers.kueue.status import set_status
from gpusched.kueue import conditions as cond
from gpusched.kueue.cycle import ADMITTED, PENDING, PREEMPTING, Decision, Pending, Snapshot, run_cycle
from gpusched.kueue.jobs import admission_of
from gpusched.kueue.manager import BYPASSED
from gpusched.kueue.metrics import ADMISSION_ATTEMPTS, INADMISSIBLE, SUCCESS
from gpusched.kueue.preemption import Target, preemption_message

COMPONENT = "kueue-admission"
WATCHED = ("Workload", "ClusterQueue", "Cohort", "LocalQueue", "ResourceFlavor", "WorkloadPriorityClass",
           "Namespace", "Topology", "Node", "ConfigMap")


def _admit(view: View, wl: dict[str, Any], decision: Decision) -> None:
    assert decision.assignment is not None
    cq = decision.cluster_queue
    set_status(view, wl, cond.quota_reserved(cq), cond.admitted(),
         admission=admission_of(cq, decision.assignment))
    view.record_event(wl, "QuotaReserved", f"Quota reserved in ClusterQueue {cq}, wait time since queued was "
                      f"{max(0, round(view.now() - _created(wl)))}s", "Normal", COMPONENT)
    view.record_event(wl, "Admitted", f"Admitted by ClusterQueue {cq}, wait time since reservation was 0s",
                      "Normal", COMPONENT)


def _created(wl: dict[str, Any]) -> float:
    return seconds(str((wl.get("metadata") or {}).get("creationTimestamp", "")))


def _path(world: World, cq: str) -> str:
    node = world.snapshot.forest.queues.get(cq)
    return node.path() if node is not None else ""


def _evict(view: View, world: World, preemptor: dict[str, Any], decision: Decision, target: Target) -> None:
    victim = view.get("Workload", target.workload.key.split("/", 1)[1], target.workload.key.split("/", 1)[0])
    if victim is None:
        return
    message = preemption_message(str(preemptor["metadata"].get("uid", "")),
                                 str((preemptor["metadata"].get("labels") or {}).get("kueue.x-k8s.io/job-uid", "")),
                                 target.reason, _path(world, decision.cluster_queue),
                                 _path(world, target.workload.cluster_queue))
    set_status(view, victim, cond.evicted("Preempted", message), cond.preempted(target.reason, message),
         cond.pending("PendingEvaluation", message), cond.requeued("Preempted", message),
         cond.Condition("Admitted", "False", "NoReservation", "The workload has no reservation"), admission=None)
    priorities = (f"; preemptor effective priority: {int(preemptor['spec'].get('priority') or 0)} (base: "
                  f"{int(preemptor['spec'].get('priority') or 0)}, boost: 0); preemptee effective priority: "
                  f"{target.workload.priority} (base: {target.workload.priority}, boost: 0)")
    view.record_event(victim, "Preempted", message + priorities, "Normal", COMPONENT)
    view.record_event(victim, "EvictedDueToPreempted", message, "Normal", COMPONENT)
    view.record_event(preemptor, "PreemptedWorkload",
                      f"Preempted workload {target.workload.key} (UID: {target.workload.uid}) in ClusterQueue "
                      f"{target.workload.cluster_queue}" + priorities, "Normal", COMPONENT)


def _write(view: View, state: State, decision: Decision) -> None:
    namespace, _, name = decision.key.partition("/")
    wl = view.get("Workload", name, namespace)
    if wl is None:
        return
    if decision.outcome == ADMITTED:
        _admit(view, wl, decision)
        return
    note_pending(view, wl, cond.pending(decision.reason, decision.message))
    for target in decision.targets:
        _evict(view, state.world, wl, decision, target)
        state.world.snapshot.evict(target.workload.key)
        state.released.add(target.workload.cluster_queue)      # requeued at the next pass
        state.deferred.append(target.workload.key)


def _attempt(view: View, snapshot: Snapshot, heads: list[Pending]) -> list[Decision]:
    """One scheduling cycle, counted in ``kueue_admission_attempts_total`` by its result."""
    decisions = run_cycle(snapshot, heads)
    result = SUCCESS if any(d.outcome == ADMITTED for d in decisions) else INADMISSIBLE
    attempts = view.stats.setdefault(ADMISSION_ATTEMPTS, {})
    attempts[result] = attempts.get(result, 0) + 1
    return decisions


def _settle_head(view: View, state: State, head: Pending, decision: Decision) -> None:
    """Where a decided head goes: admitted ones leave the queues; a preemptor waiting for its
    victims is pushed back at the next pass (``RequeueReasonPendingPreemption``); a pending one
    is parked under BestEffortFIFO (``requeueIfNotPresent``), with the Workloads of its shape
    when its verdict is about its shape, or stays at the front."""
    if decision.outcome == ADMITTED:
        state.manager.delete(decision.key)
    elif decision.outcome == PREEMPTING:
        state.manager.delete(decision.key)
        state.deferred.append(decision.key)
    else:
        shape_verdict = decision.message not in NOT_A_SHAPE_VERDICT
        for other in state.manager.not_admitted(head, decision.reason if shape_verdict else ""):
            namespace, _, name = other.queued.key.partition("/")
            wl = view.get("Workload", name, namespace)
            if wl is not None:
                note_pending(view, wl, cond.pending(decision.reason, BYPASSED))


def _cycles(view: View, state: State) -> None:
    """Cycles until one admits nothing and issues no preemption: each head is decided once in a
    pass (admitted, preempting, or parked; a StrictFIFO head that stays pending ends the pass)."""
    for _ in range(len(state.manager) + 1):
        heads = state.manager.heads()
        if not heads:
            return
        by_key = {head.queued.key: head for head in heads}
        progress = False
        preempting = []
        for decision in _attempt(view, state.world.snapshot, heads):
            _write(view, state, decision)
            if decision.outcome == PREEMPTING:
                preempting.append(by_key[decision.key])
            else:
                _settle_head(view, state, by_key[decision.key], decision)
            progress = progress or decision.outcome != PENDING or not state.manager.strict[decision.cluster_queue]
        _renominate(view, state, preempting)
        if not progress:
            return


def _renominate(view: View, state: State, preemptors: list[Pending]) -> None:
    """The cycle's preemptions took effect at once (``_write`` stopped the victims, where upstream
    waits for their pods): the preemptors, requeued at the head of their queues as upstream
    requeues them (``RequeueReasonPendingPreemption``), are nominated again before any other
    head can take the quota they freed. Without this a victim re-admitted by borrowing in the
    next pass was reclaimed again, round after round (the settle found no fixpoint)."""
    if not preemptors:
        return
    by_key = {head.queued.key: head for head in preemptors}
    for decision in _attempt(view, state.world.snapshot, preemptors):
        _write(view, state, decision)
        _settle_head(view, state, by_key[decision.key], decision)


def _queue_status(view: View, state: State) -> None:
    """Active conditions and the pending/reserving/admitted counts of every queue."""
    world, by_cq, by_lq = state.world, state.cq_counts(), state.lq_counts
    for cq in view.list("ClusterQueue"):
        name = cq["metadata"]["name"]
        pending, admitted = by_cq.get(name, [0, 0])
        set_status(view, cq, world.active[name], pendingWorkloads=pending, reservingWorkloads=admitted,
             admittedWorkloads=admitted)
    for lq in view.list("LocalQueue"):
        target = str((lq.get("spec") or {}).get("clusterQueue", ""))
        exists = target in world.active
        key = (str(lq["metadata"].get("namespace", "default")), str(lq["metadata"]["name"]))
        pending, admitted = by_lq.get(key, [0, 0])
        set_status(view, lq, cond.local_queue_active(exists, exists and world.active[target].status == "True",
                                               (lq.get("spec") or {}).get("stopPolicy", "None") != "None"),
             pendingWorkloads=pending, reservingWorkloads=admitted, admittedWorkloads=admitted)


def reconcile(view: View, changes: Changes | None = None) -> None:
    """One pass: the kept state brought up to ``changes`` (rebuilt from the store without
    them), the scheduling cycles, then the queues' status."""
    if not view.list("ClusterQueue") and not view.list("Workload"):
        return
    if changes is not None and not changes.any_kind(WATCHED) and MEMO in view.memo:
        return
    start = view.journal_size()
    state = state_of(view, changes)
    start_pass(view, state)
    _cycles(view, state)
    _queue_status(view, state)
    end_pass(view, state, start)


__all__ = ["PREEMPTING", "reconcile"]
