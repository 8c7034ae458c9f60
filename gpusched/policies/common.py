"""Helpers shared by the placement-policy score plugins (``gpusched.policies``).

- ``node_arrays(snapshot)``: the per-node arrays the policies read (free CPU, free milli per GPU,
  GPU model id) from ``scheduler.snapshot.Snapshot``.
- ``pod_gpu(pod)``: the pod's GPU request as ``(per-GPU milli, GPU count)``.
- ``best_fit_gpus``: the GPUs a best-fit choice takes on each node (least free milli that still
  fits, lowest index on ties), vectorised.
- ``GpuSelection``: the mapping a policy writes into the cycle state under the framework's
  ``GPU_SELECTION_KEY``
  (node row -> tuple of GPU indices) that GpuDevices' Reserve honours. It is lazy (two arrays),
  so writing it costs nothing even with thousands of candidate nodes.

Not a plugin (no ``NAME``). Neighbours: ``scheduler.snapshot`` (read only), ``framework``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from gpusched.objects.types import PodInfo
from gpusched.scheduler.framework import GPU_SELECTION_KEY

if TYPE_CHECKING:
    from gpusched.scheduler.framework import CycleState
    from gpusched.scheduler.snapshot import Snapshot

GPU_RESOURCE = "nvidia.com/gpu"
MILLI = 1000
MAX_SPEC_CPU = 128_000      # the reference's normalisation: the largest node, 128 cores ...
MAX_SPEC_GPU = 8_000        # ... and 8 GPUs (milli)
POLICY_WEIGHT = 10_000      # a policy's weight in experiment profiles: NodeOrder (weight 1,
                            # scores 1..N with N < 10_000) then only breaks the policy's ties


@dataclass(frozen=True, slots=True)
class NodeArrays:
    cpu_free: np.ndarray     # (N,) millicores
    gpu_left: np.ndarray     # (N, G) free milli per GPU, -1 where the node has no such GPU
    model_id: np.ndarray     # (N,) index into model_names, -1 for CPU-only nodes
    model_names: list[str]


def node_arrays(snapshot: Snapshot) -> NodeArrays:
    """Read the policy inputs from a Snapshot."""
    cpu_free = np.asarray(snapshot.free[:, snapshot.resources["cpu"]], dtype=np.int64)
    gpu_left = np.asarray(snapshot.gpu_free_milli, dtype=np.int64)
    return NodeArrays(cpu_free, gpu_left, np.asarray(snapshot.gpu_model_id, dtype=np.int64),
                      list(snapshot.gpu_models))


def pod_gpu(pod: PodInfo) -> tuple[int, int]:
    """``(per-GPU milli, number of GPUs)``: (470, 1) share, (1000, 2) two GPUs, (0, 0) CPU-only."""
    if pod.gpu_milli:
        return pod.gpu_milli, 1
    count = int(pod.requests.get(GPU_RESOURCE, 0))
    return (MILLI, count) if count else (0, 0)


def best_fit_gpus(gpu_left: np.ndarray, share: int, count: int) -> np.ndarray:
    """For each row, the ``count`` GPUs with the least free milli >= share (lowest index first
    among equals), as an (n, count) index array; -1 where a row has too few.

    >>> best_fit_gpus(np.array([[1000, 300, 600, -1]]), 500, 1).tolist()
    [[2]]
    """
    big = MILLI * 4
    key = np.where(gpu_left >= share, gpu_left, big) * 16 + np.arange(gpu_left.shape[1])
    order = np.argsort(key, axis=1, kind="stable")[:, :count]
    ok = np.take_along_axis(gpu_left, order, axis=1) >= share
    return np.where(ok, order, -1)


class GpuSelection(Mapping[int, tuple[int, ...]]):
    """node row -> tuple of GPU indices, backed by arrays (rows, (n, k) GPU indices)."""

    def __init__(self, rows: np.ndarray, gpus: np.ndarray) -> None:
        self._rows = np.asarray(rows, dtype=np.int64)
        self._gpus = np.asarray(gpus, dtype=np.int64).reshape(len(self._rows), -1)

    def _lookup(self, node: int) -> int:
        hits = (self._rows == int(node)).nonzero()[0]
        return int(hits[0]) if hits.size else -1

    def __getitem__(self, node: int) -> tuple[int, ...]:
        i = self._lookup(node)
        if i < 0 or (self._gpus[i] < 0).any():
            raise KeyError(node)
        return tuple(int(g) for g in self._gpus[i])

    def __contains__(self, node: object) -> bool:
        try:
            self[node]  # type: ignore[index]  # any key may be asked: a non-int is not contained
        except (KeyError, TypeError, ValueError):
            return False
        return True

    def __iter__(self) -> Iterator[int]:
        return (int(r) for i, r in enumerate(self._rows) if (self._gpus[i] >= 0).all())

    def __len__(self) -> int:
        return int((self._gpus >= 0).all(axis=1).sum())

    def clone(self) -> "GpuSelection":
        return self


def write_best_fit(state: CycleState, gpu_left: np.ndarray, nodes: np.ndarray, pod: PodInfo) -> None:
    """Record the best-fit GPU choice for a GPU pod on every candidate node."""
    share, count = pod_gpu(pod)
    if count:
        state.write(GPU_SELECTION_KEY, GpuSelection(nodes, best_fit_gpus(gpu_left[nodes], share, count)))


class BestFitPolicy:
    """Base of the baselines whose GPU choice is best fit (DotProd, GpuPacking, BestFit).

    ``score`` records the best-fit GPUs for GpuDevices' Reserve and leaves the node scores to
    ``node_scores(arrays, nodes, pod, share, count)`` (free CPU, free milli per GPU of the
    candidate rows; the pod's per-GPU milli and GPU count).
    """

    name = ""

    def __init__(self, args: dict[str, Any] | None = None) -> None:
        pass

    def score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, nodes: np.ndarray) -> np.ndarray:
        arrays = node_arrays(snapshot)
        write_best_fit(state, arrays.gpu_left, nodes, pod)
        share, count = pod_gpu(pod)
        return self.node_scores(arrays, nodes, pod, share, count)

    def node_scores(self, arrays: NodeArrays, nodes: np.ndarray, pod: PodInfo, share: int,
                    count: int) -> np.ndarray:
        raise NotImplementedError


def gpu_left_total(arrays: NodeArrays, nodes: np.ndarray) -> np.ndarray:
    """Free GPU milli summed over each candidate node's GPUs."""
    result: np.ndarray = np.clip(arrays.gpu_left[nodes], 0, None).sum(axis=1)
    return result
