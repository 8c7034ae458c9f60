"""Cluster fragmentation metrics for experiments (section 3.2/3.3 of ``fgd-and-alibaba-trace.md``).

``ClusterFragmentation(shapes, model_names, model_id)`` keeps F_n(M) for every node in arrays
(the vectorised measure of ``policies.fragmentation``, shared with the FGD
plugin so that the metric and the policy can never disagree); ``observe(gpu_left, cpu_free)``
recomputes only the nodes whose free CPU or GPUs changed, then ``amount`` (sum of F_n(M), milli)
and ``ratio`` (amount / idle milli) describe the cluster; both are exact integer sums divided once.

Neighbours: used by ``sim.experiment`` after every submitted pod; reads snapshot arrays.
"""

from __future__ import annotations

import numpy as np

from gpusched.policies.fragmentation import (FragState, FragTables, TargetShape,
                                                              per_shape)


class ClusterFragmentation:
    """Incremental cluster fragmentation amount and ratio for one target workload."""

    def __init__(self, shapes: list[TargetShape], model_names: list[str], model_id: np.ndarray,
                 state: FragState | None = None) -> None:
        """``state``: the FGD policy's own sums for the same shapes, kept in sync by the policy
        (``PolicyFGD.fragmentation_state``); then ``observe`` is never needed."""
        self.tables = state.tables if state is not None else FragTables(shapes, model_names)
        self.state = state if state is not None else FragState(self.tables, np.asarray(model_id))

    def observe(self, gpu_left: np.ndarray, cpu_free: np.ndarray, rows: np.ndarray | None = None) -> None:
        """Recompute the nodes that changed; ``rows`` (optional) are the only candidates."""
        self.state.sync(gpu_left, cpu_free, rows)

    @property
    def amount(self) -> float:
        """Sum over nodes of F_n(M), in milli-GPU: the exact integer sum of the nodes' scaled
        values divided once (Python's int / int is correctly rounded), so the same bytes on every
        machine (a float sum's last bits depend on the order numpy adds in)."""
        return int(self.state.scaled.sum()) / self.tables.scale

    @property
    def idle(self) -> int:
        """Free milli-GPU over the cluster."""
        return int(self.state.idle.sum())

    @property
    def ratio(self) -> float:
        """amount / idle (0 when nothing is idle)."""
        idle = self.idle
        return int(self.state.scaled.sum()) / (self.tables.scale * idle) if idle else 0.0

    def per_shape(self) -> np.ndarray:
        """F_n(m) for every node and shape (N, K), for reports and tests."""
        return per_shape(self.tables, self.state.gpu_left, self.state.cpu_free, self.state.model_id)
