"""Random placement policy (FGD baseline 01-Random) as a score plugin.

Node score: one candidate node picked uniformly at random scores 100, every other 0.
GPU selection: for a GPU pod, ``num_gpu`` GPUs picked at random among the chosen node's GPUs with
enough free milli, written under ``"gpu-selection"`` for GpuDevices' Reserve.

Randomness: a ``numpy.random.Generator`` seeded from ``args["seed"]`` (default 0), owned by the
plugin so a run is reproducible whatever the other plugins draw.
Neighbours: ``common`` (node arrays, GpuSelection); ``framework`` ScorePlugin protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gpusched.policies.common import GpuSelection, node_arrays, pod_gpu
from gpusched.scheduler.framework import GPU_SELECTION_KEY

if TYPE_CHECKING:
    from gpusched.objects.types import PodInfo
    from gpusched.scheduler.framework import CycleState
    from gpusched.scheduler.snapshot import Snapshot

NAME = "PolicyRandom"


class PolicyRandom:
    name = NAME

    def __init__(self, args: dict[str, Any] | None = None) -> None:
        self.rng = np.random.default_rng(int((args or {}).get("seed", 0)))

    def score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, nodes: np.ndarray) -> np.ndarray:
        scores = np.zeros(len(nodes), dtype=np.int64)
        if not len(nodes):
            return scores
        pick = int(self.rng.integers(len(nodes)))
        scores[pick] = 100
        share, count = pod_gpu(pod)
        if count:
            left = node_arrays(snapshot).gpu_left[nodes[pick]]
            valid = np.flatnonzero(left >= share)
            if len(valid) >= count:
                gpus = np.sort(self.rng.choice(valid, size=count, replace=False))
                state.write(GPU_SELECTION_KEY, GpuSelection(nodes[pick:pick + 1], gpus[None, :]))
        return scores


def new(args: dict[str, Any] | None = None, *_: object) -> PolicyRandom:
    return PolicyRandom(args)
