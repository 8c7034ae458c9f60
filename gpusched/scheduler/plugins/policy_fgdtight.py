"""FGD-Tight (gpusched's own, 08-FGD-Tight): FGD, with best fit among FGD's equal GPU choices.

Same node score as FGD (``policy_fgd``). Only the GPU inside a node for a sharing pod differs:
FGD keeps the lowest-index GPU among those with the best *integer* score; FGD-Tight keeps, among
those same GPUs, the one with the least free milli (then the lowest index), so a share goes on the
fullest GPU that FGD cannot tell apart from the others and fewer GPUs are opened.
Args: ``target_workload`` (as FGD). Neighbours: ``policy_fgd``, ``policy_fragmentation``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.scheduler.plugins.policy_fgd import PolicyFGD
from gpusched.scheduler.plugins.policy_fragmentation import sigmoid_score

NAME = "PolicyFGDTight"
KEY_SCALE = 4096          # > 1000 free milli + 1: one score point outweighs any free-milli gap


class PolicyFGDTight(PolicyFGD):
    name = NAME

    def pick_gpu(self, delta: np.ndarray, left: np.ndarray | None = None) -> np.ndarray:
        finite = np.isfinite(delta)
        scores = np.where(finite, sigmoid_score(np.where(finite, delta, 0)), -1)
        if left is None:
            return np.argmax(scores, axis=1)
        return np.argmax(scores * KEY_SCALE - np.clip(left, 0, None), axis=1)


def new(args: dict[str, Any] | None = None, *_: object) -> PolicyFGDTight:
    return PolicyFGDTight(args)
