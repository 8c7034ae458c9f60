"""``feed``: ``advance`` with objects arriving on the way (a trace replay's clock).

``Cluster.advance`` steps the virtual clock through the controllers' timers (pod completions,
grace periods, back-offs ...), settling at each. A replay also has *arrivals*: objects a trace
creates at given times. :func:`feed` runs both in one write transaction over one view: at each
step the clock moves to the earlier of the next timer and the next arrival; the arrivals of
that time are applied (``apiserver.apply.apply_one``: validation and admission, as ``apply``
does), then the view settles on work queues seeded with the timers that fired and the created
keys (``cluster.settle._settle_changed``) and the timeline re-derives what changed. Nothing
here knows about traces: the same controllers, kubelet and scheduler run as for ``advance``.

``observer.before(view, t)`` runs before anything changes at ``t`` (the state since the
previous step is still there: for time samples); ``observer.after(view, t, keys)`` runs after
the settle with the keys changed at that step (``view.gone(key)`` holds deleted bodies);
``observer.refused(view, t, manifest, message)`` for an arrival admission refused (a quota,
an invalid document): the replay goes on without it, as a client whose create failed.

Neighbours: ``cluster.cluster`` (settle, transactions), ``cluster.timers``, ``apiserver.apply``;
used by ``sim.replay``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Protocol

from gpusched.cluster.apiserver.apply import apply_one
from gpusched.cluster.cluster import MAX_ADVANCE_STEPS
from gpusched.cluster.settle import _settle_changed
from gpusched.cluster.controllers.registry import TIMED
from gpusched.cluster.timers import Timeline
from gpusched.cluster.apiserver.view import Key, View
from gpusched.errors import GpuschedError
from gpusched.objects.manifest import Manifest


@dataclass(frozen=True, slots=True)
class Arrival:
    """Documents to apply when the clock reaches ``at`` (seconds on the cluster clock)."""

    at: float
    manifests: tuple[Manifest, ...]


class Observer(Protocol):
    def before(self, view: View, t: float) -> None: ...

    def after(self, view: View, t: float, keys: set[Key]) -> None: ...

    def refused(self, view: View, t: float, manifest: Manifest, message: str) -> None: ...


class _Arrivals:
    """The arrival iterator with one look-ahead; arrivals must come in time order."""

    def __init__(self, arrivals: Iterable[Arrival]) -> None:
        self._it: Iterator[Arrival] = iter(arrivals)
        self.head: Arrival | None = next(self._it, None)

    def take(self, t: float) -> list[Manifest]:
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
         max_steps: int = MAX_ADVANCE_STEPS) -> int:
    """Step through timers and arrivals (see the module docstring) until both run out or the
    clock would pass ``until``; returns the number of steps. The caller holds the transaction
    (``Cluster.writing(settle=False)``); ``created``: keys it changed before (settled first)."""
    queue = _Arrivals(arrivals)
    _settle_changed(view, set(created))
    timeline = Timeline.build(view, TIMED)
    steps = 0
    while steps < max_steps:
        due = timeline.next_after(view.clock)
        arrival = queue.head.at if queue.head is not None else None
        t = min((x for x in (due, arrival) if x is not None), default=None)
        if t is None or (until is not None and t > until):
            break
        t = max(t, view.clock)
        observer.before(view, t)
        view.clock = t
        fired = timeline.pop_due(t)
        created = set()
        for manifest in queue.take(t):
            try:
                created.add(_created(view, manifest))
            except GpuschedError as err:      # admission refused it (quota, validation ...)
                observer.refused(view, t, manifest, str(err))
        _settle_changed(view, fired | created)
        keys = created | view.journal_since(0)
        timeline.sync(view)
        observer.after(view, t, keys)
        steps += 1
    if until is not None and until > view.clock:
        observer.before(view, until)
        view.clock = until
    return steps


def _created(view: View, manifest: Manifest) -> Key:
    kind, name, namespace, _action, _warnings = apply_one(view, manifest)
    return (kind, namespace, name)
