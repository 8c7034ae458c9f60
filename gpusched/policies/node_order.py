"""NodeOrder score plugin: the FGD reference simulator's tie-breaking, inside the framework.

The reference (a patched kube-scheduler) gives every node name a random ``NNNN-`` prefix from a
permutation seeded with the run's seed and, among nodes with equal scores, binds to the
lexicographically smallest name (section 3.6 of ``fgd-and-alibaba-trace.md``). NodeOrder scores
node i with ``N - rank[i]`` where ``rank`` is a ``numpy.random.default_rng(seed)`` permutation
of the N node rows: the node with rank 0 scores N, the last scores 1.

Used with weight 1 next to a policy whose weight (``POLICY_WEIGHT`` = 10_000) exceeds N, so one
point of policy score always outweighs the whole NodeOrder range: the order only breaks ties.
NodeOrder has no ``normalize`` on purpose (its range is 1..N, not 0..100).

Args: ``seed`` (int, default 0). The permutation is drawn once per node count.
Neighbours: ``framework`` (ScorePlugin protocol); used by ``sim.experiment`` profiles.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from gpusched.objects.types import PodInfo
    from gpusched.scheduler.framework import CycleState
    from gpusched.scheduler.snapshot import Snapshot

NAME = "NodeOrder"


class NodeOrder:
    name = NAME

    def __init__(self, args: dict[str, Any] | None = None) -> None:
        self.seed = int((args or {}).get("seed", 0))
        self._rank: np.ndarray | None = None

    def rank(self, num_nodes: int) -> np.ndarray:
        if self._rank is None or len(self._rank) != num_nodes:
            self._rank = np.random.default_rng(self.seed).permutation(num_nodes)
        return self._rank

    def score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, nodes: np.ndarray) -> np.ndarray:
        num_nodes = int(snapshot.gpu_free_milli.shape[0])
        result: np.ndarray = (num_nodes - self.rank(num_nodes)[nodes]).astype(np.int64)
        return result


def new(args: dict[str, Any] | None = None, *_: object) -> NodeOrder:
    return NodeOrder(args)
