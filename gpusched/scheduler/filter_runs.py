"""Running a profile's Filter plugins over candidate rows, in the runner's two modes:
upstream's (a node leaves at its first failing plugin) and explain's (every plugin sees every
candidate). Each plugin's rejections are recorded under its name.

Neighbours: ``scheduler.runner`` (``Scheduler.run_filters``), ``scheduler.framework``.
"""

from __future__ import annotations

import numpy as np

from gpusched.objects.types import PodInfo
from gpusched.scheduler.framework import CycleState, FilterPlugin, Rejection
from gpusched.scheduler.snapshot import Snapshot


def _rejected(found: list[Rejection], plugin: str, rejections: list[Rejection]) -> np.ndarray:
    """Record a Filter plugin's rejections under its name; the nodes any of them rejects."""
    for rejection in found:
        rejections.append(Rejection(rejection.nodes, rejection.reason, rejection.code, plugin))
    if len(found) == 1:
        return found[0].nodes
    bad: np.ndarray = np.logical_or.reduce([r.nodes for r in found])
    return bad


def filter_to_first_failure(plugins: list[FilterPlugin], state: CycleState, pod: PodInfo,
                             snapshot: Snapshot, alive: np.ndarray,
                             rejections: list[Rejection]) -> np.ndarray:
    """Upstream's mode: a node leaves at its first failing plugin; the nodes left are feasible."""
    for plugin in plugins:
        if not len(alive):
            break
        found = plugin.filter(state, pod, snapshot, alive)
        if found:
            bad = _rejected(found, plugin.name, rejections)
            alive = alive[~bad[alive]]
    return alive


def filter_with_every_plugin(plugins: list[FilterPlugin], state: CycleState, pod: PodInfo,
                              snapshot: Snapshot, candidates: np.ndarray,
                              rejections: list[Rejection]) -> np.ndarray:
    """explain's mode: every plugin sees every candidate; feasible = rejected by none."""
    rejected_any = np.zeros(snapshot.num_nodes, dtype=bool)
    for plugin in plugins:
        if not len(candidates):
            break
        found = plugin.filter(state, pod, snapshot, candidates)
        if found:
            rejected_any |= _rejected(found, plugin.name, rejections)
    feasible: np.ndarray = candidates[~rejected_any[candidates]]
    return feasible
