"""GpuClustering placement policy (FGD baseline 03-GpuClustering) as a score plugin.

Each GPU pod has a type tag: ``share-gpu`` (a fractional share) or ``<k>-gpu`` (k whole GPUs);
CPU-only pods have none and score 0 everywhere. Each node counts the tags of the GPU pods it
holds. Score (integer arithmetic as the reference), with ``packed = 25 * (8000 - gpu_left_total) // 8000``:
75 + packed if the node holds only this pod's tag, 50 + packed if it holds this tag among others,
25 + packed if it holds no tag, packed if it holds only other tags.
Example: an empty 8-GPU node -> 25 + 0; the same node holding two 1-GPU pods, for a 1-GPU pod ->
75 + 25 * 2000 // 8000 = 81.

The per-node tag counts are kept by this plugin's own Reserve/Unreserve (the framework calls
them for the chosen node), so the plugin must be enabled at Reserve as well as Score.
GPU selection: best fit. Neighbours: ``common``; ``framework`` Score/Reserve protocols.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gpusched.scheduler.framework import SUCCESS, Status
from gpusched.policies.common import (MAX_SPEC_GPU, node_arrays, pod_gpu,
                                                       write_best_fit)

if TYPE_CHECKING:
    from gpusched.objects.types import PodInfo
    from gpusched.scheduler.framework import CycleState
    from gpusched.scheduler.snapshot import Snapshot

NAME = "PolicyGpuClustering"
MAX_TAGS = 16


def pod_tag(pod: PodInfo) -> str:
    share, count = pod_gpu(pod)
    if not count:
        return ""
    return "share-gpu" if share < 1000 else f"{count}-gpu"


def clustering_scores(tag_counts: np.ndarray, tag: int, gpu_left_total: np.ndarray) -> np.ndarray:
    """Scores for rows of per-tag pod counts (n, T) and the pod's tag column."""
    packed = 25 * (MAX_SPEC_GPU - gpu_left_total) // MAX_SPEC_GPU
    held = tag_counts > 0
    kinds = held.sum(axis=1)
    mine = held[:, tag]
    base = np.where(mine, np.where(kinds == 1, 75, 50), np.where(kinds == 0, 25, 0))
    result: np.ndarray = (base + packed).astype(np.int64)
    return result


class PolicyGpuClustering:
    name = NAME

    def __init__(self, args: dict[str, Any] | None = None) -> None:
        self.tags: dict[str, int] = {}
        self.counts = np.zeros((0, MAX_TAGS), dtype=np.int64)

    def _column(self, tag: str) -> int:
        return self.tags.setdefault(tag, len(self.tags))

    def _ensure(self, num_nodes: int) -> None:
        if self.counts.shape[0] < num_nodes:
            grown = np.zeros((num_nodes, MAX_TAGS), dtype=np.int64)
            grown[: self.counts.shape[0]] = self.counts
            self.counts = grown

    def score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, nodes: np.ndarray) -> np.ndarray:
        arrays = node_arrays(snapshot)
        self._ensure(arrays.gpu_left.shape[0])
        tag = pod_tag(pod)
        write_best_fit(state, arrays.gpu_left, nodes, pod)
        if not tag:
            return np.zeros(len(nodes), dtype=np.int64)
        left_total = np.clip(arrays.gpu_left[nodes], 0, None).sum(axis=1)
        return clustering_scores(self.counts[nodes], self._column(tag), left_total)

    def reserve(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, node: int) -> Status:
        tag = pod_tag(pod)
        if tag:
            self._ensure(int(node) + 1)
            self.counts[node, self._column(tag)] += 1
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, node: int) -> None:
        tag = pod_tag(pod)
        if tag and self.counts[node, self._column(tag)] > 0:
            self.counts[node, self._column(tag)] -= 1


def new(args: dict[str, Any] | None = None, *_: object) -> PolicyGpuClustering:
    return PolicyGpuClustering(args)
