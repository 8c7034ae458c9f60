"""The scheduling queue (``scheduler.queue``): activeQ order, the unschedulable pods and their
queueing hints, backoffQ and the flush, on a fake store and clock, against kube-scheduler's
``pkg/scheduler/backend/queue/scheduling_queue.go`` (``PriorityQueue``), ``active_queue.go``,
``backoff_queue.go``, ``unschedulable_pods.go`` and ``pkg/scheduler/framework/types.go``
(``ClusterEvent``, ``QueueingHint``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from gpusched.scheduler.queue import (ACTIVE, BACKOFF, UNSCHEDULABLE, SchedulingQueue, queue_of,
                                      queue_sort_key)
from tests.scheduler.builders import make_node, make_pod, snapshot_of


@dataclass
class Store:
    """The queue's lasting state, as the embedded cluster's view holds it."""

    clock: float = 0.0
    epoch: int = 0
    attempts: dict[str, int] = field(default_factory=dict)
    queue: dict[str, dict[str, Any]] = field(default_factory=dict)
    capacity_log: list[list[Any]] = field(default_factory=list)

    def event(self, node: str = "*", priority: int = 0) -> None:
        """A pod of ``priority`` left ``node`` ("*": a Node changed)."""
        self.epoch += 1
        self.capacity_log.append([self.epoch, node, priority])


def queue_with(*pods, snapshot=None):
    """A queue over a fresh store holding ``pods`` (PodInfo), and the store."""
    store = Store()
    infos = {p.uid: p for p in pods}
    queue = SchedulingQueue(store, infos.get, lambda uid: None)
    for pod in pods:
        queue.add(pod.uid, queue_sort_key(pod.priority, pod.creation_seq, pod.namespace, pod.name))
    return queue, store


def turn(queue, snapshot=None, attempt=lambda uid: None):
    """One loop as ``scheduling_loop.run_loop`` runs it: the uids attempted, in order."""
    queue.prepare(snapshot)
    out = []
    while (popped := queue.pop(snapshot)) is not None:
        uid, judge = popped
        if judge and not queue.judge(uid, queue.info_of(uid), snapshot):
            continue
        out.append(uid)
        attempt(uid)
    return out


def fail_all(queue, plugins=("NodeResourcesFit",)):
    return lambda uid: queue.failed(uid, list(plugins), dry=False)


def test_active_queue_pops_by_priority_then_creation():
    """active_queue.go: activeQ is a heap ordered by the QueueSort plugin's Less
    (PrioritySort: higher priority first, then the earlier creation)."""
    pods = [make_pod(name=n, priority=p, creation_seq=s)
            for n, p, s in [("old-low", 0, 1), ("new-high", 10, 3), ("old-high", 10, 2), ("mid", 5, 0)]]
    queue, _ = queue_with(*pods)
    assert turn(queue) == ["uid-old-high", "uid-new-high", "uid-mid", "uid-old-low"]


def test_a_failed_pod_waits_for_an_event():
    """unschedulable_pods.go: a pod no node fits waits in unschedulablePods; a loop without a
    cluster event does not pop it again."""
    queue, store = queue_with(make_pod(name="p"))
    assert turn(queue, attempt=fail_all(queue)) == ["uid-p"]
    assert queue_of(store, "uid-p") == UNSCHEDULABLE
    assert not queue.has_work() and turn(queue) == []


@pytest.mark.parametrize("plugins, event, moved", [
    pytest.param(("TaintToleration",), "gpu-1", False, id="node-only-plugin-skips-pod-deleted"),
    pytest.param(("TaintToleration",), "*", True, id="node-only-plugin-queues-node-change"),
    pytest.param(("InterPodAffinity",), "gpu-1", True, id="pod-reading-plugin-queues-pod-deleted"),
    pytest.param((), "gpu-1", True, id="unknown-plugins-always-queue"),
    pytest.param(("NodeResourcesFit",), "", False, id="unscheduled-pod-deleted-skips"),
])
def test_queueing_hints_decide_which_event_moves_a_pod(plugins, event, moved):
    """scheduling_queue.go isPodWorthRequeuing: a waiting pod moves only when a plugin that
    rejected it returns Queue for the event (fit.go isSchedulableAfterPodEvent for resources;
    node-only plugins register no pod event)."""
    queue, store = queue_with(make_pod(name="p"))
    turn(queue, attempt=fail_all(queue, plugins))
    store.event(event)
    turn(queue, snapshot_of(make_node("gpu-1", gpus=1)))
    assert store.queue["uid-p"]["moved"] is moved
    assert store.attempts["uid-p"] == store.epoch        # the event was judged either way


def test_a_moved_pod_backs_off_then_becomes_active():
    """backoff_queue.go: a moved pod waits in backoffQ until lastFailure + 1 s (one failure:
    podInitialBackoffDuration), then activeQ pops it."""
    queue, store = queue_with(make_pod(name="p"))
    turn(queue, attempt=fail_all(queue))
    store.clock = 0.5
    store.event("*")
    assert turn(queue) == [] and queue_of(store, "uid-p") == BACKOFF
    store.clock = 1.0
    assert queue.has_work() and turn(queue) == ["uid-p"]


def test_a_pod_waiting_five_minutes_is_flushed_by_the_next_event():
    """scheduling_queue.go flushUnschedulablePodsLeftover: a pod left unschedulable longer than
    podMaxInUnschedulablePodsDuration (5 min) is moved whatever its hints say."""
    queue, store = queue_with(make_pod(name="p"))
    turn(queue, attempt=fail_all(queue, ("TaintToleration",)))
    store.clock = 299.0
    store.event("gpu-1")
    assert turn(queue) == [] and not store.queue["uid-p"]["moved"]
    store.clock = 300.0
    store.event("gpu-1")
    assert turn(queue) == ["uid-p"]


def test_a_later_command_ends_every_backoff():
    """The CLI's clock stands still between commands: a back-off begun in an earlier command
    is over in the next (``SchedulingQueue.end_backoffs``)."""
    queue, store = queue_with(make_pod(name="p"))
    turn(queue, attempt=fail_all(queue))
    store.event("*")
    assert turn(queue) == []
    queue.end_backoffs()
    assert queue_of(store, "uid-p") == ACTIVE and turn(queue) == ["uid-p"]


def test_a_new_pod_does_not_wake_the_waiting_ones():
    """eventhandlers.go addPodToSchedulingQueue: an unscheduled pod's add enqueues that pod
    alone; the pods waiting in unschedulablePods are not looked at (no event for them)."""
    waiting = [make_pod(name=f"w{i}") for i in range(50)]
    looked: list[str] = []
    queue, store = queue_with(*waiting)
    queue.info_of = lambda uid: looked.append(uid)        # a judged or screened pod asks for it
    turn(queue, attempt=fail_all(queue))
    new = make_pod(name="new")
    queue.add(new.uid, queue_sort_key(0, 10**6, "default", "new"))
    assert turn(queue) == ["uid-new"] and looked == []


def test_a_resource_event_wakes_only_the_pods_it_may_fit():
    """fit.go isSchedulableAfterPodEvent: a pod leaving a node queues a pod rejected for
    resources only when the node's free room (what it may preempt included) covers it; the
    others are not popped at all."""
    node = make_node("gpu-1", gpus=2)
    small, big = make_pod(name="small", gpus=1), make_pod(name="big", gpus=4)
    snapshot = snapshot_of(node)
    queue, store = queue_with(small, big)
    turn(queue, attempt=fail_all(queue, ("GpuDevices",)))
    store.event("gpu-1")
    popped = []
    queue.prepare(snapshot)
    while (entry := queue.pop(snapshot)) is not None:
        popped.append(entry[0])
    assert popped == ["uid-small"]
    assert store.attempts["uid-big"] == store.epoch


def test_restore_rebuilds_the_queues_from_the_store():
    """A new process finds each pod where the stored records put it."""
    queue, store = queue_with(make_pod(name="a"), make_pod(name="b"), make_pod(name="c"))
    turn(queue, attempt=fail_all(queue))
    store.event("*")
    turn(queue)                                           # all three moved, backing off
    store.queue["uid-c"]["moved"] = False                 # c: waiting, its event judged
    restored = SchedulingQueue(store, {}.get, lambda uid: None)
    restored.restore([(u, queue_sort_key(0, i, "default", u)) for i, u in
                      enumerate(["uid-a", "uid-b", "uid-c"])])
    store.clock = 1.0
    assert turn(restored) == ["uid-a", "uid-b"]


def test_delete_forgets_a_pod():
    queue, store = queue_with(make_pod(name="p"))
    turn(queue, attempt=fail_all(queue))
    queue.delete("uid-p")
    assert "uid-p" not in queue and "uid-p" not in store.queue and "uid-p" not in store.attempts


# ---- Activate and a Coscheduling event: scheduling_queue.go Activate / activate,
# addEventsIfPodInFlight, MoveAllToActiveOrBackoffQueue, requeuePodWithQueueingStrategy ----------

def _failed_at(queue, store, uid: str, at: float) -> None:
    """``uid`` popped (in flight) and failed at ``at``: back in the unschedulable pods."""
    store.clock = at
    while (popped := queue.pop()) is not None and popped[0] != uid:
        pass
    queue.failed(uid, ["Coscheduling"], dry=False)


@pytest.mark.parametrize("failed_at,now,verb,where", [
    # upstream activate(): from unschedulablePods straight to activeQ (ForceActivate)
    pytest.param(0.0, 0.5, "activate", ACTIVE, id="activate: failed earlier -> activeQ, back-off skipped"),
    # the virtual clock's rule: a failure at this instant is still in flight -> after back-off
    pytest.param(0.0, 0.0, "activate", BACKOFF, id="activate: failed this instant -> waits out its back-off"),
    # MoveAllToActiveOrBackoffQueue with a Queue hint: queueAfterBackoff
    pytest.param(0.0, 0.5, "move", BACKOFF, id="move: in its back-off window -> backoffQ"),
    pytest.param(0.0, 1.0, "move", ACTIVE, id="move: back-off over -> activeQ"),
])
def test_activate_and_move_of_an_unschedulable_pod(failed_at, now, verb, where):
    a, b = make_pod("a"), make_pod("b")
    queue, store = queue_with(a, b)
    _failed_at(queue, store, a.uid, failed_at)
    store.clock = now
    getattr(queue, verb)({a.uid})
    if where == BACKOFF:
        assert queue_of(store, a.uid) == BACKOFF
    assert (a.uid in turn(queue)) == (where == ACTIVE)


@pytest.mark.parametrize("verb", ["activate", "move"])
def test_a_pod_activated_in_flight_waits_out_its_backoff_when_it_fails(verb):
    """Activate: ``addEventsIfPodInFlight`` (EventForceActivate, a wildcard event:
    ``queueAfterBackoff``); the pod does not wait for another event."""
    a = make_pod("a")
    queue, store = queue_with(a)
    assert queue.pop() == (a.uid, False)        # in flight (e.g. waiting at Permit)
    getattr(queue, verb)({a.uid})
    queue.failed(a.uid, ["Coscheduling"], dry=False)
    assert queue_of(store, a.uid) == BACKOFF
    store.clock = 1.0
    assert turn(queue) == [a.uid]


def test_a_gang_reactivating_its_members_costs_one_attempt_each_per_instant():
    """The spin a gang too big for the cluster caused: each member that reaches Permit first
    activates its failed siblings (core.go ActivateSiblings); at one instant of the virtual
    clock each member is attempted once, then waits out its back-off."""
    pods = [make_pod(f"m{i}") for i in range(20)]
    queue, store = queue_with(*pods)
    uids = [p.uid for p in pods]
    attempts = []

    def attempt(uid):                  # every attempt fails and activates the whole group
        attempts.append(uid)
        assert len(attempts) <= 4 * len(uids), "the group is attempted again at the same instant"
        queue.failed(uid, ["Coscheduling"], dry=False)
        queue.activate(set(uids) - {uid})

    turn(queue, attempt=attempt)
    assert sorted(attempts) == sorted(uids)
    store.clock = 1.0                  # every back-off (1 s) ended: one more round
    assert sorted(turn(queue, attempt=attempt)) == sorted(uids)
    assert turn(queue, attempt=attempt) == []
