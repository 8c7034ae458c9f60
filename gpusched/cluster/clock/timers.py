"""The event heap of virtual time: when does anything in the cluster next have work to do?

SimPy keeps one heap of ``(time, priority, sequence)`` so that equal times resolve the same way
every run (``simpy/core.py``, ``Environment.schedule``/``step``). gpusched does the same, with one
difference that keeps the controllers simple and the state file the only truth: a timer is not a
callback but a *due time derived from one object*. Each timed controller registers, per kind, a
function ``due(view, body) -> float | None`` ("this Pod's grace period ends at t", "this Job's
deadline is t", "this Pod's back-off ends at t"); the controller's own ``reconcile`` does the work
when the clock reaches it (level-triggered, as every controller here is).

:class:`Timeline` keeps the heap for one view:

- :meth:`Timeline.build` derives every object's due times once (O(n log n), once per command);
- :meth:`Timeline.sync` re-derives only the objects changed since (``View.take_touched``); a
  changed Node also re-derives the Pods bound to it (NoExecute taints decide their eviction);
- :meth:`Timeline.next_after` pops stale entries lazily: an entry is live only while it is still
  the latest due time its (object, function) produced, so nothing is ever removed from the middle.

Events that no object's state implies (a trace's arrivals) are pushed by their source
(:meth:`Timeline.push_event`) as heap entries of their own, one per source at a time: they are
never stale, sort after the timers of the same time (priority 1), and an event already due
comes due at once (``next_after`` answers ``now``).

The one loop (``clock.loop.run``) finds the earliest live time, moves the clock there, pops the
entries due (:meth:`Timeline.pop_due`: their keys are the timers that fired), lets the event
sources act, settles on work queues seeded with them (``apiserver.changes``), syncs, repeats: the
cost of ``advance 30d`` follows the events inside the 30 days, not steps x objects.

Adding a timer (e.g. Job back-off): write ``due(view, job) -> float | None`` in the controller
and add it under its kind in ``controllers.registry.TIMED``; ``reconcile`` acts when ``view.now() >= due``.

Neighbours: ``clock.loop`` (the loop over this heap), ``clock.arrivals`` (an event source),
``cluster.controllers`` (``TIMED``), ``apiserver.view``.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from gpusched.cluster.apiserver.view import Key, View, key_of

DueFn = Callable[[View, dict[str, Any]], "float | None"]
EVENT = -1                      # ``Timer.fn_index`` of a pushed event (no derived timer)
_NO_KEY: Key = ("", "", "")


@dataclass(frozen=True, order=True, slots=True)
class Timer:
    """One heap entry, ordered by (when, priority, seq) as SimPy orders its events."""

    when: float
    priority: int
    seq: int
    key: Key = field(compare=False)
    fn_index: int = field(compare=False)


class Timeline:
    """The heap of due times of one view; see the module docstring."""

    def __init__(self, timed: Mapping[str, Sequence[DueFn]]) -> None:
        self.timed = timed
        self.heap: list[Timer] = []
        self.latest: dict[tuple[Key, int], float] = {}
        self.seq = 0
        self.takes = 0        # ``View.touched_takes`` after this heap's last take (kept heaps)
        self._fns: list[tuple[str, DueFn]] = [(kind, fn) for kind, fns in sorted(timed.items())
                                               for fn in fns]

    @classmethod
    def build(cls, view: View, timed: Mapping[str, Sequence[DueFn]]) -> "Timeline":
        timeline = cls(timed)
        view.take_touched()
        timeline.takes = view.touched_takes
        for kind in sorted(timed):
            for body in view.list(kind):
                timeline._derive(view, key_of(body), body)
        return timeline

    def _derive(self, view: View, key: Key, body: dict[str, Any] | None) -> None:
        for index, (kind, fn) in enumerate(self._fns):
            if kind != key[0]:
                continue
            when = fn(view, body) if body is not None else None
            slot = (key, index)
            if when is None:
                self.latest.pop(slot, None)
                continue
            if self.latest.get(slot) == when:
                continue
            self.latest[slot] = when
            self.seq += 1
            heapq.heappush(self.heap, Timer(float(when), 0, self.seq, key, index))

    def sync(self, view: View) -> None:
        """Re-derive the objects changed since the last sync (and the Pods of changed Nodes)."""
        touched = view.take_touched()
        self.takes = view.touched_takes
        if not touched:
            return
        nodes = {key[2] for key in touched if key[0] == "Node"}
        if nodes and "Pod" in self.timed:
            for node in nodes:
                touched.update(view.pods_on(node))
        for key in sorted(touched):
            if key[0] in self.timed:
                self._derive(view, key, view.objects.get(key))

    def push_event(self, when: float, now: float) -> None:
        """An event at ``when`` (a trace arrival), due at ``now`` if that is later: its source
        acts when :meth:`pop_due` reaches it."""
        self.seq += 1
        heapq.heappush(self.heap, Timer(max(float(when), now), 1, self.seq, _NO_KEY, EVENT))

    def next_after(self, now: float) -> float | None:
        """The earliest live due time later than ``now`` (timers at or before it are dropped:
        the settle at ``now`` already did that work), or ``now`` for an event due."""
        while self.heap:
            top = self.heap[0]
            if top.fn_index == EVENT:
                return max(top.when, now)
            if self.latest.get((top.key, top.fn_index)) != top.when or top.when <= now:
                heapq.heappop(self.heap)
                if top.when <= now and self.latest.get((top.key, top.fn_index)) == top.when:
                    del self.latest[(top.key, top.fn_index)]
                continue
            return top.when
        return None

    def pop_due(self, now: float) -> set[Key]:
        """Remove the live entries due at or before ``now``; the keys of their objects (what
        settle hands the controllers as the timers that fired)."""
        fired = set()
        while self.heap and self.heap[0].when <= now:
            top = heapq.heappop(self.heap)
            if top.fn_index == EVENT:
                continue
            slot = (top.key, top.fn_index)
            if self.latest.get(slot) == top.when:
                del self.latest[slot]
                fired.add(top.key)
        return fired

    def __len__(self) -> int:
        return len(self.latest)
