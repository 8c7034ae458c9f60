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
    The default resources (cpu, then memory: both plugins' default) are the snapshot's first two
    columns, gathered in one ``take`` of the rows each (``_cpu_memory``: the same values, at
    about a third of the cost: NumPy's fancy indexing of rows and a column costs 3-8 us per call
    on 420 rows, ``take`` about 1-2).
    """
    if len(resources) == 2 and resources[0][0] == "cpu" and resources[1][0] == "memory":
        return _cpu_memory(snapshot, pod, vec, nodes, nonzero)
    return by_column(snapshot, pod, vec, nodes, resources, nonzero)


def _cpu_memory(snapshot: Snapshot, pod: PodInfo, vec: np.ndarray, nodes: np.ndarray,
                nonzero: bool) -> tuple[np.ndarray, np.ndarray]:
    """``by_column`` for the resources (cpu, memory): columns ``CPU`` and ``MEMORY`` are 0 and 1
    of every matrix (``nonzero_requested`` holds those two alone), and neither is ever skipped."""
    alloc: np.ndarray = snapshot.allocatable.take(nodes, axis=0)[:, :2]
    if nonzero:
        req: np.ndarray = snapshot.nonzero_requested.take(nodes, axis=0) + Snapshot.nonzero_vector(pod)
    else:
        req = snapshot.requested.take(nodes, axis=0)[:, :2] + vec[:2]
    return alloc, req


def by_column(snapshot: Snapshot, pod: PodInfo, vec: np.ndarray, nodes: np.ndarray,
              resources: tuple[tuple[str, int], ...], nonzero: bool
              ) -> tuple[np.ndarray, np.ndarray]:
    """``allocation_matrix`` for any resources, one column at a time."""
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
