"""The fragmentation measure (section 3.3) and the FGD score on hand-computed tiny nodes."""

from __future__ import annotations

import numpy as np
import pytest

from gpusched.policies.fragmentation import (FragState, FragTables, TargetShape,
                                                              per_shape, sigmoid_score)
from gpusched.sim.fragmentation import ClusterFragmentation

MODELS = ["T4", "V100M16"]


def shape(cpu: int, gpu: int, num: int = 1, models: tuple[str, ...] = (), weight: float = 1.0) -> TargetShape:
    return TargetShape(cpu, gpu, num, models, weight)


def node(left: list[int], cpu_free: int = 8000, model: int = 0, width: int = 4):
    row = np.full(width, -1)
    row[: len(left)] = left
    return row, cpu_free, model


def frag_one(nodes, target):
    left = np.array([n[0] for n in nodes])
    cpu = np.array([n[1] for n in nodes])
    model = np.array([n[2] for n in nodes])
    return per_shape(FragTables(target, MODELS), left, cpu, model)[:, 0]


# (id, node, shape, expected F_n(m))
CASES = [
    ("cpu-only-shape-counts-all-idle", node([1000, 300]), shape(1000, 0, 0), 1300),
    ("cpu-only-shape-cpu-lacking-too", node([1000, 300], cpu_free=500), shape(1000, 0, 0), 1300),
    ("no-access-model", node([1000, 300]), shape(1000, 500, models=("V100M16",)), 1300),
    ("q3-fits-only-slivers", node([1000, 300, 0]), shape(1000, 500), 300),
    ("q3-access-allowed", node([1000, 300]), shape(1000, 500, models=("T4",)), 300),
    ("q2-lacks-gpu", node([400, 300]), shape(1000, 500), 700),
    ("q4-lacks-cpu", node([1000, 300], cpu_free=500), shape(1000, 500), 1300),
    ("q1-lacks-both", node([400], cpu_free=500), shape(1000, 500), 400),
    ("multi-gpu-needs-count", node([1000, 1000, 500]), shape(1000, 1000, 2), 500),
    ("multi-gpu-too-few", node([1000, 500]), shape(1000, 1000, 2), 1500),
    ("full-node-zero", node([0, 0]), shape(1000, 500), 0),
    ("cpu-only-node", node([], model=-1), shape(1000, 500), 0),
]


@pytest.mark.parametrize("one_node,target,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_fragmentation_cases(one_node, target, expected):
    assert frag_one([one_node], [target])[0] == expected


def test_weighted_node_fragmentation_worked_example():
    # docstring example of policies.fragmentation: 0.5*300 + 0.5*1300 = 800
    tables = FragTables([shape(4000, 500, weight=0.5), shape(16000, 1000, weight=0.5)], MODELS)
    state = FragState(tables, np.array([0]))
    state.sync(np.array([[1000, 300]]), np.array([8000]))
    assert state.frag[0] == pytest.approx(800.0)


def test_incremental_sync_matches_full_recompute():
    rng = np.random.default_rng(7)
    target = [shape(int(c), int(g), 1, (), 0.25) for c, g in [(1000, 0), (2000, 500), (4000, 1000), (500, 250)]]
    left = rng.integers(0, 1001, size=(20, 4))
    cpu = rng.integers(0, 16000, size=20)
    model = rng.integers(0, 2, size=20)
    inc = ClusterFragmentation(target, MODELS, model)
    inc.observe(left, cpu)
    left[3, 1] //= 2
    cpu[5] -= 1000
    inc.observe(left, cpu)
    full = ClusterFragmentation(target, MODELS, model)
    full.observe(left, cpu)
    assert inc.amount == pytest.approx(full.amount)
    assert inc.ratio == pytest.approx(full.amount / left.sum())


SIGMOID = [("unchanged", 0.0, 50), ("one-more-gpu-fragmented", -1000.0, 26),
           ("one-gpu-less", 1000.0, 73), ("much-worse", -8000.0, 0)]


@pytest.mark.parametrize("delta,expected", [c[1:] for c in SIGMOID], ids=[c[0] for c in SIGMOID])
def test_fgd_sigmoid_score_truncates(delta, expected):
    assert sigmoid_score(np.array([delta]))[0] == expected


def test_hypothetical_share_matches_recompute():
    target = [shape(1000, 500, weight=0.5), shape(2000, 1000, weight=0.5)]
    tables = FragTables(target, MODELS)
    state = FragState(tables, np.array([0, 1]))
    left = np.array([[1000, 600, 300, -1], [1000, 1000, 0, 0]])
    cpu = np.array([8000, 8000])
    state.sync(left, cpu)
    after, valid = state.after_share(np.array([0, 1]), 1000, 400)
    for n in range(2):
        for g in range(4):
            if not valid[n, g]:
                continue
            moved = left.copy()
            moved[n, g] -= 400
            fresh = FragState(tables, np.array([0, 1]))
            fresh.sync(moved, cpu - np.array([1000 if i == n else 0 for i in range(2)]))
            assert after[n, g] == pytest.approx(fresh.frag[n]), (n, g)
    assert valid.tolist() == [[True, True, False, False], [True, True, False, False]]


def test_hypothetical_whole_gpu_takes_free_gpus():
    target = [shape(1000, 500, weight=1.0)]
    state = FragState(FragTables(target, MODELS), np.array([0]))
    state.sync(np.array([[1000, 1000, 300, -1]]), np.array([8000]))
    after = state.after_whole(np.array([0]), 1000, 1000, 2)
    assert after[0] == pytest.approx(300.0)       # only the 300 sliver left; no GPU fits 500 -> idle
