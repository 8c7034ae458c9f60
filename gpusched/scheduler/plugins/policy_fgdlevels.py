"""FGD at another score resolution (gpusched's own experiments ``fgdfine``, ``fgdcoarse``).

FGD's score is ``int(100 * sigmoid(delta / 1000))``: 100 levels, and nodes whose fragmentation
changes fall in one level tie and go to the per-seed node order (NodeOrder). This plugin keeps
everything of FGD (``policy_fgd``: the measure, the GPU choice for shares) but scores with
``levels`` levels: ``int(levels * sigmoid(delta / 1000))``.

- ``levels`` > 100 (``fgdfine``, 10_000): nearly untruncated, the smallest fragmentation
  increase wins and the random node order rarely decides.
- ``levels`` < 100 (``fgdcoarse``, 50): one level spans about 80 milli-GPU of fragmentation near
  delta 0 (FGD's: 40), so near-equal placements tie and the per-seed node order spreads them.

Measured (docs/fgd-results.md): finer is clearly worse than FGD, coarser is within noise of it.
A score above 100 is outside the framework's 0..100 on purpose; with the experiment profile's
weights (policy 10_000, NodeOrder 1..1_213) NodeOrder still only breaks the policy's ties.
Args: ``target_workload`` (as FGD), ``levels`` (int >= 2, default 100 = FGD).
Neighbours: ``policy_fgd``, ``policy_fragmentation``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.errors import UsageError
from gpusched.scheduler.plugins.policy_fgd import PolicyFGD

NAME = "PolicyFGDLevels"


class PolicyFGDLevels(PolicyFGD):
    name = NAME

    def __init__(self, args: dict[str, Any] | None = None) -> None:
        super().__init__(args)
        self.levels = int((args or {}).get("levels", 100))
        if self.levels < 2:
            raise UsageError(f"{NAME}: levels: Invalid value: {self.levels}: must be at least 2")

    def score(self, state, pod, snapshot, nodes: np.ndarray) -> np.ndarray:
        if not len(nodes):
            return np.zeros(0, dtype=np.int64)
        delta = self.deltas(state, pod, snapshot, nodes)
        return (self.levels / (1.0 + np.exp(-delta / 1000.0))).astype(np.int64)


def new(args: dict[str, Any] | None = None, *_: object) -> PolicyFGDLevels:
    return PolicyFGDLevels(args)
