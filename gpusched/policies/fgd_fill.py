"""FGD-Fill (``gpusched experiment fgd --policies fgdfill``): FGD whose fragmentation also counts
the GPUs that CPU and memory strand.

Why: at saturation FGD's idle GPU is mostly slivers next to exhausted CPU (default trace, seed 42,
arrived 100 %: 64 of 283 idle GPUs on nodes with < 2 free cores). FGD's measure checks whether
*one* pod of each popular shape fits; a node with 8 idle GPUs and 12 free cores fits one
11-core pod, and FGD counts all 8 GPUs as usable although 7 of them will stay idle.

The fill measure, in milli-GPU, of node n for shape m: the part of the node's idle GPU that pods
of shape m alone could not use, ``F'_n(m) = idle - k * gpu_milli * num_gpu`` where ``k`` is how
many such pods fit side by side: ``min(GPU slots, CPU slots, memory slots)``, GPU slots =
``sum_i floor(left_i / gpu_milli) // num_gpu`` (whole-GPU shapes: fully free GPUs // num_gpu),
CPU slots = ``free CPU // cpu_milli``, memory slots = ``free memory // memory`` (the shape's
median memory request, ``TargetShape.memory``; FGD itself ignores memory). CPU-only shapes and
shapes the node's model does not allow: ``F' = idle``. ``F'_n(M) = sum_m p_m F'_n(m)`` over
FGD's target workload M.

Score: FGD's ``int(100 * sigmoid(delta / 1000))`` with ``delta = dF + FILL_WEIGHT * dF'``
(``dF``: FGD's fragmentation before minus after the hypothetical placement, ``dF'`` the same for
the fill measure). With ``FILL_WEIGHT = 1/10`` the fill term moves a score by about one level, so
FGD's coarse levels and the per-seed node order among equal scores stay (finer, more
deterministic FGD scores were measured worse: ``docs/fgd-results.md``). GPU choice for shares:
as FGD (the best score, lowest index on ties). Scores are cached per pod shape (cpu, memory,
share, GPU count) and node, and recomputed where FGD's node version or the free memory moved.

Exact arithmetic, as FGD's (``fragmentation``): every quantity is an int64, so a run makes the
same decisions on every processor. The scarcity factor (below) is the one rational that is not
a small integer; it is kept in fixed point, ``round(SCARCITY_ONE * total GPUs / reachable GPUs)``
with ``SCARCITY_ONE = 2**16`` (half up; relative error <= 2**-17, far below a score level). The
measure is held as ``F'_n(M) * covered * SCARCITY_ONE`` (``FillTables.measure``), FGD's as
``F_n(M) * covered``, and the combined delta as ``10 * SCARCITY_ONE * dF_scaled + 1 * dF'_scaled``
= ``delta * covered * SCARCITY_ONE * 10`` (``FillTables.scale``), which the exact sigmoid
thresholds take as their scale. Example: covered = 1, dF = -1000, dF' = 2000 (scarcity 1):
``10 * 65536 * -1000 + 1 * 2000 * 65536 = -524_288_000 = -800 * 655_360``: delta = -800 milli.
``FillTables`` checks at build time that these stay below 2**62 for nodes of up to 65 GPUs.

Scarcity: a shape limited to models holding a fraction f of the cluster's GPUs weighs 1 / f
(its pods have fewer places to go).

Worked example (one shape m = (4 cores, 500 milli, 1 GPU, no memory), p = 1): a node with free
GPUs [1000, 1000] and 6 free cores has 4 GPU slots but 1 CPU slot, so ``F' = 2000 - 500 =
1500``; FGD's own measure is 0 there (m fits, no sliver below 500).

Args: ``target_workload`` (as FGD). Neighbours: ``fgd`` (scores, cache), ``fragmentation``
(target shapes, lookup-table rows); registered in ``policies.REGISTRY``, run by ``sim.experiment``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from gpusched.policies.common import MILLI, GpuSelection, pod_gpu
from gpusched.scheduler.framework import GPU_SELECTION_KEY
from gpusched.policies.fgd_base import PolicyFGD, ShapeScores
from gpusched.policies.fragmentation import (ABSENT, DEDUPE_AT, FragState, FragTables,
                                              sigmoid_score)

if TYPE_CHECKING:
    from gpusched.objects.types import PodInfo
    from gpusched.scheduler.framework import CycleState
    from gpusched.scheduler.snapshot import Snapshot

NAME = "PolicyFGDFill"
FILL_WEIGHT = Fraction(1, 10)   # dF' counts a tenth of dF (docs/fgd-results.md: 0.03-2.0 measured)
UNBOUNDED = 1 << 40         # slots of a resource a shape does not ask for
SCARCITY_ONE = 1 << 16      # fixed point of the scarcity factor: 1.0 is 65536
MAX_NODE_IDLE = 1 << 16     # milli-GPU a node may hold for the int64 bound (65 GPUs)
MAX_EXACT = 1 << 62         # the combined before/after values must stay below this


class FillTables:
    """Lookup tables of the fill measure for one target workload and list of GPU models."""

    def __init__(self, tables: FragTables, gpus_per_model: np.ndarray | None = None) -> None:
        """``gpus_per_model``: the cluster's GPUs per ``tables.model_rows`` row (models + 1); a
        shape limited to models holding a fraction f of them weighs 1 / f (None: all 1), in fixed
        point (module docstring)."""
        gpu = np.array([s.gpu_milli for s in tables.shapes], dtype=np.int64)
        values = np.arange(ABSENT + 1)[:, None]
        self.slots = np.where(gpu > 0, values // np.maximum(gpu, 1), 0)   # (1002, K)
        self.slots[ABSENT] = 0
        self.num_gpu = np.maximum(tables.num_gpu, 1)
        self.cpu = np.maximum(tables.cpu, 1)
        self.memory = np.array([s.memory for s in tables.shapes], dtype=np.int64)
        # (models + 1, K): count_m * GPU milli one pod of m uses * scarcity (fixed point), 0 where
        # m cannot use it
        usable = tables.allowed & (gpu > 0)
        scarcity = np.full(len(gpu), SCARCITY_ONE, dtype=np.int64)
        if gpus_per_model is not None:
            per_model = np.asarray(gpus_per_model, dtype=np.int64)
            reachable = (usable * per_model[:, None]).sum(axis=0)
            total = int(per_model.sum())
            # round(SCARCITY_ONE * total / reachable), half up, in integers
            scarcity = np.where(reachable > 0, (2 * SCARCITY_ONE * total + reachable) //
                                (2 * np.maximum(reachable, 1)), SCARCITY_ONE)
        self.usable = np.where(usable, tables.count * gpu * tables.num_gpu * scarcity, 0)
        self.idle_weight = tables.covered * SCARCITY_ONE
        self.measure_scale = tables.scale * SCARCITY_ONE        # F'_n(M) * this is ``measure``
        self.fgd_factor = SCARCITY_ONE * FILL_WEIGHT.denominator
        self.scale = tables.scale * self.fgd_factor             # combined delta * this is exact
        # k_m * gpu_m * num_gpu_m <= idle, so a node's |measure| <= idle * max(idle_weight,
        # sum_m count_m * scarcity_m); before and after are combined, then subtracted (x 2)
        spread = max(self.idle_weight, int((tables.count * scarcity).sum()))
        bound = 2 * MAX_NODE_IDLE * (self.fgd_factor * tables.covered + FILL_WEIGHT.numerator * spread)
        if bound >= MAX_EXACT:
            raise ValueError(f"FGD-Fill: target workload too large for exact int64 scores "
                             f"(bound {bound} >= 2**62)")

    def measure(self, slots: np.ndarray, idle: np.ndarray, cpu_free: np.ndarray,
                memory_free: np.ndarray, model_row: np.ndarray) -> np.ndarray:
        """F'_n(M) * ``measure_scale`` (exact int64) from per-node GPU slot sums ``slots`` (..., K)
        and ``idle``, ``cpu_free``, ``memory_free``, ``model_row`` (...)."""
        k = np.minimum(slots // self.num_gpu, np.maximum(cpu_free, 0)[..., None] // self.cpu)
        memory_slots = np.maximum(memory_free, 0)[..., None] // np.maximum(self.memory, 1)
        k = np.minimum(k, np.where(self.memory > 0, memory_slots, UNBOUNDED))
        result: np.ndarray = idle * self.idle_weight - (k * self.usable[model_row]).sum(axis=-1)
        return result

    def combine(self, fgd_scaled: np.ndarray, fill_scaled: np.ndarray) -> np.ndarray:
        """``(F + FILL_WEIGHT * F') * scale`` from FGD's ``F * covered`` and ``measure``."""
        result: np.ndarray = self.fgd_factor * fgd_scaled + FILL_WEIGHT.numerator * fill_scaled
        return result

    def slot_sums(self, left: np.ndarray) -> np.ndarray:
        """Per-shape GPU slots summed over the last axis of ``left`` (free milli, -1 absent)."""
        result: np.ndarray = self.slots[np.where(left < 0, ABSENT, left)].sum(axis=-2)
        return result


def least_free_fitting(left: np.ndarray, milli: int, count: int) -> np.ndarray:
    """``left`` after a pod takes ``milli`` from the ``count`` GPUs with the least free milli that
    still fit (FGD's hypothetical for whole-GPU and multi-GPU pods), row by row."""
    after = left.copy()
    if count and milli:
        key = np.where(left >= milli, left, ABSENT + 1) * 16 + np.arange(left.shape[1])
        order = np.argsort(key, axis=1)[:, :count]
        taken = np.take_along_axis(left, order, axis=1)
        np.put_along_axis(after, order, np.where(taken >= milli, taken - milli, taken), axis=1)
    return after


class PolicyFGDFill(PolicyFGD):
    """FGD plus ``FILL_WEIGHT`` x the fill measure; scores cached per pod shape (cpu, memory,
    share, GPU count) and node, recomputed where a node's FGD version or free memory moved."""

    name = NAME

    def __init__(self, args: dict[str, Any] | None = None) -> None:
        super().__init__(args)
        self._fill: FillTables | None = None
        self._fill_of: FragState | None = None
        self._memory = np.zeros(0, dtype=np.int64)       # free memory per node when last read
        self._fill_scores: dict[tuple[int, int, int, int], ShapeScores] = {}

    def _sync_memory(self, frag: FragState, snapshot: Snapshot) -> FillTables:
        """The tables for ``frag``'s workload; forgets cached scores of nodes whose free memory
        changed (FGD's node versions follow GPUs and CPU only)."""
        memory = np.asarray(snapshot.free[:, snapshot.resources["memory"]], dtype=np.int64)
        if self._fill is None or self._fill_of is not frag or len(self._memory) != len(memory):
            gpus = np.bincount(frag.model_row, weights=(frag.gpu_left >= 0).sum(axis=1),
                               minlength=len(frag.tables.model_names) + 1).astype(np.int64)
            self._fill, self._fill_of = FillTables(frag.tables, gpus), frag
            self._fill_scores.clear()
        else:
            moved = np.flatnonzero(self._memory != memory)
            for cached in self._fill_scores.values():
                cached.version[moved] = -1
        self._memory = memory.copy()
        return self._fill

    def score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
              nodes: np.ndarray) -> np.ndarray:
        """FGD's score with ``FILL_WEIGHT * dF'`` added to each delta; for a share, writes the GPU
        chosen on each node under ``"gpu-selection"``."""
        if not len(nodes):
            return np.zeros(0, dtype=np.int64)
        frag = self.fragmentation_state(snapshot)
        fill = self._sync_memory(frag, snapshot)
        cpu, memory = int(pod.requests.get("cpu", 0)), int(pod.requests.get("memory", 0))
        share, count = pod_gpu(pod)
        sharing = count == 1 and share < MILLI
        key = (cpu, memory, share, count)
        cached = self._fill_scores.get(key)
        if cached is None:
            cached = self._fill_scores[key] = ShapeScores.empty(len(frag.version))
        stale = nodes[cached.version[nodes] != frag.version[nodes]]
        if stale.size:
            self._rescore_fill(frag, fill, cached, stale, (cpu, memory, share, count))
        if sharing:
            state.write(GPU_SELECTION_KEY, GpuSelection(nodes, cached.best_gpu[nodes][:, None]))
        scores: np.ndarray = cached.score[nodes]
        return scores

    def _rescore_fill(self, frag: FragState, fill: FillTables, cached: ShapeScores,
                      nodes: np.ndarray, pod: tuple[int, int, int, int]) -> None:
        """Recompute ``cached`` on ``nodes``; many nodes (a new pod shape) are computed once per
        distinct node state (model, free CPU, free memory, free milli per GPU)."""
        if len(nodes) >= DEDUPE_AT:
            key = np.column_stack((frag.model_row[nodes], frag.cpu_free[nodes],
                                   self._memory[nodes], frag.gpu_left[nodes]))
            _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
            score, best = self._scores_of(frag, fill, nodes[first], pod)
            inverse = inverse.reshape(-1)
            score, best = score[inverse], best[inverse]
        else:
            score, best = self._scores_of(frag, fill, nodes, pod)
        cached.score[nodes], cached.best_gpu[nodes] = score, best
        cached.version[nodes] = frag.version[nodes]

    def _scores_of(self, frag: FragState, fill: FillTables, nodes: np.ndarray,
                   pod: tuple[int, int, int, int]) -> tuple[np.ndarray, np.ndarray]:
        """Score and (shares) chosen GPU of each node: FGD's, with ``FILL_WEIGHT * dF'``."""
        cpu, memory, share, count = pod
        left, cpu_free, rows = frag.gpu_left[nodes], frag.cpu_free[nodes], frag.model_row[nodes]
        memory_free = self._memory[nodes]
        idle = np.maximum(left, 0).sum(axis=1)
        before = fill.combine(frag.scaled[nodes], fill.measure(
            fill.slot_sums(left), idle, cpu_free, memory_free, rows))
        if count == 1 and share < MILLI:
            after_fgd, valid = frag.after_share(nodes, cpu, share)
            after_left = left[:, None, :] - np.eye(left.shape[1], dtype=np.int64)[None] * share
            after = fill.combine(after_fgd, fill.measure(
                fill.slot_sums(after_left), (idle - share)[:, None], (cpu_free - cpu)[:, None],
                (memory_free - memory)[:, None], rows[:, None]))
            per_gpu = np.where(valid, sigmoid_score(before[:, None] - after, fill.scale), -1)
            best = np.argmax(per_gpu, axis=1)          # ties: the lowest GPU index, as FGD
            return np.maximum(per_gpu[np.arange(len(nodes)), best], 0), best
        after_left = least_free_fitting(left, share, count)
        after = fill.combine(frag.after_whole(nodes, cpu, share, count), fill.measure(
            fill.slot_sums(after_left), np.maximum(after_left, 0).sum(axis=1), cpu_free - cpu,
            memory_free - memory, rows))
        return sigmoid_score(before - after, fill.scale), np.zeros(len(nodes), dtype=np.int64)


def new(args: dict[str, Any] | None = None, *_: object) -> PolicyFGDFill:
    return PolicyFGDFill(args)
