"""NodeResourcesBalancedAllocation: prefer nodes whose resource fractions stay balanced.

Upstream formula (``balancedResourceScorer``): per resource (default cpu and memory) the fraction
``min(requested_after / allocatable, 1)``, skipping allocatable 0 and extended resources the pod
does not request; ``std`` is ``|f0 - f1| / 2`` for two fractions, the population standard
deviation for more; the score is ``int((1 - std) * 100)``. Requested uses the real requests (no
non-zero defaults), and PreScore skips pods requesting none of the resources (BestEffort).
E.g. cpu 2000/4000 = 0.5, memory 6Gi/8Gi = 0.75 -> std 0.125 -> score 87.

Neighbours: shares ``helper.resources.allocation_matrix`` with ``node_resources_fit``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.objects.types import PodInfo
from gpusched.scheduler.framework import MAX_NODE_SCORE, CycleState, SKIP, SUCCESS, Status
from gpusched.scheduler.plugins.helper.resources import allocation_matrix
from gpusched.scheduler.snapshot import Snapshot

NAME = "NodeResourcesBalancedAllocation"


class BalancedAllocation:
    name = NAME

    def __init__(self, resources: tuple[tuple[str, int], ...] = (("cpu", 1), ("memory", 1))):
        self.resources = resources

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                  nodes: np.ndarray) -> Status:
        if all(pod.requests.get(r, 0) == 0 for r, _ in self.resources):
            return SKIP
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
              nodes: np.ndarray) -> np.ndarray:
        vec = snapshot.request_vector(pod)
        alloc, req = allocation_matrix(snapshot, pod, vec, nodes, self.resources, nonzero=False)
        # float64 as upstream; processor-independent: element-wise IEEE operations and ``sqrt`` are
        # correctly rounded, and the sums run over a row of a few resources in numpy's fixed order
        include = alloc != 0
        fractions = np.minimum(req / np.where(include, alloc, 1), 1.0)
        if fractions.shape[1] == 2 and include.all():      # the default: cpu and memory
            return ((1 - np.abs((fractions[:, 0] - fractions[:, 1]) / 2)) * MAX_NODE_SCORE).astype(np.int64)
        count = include.sum(axis=1)
        mean = np.where(count > 0, (fractions * include).sum(axis=1) / np.maximum(count, 1), 0.0)
        std_many = np.sqrt((((fractions - mean[:, None]) ** 2) * include).sum(axis=1)
                           / np.maximum(count, 1))
        std = np.where(count > 2, std_many, 0.0)
        if (count == 2).any():
            two = count == 2
            # |f0 - f1| / 2 over the two included fractions, in column order
            first = np.where(two, _nth_included(fractions, include, 0), 0.0)
            second = np.where(two, _nth_included(fractions, include, 1), 0.0)
            std = np.where(two, np.abs((first - second) / 2), std)
        return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)


def _nth_included(values: np.ndarray, include: np.ndarray, n: int) -> np.ndarray:
    rank = np.cumsum(include, axis=1) - 1
    pick = include & (rank == n)
    result: np.ndarray = (values * pick).sum(axis=1)
    return result


def new(args: dict[str, Any] | None = None) -> BalancedAllocation:
    args = args or {}
    resources = tuple((r["name"], int(r.get("weight", 1)))
                      for r in args.get("resources") or ({"name": "cpu"}, {"name": "memory"}))
    return BalancedAllocation(resources)
