"""The FGD fragmentation measure, vectorised over nodes x GPUs x target shapes.

Shared by the FGD score plugin (``policies.fgd``) and by the experiment metrics
(``sim.fragmentation``); it lives in the policies layer (below ``sim``) so that the plugin can
use it without importing ``sim``. Not a plugin itself (no ``NAME``).

Fragmentation of node n for shape m, F_n(m), in milli-GPU (section 3.3 of
``fgd-and-alibaba-trace.md``), with ``left[i]`` the free milli of GPU i and ``idle = sum(left)``:

1. m is CPU-only, or n's model is not allowed by m:           F = idle
2. m fits (>= num_gpu GPUs with left >= m.gpu_milli and free CPU >= m.cpu): F = sum of the left[i]
   with left[i] < m.gpu_milli (only the slivers too small for m)
3. otherwise:                                                   F = idle

F_n(M) = sum_m p_m F_n(m). Worked example: a node with left = [1000, 300], 8 free cores and the
shapes {A: (4 cores, 500 milli, 1 GPU, p=0.5), B: (16 cores, 1000, 1, p=0.5)}: A fits and only
the 300 sliver is too small -> 300; B lacks CPU -> idle = 1300; F_n(M) = 0.5*300 + 0.5*1300 = 800.

Exact arithmetic (the same decisions on every processor). p_m = count_m / covered, with
``count_m`` the shape's pod count (``TargetShape.count``) and ``covered`` their sum, so the code
keeps ``F_n(M) * covered = sum_m count_m F_n(m)`` (``FragState.scaled``, milli-GPU x pods) as an
int64: integer sums are exact in any order, where a float ``gain @ weight`` goes through BLAS
kernels and SIMD paths whose summation order (and FMA use) differ between processors, so the last
bits and, at a tie, a placement moved (issue 27). In the example with counts A=3, B=3:
``3*300 + 3*1300 = 4800 = 800 * 6``. Reports divide once (``FragState.frag``, cluster sums in
``sim.fragmentation``): one correctly rounded IEEE division, the same bytes everywhere. Bounds:
``covered <= MAX_COVERED = 2**24`` pods and a node's idle < 2**16 milli (65 GPUs) keep a node's
value below 2**40 and a cluster's sum of up to 2**22 nodes below 2**62.

FGD's score ``int(100 * sigmoid(delta / 1000))`` (delta in milli) is computed without ``exp``
(numpy's SIMD ``exp`` and libm may differ in the last ulp, and the truncation can then flip a
level): with ``D = delta * scale`` the exact integer, score >= k (k = 1..99) exactly when
``delta / 1000 >= ln(k / (100 - k))``, i.e. ``D >= ceil(1000 * scale * ln(k / (100 - k)))``
(the right side is irrational for k != 50, so it never ties). ``sigmoid_thresholds(scale)``
computes the 99 integers once with ``decimal`` at 60 digits (not ``math.log``, whose last bit is
the C library's), and the score is the count of thresholds <= D (``searchsorted``). A 100th
threshold at ``53 ln 2`` (36.7 GPUs) keeps the float formula's saturation: ``1 + exp(-x)``
rounds to 1 there, so the reference scores 100. Example (scale 1): D = -1000 -> ln(k/(100-k)) <=
-1 for k <= 26 (ln(26/74) = -1.046, ln(27/73) = -0.995) -> 26, as ``int(100 / (1 + e))``.

How it is fast: per shape, the two per-GPU terms ``left if left < g else 0`` and
``left >= g`` only depend on the GPU's ``left`` value (0..1000), so they are precomputed as
lookup tables ``(1002 x shapes)`` (row 1001 = "no GPU in this slot"). A node's sums over its GPUs
are kept per node (``FragState``) and recomputed only for nodes whose free CPU or GPUs changed;
a hypothetical placement changes one or a few GPUs, so its effect is a table difference.
"""

from __future__ import annotations

import decimal
import functools
from dataclasses import dataclass

import numpy as np

from gpusched.scheduler.rowops import row_any

MILLI = 1000
ABSENT = MILLI + 1          # table row for a GPU slot the node does not have (free milli -1)
DEDUPE_AT = 64              # after_share on this many nodes or more computes each state once
MAX_COVERED = 1 << 24       # pods the target shapes may count: keeps the exact sums inside int64
MAX_SCALE = 1 << 47         # sigmoid thresholds' scale: 1000 * scale * 36.8 stays inside int64
SIGMOID_DIGITS = 60         # decimal precision of the thresholds' logarithms


@dataclass(frozen=True, slots=True)
class TargetShape:
    """One typical task of the target workload M; its popularity p_m is ``count`` over the sum
    of the target's counts (integers, so that the measure is exact)."""

    cpu_milli: int
    gpu_milli: int                      # per-GPU share; 0 for CPU-only
    num_gpu: int
    gpu_models: tuple[str, ...] = ()    # allowed models; empty = any
    count: int = 1                      # pods of this shape in the trace (>= 1)
    memory: int = 0                     # median memory of the shape's pods, bytes (0: unknown);
                                        # FGD ignores it, FGD-Fill (``fgd_fill``) counts it


class FragTables:
    """Lookup tables for one target workload and one list of GPU model names."""

    def __init__(self, shapes: list[TargetShape], model_names: list[str]) -> None:
        self.shapes = list(shapes)
        values = np.arange(ABSENT + 1)
        gpu = np.array([s.gpu_milli for s in shapes], dtype=np.int64)
        self.cpu = np.array([s.cpu_milli for s in shapes], dtype=np.int64)
        self.num_gpu = np.array([s.num_gpu for s in shapes], dtype=np.int64)
        self.count = np.array([s.count for s in shapes], dtype=np.int64)
        if (self.count < 1).any() or self.count.sum() > MAX_COVERED:
            raise ValueError(f"target shape counts must be >= 1 and sum to at most {MAX_COVERED}")
        self.covered = int(self.count.sum())
        self.scale = max(self.covered, 1)            # F_n(M) * scale is what ``scaled`` holds
        self.weight = self.count / self.scale        # p_m as floats, for reports only
        small = np.where(values[:, None] < gpu[None, :], values[:, None], 0)
        fits = (values[:, None] >= gpu[None, :]).astype(np.int64)
        small[ABSENT], fits[ABSENT] = 0, 0
        # (1002, 2K): [small | fits], one gather serves both; ``small`` and ``fits`` are views
        self.both = np.concatenate((small.astype(np.int64), fits), axis=1)
        self.small = self.both[:, :len(shapes)]      # (1002, K): the sliver a GPU leaves for m
        self.fits = self.both[:, len(shapes):]       # (1002, K): 1 if a GPU can host m
        self.model_names = list(model_names)
        # (models + 1, K): True where F = idle regardless of state (CPU-only or no access).
        # The extra last row is "no GPU model" (CPU-only nodes).
        always = np.ones((len(model_names) + 1, len(shapes)), dtype=bool)
        for k, s in enumerate(shapes):
            if s.gpu_milli == 0:
                continue
            for j, name in enumerate(model_names):
                always[j, k] = bool(s.gpu_models) and name not in s.gpu_models
        self.always_idle = always
        self.allowed = ~always                       # shape m can use the node's model
        self._delta_cache: dict[int, np.ndarray] = {}

    def model_rows(self, model_id: np.ndarray) -> np.ndarray:
        """Row of ``always_idle`` for each node (model id < 0 = CPU-only node)."""
        return np.where(model_id < 0, len(self.model_names), model_id)

    def deltas(self, share: int) -> tuple[np.ndarray, np.ndarray]:
        """Tables of the change when a GPU with ``left`` gives away ``share``: ``(1002, K)`` each."""
        both = self.deltas_both(share)
        k = len(self.shapes)
        return both[:, :k], both[:, k:]

    def deltas_both(self, share: int) -> np.ndarray:
        """``deltas`` side by side, ``(1002, 2K)``: [small change | fits change]."""
        cached = self._delta_cache.get(share)
        if cached is None:
            values = np.arange(ABSENT + 1)
            after = np.where(values >= share, values - share, values)
            after[ABSENT] = ABSENT
            cached = self._delta_cache[share] = self.both[after] - self.both
        return cached


def table_index(gpu_left: np.ndarray) -> np.ndarray:
    """Free milli per GPU (-1 where absent) -> lookup-table row."""
    return np.where(gpu_left < 0, ABSENT, gpu_left)


def fragmentation(tables: FragTables, small: np.ndarray, fits: np.ndarray, idle: np.ndarray,
                  cpu_free: np.ndarray, model_row: np.ndarray) -> np.ndarray:
    """F_n(M) from per-node sums; leading axes of ``small``/``fits`` broadcast against the rest.

    ``small``/``fits``: (..., K); ``idle``/``cpu_free``/``model_row``: (...), or with size-1 axes
    that broadcast against them (one value per node for all its GPUs). Returns the exact
    ``F_n(M) * tables.scale`` (int64, milli-GPU x pods).
    """
    ok = (fits >= tables.num_gpu) & (cpu_free[..., None] >= tables.cpu) & \
        tables.allowed.take(model_row, axis=0)
    # sum_m count_m * (ok ? small : idle) = idle * covered + sum_m count_m * ok * (small - idle),
    # all int64 (numpy's own integer matmul, no BLAS): exact whatever order it adds in
    gain = np.where(ok, small - idle[..., None], 0)
    result: np.ndarray = idle * tables.covered + gain @ tables.count
    return result


def per_shape(tables: FragTables, gpu_left: np.ndarray, cpu_free: np.ndarray,
              model_id: np.ndarray) -> np.ndarray:
    """F_n(m) for every node and shape, (N, K) int64 (used by tests and reports)."""
    idx = table_index(gpu_left)
    small, fits = tables.small[idx].sum(axis=1), tables.fits[idx].sum(axis=1)
    idle = np.clip(gpu_left, 0, None).sum(axis=1)
    ok = (fits >= tables.num_gpu) & (cpu_free[:, None] >= tables.cpu) & \
        ~tables.always_idle[tables.model_rows(model_id)]
    result: np.ndarray = np.where(ok, small, idle[:, None])
    return result


class FragState:
    """Per-node sums for one target workload, updated only where a node's state changed.

    ``sync(gpu_left, cpu_free)`` compares with the copy it holds and recomputes the changed rows;
    then ``scaled`` (N,) holds the exact F_n(M) * ``tables.scale`` for every node (``frag``: the
    same divided once, floats for reports), and ``version`` (N,) has been bumped for each
    recomputed row, so a caller can cache anything derived from one node's state (the score of a
    pod shape on that node) and recompute only the rows whose version moved.
    """

    def __init__(self, tables: FragTables, model_id: np.ndarray) -> None:
        self.tables = tables
        self.model_id = np.asarray(model_id)
        self.model_row = tables.model_rows(self.model_id)
        self.gpu_left = np.zeros((0, 0), dtype=np.int64)   # no node yet: the first sync fills
        self.cpu_free = np.zeros(0, dtype=np.int64)
        self._synced = False
        self._allocate(0)

    def _allocate(self, n: int) -> None:
        k = len(self.tables.shapes)
        self.both = np.zeros((n, 2 * k), dtype=np.int64)   # per node [small sums | fits sums]
        self.small, self.fits = self.both[:, :k], self.both[:, k:]
        self.idle = np.zeros(n, dtype=np.int64)
        self.scaled = np.zeros(n, dtype=np.int64)
        self.version = np.zeros(n, dtype=np.int64)

    @property
    def frag(self) -> np.ndarray:
        """F_n(M) per node in milli-GPU: ``scaled / scale``, one correctly rounded division."""
        result: np.ndarray = self.scaled / self.tables.scale
        return result

    def sync(self, gpu_left: np.ndarray, cpu_free: np.ndarray, rows: np.ndarray | None = None) -> None:
        """Bring the sums up to date with ``gpu_left``/``cpu_free``; ``rows``, when given, are the
        only rows that may have changed since the previous sync (a snapshot journal's answer)."""
        if not self._synced or self.gpu_left.shape != gpu_left.shape:
            self._synced = True
            changed = np.arange(gpu_left.shape[0])
            self.gpu_left, self.cpu_free = gpu_left.astype(np.int64), cpu_free.astype(np.int64)
            self._allocate(gpu_left.shape[0])
        else:
            if rows is None:
                diff = (self.gpu_left != gpu_left).any(axis=1) | (self.cpu_free != cpu_free)
                changed = np.flatnonzero(diff)
            else:
                diff = row_any(self.gpu_left.take(rows, axis=0) != gpu_left.take(rows, axis=0)) | \
                    (self.cpu_free[rows] != cpu_free[rows])
                changed = rows[diff]
            if not changed.size:
                return
            self.gpu_left[changed] = gpu_left[changed]
            self.cpu_free[changed] = cpu_free[changed]
        self.recompute(changed)

    def recompute(self, rows: np.ndarray) -> None:
        left = self.gpu_left.take(rows, axis=0)
        idx = np.where(left < 0, ABSENT, left)
        both = self.tables.both.take(idx, axis=0).sum(axis=1)
        k = len(self.tables.shapes)
        small, fits = both[:, :k], both[:, k:]
        idle = np.maximum(left, 0).sum(axis=1)
        self.both[rows], self.idle[rows] = both, idle
        self.scaled[rows] = fragmentation(self.tables, small, fits, idle, self.cpu_free[rows],
                                        self.model_row[rows])
        self.version[rows] += 1

    # ---- hypothetical placements ---------------------------------------------------------

    def after_share(self, nodes: np.ndarray, cpu: int, share: int) -> tuple[np.ndarray, np.ndarray]:
        """F_n(M) * scale after putting a share on each GPU of each node: ``(len(nodes), G)`` and a mask
        of the GPUs that can take it (``left >= share``). Nodes in the same state (model, free
        CPU, free milli per GPU) get the same values, so many nodes are computed once per state
        (each node's values come from its own matrix-vector product either way)."""
        if len(nodes) >= DEDUPE_AT:
            key = np.column_stack((self.model_row[nodes], self.cpu_free[nodes], self.gpu_left[nodes]))
            _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
            if len(first) < len(nodes):
                after, valid = self._after_share(nodes[first], cpu, share)
                inverse = inverse.reshape(-1)
                return after[inverse], valid[inverse]
        return self._after_share(nodes, cpu, share)

    def _after_share(self, nodes: np.ndarray, cpu: int, share: int) -> tuple[np.ndarray, np.ndarray]:
        left = self.gpu_left.take(nodes, axis=0)
        idx = np.where(left < 0, ABSENT, left)
        both = self.both.take(nodes, axis=0)[:, None, :] + \
            self.tables.deltas_both(share).take(idx, axis=0)
        k = len(self.tables.shapes)
        small, fits = both[..., :k], both[..., k:]
        idle = (self.idle[nodes] - share)[:, None]          # (n, 1): broadcast over the GPUs
        cpu_after = (self.cpu_free[nodes] - cpu)[:, None]
        after = fragmentation(self.tables, small, fits, idle, cpu_after, self.model_row[nodes][:, None])
        return after, left >= share

    def after_whole(self, nodes: np.ndarray, cpu: int, gpu_milli: int, num_gpu: int) -> np.ndarray:
        """F_n(M) * scale after a CPU-only / whole-GPU / multi-GPU pod: it takes ``gpu_milli`` from the
        ``num_gpu`` GPUs with the least free milli that still fit (whole GPUs: fully free ones)."""
        both, idle = self.both.take(nodes, axis=0), self.idle[nodes]
        if num_gpu and gpu_milli:
            left = self.gpu_left.take(nodes, axis=0)
            key = np.where(left >= gpu_milli, left, ABSENT + 1)
            chosen = np.sort(key, axis=1)[:, :num_gpu]           # least free first
            chosen = np.where(chosen > MILLI, ABSENT, chosen)    # nodes that cannot host it
            both = both + self.tables.deltas_both(gpu_milli).take(chosen, axis=0).sum(axis=1)
            idle = idle - np.where(chosen <= MILLI, gpu_milli, 0).sum(axis=1)
        k = len(self.tables.shapes)
        small, fits = both[:, :k], both[:, k:]
        return fragmentation(self.tables, small, fits, idle, self.cpu_free[nodes] - cpu,
                             self.model_row[nodes])


@functools.lru_cache(maxsize=8)
def sigmoid_thresholds(scale: int) -> np.ndarray:
    """The 100 integers ``ceil(1000 * scale * ln(k / (100 - k)))`` for k = 1..99, then
    ``ceil(1000 * scale * 53 ln 2)`` (the float formula's 100), in ``decimal`` at 60 digits."""
    if not 1 <= scale <= MAX_SCALE:
        raise ValueError(f"sigmoid scale {scale} outside 1..{MAX_SCALE}")
    context = decimal.Context(prec=SIGMOID_DIGITS, rounding=decimal.ROUND_CEILING)
    unit = decimal.Decimal(MILLI * scale)
    logs = [context.ln(context.divide(k, 100 - k)) for k in range(1, 100)]
    logs.append(context.multiply(53, context.ln(2)))
    return np.array([int(context.multiply(unit, x).to_integral_value(context=context)) for x in logs],
                    dtype=np.int64)


def sigmoid_score(delta_scaled: np.ndarray, scale: int = 1) -> np.ndarray:
    """FGD's ``int64(100 * sigmoid(delta / 1000))``, truncated, for ``delta = delta_scaled / scale``
    milli (``delta_scaled`` integers): +1 GPU of fragmentation -> 26. Exact (module docstring)."""
    thresholds = sigmoid_thresholds(scale)
    result: np.ndarray = np.searchsorted(thresholds, delta_scaled, side="right").astype(np.int64)
    return result
