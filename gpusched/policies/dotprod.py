"""DotProduct placement policy (FGD baseline 02-DotProd, Tetris-style) as a score plugin.

node = (cpu_left / 128000, gpu_left_total / 8000), pod = (cpu_req / 128000, gpu_req_total / 8000),
score = ``int(100 * (1 - (node . pod) / 2))``: the smallest dot product wins (nodes with less free
room in the dimensions the pod asks for). Example: an empty 8-GPU 96-core node and a 1-GPU,
8-core pod: dot = 0.75*0.0625 + 1*0.125 = 0.171875 -> int(100 * 0.9140625) = 91.
GPU selection: best fit (``common.best_fit_gpus``).
Neighbours: ``common``; ``framework`` ScorePlugin protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gpusched.policies.common import (MAX_SPEC_CPU, MAX_SPEC_GPU, BestFitPolicy, NodeArrays,
                                                       gpu_left_total)

if TYPE_CHECKING:
    from gpusched.objects.types import PodInfo

NAME = "PolicyDotProduct"


def dot_product_scores(cpu_left: np.ndarray, gpu_left_total: np.ndarray, cpu_req: int,
                       gpu_req_total: int) -> np.ndarray:
    # two products and one sum written out element-wise (no ``@``, whose BLAS kernel may fuse or
    # reorder): each IEEE operation is correctly rounded, so the same bits on every processor
    dot = (cpu_left / MAX_SPEC_CPU) * (cpu_req / MAX_SPEC_CPU) + \
        (gpu_left_total / MAX_SPEC_GPU) * (gpu_req_total / MAX_SPEC_GPU)
    scores = (100.0 * (1.0 - dot / 2.0)).astype(np.int64)
    return np.where(cpu_left < cpu_req, 0, scores)


class PolicyDotProduct(BestFitPolicy):
    name = NAME

    def node_scores(self, arrays: NodeArrays, nodes: np.ndarray, pod: PodInfo, share: int,
                    count: int) -> np.ndarray:
        return dot_product_scores(arrays.cpu_free[nodes], gpu_left_total(arrays, nodes),
                                  int(pod.requests.get("cpu", 0)), share * count)


def new(args: dict[str, Any] | None = None, *_: object) -> PolicyDotProduct:
    return PolicyDotProduct(args)
