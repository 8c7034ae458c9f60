"""PreferLabeledNodes: an out-of-tree Score plugin for gpusched.

Scores 100 on nodes whose label ``label`` has the value ``value`` and 0 elsewhere, so with a
weight it steers pods to, say, nodes with fast local disks. It implements the Score extension
point only: gpusched reads that off the class (a ``score(state, pod, snapshot, nodes)`` method
returning one int64 per node row in ``nodes``).

Args (``pluginConfig``): ``label`` (default ``example.com/preferred``), ``value`` (default
``"true"``).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

MAX_SCORE = 100


class PreferLabeledNodes:
    name = "PreferLabeledNodes"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        args = args or {}
        self.label = str(args.get("label", "example.com/preferred"))
        self.value = str(args.get("value", "true"))

    def score(self, state: Any, pod: Any, snapshot: Any, nodes: np.ndarray) -> np.ndarray:
        ids, vocab = snapshot.label_ids(self.label)
        wanted = vocab.get(self.value, -2)              # -2: no node has the value
        return np.where(ids[nodes] == wanted, MAX_SCORE, 0).astype(np.int64)
