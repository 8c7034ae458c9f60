"""Upstream ``helper/normalize_score.go`` ``DefaultNormalizeScore``.

Neighbours: ``plugins.node_affinity``, ``plugins.taint_toleration``.
"""

from __future__ import annotations

import numpy as np

from gpusched.scheduler.framework import MAX_NODE_SCORE


def default_normalize(scores: np.ndarray, reverse: bool) -> np.ndarray:
    """Upstream ``helper.DefaultNormalizeScore``: scale to 0..100 by the max, optionally reversed."""
    top = int(scores.max(initial=0))
    if top == 0:
        return np.full(len(scores), MAX_NODE_SCORE if reverse else 0, dtype=np.int64)
    out = MAX_NODE_SCORE * scores.astype(np.int64) // top
    return MAX_NODE_SCORE - out if reverse else out
