"""Kueue's scheduler on the embedded cluster (``pkg/scheduler/scheduler.go``, the queue manager
of ``pkg/cache/queue``): on every change, ClusterQueue and LocalQueue ``Active`` conditions and
counts, then scheduling cycles over the pending Workloads until one admits and preempts nothing
new. Under BestEffortFIFO a head that cannot be admitted is parked for the rest of this pass
(upstream's inadmissible list, which a cluster event empties: here, the next change); StrictFIFO
keeps it at the front.

What it writes (through ``apiserver.write``): an admitted Workload's ``status.admission`` with
QuotaReserved and Admitted True and their events; a pending one's QuotaReserved False with the
cycle's reason and message (a Warning event when it changes); a preempted one's Evicted and
Preempted conditions with upstream's message, its admission cleared and Requeued True. Each
cycle is counted by result in ``view.stats`` (``kueue_admission_attempts_total``).

Neighbours: ``snapshot`` (the inputs), ``gpusched.kueue.cycle``; ``jobs`` acts on what it writes.
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.apiserver.view import View
from gpusched.cluster.controllers.kueue.pods_ready import backing_off
from gpusched.cluster.controllers.kueue.status import set_status
from gpusched.cluster.controllers.kueue.snapshot import (World, is_true, key_of, namespace_selected,
                                                         pending_of, read_world, seconds)
from gpusched.kueue import conditions as cond
from gpusched.kueue.cycle import ADMITTED, PENDING, PREEMPTING, Decision, Pending, Snapshot, run_cycle
from gpusched.kueue.heads import Heads
from gpusched.kueue.jobs import admission_of
from gpusched.kueue.metrics import ADMISSION_ATTEMPTS, INADMISSIBLE, SUCCESS
from gpusched.kueue.ordering import STRICT_FIFO
from gpusched.kueue.preemption import Target, preemption_message

COMPONENT = "kueue-admission"




def _route(view: View, world: World, wl: dict[str, Any]) -> tuple[str, cond.Condition | None]:
    """The Workload's ClusterQueue, or why it cannot be queued (QuotaReserved=False)."""
    meta, spec = wl.get("metadata") or {}, wl.get("spec") or {}
    namespace, queue = str(meta.get("namespace", "default")), str(spec.get("queueName", ""))
    cq = world.local_queues.get((namespace, queue))
    if cq is None:
        return "", cond.pending("Misconfigured", f"LocalQueue {queue} is terminating or missing")
    if cq not in world.active:
        return "", cond.pending("Misconfigured", f"ClusterQueue {cq} not found")
    if world.active[cq].status != "True":
        return "", cond.pending("Misconfigured", f"ClusterQueue {cq} is inactive")
    if not namespace_selected(view, world.selectors.get(cq), namespace):
        return "", cond.pending("Misconfigured", "workload namespace doesn't match ClusterQueue selector")
    return cq, None


def _pending(view: View, world: World) -> tuple[dict[str, list[Pending]], dict[str, dict[str, Any]]]:
    queues: dict[str, list[Pending]] = {}
    bodies: dict[str, dict[str, Any]] = {}
    for wl in view.list("Workload"):
        if is_true(wl, "Finished") or (wl.get("status") or {}).get("admission") \
                or (wl.get("spec") or {}).get("active") is False or backing_off(view, wl):
            continue
        cq, refusal = _route(view, world, wl)
        if refusal is not None:
            _note_pending(view, wl, refusal)
            continue
        bodies[key_of(wl)] = wl
        queues.setdefault(cq, []).append(pending_of(wl, cq))
    return queues, bodies


def _note_pending(view: View, wl: dict[str, Any], condition: cond.Condition) -> None:
    if set_status(view, wl, condition):
        view.record_event(wl, condition.reason, condition.message, "Warning", COMPONENT)


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


def _write(view: View, world: World, bodies: dict[str, dict[str, Any]], decision: Decision) -> None:
    wl = view.get("Workload", decision.key.split("/", 1)[1], decision.key.split("/", 1)[0]) or bodies[decision.key]
    if decision.outcome == ADMITTED:
        _admit(view, wl, decision)
        return
    _note_pending(view, wl, cond.pending(decision.reason, decision.message))
    for target in decision.targets:
        _evict(view, world, wl, decision, target)
        world.snapshot.evict(target.workload.key)


def _attempt(view: View, snapshot: Snapshot, heads: list[Pending]) -> list[Decision]:
    """One scheduling cycle, counted in ``kueue_admission_attempts_total`` by its result."""
    decisions = run_cycle(snapshot, heads)
    result = SUCCESS if any(d.outcome == ADMITTED for d in decisions) else INADMISSIBLE
    attempts = view.stats.setdefault(ADMISSION_ATTEMPTS, {})
    attempts[result] = attempts.get(result, 0) + 1
    return decisions


def _cycles(view: View, world: World, queues: dict[str, list[Pending]], bodies: dict[str, dict[str, Any]]) -> None:
    """Cycles until one admits nothing and issues no preemption (each Workload decided once)."""
    parked: set[str] = set()
    decided: set[str] = set()
    queue_heads = Heads(queues, world.snapshot.policies)
    for _ in range(len(bodies) + 1):
        heads = queue_heads.next(decided, parked)
        if not heads:
            return
        progress = False
        preempting: set[str] = set()
        for decision in _attempt(view, world.snapshot, heads):
            _write(view, world, bodies, decision)
            if decision.outcome == PREEMPTING:
                preempting.add(decision.key)
            if decision.outcome != PENDING:
                decided.add(decision.key)
                progress = True
            elif world.snapshot.policies[decision.cluster_queue].strategy != STRICT_FIFO:
                parked.add(decision.key)
                progress = True
        _renominate(view, world, bodies, [h for h in heads if h.queued.key in preempting])
        if not progress:
            return


def _renominate(view: View, world: World, bodies: dict[str, dict[str, Any]], preemptors: list[Pending]) -> None:
    """The cycle's preemptions took effect at once (``_write`` stopped the victims, where upstream
    waits for their pods): the preemptors, requeued at the head of their queues as upstream
    requeues them (``RequeueReasonPendingPreemption``), are nominated again before any other
    head can take the quota they freed. Without this a victim re-admitted by borrowing in the
    next pass was reclaimed again, round after round (the settle found no fixpoint)."""
    if preemptors:
        for decision in _attempt(view, world.snapshot, preemptors):
            _write(view, world, bodies, decision)


def _counts(view: View, world: World) -> tuple[dict[str, list[int]], dict[tuple[str, str], list[int]]]:
    """[pending, admitted] per ClusterQueue and per LocalQueue (finished ones are neither)."""
    by_cq: dict[str, list[int]] = {}
    by_lq: dict[tuple[str, str], list[int]] = {}
    for wl in view.list("Workload"):
        if is_true(wl, "Finished"):
            continue
        lq = (str((wl.get("metadata") or {}).get("namespace", "default")), str((wl.get("spec") or {}).get("queueName", "")))
        admitted = 1 if (wl.get("status") or {}).get("admission") else 0
        for counts, key in ((by_cq, world.local_queues.get(lq, "")), (by_lq, lq)):
            entry = counts.setdefault(key, [0, 0])  # type: ignore[arg-type]
            entry[admitted] += 1
    return by_cq, by_lq


def _queue_status(view: View, world: World) -> None:
    """Active conditions and the pending/reserving/admitted counts of every queue."""
    by_cq, by_lq = _counts(view, world)
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


def reconcile(view: View) -> None:
    """One pass: queue status, then the scheduling cycles."""
    if not view.list("ClusterQueue") and not view.list("Workload"):
        return
    world = read_world(view)
    queues, bodies = _pending(view, world)
    _cycles(view, world, queues, bodies)
    _queue_status(view, world)


__all__ = ["PREEMPTING", "reconcile"]
