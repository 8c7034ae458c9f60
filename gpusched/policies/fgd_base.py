"""FGD placement policy (Fragmentation Gradient Descent, FGD baseline 06-FGD): the score plugin's
class, shared by the ``fgd`` plugin module and its ``fgd_fill`` variant (plugins never import
each other).

For each candidate node n: delta = F_n(M) - F_{n+pod}(M) (fragmentation before minus after the
hypothetical placement, ``fragmentation``), score = ``int(100 * sigmoid(delta / 1000))``,
truncated: unchanged fragmentation -> 50, +1 GPU of fragmentation -> 26. Both are computed in
exact integer arithmetic (``fragmentation``'s docstring), so a run makes the same decisions on
every processor, numpy build and BLAS.

- Sharing pods: every GPU i with ``left[i] >= share`` is tried; the node's score is the best GPU
  score and that GPU is the one written under ``GPU_SELECTION_KEY`` (ties: lowest GPU index, as the
  reference keeps the first strictly better integer score).
- CPU-only, whole-GPU and multi-GPU pods: the hypothetical takes the GPUs with the least free
  milli that still fit; the bound GPUs are left to GpuDevices (lowest-index fully free ones).

Args: ``target_workload`` (list of ``TargetShape``; required). Per-node sums are cached in a
``FragState`` and only nodes whose free CPU or GPUs changed since the previous cycle are
recomputed, whoever changed them. A node's delta (and GPU choice) for a pod depends only on that
node's state and the pod's shape (cpu, per-GPU share, GPU count), so it is cached per shape and
node (``ShapeScores``) and recomputed only for nodes whose ``FragState.version`` moved: in a
fill-only run that is the one node the previous pod went to.
Neighbours: ``fragmentation`` (measure), ``common``; ``fgd`` (the plugin: ``NAME``, ``new``),
``fgd_fill`` (subclasses it); ``sim.experiment`` builds it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dataclasses import dataclass

import numpy as np

from gpusched.policies.common import GpuSelection, pod_gpu
from gpusched.scheduler.framework import GPU_SELECTION_KEY
from gpusched.policies.fragmentation import FragState, FragTables, TargetShape, sigmoid_score

if TYPE_CHECKING:
    from gpusched.objects.types import PodInfo
    from gpusched.scheduler.framework import CycleState
    from gpusched.scheduler.snapshot import Snapshot

NAME = "PolicyFGD"


@dataclass
class ShapeScores:
    """Per node, for one pod shape: the FGD score, the chosen GPU (shares) and the node version
    they were computed at (-1: never)."""

    score: np.ndarray
    best_gpu: np.ndarray
    version: np.ndarray

    @classmethod
    def empty(cls, nodes: int) -> "ShapeScores":
        return cls(np.zeros(nodes, dtype=np.int64), np.zeros(nodes, dtype=np.int64),
                   np.full(nodes, -1, dtype=np.int64))


class PolicyFGD:
    name = NAME

    def __init__(self, args: dict[str, Any] | None = None) -> None:
        shapes = (args or {}).get("target_workload") or []
        self.shapes: list[TargetShape] = list(shapes)
        self.frag: FragState | None = None
        self._generation: object = None
        self._scores: dict[tuple[int, int, int], ShapeScores] = {}
        self._mark: tuple[int, int] | None = None

    def fragmentation_state(self, snapshot: Snapshot) -> FragState:
        """The per-node fragmentation sums, synced with ``snapshot`` (only touched rows are
        recomputed); the experiment metric reads them too rather than keeping a second copy."""
        generation = snapshot.generation
        if self.frag is not None and generation == self._generation:
            return self.frag                     # nothing changed since the previous cycle
        gpu_left = snapshot.gpu_free_milli
        cpu_free = snapshot.free[:, snapshot.resources["cpu"]]
        rows = snapshot.rows_touched_since(self._mark)
        if self.frag is None or len(self.frag.model_id) != len(gpu_left):
            model_id = np.asarray(snapshot.gpu_model_id, dtype=np.int64)
            self.frag = FragState(FragTables(self.shapes, list(snapshot.gpu_models)), model_id)
            self._scores.clear()
            rows = None
        self.frag.sync(gpu_left, cpu_free, rows)
        self._generation, self._mark = generation, snapshot.journal_mark()
        return self.frag

    def score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
              nodes: np.ndarray) -> np.ndarray:
        """``int(100 * sigmoid(delta / 1000))`` per candidate node (delta = F before - F after,
        milli-GPU); for a share, writes the GPU chosen on each node under ``"gpu-selection"``."""
        if not len(nodes):
            return np.zeros(0, dtype=np.int64)
        frag = self.fragmentation_state(snapshot)
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
        scores: np.ndarray = cached.score[nodes]
        return scores

    @staticmethod
    def _rescore(frag: FragState, cached: ShapeScores, nodes: np.ndarray, cpu: int,
                 share: int, count: int, sharing: bool) -> None:
        before, scale = frag.scaled[nodes], frag.tables.scale   # exact F_n(M) * scale (int64)
        if sharing:
            # per GPU: the score of putting the share there (-1 where it does not fit); the node
            # takes the first GPU with the best *integer* score (the reference's rule)
            after, valid = frag.after_share(nodes, cpu, share)
            per_gpu = np.where(valid, sigmoid_score(before[:, None] - after, scale), -1)
            best = np.argmax(per_gpu, axis=1)
            cached.best_gpu[nodes] = best
            cached.score[nodes] = np.maximum(per_gpu[np.arange(len(nodes)), best], 0)
        else:
            cached.score[nodes] = sigmoid_score(before - frag.after_whole(nodes, cpu, share, count), scale)
        cached.version[nodes] = frag.version[nodes]
