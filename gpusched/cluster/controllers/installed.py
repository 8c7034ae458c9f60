"""Controllers that a package above the cluster layer brings, installed into named slots.

The registry (``controllers.registry.CONTROLLERS``) holds a slot where such a controller runs in
the settle order; the package fills it with :func:`install` when the program starts
(dependency inversion: the cluster layer never imports the package). An empty slot does
nothing. The one slot is ``sbatch``: ``gpusched.slurm.controller.install`` fills it; the CLI
fills it whenever it builds its commands (``cli.parser.build_parser``, with a stand-in that
imports the controller when a settle first runs it), so every ``gpusched`` command and
``gpusched serve`` run it.

This module imports nothing at run time, so installing costs the CLI nothing at start-up.

Neighbours: ``controllers.registry`` (the slots' places); ``gpusched.slurm.controller``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from gpusched.cluster.apiserver.changes import Changes
    from gpusched.cluster.apiserver.view import View

Reconcile = Callable[["View", "Changes | None"], None]

SLOTS = frozenset({"sbatch"})
_INSTALLED: dict[str, Reconcile] = {}


def install(name: str, reconcile: Reconcile) -> None:
    """Fill the slot ``name`` (one of ``SLOTS``); installing again replaces it."""
    if name not in SLOTS:
        raise ValueError(f"no controller slot {name!r} (slots: {', '.join(sorted(SLOTS))})")
    _INSTALLED[name] = reconcile


def installed(name: str) -> Reconcile | None:
    """What fills the slot ``name``, or None while it is empty."""
    return _INSTALLED.get(name)


def slot(name: str) -> Callable[..., None]:
    """The registry's entry for the slot ``name``: runs what is installed there, if anything,
    with the same arguments settle gives any controller (``changes`` for ``KEYED`` ones)."""
    if name not in SLOTS:
        raise ValueError(f"no controller slot {name!r} (slots: {', '.join(sorted(SLOTS))})")

    def reconcile(view: View, changes: Changes | None = None) -> None:
        plugged = _INSTALLED.get(name)
        if plugged is not None:
            plugged(view, changes)
    return reconcile
