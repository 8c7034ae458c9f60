"""The one loop that moves virtual time: step through the event heap, settling at each step.

Every way the cluster clock moves goes through :func:`run`: ``Cluster.advance`` (``gpusched
advance``, ``serve``'s real-time ticks, a CLI command following the wall clock while it waits,
see ``clock.wall``) and a trace replay (``clock.arrivals.feed``). One step:

1. the earliest live entry of the heap (``Timeline.next_after``): a controller's timer (a pod's
   run time is up, a grace period ends, a back-off ends ...) or a pushed event (a trace arrival);
   the loop ends when there is none, or it lies past ``until``;
2. ``observer.before(view, t)``, then the clock moves to ``t``;
3. the entries due are popped (``Timeline.pop_due``: the keys of the timers that fired), then
   each event source acts at ``t`` (``source.arrive``: the arrivals are applied; their keys);
4. ``settle(view, keys)``: the controllers, kubelet and scheduler reconcile on work queues
   seeded with those keys (``clock.settle``);
5. ``observer.after(view, t, keys)`` with the keys changed in the step, then the heap
   re-derives the timers of what changed (``Timeline.sync``).

At the end the clock moves to ``until`` (when given and later): ``advance 30m`` ends 30 minutes
on however many events lay inside. Equal times resolve in heap order (timers, then events, each
by sequence number), so the same inputs step the same way on every run.

Neighbours: ``clock.timers`` (the heap), ``clock.settle``, ``clock.arrivals`` (an event source
and the replay's observer); used by ``cluster.cluster`` (``Cluster.advance``).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from gpusched.cluster.clock.timers import Timeline
from gpusched.cluster.apiserver.view import Key, View

MAX_ADVANCE_STEPS = 100_000

Settle = Callable[[View, set[Any]], None]


class Observer(Protocol):
    """What a replay measures around each step (``sim.replay_record``)."""

    def before(self, view: View, t: float) -> None: ...

    def after(self, view: View, t: float, keys: set[Key]) -> None: ...


class EventSource(Protocol):
    """Pushes its next event onto the heap (``Timeline.push_event``) and acts when it is due."""

    def arrive(self, view: View, t: float, timeline: Timeline) -> set[Key]: ...


def run(view: View, timeline: Timeline, settle: Settle, until: float | None = None,
        sources: tuple[EventSource, ...] = (), observer: Observer | None = None,
        max_steps: int = MAX_ADVANCE_STEPS) -> int:
    """Step through the heap until it runs out or its next entry lies past ``until`` (see the
    module docstring); the number of steps."""
    steps = 0
    while steps < max_steps:
        t = timeline.next_after(view.clock)
        if t is None or (until is not None and t > until):
            break
        if observer is not None:
            observer.before(view, t)
        view.clock = t
        fired = timeline.pop_due(t)
        created: set[Key] = set()
        for source in sources:
            created |= source.arrive(view, t, timeline)
        settle(view, fired | created)
        keys = created | view.journal_since(0) if observer is not None else created
        timeline.sync(view)
        if observer is not None:
            observer.after(view, t, keys)
        steps += 1
    if until is not None and until > view.clock:
        if observer is not None:
            observer.before(view, until)
        view.clock = until
    return steps
