"""Queue-order modes of the embedded scheduler: ``backfill`` (Slurm's) and ``strict`` priority.

Switched on by the ConfigMap ``kube-system/gpusched-scheduler``, key ``mode``
(``cluster.scheduling.mode``):

- ``default`` (or no ConfigMap): kube-scheduler's order: any pod that fits starts, no
  reservations (``cluster.scheduling.host.schedule_pending`` as always);
- ``backfill``: Slurm's sched/backfill (EASY for depth 1). Pending pods go in queue order
  (priority, then creation). The first ``backfillDepth`` pods (key ``backfillDepth``, default 1,
  at least 1; Slurm's ``bf_max_job_test``) that cannot start now get a reservation
  (``scheduler.backfill.plan_reservation``: earliest node and time as running pods end at their
  time limits). A later pod the scheduler placed starts only if ``allowed_to_start`` (it ends
  by the reserved start, or leaves the reserved node enough); otherwise its placement is undone,
  the scheduler tries again with the reserved share of each node held by a placeholder (so it
  may find a node where starting is allowed), and if none is left the pod stays Pending with
  PodScheduled False (reason Unschedulable) and a ``FailedScheduling`` event, gpusched's own
  text: ``0/4 nodes are available: waiting for backfill reservation of default/big on
  gpu-node-1 at +30m.``;
- ``strict``: nothing starts while a pod ahead of it in queue order waits for a reservation:
  ``0/4 nodes are available: waiting for default/big to start first (strict priority order;
  reserved gpu-node-1 at +30m).`` A pod that could never fit (no reservation) blocks nobody.

Time limits (:func:`time_limit`): the pod's ``activeDeadlineSeconds``, else its Job's
(counted from the Job's start), else the annotation ``gpusched.io/time-limit`` (seconds or a
duration), else its run time (``gpusched.io/duration`` or ``sleep N``); none = runs forever.

Held pods are re-checked when capacity is freed (a pod ends), like every unschedulable pod in
``cluster.scheduling``; a blocked pod's reservation is recomputed in every pass.

Neighbours: ``scheduler.backfill`` (planning), ``cluster.scheduling`` (snapshot, scheduler,
bind, failure records), ``cluster.scheduling.host`` (calls :func:`schedule_in_order`), ``controllers.pod_lifecycle``
(run times), ``controllers.job`` (Job start).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import logging
import time
from dataclasses import dataclass

import numpy as np

from gpusched.cluster.scheduling import dra
from gpusched.cluster.scheduling.binder import bind, preempt, record_attempt, record_failure
from gpusched.cluster.scheduling.cache import bound_pods, build_snapshot
from gpusched.cluster.scheduling.mode import ModeConfig
from gpusched.cluster.scheduling.profiles import make_scheduler
from gpusched.cluster.controllers.common import controller_of
from gpusched.cluster.apiserver.store import seconds_of
from gpusched.cluster.kubelet.device_inputs import device_inputs, node_devices_for
from gpusched.cluster.kubelet.pod_lifecycle import run_time, start_time
from gpusched.cluster.apiserver.view import View
from gpusched.errors import GpuschedError
from gpusched.objects.duration import parse_duration
from gpusched.objects.node import node_info
from gpusched.objects.pod import pod_info
from gpusched.objects.types import PodInfo
from gpusched.scheduler.backfill import (INF, Request, Reservation, Timeline, allowed_to_start,
                                         blocked_amounts, format_offset, plan_reservation,
                                         take_start)

if TYPE_CHECKING:
    from gpusched.scheduler.framework import ScheduleResult
    from gpusched.scheduler.runner import Scheduler
    from gpusched.scheduler.snapshot import Snapshot

log = logging.getLogger(__name__)
ANN_TIME_LIMIT = "gpusched.io/time-limit"
HOLD_PRIORITY = 2**62          # placeholders are never preemption victims
HOLD_PREFIX = "gpusched-backfill-hold"


# ---- time limits -------------------------------------------------------------------------------

def _owner_job(view: View, pod: dict[str, Any]) -> dict[str, Any] | None:
    ref = controller_of(pod)
    if ref is None or ref.get("kind") != "Job":
        return None
    return view.get("Job", ref.get("name", ""), pod["metadata"].get("namespace", "default"))


def limit_end(view: View, pod: dict[str, Any], start: float) -> float:
    """When ``pod`` (started, or starting, at ``start``) is over by its time limit (inf: never)."""
    deadline = (pod.get("spec") or {}).get("activeDeadlineSeconds")
    if deadline is not None:
        return start + float(deadline)
    job = _owner_job(view, pod)
    job_deadline = ((job or {}).get("spec") or {}).get("activeDeadlineSeconds")
    if job_deadline is not None:
        job_start = ((job or {}).get("status") or {}).get("startTime")
        return (seconds_of(job_start) if job_start else start) + float(job_deadline)
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANN_TIME_LIMIT)
    if text is not None:
        try:
            return start + parse_duration(text)
        except GpuschedError:
            log.warning("pod %s: ignoring bad %s %r", pod["metadata"].get("name"), ANN_TIME_LIMIT,
                        text)
    run = run_time(pod)
    return start + run if run is not None else INF


def time_limit(view: View, pod: dict[str, Any]) -> float:
    """Seconds a pending pod may run once started now (inf: no limit)."""
    now = view.now()
    return max(limit_end(view, pod, now) - now, 0.0)


# ---- the pass ----------------------------------------------------------------------------------

def feasible_nodes(view: View, snapshot: Snapshot) -> Callable[[PodInfo], np.ndarray]:
    """pod info -> bool mask of the nodes that could ever host it (every filter on an empty copy
    of the cluster: node selectors, GPU model, taints, capacity). Built on first use."""
    cache: dict[str, Any] = {}

    def mask(info: PodInfo) -> np.ndarray:
        if "scheduler" not in cache:
            from gpusched.scheduler.snapshot import Snapshot
            empty = Snapshot()
            configmaps = device_inputs(view)
            for node in view.list("Node"):
                empty.add_node(node_info(node), node_devices_for(node, configmaps))
            cache["scheduler"] = make_scheduler(empty, view)
        scheduler = cache["scheduler"]
        outcome = scheduler.run_filters(None, info)
        out = np.zeros(snapshot.num_nodes, dtype=bool)
        out[outcome.feasible[outcome.feasible < snapshot.num_nodes]] = True
        return out
    return mask


def build_timeline(view: View, snapshot: Snapshot) -> Timeline:
    """The snapshot's free resources and every bound pod's end by its limit."""
    by_uid = {p["metadata"]["uid"]: p for p in bound_pods(view)}
    now = view.now()
    allocations = []
    for uid, row in sorted(snapshot.pod_node.items(), key=lambda kv: (kv[1], kv[0])):
        pod = by_uid.get(uid)
        info = snapshot.pod(uid)
        if pod is None or info is None:
            continue
        started = start_time(pod)
        allocations.append((row, limit_end(view, pod, now if started is None else started),
                            snapshot.request_vector(info)))
    return Timeline.build(tuple(snapshot.names), snapshot.free, allocations)


def schedule_in_order(view: View, config: ModeConfig, pending: list[dict[str, Any]], todo: list[dict[str, Any]]
                      ) -> None:
    """One pass in ``backfill`` or ``strict`` mode; see the module docstring."""
    snapshot, order = build_snapshot(view)
    scheduler = make_scheduler(snapshot, view, order)
    now = view.now()
    todo_uids = {p["metadata"]["uid"] for p in todo}
    infos = [pod_info(p, order.get(p["metadata"]["uid"], 0)) for p in pending]
    vectors = [snapshot.request_vector(info) for info in infos]   # registers every column first
    timeline = build_timeline(view, snapshot)
    feasible = feasible_nodes(view, snapshot)
    reservations: list[Reservation] = []
    blocked_seen = 0
    for pod, info, vector in zip(pending, infos, vectors):
        request = Request(info.key, vector, time_limit(view, pod))
        started = False
        if info.uid in todo_uids:
            view.attempts[info.uid] = view.epoch
            if config.mode == "strict" and reservations:
                record_failure(view, pod, strict_message(snapshot, reservations[0], now),
                                          nominated="")
            else:
                outcome = _attempt(view, scheduler, pod, info, request, reservations, now)
                if outcome == "preempted":
                    return    # capacity changed: the next pass rebuilds everything
                if isinstance(outcome, int):       # a node row: it started
                    started = True
                    timeline, reservations = take_start(timeline, reservations, request,
                                                        outcome, now)
        if started or blocked_seen >= config.depth:
            continue
        blocked_seen += 1
        planned = plan_reservation(timeline, Request(info.key, vector, request.limit,
                                                     feasible(info)), now, reservations)
        if planned is not None:
            log.debug("reservation: %s on %s at %s", info.key, planned.node, planned.start)
            reservations.append(planned)
        else:
            blocked_seen -= 1      # never fits: holds nothing and does not count


def _bind(view: View, scheduler: Scheduler, pod: dict[str, Any], result: ScheduleResult) -> bool:
    """PreBind (DynamicResources' claim writes), then the binding; False when PreBind failed."""
    problem = dra.pre_bind(view, scheduler, result.pod, result.node)
    if problem:
        scheduler.snapshot.remove_pod(result.pod.uid)
        record_failure(view, pod, problem, nominated="")
        return False
    bind(view, pod, result.node, result.assignment)
    return True


def _attempt(view: View, scheduler: Scheduler, pod: dict[str, Any], info: PodInfo, request: Request,
             reservations: list[Reservation], now: float) -> int | str | None:
    """Schedule ``pod``; bind it if the backfill rule allows. Returns the node row it started
    on, ``"preempted"`` when it preempted (as in default mode), or None (left Pending)."""
    snapshot = scheduler.snapshot
    began = time.perf_counter()     # real timer: attempt latency for /metrics, as in scheduling
    result = scheduler.schedule_one(info)
    record_attempt(view, scheduler, result, time.perf_counter() - began)
    if not result.scheduled:
        if result.nominated_node:
            preempt(view, pod, result)
            return "preempted"
        record_failure(view, pod, result.message, nominated="")
        return None
    row = snapshot.index[result.node]
    if allowed_to_start(request, row, now, reservations):
        return row if _bind(view, scheduler, pod, result) else None
    blocking = next(r for r in reservations if r.row == row and now + request.limit > r.start)
    snapshot.remove_pod(info.uid)
    dra.unreserve(scheduler, info)
    retry = _schedule_around(scheduler, info, request, reservations, now)
    if retry is not None and allowed_to_start(request, snapshot.index[retry.node], now,
                                              reservations):
        return snapshot.index[retry.node] if _bind(view, scheduler, pod, retry) else None
    if retry is not None:                       # cannot happen (the placeholders forbid it)
        snapshot.remove_pod(info.uid)
    record_failure(view, pod, backfill_message(snapshot, blocking, now), nominated="")
    return None


def _schedule_around(scheduler: Scheduler, info: PodInfo, request: Request,
                     reservations: list[Reservation], now: float) -> ScheduleResult | None:
    """Schedule ``info`` with each reserved node's protected share held by a placeholder pod;
    the result if it was placed (assumed in the snapshot), else None. Nothing else changes."""
    snapshot = scheduler.snapshot
    holds = blocked_amounts(request.limit, now, snapshot.free, reservations)
    placed: list[str] = []
    for row, amount in holds.items():
        requests = {snapshot.resource_names[col]: int(v) for col, v in enumerate(amount)
                    if v > 0 and snapshot.resource_names[col] != "pods"}
        if not requests:
            continue
        hold = PodInfo(namespace="", name=f"{HOLD_PREFIX}-{snapshot.names[row]}",
                       uid=f"{HOLD_PREFIX}/{row}", requests=requests, priority=HOLD_PRIORITY)
        snapshot.add_pod(hold, row)
        placed.append(hold.uid)
    try:
        result = scheduler.schedule_one(info)
    finally:
        for uid in placed:
            snapshot.remove_pod(uid)
    if not result.scheduled:
        scheduler.clear_nominated(info.uid)    # a hold must not lead to preemption
        return None
    return result


def _nodes_phrase(snapshot: Snapshot) -> str:
    return f"0/{snapshot.num_nodes} nodes are available"


def backfill_message(snapshot: Snapshot, reservation: Reservation, now: float) -> str:
    """gpusched's own FailedScheduling text for a pod held by a backfill reservation."""
    return (f"{_nodes_phrase(snapshot)}: waiting for backfill reservation of {reservation.key} "
            f"on {reservation.node} at {format_offset(reservation.start - now)}.")


def strict_message(snapshot: Snapshot, reservation: Reservation, now: float) -> str:
    """gpusched's own FailedScheduling text for a pod behind a waiting one in strict mode."""
    return (f"{_nodes_phrase(snapshot)}: waiting for {reservation.key} to start first (strict "
            f"priority order; reserved {reservation.node} at "
            f"{format_offset(reservation.start - now)}).")

