"""Trace arrivals as heap events, and ``feed``: a replay's run of the one loop.

A replay has, besides the controllers' timers, *arrivals*: objects a trace creates at given
times. :class:`Arrivals` is an event source of the loop (``clock.loop``): it keeps one arrival
ahead and pushes its time onto the event heap (``Timeline.push_event``) as any timer's entry;
when the loop reaches it, the documents of that time are applied
(``apiserver.write.apply``: validation and admission, as ``apply`` does) and their keys join
the timers that fired in the step's settle. Nothing here knows about traces: the same controllers, kubelet and scheduler run
as for ``advance``.

:func:`feed` runs the loop over one view in the caller's write transaction, settling with
``clock.settle._settle_changed`` (which keeps the journal for the observer):
``observer.before(view, t)`` runs before anything changes at ``t`` (the state since the previous
step is still there: for time samples); ``observer.after(view, t, keys)`` runs after the settle
with the keys changed at that step (``view.gone(key)`` holds deleted bodies);
``observer.refused(view, t, manifest, message)`` for an arrival admission refused (a quota, an
invalid document): the replay goes on without it, as a client whose create failed.

Neighbours: ``clock.loop`` (the loop), ``clock.timers`` (the heap), ``apiserver.apply``; used by
``sim.replay``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Protocol

from gpusched.cluster.apiserver import write
from gpusched.cluster.clock import loop
from gpusched.cluster.clock.settle import _settle_changed
from gpusched.cluster.clock.timers import Timeline
from gpusched.cluster.controllers.registry import TIMED
from gpusched.cluster.apiserver.view import Key, View
from gpusched.errors import GpuschedError
from gpusched.objects.manifest import Manifest


@dataclass(frozen=True, slots=True)
class Arrival:
    """Documents to apply when the clock reaches ``at`` (seconds on the cluster clock)."""

    at: float
    manifests: tuple[Manifest, ...]


class Observer(loop.Observer, Protocol):
    """The loop's observer, told also of the arrivals admission refused."""

    def refused(self, view: View, t: float, manifest: Manifest, message: str) -> None: ...


class Arrivals:
    """The arrival iterator as an event source, one arrival ahead; they must come in time order."""

    def __init__(self, arrivals: Iterable[Arrival], observer: Observer) -> None:
        self._it: Iterator[Arrival] = iter(arrivals)
        self.head: Arrival | None = next(self._it, None)
        self.observer = observer

    def schedule(self, timeline: Timeline, now: float) -> None:
        """Push the next arrival's time onto the heap (due at once if it is already past)."""
        if self.head is not None:
            timeline.push_event(self.head.at, now)

    def arrive(self, view: View, t: float, timeline: Timeline) -> set[Key]:
        """Apply the documents due at ``t``; the keys created (refusals go to the observer)."""
        if self.head is None or self.head.at > t:
            return set()
        created = set()
        for manifest in self._take(t):
            try:
                created.add(_created(view, manifest))
            except GpuschedError as err:      # admission refused it (quota, validation ...)
                self.observer.refused(view, t, manifest, str(err))
        self.schedule(timeline, t)
        return created

    def _take(self, t: float) -> list[Manifest]:
        out: list[Manifest] = []
        while self.head is not None and self.head.at <= t:
            out.extend(self.head.manifests)
            following = next(self._it, None)
            if following is not None and following.at < self.head.at:
                raise ValueError(f"arrivals out of time order: {following.at} after {self.head.at}")
            self.head = following
        return out


def feed(view: View, arrivals: Iterable[Arrival], observer: Observer, until: float | None = None,
         created: set[Key] | frozenset[Key] = frozenset(),
         max_steps: int = loop.MAX_ADVANCE_STEPS) -> int:
    """Step through timers and arrivals (see the module docstring) until both run out or the
    clock would pass ``until``; returns the number of steps. The caller holds the transaction
    (``Cluster.writing(settle=False)``); ``created``: keys it changed before (settled first)."""
    source = Arrivals(arrivals, observer)
    _settle_changed(view, set(created))
    timeline = Timeline.build(view, TIMED)
    source.schedule(timeline, view.clock)
    return loop.run(view, timeline, _settle_changed, until, (source,), observer, max_steps)


def _created(view: View, manifest: Manifest) -> Key:
    kind, name, namespace, _action, _warnings = write.apply(view, manifest)
    return (kind, namespace, name)
