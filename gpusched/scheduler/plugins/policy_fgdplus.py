"""FGD+ placement policy (gpusched's own, 07-FGD+): FGD without the truncation ties, then CPU.

FGD's node score ``int(100 * sigmoid(delta / 1000))`` keeps two digits of the fragmentation
change: every delta within about 10-40 milli-GPU of another lands on the same integer, and the
reference then picks among those ties by a random node order. FGD+ keeps the same measure and
the same per-GPU choice but scores ``int(10000 * sigmoid(delta / 1000))`` (a hundred times
finer), so the node that really fragments least wins; among nodes that are still equal it
prefers the one left with the least free CPU (packing CPU keeps whole CPU-rich nodes for the
CPU-heavy shapes, the trace's second bottleneck: its pods ask for 80 % of the GPU nodes' cores).

Score range 0..10000 + a CPU term in 0..99 (``99 * (1 - cpu_left_after / cpu_allocatable)``
scaled into the gap between two fine steps), no ``normalize``: in experiment profiles it runs
with the policy weight (10_000) beside NodeOrder, which still breaks exact ties.
Args: ``target_workload`` (as FGD).
Neighbours: ``policy_fgd`` (measure, GPU choice), ``policy_common``.
"""

from __future__ import annotations

import numpy as np

from gpusched.scheduler.plugins.policy_common import node_arrays
from gpusched.scheduler.plugins.policy_fgd import PolicyFGD

NAME = "PolicyFGDPlus"
FINE = 10_000


class PolicyFGDPlus(PolicyFGD):
    name = NAME

    def pick_gpu(self, delta: np.ndarray) -> np.ndarray:
        """Per node, the first GPU with the largest delta (no truncation)."""
        return np.argmax(np.where(np.isfinite(delta), delta, -np.inf), axis=1)

    def score(self, state, pod, snapshot, nodes: np.ndarray) -> np.ndarray:
        if not len(nodes):
            return np.zeros(0, dtype=np.int64)
        delta = self.deltas(state, pod, snapshot, nodes)
        fine = (FINE / (1.0 + np.exp(-delta / 1000.0))).astype(np.int64)
        arrays = node_arrays(snapshot)
        cpu_alloc = np.maximum(snapshot.allocatable[nodes, snapshot.resources["cpu"]], 1)
        cpu_after = arrays.cpu_free[nodes] - int(pod.requests.get("cpu", 0))
        packed = (99 * (1.0 - cpu_after / cpu_alloc)).astype(np.int64).clip(0, 99)
        return fine * 100 + packed


def new(args: dict | None = None, *_: object) -> PolicyFGDPlus:
    return PolicyFGDPlus(args)
