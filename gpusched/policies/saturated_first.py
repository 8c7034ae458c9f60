"""GpuSaturatedFirst: a tie-break score plugin that sends CPU-only pods to nodes without idle GPU.

Why: in the FGD experiments the pods ask for about 80 % of the GPU nodes' cores, and at
saturation much of the idle GPU capacity sits on nodes that have no CPU left (default trace, FGD,
seed 42, arrived 100 %: 167 of the 283 idle GPUs are on nodes with < 8 free cores). FGD cannot
see where a CPU-only pod should go: on a node whose GPUs are all in use, and on a node with
idle GPUs and plenty of CPU, the pod changes no shape's fit, so both score 50 and the per-seed
node order decides. CPU spent on a node whose GPUs are all in use costs nothing later; CPU spent
next to idle GPUs may strand them.

Score, for a CPU-only pod (no GPU demand): ``SATURATION_TIERS - min(ceil(idle / 1000), 7)``
with ``idle`` the node's free milli-GPU: 7 on a node with no idle GPU (or a CPU-only node), 0 on
a node with 7 or more GPUs' worth idle. GPU pods score 0 everywhere (the plugin is neutral).
No NormalizeScore: meant to run with a weight between the policy's and NodeOrder's so it only
orders the policy's ties (``sim.experiment_profile`` uses policy 10_000, this 1_250, NodeOrder 1:
7 x 1_250 < 10_000 and 1_250 > the NodeOrder range 1..1_213).

Args: none. Neighbours: ``common`` (node arrays, pod GPU request); experiment profiles.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gpusched.policies.common import MILLI, pod_gpu

if TYPE_CHECKING:
    from gpusched.objects.types import PodInfo
    from gpusched.scheduler.framework import CycleState
    from gpusched.scheduler.snapshot import Snapshot

NAME = "GpuSaturatedFirst"
SATURATION_TIERS = 7


class GpuSaturatedFirst:
    name = NAME

    def __init__(self, args: dict[str, Any] | None = None) -> None:
        pass

    def score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, nodes: np.ndarray) -> np.ndarray:
        _, count = pod_gpu(pod)
        if count or not len(nodes):
            return np.zeros(len(nodes), dtype=np.int64)
        idle = np.clip(snapshot.gpu_free_milli[nodes], 0, None).sum(axis=1)
        gpus_idle = np.minimum(-(-idle // MILLI), SATURATION_TIERS)
        result: np.ndarray = (SATURATION_TIERS - gpus_idle).astype(np.int64)
        return result


def new(args: dict[str, Any] | None = None, *_: object) -> GpuSaturatedFirst:
    return GpuSaturatedFirst(args)
