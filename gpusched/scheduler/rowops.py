"""Per-row reductions and row gathers over the snapshot's small 2-D arrays, done fast.

The snapshot keeps nodes x GPUs (``gpu_free_milli``, 8 columns) and nodes x resources (``free``,
a handful) arrays. On them NumPy's ``mask.sum(axis=1)`` / ``mask.any(axis=1)`` runs its inner
loop once per row of a few elements, and fancy indexing ``array[rows]`` copies row by row: at
1,213 nodes each costs 50-200 us on the project's 2-core machine, more than the rest of a
filter. A float32 matrix-vector product over the mask (BLAS) and ``array.take(rows, axis=0)``
give the same values in a few microseconds; counts are exact in float32 (far below 2**24).

Neighbours: used by the filter plugins (``plugins.gpu_devices``, ``plugins.node_resources_fit``)
and by the placement policies' per-node arithmetic (``policies.fragmentation``).
"""

from __future__ import annotations

import numpy as np


def row_counts(mask: np.ndarray) -> np.ndarray:
    """How many entries of each row of the 2-D bool ``mask`` are True (float32, exact).

    >>> row_counts(np.array([[True, False, True], [False, False, False]])).tolist()
    [2.0, 0.0]
    """
    ones = _ONES.get(mask.shape[1])
    if ones is None:
        ones = _ONES[mask.shape[1]] = np.ones(mask.shape[1], dtype=np.float32)
        ones.flags.writeable = False
    result: np.ndarray = mask.astype(np.float32) @ ones
    return result


_ONES: dict[int, np.ndarray] = {}     # row length -> float32 ones (read only)


def row_any(mask: np.ndarray) -> np.ndarray:
    """``mask.any(axis=1)`` for a 2-D bool ``mask``."""
    result: np.ndarray = row_counts(mask) > 0
    return result


def take_rows(array: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``array[rows]`` for an integer index array ``rows`` (a copy), gathered in one go."""
    return array.take(rows, axis=0)


def any_true(mask: np.ndarray) -> bool:
    """``bool(mask.any())``; ``np.count_nonzero`` skips ``any``'s Python-level dispatch (~5x)."""
    return bool(np.count_nonzero(mask))


def true_indices(mask: np.ndarray) -> np.ndarray:
    """``np.flatnonzero(mask)`` for a 1-D ``mask``, without its ``ravel`` wrapper (~10x)."""
    result: np.ndarray = mask.nonzero()[0]
    return result
