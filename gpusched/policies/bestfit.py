"""BestFit placement policy (FGD baseline 05-BestFit) as a score plugin.

raw = ``int(100 * (1 - [0.5 (cpu_left - cpu_req)/128000 + 0.5 (gpu_left_total - gpu_req_total)/8000]))``
(truncated), then ``normalize`` maps it min-max onto 0..100 across the candidate nodes
(``(raw - min) * 100 // (max - min)``; all equal -> all 0). Example: a node left with exactly
the pod's request scores raw 100.
GPU selection: best fit. Neighbours: ``common``; ``framework`` Score/ScoreExtensions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gpusched.policies.common import (MAX_SPEC_CPU, MAX_SPEC_GPU, BestFitPolicy, NodeArrays,
                                                       gpu_left_total)

if TYPE_CHECKING:
    from gpusched.objects.types import PodInfo
    from gpusched.scheduler.framework import CycleState

NAME = "PolicyBestFit"


def best_fit_scores(cpu_left: np.ndarray, gpu_left_total: np.ndarray, cpu_req: int,
                    gpu_req_total: int) -> np.ndarray:
    # element-wise IEEE float64 - * / only (no sum, no exp): each correctly rounded, the same on
    # every processor and SIMD path, so the truncation below is too
    waste = 0.5 * (cpu_left - cpu_req) / MAX_SPEC_CPU + 0.5 * (gpu_left_total - gpu_req_total) / MAX_SPEC_GPU
    return ((1.0 - waste) * 100.0).astype(np.int64)


def min_max(scores: np.ndarray) -> np.ndarray:
    if not len(scores):
        return scores
    low, high = int(scores.min()), int(scores.max())
    if high == low:
        return np.zeros_like(scores)
    return (scores - low) * 100 // (high - low)


class PolicyBestFit(BestFitPolicy):
    name = NAME

    def node_scores(self, arrays: NodeArrays, nodes: np.ndarray, pod: PodInfo, share: int,
                    count: int) -> np.ndarray:
        return best_fit_scores(arrays.cpu_free[nodes], gpu_left_total(arrays, nodes),
                               int(pod.requests.get("cpu", 0)), share * count)

    def normalize(self, state: CycleState, pod: PodInfo, nodes: np.ndarray, scores: np.ndarray) -> np.ndarray:
        return min_max(scores)


def new(args: dict[str, Any] | None = None, *_: object) -> PolicyBestFit:
    return PolicyBestFit(args)
