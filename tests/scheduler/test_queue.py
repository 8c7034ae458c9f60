"""Scheduling queue: PrioritySort order, backoff on the fake clock, events."""

from gpusched.scheduler.queue import SchedulingQueue
from tests.scheduler.builders import make_pod


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def drain(queue):
    out = []
    while (pod := queue.pop()) is not None:
        out.append(pod.name)
    return out


def test_priority_then_creation_order():
    queue = SchedulingQueue(Clock())
    for name, priority, seq in [("old-low", 0, 1), ("new-high", 10, 3), ("old-high", 10, 2), ("mid", 5, 0)]:
        queue.add(make_pod(name=name, priority=priority, creation_seq=seq))
    assert drain(queue) == ["old-high", "new-high", "mid", "old-low"]


def test_backoff_doubles_up_to_ten_seconds():
    clock = Clock()
    queue = SchedulingQueue(clock)
    pod = make_pod(name="p")
    durations = []
    for _ in range(6):
        queue.add_backoff(pod)
        durations.append(queue.backoff_duration(pod.uid))
    assert durations == [1, 2, 4, 8, 10, 10]


def test_backoff_pod_returns_when_time_passes():
    clock = Clock()
    queue = SchedulingQueue(clock)
    pod = make_pod(name="p")
    queue.add_backoff(pod)
    assert queue.pop() is None
    clock.now = 0.999
    assert queue.pop() is None
    clock.now = 1.0
    assert queue.pop().name == "p"


def test_unschedulable_waits_for_an_event():
    clock = Clock()
    queue = SchedulingQueue(clock)
    pod = make_pod(name="p")
    queue.add_unschedulable(pod)
    clock.now = 100
    assert queue.pop() is None
    assert queue.move_all_to_active("NodeAdded") == 1
    assert queue.where(pod.uid) == "active"
    assert queue.pop().name == "p"


def test_event_during_backoff_goes_to_backoff_queue():
    clock = Clock()
    queue = SchedulingQueue(clock)
    pod = make_pod(name="p")
    queue.add_unschedulable(pod)
    clock.now = 0.5
    queue.move_all_to_active("PodDeleted")
    assert queue.where(pod.uid) == "backoff" and queue.pop() is None
    assert queue.next_backoff_expiry() == 1.0
    clock.now = 1.0
    assert queue.pop().name == "p"


def test_flush_unschedulable_after_five_minutes():
    clock = Clock()
    queue = SchedulingQueue(clock)
    queue.add_unschedulable(make_pod(name="p"))
    clock.now = 299
    assert queue.flush_unschedulable() == 0
    clock.now = 300
    assert queue.flush_unschedulable() == 1
    assert drain(queue) == ["p"]


def test_delete_and_readd_leave_no_stale_entries():
    queue = SchedulingQueue(Clock())
    pod = make_pod(name="p")
    queue.add(pod)
    queue.delete(pod.uid)
    assert queue.pop() is None and len(queue) == 0
    queue.add(pod)
    queue.add(pod)
    assert drain(queue) == ["p"]
