"""The scheduling loop: pods from the queue through the framework, results to a Binder.

kube-scheduler's ``ScheduleOne`` loop (``pkg/scheduler/schedule_one.go``): pop the next pod of
activeQ, run one scheduling cycle (``Scheduler.schedule_one``), then bind it, or record the
failure and hand the pod back to the queue with its rejecting plugins
(``handleSchedulingFailure``: ``AddUnschedulableIfNotPresent``). A preemption ends the loop: the
victims' deletion changes capacity, and the next loop starts from a fresh snapshot.

A pod a Permit plugin told to Wait leaves the queue assumed (``Scheduler.waiting``); after each
attempt :func:`resolve_waiting` binds the waiting pods that were allowed meanwhile and fails the
rejected ones (unreserved, FailedScheduling, back to the unschedulable pods with the rejecting
plugin), as upstream's binding cycle does after ``WaitOnPermit``.

The loop knows nothing of where pods live: the host (the embedded cluster's
``cluster.scheduling.host``, or a test) passes a :class:`Binder`.

Neighbours: ``scheduler.queue`` (the queue), ``scheduler.runner`` (the cycle),
``scheduler.queueing_hints`` (what a failure records).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

from gpusched.scheduler.framework import Code
from gpusched.scheduler.queueing_hints import dry_run_found_nothing, rejecting_plugins
from gpusched.scheduler.waiting import ALLOWED

if TYPE_CHECKING:
    from gpusched.objects.types import PodInfo
    from gpusched.scheduler.framework import ScheduleResult
    from gpusched.scheduler.queue import SchedulingQueue
    from gpusched.scheduler.runner import Scheduler


class Binder(Protocol):
    """What the loop asks of its host."""

    def pod_info(self, uid: str) -> PodInfo | None:
        """The pod as the cycle sees it now (None: gone or unreadable; it is skipped)."""

    def observe(self, result: ScheduleResult, seconds: float) -> None:
        """Count one attempt (its real duration, for metrics)."""

    def bind(self, result: ScheduleResult) -> None:
        """Bind the pod to ``result.node`` with ``result.assignment`` (PreBind and Bind)."""

    def preempt(self, result: ScheduleResult) -> None:
        """Evict ``result.victims`` and nominate the pod to ``result.nominated_node``."""

    def failed(self, result: ScheduleResult) -> None:
        """Record the failure on the pod (PodScheduled False, FailedScheduling event)."""

    def released(self, result: ScheduleResult) -> None:
        """A waiting pod assumed on ``result.node`` was rejected: its room there is free again
        (upstream moves the unschedulable pods as for an assigned pod's delete)."""


def run_loop(queue: SchedulingQueue, scheduler: Scheduler, binder: Binder) -> None:
    """Schedule until activeQ is empty or a preemption changed capacity."""
    snapshot = scheduler.snapshot
    resolve_waiting(queue, scheduler, binder)        # timed out or rejected between passes
    queue.prepare(snapshot)
    while (popped := queue.pop(snapshot)) is not None:
        uid, judge = popped
        info = binder.pod_info(uid)
        if info is None or (judge and not queue.judge(uid, info, snapshot)):
            continue
        if attempt(queue, scheduler, binder, info):
            return


def attempt(queue: SchedulingQueue, scheduler: Scheduler, binder: Binder, info: PodInfo) -> bool:
    """One scheduling cycle for ``info``, its result handed to ``binder``; True when it
    preempted."""
    started = time.perf_counter()     # the one real timer: attempt latency for /metrics
    result = scheduler.schedule_one(info)
    binder.observe(result, time.perf_counter() - started)
    if scheduler.to_activate:         # upstream: activated at the end of the scheduling cycle
        queue.activate(scheduler.to_activate - {info.uid})
        scheduler.to_activate.clear()
    if result.scheduled:
        binder.bind(result)
        resolve_waiting(queue, scheduler, binder)
        return False
    if result.status.code == Code.WAIT:
        resolve_waiting(queue, scheduler, binder)
        return False
    resolve_waiting(queue, scheduler, binder)
    queue.failed(info.uid, rejecting_plugins(result), dry_run_found_nothing(result))
    if result.nominated_node:
        binder.preempt(result)
        return True
    binder.failed(result)
    return False


def resolve_waiting(queue: SchedulingQueue, scheduler: Scheduler, binder: Binder) -> None:
    """Bind the waiting pods allowed since the last call and fail the rejected ones, then time
    out the first wait that ended on the clock; a rejection's Unreserve may reject more (a
    gang's siblings), so repeat until nothing is left to resolve."""
    now = scheduler.clock()
    while True:
        resolved = scheduler.waiting.take_resolved()
        if not resolved:
            if scheduler.waiting.expire_first(now):
                continue
            return
        for waiting in resolved:
            if binder.pod_info(waiting.pod.uid) is None:     # deleted (or bound) meanwhile
                scheduler.reject_waiting(waiting)
                binder.released(waiting.result)
                continue
            if waiting.outcome == ALLOWED:
                binder.bind(waiting.result)
                continue
            result = scheduler.reject_waiting(waiting)
            queue.failed(waiting.pod.uid, [waiting.plugin], False)
            binder.failed(result)
            binder.released(waiting.result)
