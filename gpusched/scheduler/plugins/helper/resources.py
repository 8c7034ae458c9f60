"""The allocatable and requested-after-placement matrix of the resource-scoring plugins.

Neighbours: ``plugins.node_resources_fit``, ``plugins.balanced_allocation``.
"""

from __future__ import annotations

import numpy as np

from gpusched.objects.types import PodInfo
from gpusched.scheduler.snapshot import BASE_RESOURCES, CPU, MEMORY, Snapshot


def allocation_matrix(snapshot: Snapshot, pod: PodInfo, vec: np.ndarray, nodes: np.ndarray,
                      resources: tuple[tuple[str, int], ...], nonzero: bool
                      ) -> tuple[np.ndarray, np.ndarray]:
    """(allocatable, requested-after-placement), each (len(nodes) x len(resources)).

    Upstream ``calculateResourceAllocatableRequest``: an extended resource the pod does not
    request reads as allocatable 0 (skipped); with ``nonzero`` cpu/memory use the non-zero sums.
    """
    alloc = np.zeros((len(nodes), len(resources)), dtype=np.int64)
    req = np.zeros_like(alloc)
    pod_nonzero = Snapshot.nonzero_vector(pod) if nonzero else np.zeros(0, dtype=np.int64)  # read only with nonzero
    for j, (resource, _) in enumerate(resources):
        col = snapshot.resources.get(resource)
        if col is None:
            continue
        pod_amount = int(vec[col]) if col < len(vec) else 0
        if col not in (CPU, MEMORY) and resource not in BASE_RESOURCES and pod_amount == 0:
            continue
        alloc[:, j] = snapshot.allocatable[nodes, col]
        if nonzero and col in (CPU, MEMORY):
            req[:, j] = snapshot.nonzero_requested[nodes, col] + pod_nonzero[col]
        else:
            req[:, j] = snapshot.requested[nodes, col] + pod_amount
    return alloc, req
