"""Controllers: each module reconciles one kind; ``controllers.registry`` lists them
(``CONTROLLERS``: the order ``settle`` runs them; ``KEYED``, ``WATCHES``, ``TIMED``).

Every controller is ``reconcile(view) -> None`` (changes go through the View); timed ones also
have per-object timers ``due(view, body) -> float | None`` listed by kind in ``TIMED``: the
event heap of ``cluster.timers`` orders them so ``Cluster.advance`` steps through time in order.

Work queues (``apiserver.changes``): at each time of an ``advance``, settle hands every controller
only what changed since its last run (and the timers that fired). A controller in ``KEYED``
takes ``reconcile(view, changes)`` and reconciles only the objects those changes affect (a pod's
owner, a node's pods); one in ``WATCHES`` runs its full pass only when a change is one it reads;
any other runs its full pass whenever anything changed (always correct, not proportional). A
command's own settle (apply, delete ...) runs every controller's full pass, as an informer's
resync.

This package's ``__init__`` imports nothing, so a module that needs one helper
(``controllers.common``) does not load every controller (and what they import).

Neighbours: ``cluster.cluster`` (settle, advance) runs them; they use ``cluster.admission`` and
``apiserver.view``.
"""
