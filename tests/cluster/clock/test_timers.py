"""Pushed events on the event heap (``cluster.clock.timers.Timeline.push_event``).

As SimPy's ``Environment.step`` (``simpy/core.py``), entries come out by (time, priority,
sequence): a trace arrival is an entry like every timer, after the timers of its time, and one
already past comes due at once, so a replay steps the same way on every run.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gpusched.cluster.clock.timers import Timeline
from gpusched.cluster.apiserver.view import View


def _timer_at(when: float):
    """A due function: every Pod's timer is at ``when``."""
    return lambda view, body: when


def _pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


@dataclass(frozen=True)
class EventCase:
    id: str
    clock: float
    timer: float | None       # one Pod's timer, if any
    events: tuple[float, ...]
    steps: tuple[float, ...]  # the times next_after answers, one step after another


EVENT_CASES = [
    EventCase("an-event-alone", 0.0, None, (5.0,), (5.0,)),
    EventCase("an-event-before-a-timer", 0.0, 10.0, (5.0,), (5.0, 10.0)),
    EventCase("a-timer-and-an-event-at-one-time-are-one-step", 0.0, 5.0, (5.0,), (5.0,)),
    EventCase("an-event-already-past-comes-due-now", 100.0, None, (5.0,), (100.0,)),
    EventCase("events-in-time-order", 0.0, None, (3.0, 1.0, 2.0), (1.0, 2.0, 3.0)),
]


@pytest.mark.parametrize("case", EVENT_CASES, ids=lambda c: c.id)
def test_events_come_due_in_heap_order(case):
    view = View(clock=case.clock)
    if case.timer is not None:
        view.create(_pod("p"))
    timeline = Timeline.build(view, {"Pod": [_timer_at(case.timer)]} if case.timer is not None else {})
    for when in case.events:
        timeline.push_event(when, view.clock)
    steps = []
    while (t := timeline.next_after(view.clock)) is not None:
        steps.append(t)
        view.clock = t
        timeline.pop_due(t)
    assert tuple(steps) == case.steps


def test_an_event_is_not_a_fired_timer():
    """pop_due answers the keys of the timers that fired; an event has no key."""
    view = View()
    timeline = Timeline.build(view, {})
    timeline.push_event(4.0, 0.0)
    assert timeline.pop_due(4.0) == set()
    assert timeline.next_after(4.0) is None
