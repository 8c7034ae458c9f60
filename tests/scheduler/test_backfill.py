"""Backfill planning (``scheduler.backfill``): reservations, the start rule, and the guarantee
that a backfilled pod never delays a reserved start (property test over random timelines)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.scheduler.backfill import (INF, Request, Timeline, allowed_to_start,
                                         blocked_amounts, format_offset, plan_reservation,
                                         take_start)

# Resources in these tests: [gpus, cpu millicores].


def timeline(free: list[list[int]], running: list[tuple[int, float, list[int]]] = ()) -> Timeline:
    names = tuple(f"node-{i}" for i in range(len(free)))
    return Timeline.build(names, np.array(free, dtype=np.int64),
                          [(row, end, np.array(vec)) for row, end, vec in running])


def req(gpus: int, limit: float = INF, cpu: int = 0, key: str = "default/p",
        feasible: list[bool] | None = None) -> Request:
    return Request(key, np.array([gpus, cpu]), limit,
                   None if feasible is None else np.array(feasible))


# The module docstring's example: one 8-GPU node, A 4 GPUs until 100, B 2 GPUs until 300.
EXAMPLE = timeline([[2, 0]], [(0, 100.0, [4, 0]), (0, 300.0, [2, 0])])


@pytest.mark.parametrize("line,request_,expected", [
    (EXAMPLE, req(8, 1000), ("node-0", 300.0, 1300.0, [0, 0])),
    (EXAMPLE, req(6, 50), ("node-0", 100.0, 150.0, [0, 0])),
    (EXAMPLE, req(2, 10), ("node-0", 0.0, 10.0, [0, 0])),
    (EXAMPLE, req(1), ("node-0", 0.0, INF, [1, 0])),
    (EXAMPLE, req(9), None),
    (timeline([[0, 0], [0, 0]], [(0, 50.0, [4, 0]), (1, 20.0, [2, 0])]), req(2),
     ("node-1", 20.0, INF, [0, 0])),
    (timeline([[0, 0], [0, 0]], [(0, 50.0, [4, 0]), (1, 20.0, [2, 0])]),
     req(2, feasible=[True, False]), ("node-0", 50.0, INF, [2, 0])),
    (timeline([[0, 0]], [(0, INF, [4, 0])]), req(1), None),
    (timeline([[2, 1000]], [(0, 100.0, [2, 3000])]), req(4, cpu=2000),
     ("node-0", 100.0, INF, [0, 2000])),
    (timeline([[0, 0], [0, 0]], [(0, 30.0, [4, 0]), (1, 30.0, [4, 0])]), req(4),
     ("node-0", 30.0, INF, [0, 0])),
    (timeline([[0, 0]], [(0, -5.0, [4, 0])]), req(4), ("node-0", 0.0, INF, [0, 0])),
], ids=["big-waits-for-both", "mid-size-at-first-end", "fits-now", "no-limit-fits-now",
        "never-fits-too-big", "earliest-node-wins", "only-feasible-nodes",
        "blocked-by-pod-without-limit", "cpu-decides", "tie-lowest-row", "overdue-pod-ends-now"])
def test_plan_reservation(line, request_, expected):
    planned = plan_reservation(line, request_, 0.0)
    if expected is None:
        assert planned is None
        return
    node, start, end, slack = expected
    assert (planned.node, planned.start, planned.end, planned.slack.tolist()) == \
        (node, start, end, slack)


def test_second_reservation_goes_after_the_first():
    line = timeline([[0, 0]], [(0, 100.0, [8, 0])])
    first = plan_reservation(line, req(8, 50, key="default/a"), 0.0)
    second = plan_reservation(line, req(4, 10, key="default/b"), 0.0, [first])
    assert (first.start, second.start) == (100.0, 150.0)


BIG = plan_reservation(EXAMPLE, req(8, 1000), 0.0)                     # node-0 at 300, slack 0
ROOMY = plan_reservation(timeline([[2, 0]], [(0, 300.0, [4, 0])]), req(4, 1000), 0.0)  # slack 2
CPU_LEFT = plan_reservation(timeline([[2, 4000]], [(0, 300.0, [6, 0])]), req(8, 1000), 0.0)


@pytest.mark.parametrize("candidate,row,reservation,allowed", [
    (req(2, 200), 0, BIG, True),
    (req(2, 300), 0, BIG, True),
    (req(2, 500), 0, BIG, False),
    (req(2), 0, BIG, False),
    (req(2, 500), 1, BIG, True),
    (req(2, 500), 0, ROOMY, True),
    (req(3, 500), 0, ROOMY, False),
    (req(0, 500, cpu=100), 0, CPU_LEFT, True),
    (req(1, 500, cpu=100), 0, CPU_LEFT, False),
], ids=["short-job-backfills", "ends-exactly-at-reserved-start", "long-job-held",
        "no-limit-held", "other-node-allowed", "fits-in-slack", "exceeds-slack",
        "cpu-only-job-uses-cpu-slack", "gpu-job-held-despite-cpu-slack"])
def test_allowed_to_start(candidate, row, reservation, allowed):
    assert allowed_to_start(candidate, row, 0.0, [reservation]) is allowed


def test_blocked_amounts_leave_exactly_the_slack():
    free_now = np.array([[4, 1000], [8, 0]])
    held = blocked_amounts(500.0, 0.0, free_now, [ROOMY])
    assert {row: v.tolist() for row, v in held.items()} == {0: [2, 1000]}
    assert blocked_amounts(100.0, 0.0, free_now, [ROOMY]) == {}


@pytest.mark.parametrize("seconds,text", [(1800, "+30m"), (5400, "+1h30m"), (45, "+45s"),
                                          (0, "+0s"), (200.2, "+3m21s"), (-3, "+0s")],
                         ids=["30m", "1h30m", "45s", "now", "rounds-up", "past"])
def test_format_offset(seconds, text):
    assert format_offset(seconds) == text


# ---- property: a backfilled pod never delays the reserved start ------------------------------

allocation = st.tuples(st.integers(0, 2), st.one_of(st.floats(1, 500).map(round), st.just(INF)),
                       st.integers(0, 4), st.integers(0, 4000))
candidate = st.tuples(st.integers(0, 4), st.integers(0, 4000),
                      st.one_of(st.floats(1, 800).map(round), st.just(INF)))


@settings(max_examples=150, deadline=None)
@given(running=st.lists(allocation, max_size=8), blocked=st.tuples(st.integers(1, 8),
       st.integers(0, 8000), st.floats(1, 1000).map(round)),
       candidates=st.lists(candidate, max_size=8))
def test_backfill_never_delays_the_reserved_start(running, blocked, candidates):
    capacity = np.array([[8, 8000]] * 3, dtype=np.int64)
    used = np.zeros_like(capacity)
    kept = []
    for row, end, gpus, cpu in running:
        vec = np.array([gpus, cpu])
        if np.all(used[row] + vec <= capacity[row]):
            used[row] += vec
            kept.append((row, end, vec))
    line = Timeline.build(("a", "b", "c"), capacity - used, kept)
    big = Request("default/big", np.array(blocked[:2]), blocked[2])
    reservation = plan_reservation(line, big, 0.0)
    if reservation is None:
        return
    reservations = [reservation]
    for i, (gpus, cpu, limit) in enumerate(candidates):
        small = Request(f"default/s{i}", np.array([gpus, cpu]), limit)
        rows = [r for r in range(3) if np.all(line.free_now[r] >= small.vector)]
        for row in rows:
            if allowed_to_start(small, row, 0.0, reservations):
                line, reservations = take_start(line, reservations, small, row, 0.0)
                break
    again = plan_reservation(line, big, 0.0)
    assert again is not None and again.start <= reservation.start
    assert np.all(reservations[0].slack >= 0)
    assert not math.isnan(again.start)
