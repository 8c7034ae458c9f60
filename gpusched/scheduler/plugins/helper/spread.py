"""Topology domains and the pods per node, for the plugins that count pods by domain.

Neighbours: ``plugins.pod_topology_spread``, ``plugins.inter_pod_affinity``.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from gpusched.objects.types import PodInfo
from gpusched.scheduler.snapshot import Snapshot

HOSTNAME = "kubernetes.io/hostname"


def domain_ids(snapshot: Snapshot, key: str) -> tuple[np.ndarray, int]:
    """(per-node domain id, -1 where the node lacks ``key``; number of domain ids)."""
    if key == HOSTNAME:
        return np.arange(snapshot.num_nodes, dtype=np.int64), snapshot.num_nodes
    ids, vocab = snapshot.label_ids(key)
    return np.asarray(ids, dtype=np.int64), len(vocab)


def pods_by_node(snapshot: Snapshot) -> Iterator[tuple[int, PodInfo]]:
    """Every (node row, pod) in the snapshot, nodes in row order."""
    for node in range(snapshot.num_nodes):
        for pod in snapshot.pods_on(node):
            yield node, pod
