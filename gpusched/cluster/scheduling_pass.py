"""One scheduling pass of the embedded cluster (the ``scheduler`` step of ``settle``).

1. the pending pods (``cluster.scheduling.pending_pods``: priority, then creation, then name),
   without the gated ones;
2. the queue-order mode (ConfigMap ``kube-system/gpusched-scheduler``, ``cluster.backfill``):
   ``backfill`` and ``strict`` go to :func:`~gpusched.cluster.backfill.schedule_in_order`;
3. ``default`` (kube-scheduler's order): each pod the scheduling queue lets through
   (``cluster.queueing``: never tried; or moved by a change its rejecting plugins' hints say
   may help, or by the 5-minute flush, and its back-off over) gets ``Scheduler.schedule_one``
   on the scheduler's snapshot of the view (``cluster.snapshot_cache``: kept current from what
   changed, as upstream's scheduler cache) with the profiles' plugins kept for it
   (``scheduling.kept_frameworks``), and the result applied (``cluster.scheduling``: bind,
   preempt, record_failure; a failure is recorded in the queue). A preemption ends the pass:
   capacity changed. The hints are judged at the pod's turn, on the snapshot as the pass has
   changed it so far.

The queue keeps ``settle`` finite (a pod is retried only after a logged change, once) and cheap
(a pod ending wakes only the pods it may help).

Neighbours: ``cluster.scheduling`` (the building blocks), ``cluster.backfill`` (queue-order
modes); called by ``cluster.cluster.settle``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from gpusched.cluster import queueing, scheduling
from gpusched.cluster.backfill import schedule_in_order, scheduler_mode
from gpusched.cluster.snapshot_cache import cached_snapshot
from gpusched.cluster.apiserver.view import View
from gpusched.objects.pod import pod_info

if TYPE_CHECKING:
    from gpusched.objects.types import PodInfo
    from gpusched.scheduler.runner import Scheduler


def schedule_pending(view: View) -> None:
    """One scheduling pass over the pending pods; see the module docstring."""
    pending = [p for p in scheduling.pending_pods(view, scheduling.served_names(view))
               if not scheduling.is_gated(p)]
    queueing.forget(view, {p["metadata"]["uid"] for p in pending})
    mode = scheduler_mode(view)      # ConfigMap kube-system/gpusched-scheduler, docs/backfill.md
    if mode.mode != "default":
        todo = [p for p in pending if view.attempts.get(p["metadata"]["uid"]) != view.epoch]
        if todo:
            schedule_in_order(view, mode, pending, todo)
        return
    todo = [p for p in pending if queueing.needs_look(view, p["metadata"]["uid"])]
    if not todo:
        return
    snapshot, order = cached_snapshot(view)      # build_snapshot's, kept current (upstream's cache)
    scheduler = scheduling.make_scheduler(snapshot, view, order,
                                          scheduling.kept_frameworks(view, snapshot))
    for pod in todo:
        info = pod_info(pod, order.get(pod["metadata"]["uid"], 0))
        if not queueing.worth_retrying(view, pod, info, snapshot):
            continue
        if _attempt(view, scheduler, pod, info):
            return   # capacity changed: the next pass rebuilds the snapshot


def _attempt(view: View, scheduler: Scheduler, pod: dict[str, Any], info: PodInfo) -> bool:
    """One scheduling cycle for ``pod``, its result applied; True when it preempted."""
    started = time.perf_counter()     # the one real timer: attempt latency for /metrics
    result = scheduler.schedule_one(info)
    scheduling.record_attempt(view, scheduler, result, time.perf_counter() - started)
    if result.scheduled:
        scheduling.bind(view, pod, result.node, result.assignment)
        return False
    view.attempts[pod["metadata"]["uid"]] = view.epoch
    queueing.record_unschedulable(view, pod, result)
    if result.nominated_node:
        scheduling.preempt(view, pod, result)
        return True
    scheduling.record_failure(view, pod, result.message, nominated="")
    return False
