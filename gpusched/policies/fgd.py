"""FGD placement policy (Fragmentation Gradient Descent, FGD baseline 06-FGD) as a score plugin.

For each candidate node n: delta = F_n(M) - F_{n+pod}(M) (fragmentation before minus after the
hypothetical placement, ``fragmentation``), score = ``int(100 * sigmoid(delta / 1000))``,
truncated: unchanged fragmentation -> 50, +1 GPU of fragmentation -> 26.

- Sharing pods: every GPU i with ``left[i] >= share`` is tried; the node's score is the best GPU
  score and that GPU is the one written under ``"gpu-selection"`` (ties: lowest GPU index, as the
  reference keeps the first strictly better integer score).
- CPU-only, whole-GPU and multi-GPU pods: the hypothetical takes the GPUs with the least free
  milli that still fit; the bound GPUs are left to GpuDevices (lowest-index fully free ones).

Args: ``target_workload`` (list of ``TargetShape``; required). Per-node sums are cached in a
``FragState`` and only nodes whose free CPU or GPUs changed since the previous cycle are
recomputed, whoever changed them. A node's delta (and GPU choice) for a pod depends only on that
node's state and the pod's shape (cpu, per-GPU share, GPU count), so it is cached per shape and
node (``ShapeScores``) and recomputed only for nodes whose ``FragState.version`` moved: in a
fill-only run that is the one node the previous pod went to.
Neighbours: ``fragmentation`` (measure), ``common``; ``sim.experiment`` builds it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dataclasses import dataclass

import numpy as np

from gpusched.policies.common import (GPU_SELECTION_KEY, GpuSelection,
                                                       node_arrays, pod_gpu)
from gpusched.policies.fragmentation import (FragState, FragTables, TargetShape,
                                                              sigmoid_score)

if TYPE_CHECKING:
    from gpusched.objects.types import PodInfo
    from gpusched.scheduler.framework import CycleState
    from gpusched.scheduler.snapshot import Snapshot

NAME = "PolicyFGD"


@dataclass
class ShapeScores:
    """Per node, for one pod shape: the delta, the chosen GPU (shares) and the node version
    they were computed at (-1: never)."""

    delta: np.ndarray
    best_gpu: np.ndarray
    version: np.ndarray

    @classmethod
    def empty(cls, nodes: int) -> "ShapeScores":
        return cls(np.zeros(nodes), np.zeros(nodes, dtype=np.int64), np.full(nodes, -1, dtype=np.int64))


class PolicyFGD:
    name = NAME

    def __init__(self, args: dict[str, Any] | None = None) -> None:
        shapes = (args or {}).get("target_workload") or []
        self.shapes: list[TargetShape] = list(shapes)
        self.frag: FragState | None = None
        self._generation: object = None
        self._scores: dict[tuple[int, int, int], ShapeScores] = {}
        self._mark: tuple[int, int] | None = None

    def _state(self, snapshot: Snapshot) -> FragState:
        generation = snapshot.generation
        if self.frag is not None and generation == self._generation:
            return self.frag                     # nothing changed since the previous cycle
        arrays = node_arrays(snapshot)
        rows = snapshot.rows_touched_since(self._mark)
        if self.frag is None or len(self.frag.model_id) != len(arrays.model_id):
            self.frag = FragState(FragTables(self.shapes, arrays.model_names), arrays.model_id)
            self._scores.clear()
            rows = None
        self.frag.sync(arrays.gpu_left, arrays.cpu_free, rows)
        self._generation, self._mark = generation, snapshot.journal_mark()
        return self.frag

    def deltas(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, nodes: np.ndarray) -> np.ndarray:
        """delta = F before - F after (milli-GPU) per candidate node; writes the GPU choice."""
        frag = self._state(snapshot)
        cpu = int(pod.requests.get("cpu", 0))
        share, count = pod_gpu(pod)
        sharing = count == 1 and share < 1000
        cached = self._scores.get((cpu, share, count))
        if cached is None:
            cached = self._scores[(cpu, share, count)] = ShapeScores.empty(len(frag.version))
        stale = nodes[cached.version[nodes] != frag.version[nodes]]
        if stale.size:
            self._rescore(frag, cached, stale, cpu, share, count, sharing)
        if sharing:
            state.write(GPU_SELECTION_KEY, GpuSelection(nodes, cached.best_gpu[nodes][:, None]))
        result: np.ndarray = cached.delta[nodes]
        return result

    def _rescore(self, frag: FragState, cached: ShapeScores, nodes: np.ndarray, cpu: int,
                 share: int, count: int, sharing: bool) -> None:
        before = frag.frag[nodes]
        if sharing:
            after, valid = frag.after_share(nodes, cpu, share)
            delta = np.where(valid, before[:, None] - after, -np.inf)
            best = self.pick_gpu(delta, frag.gpu_left[nodes])
            cached.best_gpu[nodes] = best
            cached.delta[nodes] = np.take_along_axis(delta, best[:, None], axis=1)[:, 0]
        else:
            cached.delta[nodes] = before - frag.after_whole(nodes, cpu, share, count)
        cached.version[nodes] = frag.version[nodes]

    def pick_gpu(self, delta: np.ndarray, left: np.ndarray | None = None) -> np.ndarray:
        """Per node, the first GPU with the best *integer* score (the reference's rule);
        ``left`` (free milli per GPU) is for subclasses that break these ties otherwise."""
        scores = np.where(np.isfinite(delta), sigmoid_score(np.where(np.isfinite(delta), delta, 0)), -1)
        result: np.ndarray = np.argmax(scores, axis=1)
        return result

    def score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, nodes: np.ndarray) -> np.ndarray:
        if not len(nodes):
            return np.zeros(0, dtype=np.int64)
        return sigmoid_score(self.deltas(state, pod, snapshot, nodes))


def new(args: dict[str, Any] | None = None, *_: object) -> PolicyFGD:
    return PolicyFGD(args)
