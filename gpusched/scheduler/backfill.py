"""Slurm-style backfill planning: a per-node resource timeline, reservations, and the start rule.

Pure functions over three small values (NumPy arrays inside, canonical integer units, columns =
the snapshot's resource columns: cpu, memory, pods, nvidia.com/gpu, other extended resources):

- :class:`Timeline`: what is free on each node now (``free_now``, nodes x resources) and the
  running allocations that will give resources back (``rows``, ``ends``, ``vectors``): a pod's
  end is its start plus its time limit (``inf`` for a pod without one: it runs forever).
- :class:`Request`: a pending pod: its request vector, its time limit (``inf`` = none) and the
  nodes that could ever host it (``feasible``; node selectors, GPU model, taints...).
- :class:`Reservation`: where and when a blocked pod will start (``row``, ``start``, ``end`` =
  start + limit) and its ``slack``: what stays free on that node during the whole reserved window
  after the reserved pod took its share (the minimum over the window).

:func:`plan_reservation` finds the earliest start of a request as running pods end at their
limits (earlier reservations are taken out of the timeline first, so reservations never
overlap). :func:`allowed_to_start` is Slurm's backfill rule: a lower-priority pod may start now
on a node only if, for every reservation on that node whose window it would still be running
into (it ends after the reservation starts), it fits in that reservation's slack. A pod on
another node, or one ending by the reserved start, is always allowed. :func:`take_start` books a
started pod: the timeline loses its resources until its limit and overlapped slacks shrink.

Worked example (one 8-GPU node, resources = GPUs only; now = 0)::

    running: A 4 GPUs until t=100, B 2 GPUs until t=300        free_now = 2
    big (8 GPUs, limit 1000): free(0)=2, free(100)=6, free(300)=8  -> reserved at t=300 on the
        node, window [300, 1300), slack = 8 - 8 = 0
    small1 (2 GPUs, limit 200): ends at 200 <= 300                  -> allowed (backfills)
    small2 (2 GPUs, limit 500): ends at 500 > 300, 2 > slack 0      -> held (would delay big)
    the same small2 on another node                                 -> allowed

Approximations (documented in docs/backfill.md): GPUs are counted per resource column, not per
device (device fragmentation, MIG placement and milli-GPU shares are the scheduler's business
when the pod actually starts); a reservation that turns out not to fit at its start (e.g.
fragmentation) is recomputed in the next pass, as Slurm recomputes its plan every cycle.

Ties: the earliest start wins; among nodes free at that start, the lowest row (the snapshot's
node order) wins. The slack is conservative: the minimum over the reserved pod's whole window.

Neighbours: pure (NumPy only); ``cluster.scheduling.backfill`` builds the values from the snapshot and the
store and applies the decisions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

INF = math.inf


@dataclass(frozen=True, eq=False)
class Timeline:
    """Free resources now and the running allocations that will end; see the module docstring."""

    nodes: tuple[str, ...]
    free_now: np.ndarray        # (nodes x resources) int64
    rows: np.ndarray            # (allocations,) int64: node row of each running allocation
    ends: np.ndarray            # (allocations,) float64: end time (inf = never)
    vectors: np.ndarray         # (allocations x resources) int64

    @classmethod
    def build(cls, nodes: tuple[str, ...], free_now: np.ndarray,
              allocations: list[tuple[int, float, np.ndarray]]) -> "Timeline":
        """``allocations``: (row, end, request vector) per running pod."""
        free = np.asarray(free_now, dtype=np.int64)
        width = free.shape[1]
        vectors = np.zeros((len(allocations), width), dtype=np.int64)
        for i, (_, _, vec) in enumerate(allocations):
            vectors[i, : len(vec)] = vec[:width]
        return cls(tuple(nodes), free,
                   np.array([a[0] for a in allocations], dtype=np.int64),
                   np.array([a[1] for a in allocations], dtype=np.float64), vectors)

    @property
    def width(self) -> int:
        return int(self.free_now.shape[1])


@dataclass(frozen=True, eq=False)
class Request:
    """A pending pod for planning: ``key`` (namespace/name), request ``vector``, ``limit`` in
    seconds (``inf`` = none) and ``feasible`` (bool per node row; None = every node)."""

    key: str
    vector: np.ndarray
    limit: float = INF
    feasible: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class Reservation:
    """``key`` will start on ``node`` (``row``) at ``start`` and hold ``vector`` until ``end``;
    ``slack`` is what else stays free there during [start, end)."""

    key: str
    row: int
    node: str
    start: float
    end: float
    vector: np.ndarray
    slack: np.ndarray


def _padded(vector: np.ndarray, width: int) -> np.ndarray:
    out = np.zeros(width, dtype=np.int64)
    vec = np.asarray(vector, dtype=np.int64)
    out[: min(width, len(vec))] = vec[:width]
    if len(vec) > width and np.any(vec[width:] > 0):
        out = np.concatenate([out, vec[width:]])   # a resource no node has: never fits
    return out


def free_at(timeline: Timeline, reservations: tuple[Reservation, ...] | list[Reservation],
            times: np.ndarray) -> np.ndarray:
    """Free resources at each time (times x nodes x resources): ``free_now`` plus every
    allocation ended by then (an overdue one, ``end <= now``, counts as ended at once), minus
    every reservation active then (``start <= t < end``)."""
    times = np.asarray(times, dtype=np.float64)
    nodes, width = timeline.free_now.shape
    out = np.broadcast_to(timeline.free_now, (len(times), nodes, width)).copy()
    if len(timeline.ends):
        ended = timeline.ends[None, :] <= times[:, None]            # (times x allocations)
        onehot = np.zeros((len(timeline.ends), nodes), dtype=np.int64)
        onehot[np.arange(len(timeline.ends)), timeline.rows] = 1
        # released[t, n, r] = sum over allocations a ended by t on node n of vectors[a, r]
        out += np.einsum("ta,an,ar->tnr", ended.astype(np.int64), onehot, timeline.vectors)
    for res in reservations:
        active = (res.start <= times) & (times < res.end)
        out[active, res.row, :] -= _padded(res.vector, width)[:width]
    return out


def _breakpoints(timeline: Timeline, reservations: tuple[Reservation, ...] | list[Reservation], now: float) -> np.ndarray:
    """``now`` and every later moment the free resources change, ascending."""
    points = [now]
    points += [float(e) for e in timeline.ends if now < e < INF]
    for res in reservations:
        points += [t for t in (res.start, res.end) if now < t < INF]
    return np.unique(np.asarray(points, dtype=np.float64))


def plan_reservation(timeline: Timeline, request: Request, now: float,
                     reservations: tuple[Reservation, ...] | list[Reservation] = ()
                     ) -> Reservation | None:
    """The earliest (start, node) at which ``request`` fits for its whole limit, given the
    running allocations' ends and the earlier ``reservations``; None when it never fits (too
    big for every feasible node, or blocked by pods that run forever)."""
    vec = _padded(request.vector, timeline.width)
    if len(vec) > timeline.width:
        return None
    times = _breakpoints(timeline, reservations, now)
    free = free_at(timeline, reservations, times)                   # (T x N x R)
    feasible = (np.ones(len(timeline.nodes), dtype=bool) if request.feasible is None
                else np.asarray(request.feasible, dtype=bool))
    for i, start in enumerate(times):
        end = start + request.limit
        stop = int(np.searchsorted(times, end, side="left")) if end < INF else len(times)
        window_min = free[i:max(stop, i + 1)].min(axis=0)           # (N x R) over [start, end)
        fits = np.all(window_min >= vec, axis=1) & feasible
        if fits.any():
            row = int(np.flatnonzero(fits)[0])
            return Reservation(request.key, row, timeline.nodes[row], float(start), float(end),
                               vec, window_min[row] - vec)
    return None


def allowed_to_start(candidate: Request, row: int, now: float,
                     reservations: tuple[Reservation, ...] | list[Reservation]) -> bool:
    """Slurm's backfill rule for starting ``candidate`` now on node ``row``; see the module
    docstring. It is assumed to fit there now (the scheduler checked that)."""
    end = now + candidate.limit
    for res in reservations:
        if res.row != row or end <= res.start:
            continue
        vec = _padded(candidate.vector, len(res.slack))
        if len(vec) > len(res.slack) or np.any(vec[: len(res.slack)] > res.slack):
            return False
    return True


def blocked_amounts(candidate_limit: float, now: float, free_now: np.ndarray,
                    reservations: tuple[Reservation, ...] | list[Reservation]
                    ) -> dict[int, np.ndarray]:
    """Per node row, what a candidate with this limit must leave untouched now so that every
    reservation it would overlap keeps its start: ``max(0, free_now - min(slack))``. A pod fits
    in what remains exactly when :func:`allowed_to_start` allows it (the caller places this as
    a placeholder so the scheduler looks for a node where starting is allowed)."""
    end = now + candidate_limit
    allowed: dict[int, np.ndarray] = {}
    for res in reservations:
        if end <= res.start:
            continue
        slack = _padded(res.slack, free_now.shape[1])[: free_now.shape[1]]
        allowed[res.row] = slack if res.row not in allowed else np.minimum(allowed[res.row], slack)
    return {row: np.maximum(free_now[row] - slack, 0) for row, slack in sorted(allowed.items())}


def take_start(timeline: Timeline, reservations: list[Reservation], candidate: Request,
               row: int, now: float) -> tuple[Timeline, list[Reservation]]:
    """The timeline and reservations after ``candidate`` started on ``row`` at ``now``: its
    resources are busy until ``now + limit``, and every reservation on that node it overlaps
    loses that much slack."""
    width = timeline.width
    vec = _padded(candidate.vector, width)[:width]
    end = now + candidate.limit
    free = timeline.free_now.copy()
    free[row] -= vec
    grown = Timeline(timeline.nodes, free, np.append(timeline.rows, row),
                     np.append(timeline.ends, end), np.vstack([timeline.vectors, vec[None, :]]))
    updated = [Reservation(r.key, r.row, r.node, r.start, r.end, r.vector,
                           r.slack - _padded(vec, len(r.slack))[: len(r.slack)])
               if r.row == row and end > r.start else r for r in reservations]
    return grown, updated


def format_offset(seconds: float) -> str:
    """``+30m``, ``+1h30m``, ``+45s``, ``+0s``: a reservation's start relative to now."""
    total = int(math.ceil(max(seconds, 0.0)))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else "",
             f"{secs}s" if secs or not total else ""]
    return "+" + "".join(parts)
