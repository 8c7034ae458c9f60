"""One scheduling pass of the embedded cluster (the ``scheduler`` step of ``settle``).

1. the pending pods (``cluster.scheduling.pending_pods``: priority, then creation, then name),
   without the gated ones;
2. the queue-order mode (ConfigMap ``kube-system/gpusched-scheduler``, ``cluster.backfill``):
   ``backfill`` and ``strict`` go to :func:`~gpusched.cluster.backfill.schedule_in_order`;
3. ``default`` (kube-scheduler's order): for each pod whose last attempt happened before the
   latest capacity change (``view.epoch``), ``Scheduler.schedule_one`` on the scheduler's
   snapshot of the view (``cluster.snapshot_cache``: kept current from what changed, as
   upstream's scheduler cache) with the profiles' plugins kept for it
   (``scheduling.kept_frameworks``), and the result applied (``cluster.scheduling``: bind,
   preempt, record_failure). A preemption ends the pass: capacity changed.

Skipping pods whose situation has not changed since their last attempt stands in for
upstream's unschedulable queue (retried on cluster events), and keeps ``settle`` finite.

Neighbours: ``cluster.scheduling`` (the building blocks), ``cluster.backfill`` (queue-order
modes); called by ``cluster.cluster.settle``.
"""

from __future__ import annotations

import time

from gpusched.cluster import scheduling
from gpusched.cluster.backfill import schedule_in_order, scheduler_mode
from gpusched.cluster.snapshot_cache import cached_snapshot
from gpusched.cluster.view import View
from gpusched.objects.pod import pod_info


def schedule_pending(view: View) -> None:
    """One scheduling pass over the pending pods; see the module docstring."""
    pending = [p for p in scheduling.pending_pods(view, scheduling.served_names(view))
               if not scheduling.is_gated(p)]
    live = {p["metadata"]["uid"] for p in pending}
    for uid in [u for u in view.attempts if u not in live]:
        del view.attempts[uid]
    todo = [p for p in pending if view.attempts.get(p["metadata"]["uid"]) != view.epoch]
    mode = scheduler_mode(view)      # ConfigMap kube-system/gpusched-scheduler, docs/backfill.md
    if not todo:
        return
    if mode.mode != "default":
        schedule_in_order(view, mode, pending, todo)
        return
    snapshot, order = cached_snapshot(view)      # build_snapshot's, kept current (upstream's cache)
    scheduler = scheduling.make_scheduler(snapshot, view, order,
                                          scheduling.kept_frameworks(view, snapshot))
    for pod in todo:
        info = pod_info(pod, order.get(pod["metadata"]["uid"], 0))
        started = time.perf_counter()     # the one real timer: attempt latency for /metrics
        result = scheduler.schedule_one(info)
        scheduling.record_attempt(view, scheduler, result, time.perf_counter() - started)
        if result.scheduled:
            scheduling.bind(view, pod, result.node, result.assignment)
            continue
        view.attempts[pod["metadata"]["uid"]] = view.epoch
        if result.nominated_node:
            scheduling.preempt(view, pod, result)
            return   # capacity changed: the next pass rebuilds the snapshot
        scheduling.record_failure(view, pod, result.message, nominated="")
