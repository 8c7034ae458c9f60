"""The fragmentation measure (section 3.3) and the FGD score on hand-computed tiny nodes."""

from __future__ import annotations

import decimal

import numpy as np
import pytest

from gpusched.policies.fragmentation import (FragState, FragTables, TargetShape,
                                                              per_shape, sigmoid_score,
                                                              sigmoid_thresholds)
from gpusched.sim.fragmentation import ClusterFragmentation

MODELS = ["T4", "V100M16"]


def shape(cpu: int, gpu: int, num: int = 1, models: tuple[str, ...] = (), count: int = 1) -> TargetShape:
    return TargetShape(cpu, gpu, num, models, count)


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
    tables = FragTables([shape(4000, 500, count=1), shape(16000, 1000, count=1)], MODELS)
    state = FragState(tables, np.array([0]))
    state.sync(np.array([[1000, 300]]), np.array([8000]))
    assert state.frag[0] == pytest.approx(800.0)


def test_incremental_sync_matches_full_recompute():
    rng = np.random.default_rng(7)
    target = [shape(int(c), int(g), 1, (), 1) for c, g in [(1000, 0), (2000, 500), (4000, 1000), (500, 250)]]
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
    assert sigmoid_score(np.array([int(delta)]))[0] == expected


def reference_score(delta_scaled: int, scale: int) -> int:
    """``floor(100 / (1 + exp(-delta / 1000)))`` at 50 digits (``exp``, where the code uses
    logarithm thresholds): the mathematically exact score, an independent computation; 100 where
    float64's ``1 + exp(-x)`` rounds to 1 (exp(-x) <= 2**-53), as the reference's float formula."""
    with decimal.localcontext() as ctx:
        ctx.prec, ctx.Emax, ctx.Emin = 50, decimal.MAX_EMAX, decimal.MIN_EMIN
        tail = (-decimal.Decimal(delta_scaled) / (1000 * scale)).exp()
        if tail <= decimal.Decimal(2) ** -53:
            return 100
        return int((100 / (1 + tail)).to_integral_value(decimal.ROUND_FLOOR))


def float_score(delta_scaled: np.ndarray, scale: int) -> np.ndarray:
    """The formula before issue 27: float64 division and numpy's ``exp``, truncated."""
    result: np.ndarray = (100.0 / (1.0 + np.exp(-(delta_scaled / scale) / 1000.0))).astype(np.int64)
    return result


# (id, scale, deltas): scale 1 is FGD on counts summing to 1, 8152 the default trace's covered
# pods, 655_360 FGD-Fill's (1 x 2**16 x 10); deltas in milli x scale
SIGMOID_GRIDS = [
    ("fgd-unit-every-milli", 1, np.arange(-9000, 9001)),
    ("fgd-trace-scale", 8152, np.arange(-9000, 9001, 7) * 8152 + 3),
    ("fill-scale", 655_360, np.arange(-9000, 9001, 13) * 655_360 - 1),
    ("saturation-edges", 1, np.arange(36_700, 36_800)),
    ("far-below-and-above", 3, np.array([-10**15, -10**9, -13_787, 10**9, 10**15])),
]


@pytest.mark.parametrize("scale,deltas", [c[1:] for c in SIGMOID_GRIDS], ids=[c[0] for c in SIGMOID_GRIDS])
def test_exact_sigmoid_score_matches_high_precision_and_the_float_formula(scale, deltas):
    exact = sigmoid_score(deltas, scale)
    assert exact.tolist() == [reference_score(int(d), scale) for d in deltas]
    # the float formula agrees except within float noise of a level (none on these grids)
    with np.errstate(over="ignore"):
        assert exact.tolist() == float_score(deltas, scale).tolist()


@pytest.mark.parametrize("scale", [1, 2, 8152, 655_360])
def test_sigmoid_thresholds_are_the_ceilings_of_the_logarithms(scale):
    thresholds = [int(t) for t in sigmoid_thresholds(scale)]
    assert len(thresholds) == 100 and thresholds[49] == 0          # ln(50 / 50) = 0
    ln = decimal.Context(prec=50).ln
    for k in (1, 26, 27, 73, 99):
        exact = 1000 * scale * ln(decimal.Decimal(k) / (100 - k))
        assert thresholds[k - 1] - 1 < exact <= thresholds[k - 1], k
    # the float formula reaches 100 where 1 + exp(-x) rounds to 1: x >= 53 ln 2 = 36.7368...
    saturation = 1000 * scale * 53 * ln(2)
    assert thresholds[99] - 1 < saturation <= thresholds[99]


def test_hypothetical_share_matches_recompute():
    target = [shape(1000, 500, count=1), shape(2000, 1000, count=1)]
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
            assert after[n, g] == fresh.scaled[n], (n, g)
    assert valid.tolist() == [[True, True, False, False], [True, True, False, False]]


def test_hypothetical_whole_gpu_takes_free_gpus():
    target = [shape(1000, 500, count=1)]
    state = FragState(FragTables(target, MODELS), np.array([0]))
    state.sync(np.array([[1000, 1000, 300, -1]]), np.array([8000]))
    after = state.after_whole(np.array([0]), 1000, 1000, 2)
    assert after[0] == 300       # only the 300 sliver left; no GPU fits 500 -> idle
