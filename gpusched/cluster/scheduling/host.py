"""The scheduler's host in the embedded cluster: the ``scheduler`` step of ``settle``.

1. The queue-order mode (ConfigMap ``kube-system/gpusched-scheduler``,
   ``cluster.scheduling.backfill``):
   ``backfill`` and ``strict`` take every pending pod in queue order
   (:func:`~gpusched.cluster.scheduling.backfill.schedule_in_order`).
2. ``default`` (kube-scheduler's): the one scheduling queue (``scheduler.queue``), kept in the
   view's memo between passes and fed from the change journal as upstream's informers feed it
   (``pkg/scheduler/eventhandlers.go``: ``addPodToSchedulingQueue``/``updatePodInSchedulingQueue``
   /``deletePodFromSchedulingQueue``): an unbound, unfinished, ungated pod for a served scheduler
   name enters or keeps its place; a bound, finished, gated or deleted one leaves. A settle with
   no journal (``settle_full``, a view just loaded) restores the queue from the stored records.
3. The loop (``scheduler.scheduling_loop.run_loop``) runs over the scheduler's snapshot of the
   view (``cluster.scheduling.cache``, upstream's cache) with the profiles' plugins kept for it
   (``profiles.kept_frameworks``), and binds through ``binder.ViewBinder`` (bind, preempt,
   record_failure).

:func:`retry_due` is a ``Pod`` timer (``controllers.registry.TIMED``): a moved pod's back-off
end, or the end of a waiting pod's Permit wait, so the clock wakes the pass then.

Waiting pods (a Permit plugin's Wait, e.g. Coscheduling's gang members): the scheduler's
``WaitingPods`` is kept in the memo between passes, as kube-scheduler keeps its waiting pods
between cycles; each pass puts them back into the cached snapshot (still assumed on their node:
they hold its room), rejects those whose wait ended on the virtual clock, and keeps them out of
the queue. A process that loads the store anew (the next CLI command) starts without them, as a
restarted kube-scheduler does: they are pending pods again and are retried. The 5-minute flush has no timer: upstream's runs every
30 s even in a cluster where nothing changed, where a retry can only fail again; here a pod
unschedulable for 5 minutes is moved by the first logged change after them, so an idle clock
never wakes and a replay still ends when nothing is left to happen.

Neighbours: ``scheduler.queue``, ``scheduler.scheduling_loop``, the package's ``cache``,
``profiles``, ``binder`` and ``backfill`` (queue-order modes); called by ``cluster.settle``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpusched.cluster.controllers.common import is_terminal
from gpusched.cluster.scheduling.mode import scheduler_mode
from gpusched.cluster.scheduling.binder import ViewBinder
from gpusched.cluster.scheduling.cache import cached_snapshot, creation_number
from gpusched.cluster.scheduling.profiles import (POD_GROUP_LABEL, SCHEDULER_NAME, SERVED_NAMES,
                                                  is_gated, kept_frameworks, make_scheduler,
                                                  pending_pods, pod_groups, served_names)
from gpusched.cluster.apiserver.view import Key, View
from gpusched.errors import GpuschedError
from gpusched.objects.pod import pod_info
from gpusched.scheduler.queue import SchedulingQueue, SortKey, backoff_end, queue_sort_key
from gpusched.scheduler.scheduling_loop import run_loop
from gpusched.scheduler.waiting import WaitingPods

if TYPE_CHECKING:
    from gpusched.cluster.apiserver.changes import Changes
    from gpusched.objects.types import PodInfo

MEMO_KEY = "scheduling-queue"


@dataclass
class _Host:
    """The queue of one view, with what the journal told it: each queued pod's key and uid, and
    the pending pods (of the default names) that carry a nomination."""

    queue: SchedulingQueue
    names: tuple[str, ...]
    uids: dict[Key, str]
    nominated: dict[Key, SortKey]


def schedule_pending(view: View, changes: Changes | None = None) -> None:
    """One scheduling pass; see the module docstring."""
    mode = scheduler_mode(view)      # ConfigMap kube-system/gpusched-scheduler, docs/backfill.md
    if mode.mode != "default":
        view.memo.pop(MEMO_KEY, None)
        pending = [p for p in pending_pods(view, served_names(view))
                   if not is_gated(p)]
        _forget(view, {p["metadata"]["uid"] for p in pending})
        todo = [p for p in pending if view.attempts.get(p["metadata"]["uid"]) != view.epoch]
        if todo:
            from gpusched.cluster.scheduling.backfill import schedule_in_order   # its planner too
            schedule_in_order(view, mode, pending, todo)
        return
    host = _host(view, changes)
    waiting = waiting_pods(view)
    due = waiting.next_deadline()
    if not host.queue.has_work() and (due is None or due > view.now()) and not waiting.resolved():
        return
    snapshot, order = cached_snapshot(view)      # build_snapshot's, kept current (upstream's cache)
    nominated = [view.objects[key] for key in sorted(host.nominated, key=host.nominated.__getitem__)]
    scheduler = make_scheduler(snapshot, view, order, kept_frameworks(view, snapshot), nominated)
    view.memo[MEMO_KEY]["order"] = order
    scheduler.waiting = waiting
    _hold_waiting(view, scheduler)
    before = set(waiting.pods)
    run_loop(host.queue, scheduler, ViewBinder(view, scheduler, order))
    for uid in set(waiting.pods) - before:       # the timers learn the new waits' ends
        _touch(view, uid)


def waiting_pods(view: View) -> WaitingPods:
    """The scheduler's waiting pods, kept in the memo between passes."""
    memo = view.memo.setdefault(MEMO_KEY, {})
    waiting: WaitingPods = memo.setdefault("waiting", WaitingPods())
    return waiting


def _hold_waiting(view: View, scheduler: Any) -> None:
    """Put the waiting pods back into the snapshot on their nodes (the cache keeps only bound
    pods); one whose node or devices are gone is rejected."""
    snapshot = scheduler.snapshot
    for waiting in list(scheduler.waiting):
        if waiting.pod.uid in snapshot.pod_node:
            continue
        row = snapshot.index.get(waiting.node)
        try:
            if row is None:
                raise GpuschedError(f"node {waiting.node} not found")
            snapshot.add_pod(waiting.pod, row, waiting.assignment)
            waiting.row = row
        except GpuschedError as err:
            scheduler.waiting.reject(waiting.pod.uid, "", str(err))


def end_backoffs(view: View) -> None:
    """Every back-off that began before this command is over (``SchedulingQueue.end_backoffs``;
    ``Cluster.frozen_clock``)."""
    host = view.memo.get(MEMO_KEY, {}).get("host")
    if host is not None:
        host.queue.end_backoffs()
        return
    for record in view.queue.values():
        record["over"] = True


def retry_due(view: View, pod: dict[str, Any]) -> float | None:
    """The timer of a moved pod: its back-off end (an unmoved pod has none; see the flush)."""
    waiting = view.memo.get(MEMO_KEY, {}).get("waiting")
    held = waiting.get(pod["metadata"]["uid"]) if waiting is not None else None
    if held is not None:
        return float(held.deadline)
    record = view.queue.get(pod["metadata"]["uid"])
    if record is None or not record["moved"] or (pod.get("spec") or {}).get("nodeName"):
        return None
    return backoff_end(record)


# ---- the queue fed from the journal ------------------------------------------------------------

def _host(view: View, changes: Changes | None) -> _Host:
    names = served_names(view)
    memo = view.memo.setdefault(MEMO_KEY, {})
    host: _Host | None = memo.get("host")
    if host is None or changes is None or host.names != names:
        host = memo["host"] = _restored(view, names)
        return host
    pods = sorted(k for k in changes.keys if k[0] == "Pod")
    known = {key: host.uids.get(key) for key in pods}
    for key in pods:
        _sync(view, host, key)
    added = {key for key in pods if host.uids.get(key) not in (None, known[key])}
    _activate_gangs(view, host, changes, added)
    return host


def _activate_gangs(view: View, host: _Host, changes: Changes, added: set[Key]) -> None:
    """Coscheduling's events (``EventsToRegister``: Pod Add, PodGroup Add/Update): a group's
    queued pods are moved (after their back-off, ``SchedulingQueue.move``) when a member enters
    the queue or its PodGroup changes; a member's status written by a failure is no event."""
    groups = {(k[1], k[2]) for k in changes.keys if k[0] == "PodGroup"}
    for key in added:
        name = ((view.objects.get(key) or {}).get("metadata") or {}).get("labels", {}).get(
            POD_GROUP_LABEL)
        if name:
            groups.add((key[1], name))
    if not groups:
        return
    members = {uid for (ns, group), uids in pod_groups(view)[1].items() if (ns, group) in groups
               for uid in uids}
    host.queue.move(members)


def _restored(view: View, names: tuple[str, ...]) -> _Host:
    """A queue rebuilt from the stored records for the pending pods (an informer's first list)."""
    queue = SchedulingQueue(view, lambda uid: _info(view, uid), lambda uid: _touch(view, uid))
    host = _Host(queue, names, {}, {})
    pods: list[tuple[str, SortKey]] = []
    for pod in view.unbound_pods():
        key = ("Pod", pod["metadata"]["namespace"], pod["metadata"]["name"])
        _note_nominated(host, key, pod)
        if _queued(pod, names) and waiting_pods(view).get(pod["metadata"]["uid"]) is None:
            host.uids[key] = pod["metadata"]["uid"]
            pods.append((pod["metadata"]["uid"], _sort_key(pod)))
    _forget(view, {uid for uid, _key in pods})
    queue.restore(pods)
    return host


def _sync(view: View, host: _Host, key: Key) -> None:
    pod = view.objects.get(key)
    old = host.uids.get(key)
    pending = pod is not None and not (pod.get("spec") or {}).get("nodeName") and not is_terminal(pod)
    _note_nominated(host, key, pod if pending else None)
    if old is not None and _still_waiting(view, old, pod if pending else None):
        return
    if pod is None or not pending or not _queued(pod, host.names):
        if old is not None:
            del host.uids[key]
            host.queue.delete(old)
        return
    uid = pod["metadata"]["uid"]
    if old is not None and old != uid:
        host.queue.delete(old)
    host.uids[key] = uid
    host.queue.add(uid, _sort_key(pod))


def _still_waiting(view: View, uid: str, pending: dict[str, Any] | None) -> bool:
    """A pod waiting at Permit stays out of the queue while it is pending; one deleted or
    replaced is rejected (upstream ``RejectWaitingPod`` on delete, message ``removed``)."""
    waiting = waiting_pods(view)
    if waiting.get(uid) is None:
        return False
    if pending is not None and pending["metadata"]["uid"] == uid:
        return True
    waiting.reject(uid, "", "removed")
    return False


def _queued(pod: dict[str, Any], names: tuple[str, ...]) -> bool:
    """A pending pod the queue holds: for a served scheduler name, without scheduling gates
    (the SchedulingGates PreEnqueue plugin keeps it out)."""
    name = (pod.get("spec") or {}).get("schedulerName") or SCHEDULER_NAME
    return name in names and not is_gated(pod)


def _note_nominated(host: _Host, key: Key, pod: dict[str, Any] | None) -> None:
    """Pending pods of the default names with ``status.nominatedNodeName``, for the nominator."""
    spec = (pod or {}).get("spec") or {}
    if (pod is not None and (pod.get("status") or {}).get("nominatedNodeName")
            and (spec.get("schedulerName") or SCHEDULER_NAME) in SERVED_NAMES):
        host.nominated[key] = _sort_key(pod)
    else:
        host.nominated.pop(key, None)


def _sort_key(pod: dict[str, Any]) -> SortKey:
    meta = pod["metadata"]
    return queue_sort_key(int((pod.get("spec") or {}).get("priority") or 0),
                          creation_number(pod), meta["namespace"], meta["name"])


def _forget(view: View, live: set[str]) -> None:
    """Drop the records of pods no longer pending."""
    for table in (view.attempts, view.queue):
        for uid in [u for u in table if u not in live]:
            del table[uid]


def _info(view: View, uid: str) -> PodInfo | None:
    pod = view.by_uid(uid)
    order = view.memo.get(MEMO_KEY, {}).get("order") or {}
    return pod_info(pod, order.get(uid, 0)) if pod is not None else None


def _touch(view: View, uid: str) -> None:
    pod = view.by_uid(uid)
    if pod is not None:
        view.touch(pod)     # the timers re-derive retry_due
