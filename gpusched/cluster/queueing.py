"""The embedded scheduler's queue of unschedulable pods: per-pod back-off and queueing hints.

kube-scheduler keeps a pod that no node fits in ``unschedulablePods`` with the plugins that
rejected it (``UnschedulablePlugins``) and retries it only when a cluster event may help: the
queue asks each rejecting plugin's ``QueueingHintFn`` about the event
(``pkg/scheduler/backend/queue/scheduling_queue.go``, ``isPodWorthRequeuing``); a ``Queue``
moves the pod to the backoff queue until ``lastFailure + min(1s * 2^(failures-1), 10s)``
(``podInitialBackoffSeconds``/``podMaxBackoffSeconds``), then to the active queue; and a pod left
unschedulable for 5 minutes is moved anyway (``podMaxInUnschedulablePodsDuration``,
``flushUnschedulablePodsLeftover``). The same here, on the cluster clock:

- ``view.queue[uid]`` (:func:`record_unschedulable`, after a failed attempt): ``failures``,
  ``at`` (the clock then), ``plugins`` (the Filter plugins that rejected a node, or the
  PreFilter that rejected the pod; empty = unknown), ``dry`` (DefaultPreemption ran its dry run
  over every node and found no victims) and ``moved`` (an event was judged to help);
- ``view.capacity_log``: ``[epoch, node, priority]`` per change that may free room
  (``View.capacity_changed``): a pod that left ``node`` (deleted or finished), or ``"*"``
  (a Node, PersistentVolume(Claim) or StorageClass changed: every pod is moved, as upstream
  moves pods on the node events its plugins register);
- :func:`worth_retrying` runs at the pod's turn in the pass, on the scheduler's snapshot as it
  is then (binds earlier in the pass included): the log entries since the pod's last look
  (``view.attempts[uid]``) go through :func:`pod_left_hint`;
- :func:`retry_due` is a ``Pod`` timer (``controllers.registry.TIMED``): a moved pod's back-off
  end, so the clock wakes the pass then. The 5-minute flush has no timer: upstream's runs every
  30 s even in a cluster where nothing changed, where a retry can only fail again; here a pod
  unschedulable for 5 minutes is moved by the first logged change after them, whatever its
  hint says (a count of changes, not of passes: settling on work queues and full passes agree),
  so an idle clock never wakes and a replay still ends when nothing is left to happen.
- :func:`commands_end_backoffs`: where the clock stands still between commands (the CLI,
  ``serve --virtual-clock``; ``Cluster.frozen_clock``), a new command finds every earlier
  back-off over, as a person's next kubectl command does on a real cluster.

:func:`pod_left_hint` is NodeResourcesFit's ``isSchedulableAfterPodEvent``
(``pkg/scheduler/framework/plugins/noderesources/fit.go``), narrowed where it stays sound (it
never skips a pod that could now be bound or could now preempt): the node's free resources,
plus what the pod's lower-priority neighbours hold when it may preempt, must cover its cpu,
memory, a pod slot and its GPU milli; a lower-priority pod leaving does not help a pod whose
last dry run found no victims anywhere (it was already counted as removable). Rejections by
plugins that read other pods (InterPodAffinity, PodTopologySpread, NodePorts, volumes ...) or
unknown ones always queue; node-only plugins (NodeAffinity, TaintToleration, NodeName,
NodeUnschedulable) ignore pod events, as upstream registers no pod event for them.

Neighbours: ``cluster.scheduling_pass`` (calls these), ``apiserver.view`` (the state),
``scheduler.queue`` (the same numbers for the standalone ``Scheduler``).
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Any

import numpy as np

from gpusched.scheduler.preemption import MSG_POLICY_NEVER, MSG_TERMINATING
from gpusched.scheduler.preemption_fit import POD_BLIND_FILTERS
from gpusched.scheduler.queue import (INITIAL_BACKOFF_SECONDS, MAX_BACKOFF_SECONDS,
                                      MAX_UNSCHEDULABLE_SECONDS)
from gpusched.scheduler.snapshot import CPU, MEMORY, PODS, WHOLE_GPU_MILLI

if TYPE_CHECKING:
    from gpusched.cluster.apiserver.view import View
    from gpusched.objects.types import PodInfo
    from gpusched.scheduler.framework import ScheduleResult
    from gpusched.scheduler.snapshot import Snapshot

RESOURCE_PLUGINS = frozenset({"NodeResourcesFit", "GpuDevices"})
ANY_NODE = "*"


def backoff_seconds(failures: int) -> float:
    """``1s * 2^(failures-1)``, at most 10 s; 0 before the first failure (upstream
    ``calculateBackoffDuration``)."""
    if failures <= 0:
        return 0.0
    return float(min(INITIAL_BACKOFF_SECONDS * 2 ** min(failures - 1, 32), MAX_BACKOFF_SECONDS))


def backoff_end(record: dict[str, Any]) -> float:
    """When a pod's back-off ends: its last failure plus :func:`backoff_seconds`, or the failure
    itself once a later command has come (:func:`commands_end_backoffs`)."""
    at = float(record["at"])
    return at if record.get("over") else at + backoff_seconds(int(record["failures"]))


def commands_end_backoffs(view: View) -> None:
    """A command on a clock that stands still between commands (the CLI, ``serve
    --virtual-clock``): every back-off that began before it is over. On a real cluster the
    person typing the next command takes longer than the longest back-off (10 s), so a pod a
    fix moves (uncordon, a label, a removed taint) is retried at once; without this, a lab's
    next step would find it Pending until ``advance``. Inside one command (``advance``, a
    replay) back-offs run on the clock as usual."""
    for record in view.queue.values():
        record["over"] = True


def rejecting_plugins(result: ScheduleResult) -> list[str]:
    """The plugins that rejected the pod (upstream ``UnschedulablePlugins``), sorted."""
    diagnosis = result.diagnosis
    if diagnosis is None:
        return []
    if diagnosis.pre_filter_status is not None:
        return [diagnosis.pre_filter_status.plugin] if diagnosis.pre_filter_status.plugin else []
    return sorted({r.plugin for r in diagnosis.rejections if r.plugin})


def dry_run_found_nothing(result: ScheduleResult) -> bool:
    """DefaultPreemption ran over every potential node and found no candidate."""
    message = result.diagnosis.post_filter_message if result.diagnosis is not None else ""
    return (message.startswith("preemption: ") and not result.nominated_node
            and MSG_POLICY_NEVER not in message and MSG_TERMINATING not in message)


def record_unschedulable(view: View, pod: dict[str, Any], result: ScheduleResult) -> None:
    """After a failed attempt: one more failure at the current clock, the rejecting plugins."""
    uid = pod["metadata"]["uid"]
    failures = int((view.queue.get(uid) or {}).get("failures", 0)) + 1
    view.queue[uid] = {"failures": failures, "at": view.clock, "plugins": rejecting_plugins(result),
                       "dry": dry_run_found_nothing(result), "moved": False}
    view.touch(pod)     # the timers re-derive retry_due


def retry_due(view: View, pod: dict[str, Any]) -> float | None:
    """The timer of a moved pod: its back-off end (an unmoved pod has none; see the flush)."""
    record = view.queue.get(pod["metadata"]["uid"])
    if record is None or not record["moved"] or (pod.get("spec") or {}).get("nodeName"):
        return None
    return backoff_end(record)


def needs_look(view: View, uid: str) -> bool:
    """Whether the pass must look at a pending pod at all (cheap, before any snapshot)."""
    seen = view.attempts.get(uid)
    record = view.queue.get(uid)
    if seen is None or record is None:
        return seen != view.epoch          # new, or attempted outside the queue (backfill modes)
    if record["moved"]:
        return view.clock >= backoff_end(record)
    return seen != view.epoch


def worth_retrying(view: View, pod: dict[str, Any], info: PodInfo, snapshot: Snapshot) -> bool:
    """At the pod's turn in the pass: attempt it now? Moves it (and arms its timer) when the
    flush is due or an event since its last look may help; attempts it once its back-off ended."""
    uid = pod["metadata"]["uid"]
    seen = view.attempts.get(uid)
    record = view.queue.get(uid)
    if seen is None or record is None:
        return seen != view.epoch
    if not record["moved"] and seen != view.epoch:
        flush = view.clock >= float(record["at"]) + MAX_UNSCHEDULABLE_SECONDS
        if flush or _event_helps(view, info, record, seen, snapshot):
            record["moved"] = True
            view.touch(pod)
        view.attempts[uid] = view.epoch       # every logged change so far has been judged
    return bool(record["moved"]) and (
        view.clock >= backoff_end(record))


def _event_helps(view: View, info: PodInfo, record: dict[str, Any], seen: int,
                 snapshot: Snapshot) -> bool:
    log = view.capacity_log
    start = _after(log, seen)
    judged: set[tuple[str, int]] = set()
    for _epoch, node, priority in log[start:]:
        if node == ANY_NODE:
            return True
        if (node, priority) in judged:
            continue
        judged.add((node, priority))
        if pod_left_hint(snapshot, info, record, node, int(priority)):
            return True
    return False


def pod_left_hint(snapshot: Snapshot, info: PodInfo, record: dict[str, Any], node: str,
                  priority: int) -> bool:
    """Queue (True) or skip: a pod of ``priority`` left ``node`` (see the module docstring)."""
    plugins = set(record.get("plugins") or ())
    if not plugins or plugins - RESOURCE_PLUGINS - POD_BLIND_FILTERS:
        return True                     # unknown, or a plugin that reads other pods
    if not plugins & RESOURCE_PLUGINS:
        return False                    # only node-only plugins rejected it
    if not node:
        return False                    # fit.go: an unscheduled, unnominated pod was deleted
    row = snapshot.index.get(node)
    if row is None:
        return True
    may_preempt = info.preemption_policy != "Never"
    if may_preempt and record.get("dry") and priority < info.priority:
        return False                    # its dry run already counted that pod as removable
    return room_may_fit(snapshot, info, row, may_preempt)


def room_may_fit(snapshot: Snapshot, info: PodInfo, row: int, may_preempt: bool) -> bool:
    """A necessary condition for ``info`` to fit ``row`` now, with every pod it could preempt
    gone when ``may_preempt``: cpu, memory, one pod slot, and its GPU milli in total."""
    vec = snapshot.request_vector(info)
    free = snapshot.free[row].astype(np.int64)
    if may_preempt:
        free[: len(snapshot.resource_names)] += snapshot.requested_below(
            info.priority, np.array([row], dtype=np.int64))[0]
    if free[PODS] < 1 or free[CPU] < vec[CPU] or free[MEMORY] < vec[MEMORY]:
        return False
    demand = gpu_milli_of(info)
    if not demand or not snapshot.gpu_plain[row]:
        return True                     # shared or partitioned devices are not judged here
    room = int(np.clip(snapshot.gpu_free_milli[row], 0, None).sum())
    if may_preempt:
        room += sum(gpu_milli_of(other) for other in snapshot.pods_on(row)
                    if other.priority < info.priority)
    return room >= demand


def gpu_milli_of(info: PodInfo) -> int:
    """The milli-GPUs a pod asks for (or holds) in all: shares x count, or whole GPUs x 1000."""
    if info.gpu_milli:
        return int(info.gpu_milli) * int(info.gpu_count or 1)
    return WHOLE_GPU_MILLI * int(info.requests.get("nvidia.com/gpu", 0))


def _after(log: list[list[Any]], epoch: int) -> int:
    """The index of the first log entry newer than ``epoch`` (the log is in epoch order; a
    bisection on the entries themselves, no list of epochs built per pending pod)."""
    return bisect.bisect_right(log, epoch, key=lambda entry: int(entry[0]))


def forget(view: View, live: set[str]) -> None:
    """Drop the queue's records of pods no longer pending, and the log entries every pending
    pod has judged."""
    for table in (view.attempts, view.queue):
        for uid in [u for u in table if u not in live]:
            del table[uid]
    oldest = min(view.attempts.values(), default=view.epoch)
    log = view.capacity_log
    if log and log[0][0] <= oldest:
        del log[: _after(log, oldest)]


def queue_of(view: View, uid: str) -> str:
    """Which of upstream's queues a pending, ungated pod is in now: ``active`` (never tried, or
    moved and its back-off over), ``backoff`` (moved, backing off) or ``unschedulable``."""
    record = view.queue.get(uid)
    if record is None:
        return "active" if view.attempts.get(uid) != view.epoch else "unschedulable"
    if not record["moved"]:
        return "unschedulable"
    backing_off = view.clock < backoff_end(record)
    return "backoff" if backing_off else "active"
