"""GpuPacking placement policy (FGD baseline 04-GpuPacking) as a score plugin.

From highest to lowest (integer arithmetic as the reference):

a) the pod fits on partly used GPUs (best-fit choice uses no fully free GPU):
   ``max(100 - sum(left_i * 100 // 1000 over the chosen GPUs) // 10, 50)``;
b) it needs fully free GPUs on a node already in use: ``max(50 - fully free GPUs used, 33)``;
c) every GPU of the node is free: ``max(33 - free GPUs, free GPUs)``.

CPU-only pods score 0 everywhere. Example: a 470 share on a node with left = [600, 1000]:
case a, chosen GPU 0 -> 100 - 60 // 10 = 94.
GPU selection: best fit. Neighbours: ``common``; ``framework`` ScorePlugin protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gpusched.policies.common import MILLI, BestFitPolicy, NodeArrays, best_fit_gpus

if TYPE_CHECKING:
    from gpusched.objects.types import PodInfo

NAME = "PolicyGpuPacking"


def packing_scores(gpu_left: np.ndarray, share: int, count: int) -> np.ndarray:
    """Scores for rows of free milli per GPU (-1 = absent)."""
    if not count:
        return np.zeros(len(gpu_left), dtype=np.int64)
    gpus = (gpu_left >= 0).sum(axis=1)
    free = (gpu_left == MILLI).sum(axis=1)
    chosen = best_fit_gpus(gpu_left, share, count)
    chosen_left = np.where(chosen >= 0, np.take_along_axis(gpu_left, np.clip(chosen, 0, None), axis=1), 0)
    free_used = (chosen_left == MILLI).sum(axis=1)
    case_a = np.maximum(100 - (chosen_left * 100 // MILLI).sum(axis=1) // 10, 50)
    case_b = np.maximum(50 - free_used, 33)
    case_c = np.maximum(33 - free, free)
    scores = np.where(free == gpus, case_c, np.where(free_used > 0, case_b, case_a))
    return np.where((chosen < 0).any(axis=1), 0, scores).astype(np.int64)


class PolicyGpuPacking(BestFitPolicy):
    name = NAME

    def node_scores(self, arrays: NodeArrays, nodes: np.ndarray, pod: PodInfo, share: int,
                    count: int) -> np.ndarray:
        return packing_scores(arrays.gpu_left[nodes], share, count)


def new(args: dict[str, Any] | None = None, *_: object) -> PolicyGpuPacking:
    return PolicyGpuPacking(args)
