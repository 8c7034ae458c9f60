"""Settling: the controllers, then the kubelet, pod lifecycle, quota refresh and the scheduler,
run until a round changes nothing at the current virtual time (at most ``MAX_SETTLE_ROUNDS``).

Two ways to reach the same fixpoint:

- :func:`settle_full`: every step's full pass, round after round (an informer's resync). A
  ``Cluster`` runs it on a view just loaded from the store (a new process, or after another
  process committed).
- :func:`settle_changed`: work queues (``apiserver.changes``). Each step has a cursor in the view's
  journal of changes and is handed the keys changed since its previous run (in the first round:
  what the command changed since the journal was last cleared, plus ``fired``, the keys whose
  timers fired). A ``KEYED`` step reconciles only what they affect; a ``WATCHES`` step runs its
  full pass when one of them is a kind it reads; any other step runs its full pass when anything
  changed. Rounds repeat until one changes nothing: then every step has seen every change. Every
  later write of a process that keeps its view, and every time step of ``advance``, settles this
  way, so a write costs what it changes (upstream controllers reconcile the keys their
  informers' event handlers enqueue; only a resync lists everything).

Both clear the journal when they end (the next settle starts from what changed after);
``clock.arrivals.feed`` uses :func:`_settle_changed`, which keeps it for its observer.

Neighbours: ``cluster.cluster`` (``Cluster._settle``), ``clock.loop`` (settles at each step),
``clock.arrivals``,
``controllers.registry`` (the controllers, ``KEYED``, ``WATCHES``), ``cluster.scheduling.host``.
"""

from __future__ import annotations

from typing import Any, Callable

import logging

from gpusched.cluster.scheduling import host as scheduling_host
from gpusched.cluster.kubelet import admission as kubelet_admission
from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.kubelet import pod_lifecycle
from gpusched.cluster.controllers.quota import resource_quota
from gpusched.cluster.controllers.registry import CONTROLLERS, KEYED, WATCHES
from gpusched.cluster.apiserver.view import View

log = logging.getLogger(__name__)
MAX_SETTLE_ROUNDS = 500


def _has_quotas(changes: Changes) -> bool:
    return bool(changes.view.list("ResourceQuota"))


# After the controllers: the kubelet admits the pods bound to each node, pod_lifecycle starts
# them, quotas are refreshed, the scheduler runs (it reads only the unbound pods' index).
AFTER_CONTROLLERS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("kubelet", kubelet_admission.admit_bound_pods),
    ("pod-lifecycle", pod_lifecycle.reconcile),
    ("resourcequota", resource_quota.reconcile),
    ("scheduler", scheduling_host.schedule_pending),
)
KEYED_AFTER = frozenset({"kubelet", "pod-lifecycle", "scheduler"})
WATCHES_AFTER = {"resourcequota": _has_quotas}


def settle_changed(view: View, fired: set[Any]) -> None:
    """Settle on work queues from the journal and ``fired`` (see the module docstring)."""
    try:
        _settle_rounds(view, fired)
    finally:
        view.clear_journal()


def _settle_changed(view: View, fired: set[Any]) -> None:
    """Settle on work queues from ``fired`` alone: the journal is cleared first and kept after
    (``feed`` hands the keys it created and the timers that fired, then reads what changed)."""
    view.clear_journal()
    _settle_rounds(view, fired)


def _settle_rounds(view: View, fired: set[Any]) -> None:
    steps = CONTROLLERS + AFTER_CONTROLLERS
    keyed, watches = KEYED | KEYED_AFTER, {**WATCHES, **WATCHES_AFTER}
    cursors = [0] * len(steps)
    for round_ in range(MAX_SETTLE_ROUNDS):
        before = view.mutations
        for index, (name, reconcile) in enumerate(steps):
            keys = view.journal_since(cursors[index])
            cursors[index] = view.journal_size()
            if round_ == 0:
                keys |= fired
            if not keys:
                continue
            changes = Changes(view, frozenset(keys))
            if name in keyed:
                reconcile(view, changes)
            elif name not in watches or watches[name](changes):
                reconcile(view)
        if view.mutations == before:
            return
    log.warning("settle: no fixpoint after %d rounds", MAX_SETTLE_ROUNDS)


def settle_full(view: View) -> None:
    """Every step's full pass, rounds until nothing changes (see the module docstring)."""
    view.clear_journal()
    try:
        for _ in range(MAX_SETTLE_ROUNDS):
            before = view.mutations
            for _name, reconcile in CONTROLLERS + AFTER_CONTROLLERS:
                reconcile(view)
            if view.mutations == before:
                return
        log.warning("settle: no fixpoint after %d rounds", MAX_SETTLE_ROUNDS)
    finally:
        view.clear_journal()
