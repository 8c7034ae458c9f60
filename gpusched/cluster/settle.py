"""Settling the cluster after a write: the controllers, then the kubelet, pod lifecycle, quota
refresh and scheduler, run on work queues (each step a cursor in the view's journal of
changes) in rounds until a round changes nothing, at most ``MAX_SETTLE_ROUNDS``.

Neighbours: ``cluster.cluster`` (``Cluster._settle`` calls :func:`_settle_changed`),
``controllers.registry`` (the controllers, ``KEYED``, ``WATCHES``), ``cluster.scheduling_pass``.
"""

from __future__ import annotations

from typing import Any, Callable

import logging

from gpusched.cluster import kubelet, scheduling_pass
from gpusched.cluster.admission import refresh_quotas
from gpusched.cluster.changes import Changes
from gpusched.cluster.controllers import pod_lifecycle
from gpusched.cluster.controllers.registry import CONTROLLERS, KEYED, WATCHES
from gpusched.cluster.view import View

log = logging.getLogger(__name__)
MAX_SETTLE_ROUNDS = 500


def _has_quotas(changes: Changes) -> bool:
    return bool(changes.view.list("ResourceQuota"))


# After the controllers: the kubelet admits the pods bound to each node, pod_lifecycle starts
# them, quotas are refreshed, the scheduler runs (it reads only the unbound pods' index).
AFTER_CONTROLLERS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("kubelet", kubelet.admit_bound_pods),
    ("pod-lifecycle", pod_lifecycle.reconcile),
    ("resourcequota", refresh_quotas),
    ("scheduler", lambda view, changes=None: scheduling_pass.schedule_pending(view)),
)
KEYED_AFTER = frozenset({"kubelet", "pod-lifecycle", "scheduler"})
WATCHES_AFTER = {"resourcequota": _has_quotas}

def _settle_changed(view: View, fired: set[Any]) -> None:
    """Settle on work queues: each step (controller, kubelet, scheduler) has a cursor in the
    view's journal of changes and is handed the keys changed since its previous run, plus
    ``fired`` in the first round. A ``KEYED`` step reconciles only what they affect; a
    ``WATCHES`` step runs its full pass when one of them is a kind it reads; any other step runs
    its full pass when anything changed. Rounds repeat until one changes nothing: then every
    step has seen every change, the same fixpoint as the full passes reach."""
    view.clear_journal()
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
