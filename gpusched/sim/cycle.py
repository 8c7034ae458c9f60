"""The experiment's scheduling cycle: the FGD experiment profile run over a real ``Snapshot``.

The experiment profile (section 3.1/3.4): filters NodeResourcesFit (cpu, memory, GPU count) and
GPU device fit (GPU model constraint, per-GPU free milli), the policy score plugin with weight
``POLICY_WEIGHT`` (10_000) plus NodeOrder with weight 1 (tie-breaking), ``percentageOfNodesToScore:
100``, no preemption. ``make_cycle`` returns the runner's ``Scheduler.schedule_one`` when
``scheduler.runner`` / ``scheduler.profile`` provide it; until then ``ProfileCycle`` runs the
same framework extension points (PreFilter, Filter, Score, NormalizeScore, weights, Reserve
honouring ``"gpu-selection"``) with the project's own plugins, so the policies are the same code
either way. Reserve assumes the pod into the snapshot (``Snapshot.add_pod``).

Neighbours: ``scheduler.framework``/``snapshot``/``plugins``, ``devices.node``; used by
``sim.experiment``.
"""

from __future__ import annotations

import logging
from typing import Callable

import numpy as np

from gpusched.devices.node import gpu_uuid
from gpusched.objects.types import RESOURCE_GPU_MILLI, DeviceAssignment, PodInfo
from gpusched.scheduler.framework import CycleState
from gpusched.scheduler.plugins.node_resources_fit import NodeResourcesFit
from gpusched.scheduler.plugins.policy_common import (GPU_SELECTION_KEY, POLICY_WEIGHT,
                                                       best_fit_gpus, node_arrays, pod_gpu)
from gpusched.scheduler.snapshot import Snapshot

log = logging.getLogger(__name__)


def gpu_fit_mask(snapshot: Snapshot, pod: PodInfo, nodes: np.ndarray) -> np.ndarray:
    """GpuDevices' Filter for the trace model: model allowed and enough GPUs with free milli."""
    share, count = pod_gpu(pod)
    ok = np.ones(len(nodes), dtype=bool)
    if not count:
        return ok
    left = np.asarray(snapshot.gpu_free_milli[nodes])
    ok &= (left >= share).sum(axis=1) >= count
    if pod.gpu_models:
        allowed = np.array([m in pod.gpu_models for m in snapshot.gpu_models] + [False])
        ok &= allowed[np.asarray(snapshot.gpu_model_id[nodes])]
    return ok


class ProfileCycle:
    """One scheduling cycle per pod over the experiment profile (see the module docstring)."""

    def __init__(self, snapshot: Snapshot, scorers: list[tuple[object, int]]) -> None:
        self.snapshot = snapshot
        self.fit = NodeResourcesFit()
        self.scorers = scorers

    def schedule_one(self, pod: PodInfo) -> str:
        snap = self.snapshot
        state = CycleState()
        self.fit.pre_filter(state, pod, snap)
        nodes = snap.all_nodes()
        for rejection in self.fit.filter(state, pod, snap, nodes):
            nodes = nodes[~rejection.nodes[nodes]]
        nodes = nodes[gpu_fit_mask(snap, pod, nodes)]
        if not len(nodes):
            return ""
        total = np.zeros(len(nodes), dtype=np.int64)
        for plugin, weight in self.scorers:
            scores = plugin.score(state, pod, snap, nodes)
            if hasattr(plugin, "normalize"):
                scores = plugin.normalize(state, pod, nodes, scores)
            total += weight * scores
        row = int(nodes[int(np.argmax(total))])
        assignment = self.reserve(state, pod, row)
        snap.add_pod(pod, row, assignment)
        for plugin, _ in self.scorers:
            if hasattr(plugin, "reserve"):
                plugin.reserve(state, pod, snap, row)
        return snap.names[row]

    def reserve(self, state: CycleState, pod: PodInfo, row: int) -> DeviceAssignment:
        share, count = pod_gpu(pod)
        if not count:
            return DeviceAssignment()
        selection = state.read(GPU_SELECTION_KEY)
        name = self.snapshot.names[row]
        if share < 1000:
            gpus = selection[row] if selection is not None and row in selection else \
                tuple(int(g) for g in best_fit_gpus(self.snapshot.gpu_free_milli[row:row + 1], share, 1)[0])
            return DeviceAssignment(RESOURCE_GPU_MILLI, tuple(gpu_uuid(name, g) for g in gpus),
                                    tuple(gpus), share)
        assignment = self.snapshot.devices[row].allocate(pod)
        assert assignment is not None, f"{pod.key} passed the filters but does not fit {name}"
        return assignment


def make_cycle(snapshot: Snapshot, scorers: list[tuple[object, int]]) -> Callable[[PodInfo], str]:
    """``schedule_one(pod) -> node name or ""`` for the experiment profile."""
    return ProfileCycle(snapshot, scorers).schedule_one


__all__ = ["POLICY_WEIGHT", "ProfileCycle", "gpu_fit_mask", "make_cycle"]
