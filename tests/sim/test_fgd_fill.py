"""FGD-Fill (``fgdfill``, ``policies.fgd_fill``): its fill measure on tiny node states, the
placements where it and FGD disagree, its score cache (memory included), the shapes' memory,
and a short experiment run."""

from __future__ import annotations

import csv
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gpusched.scheduler.framework import GPU_SELECTION_KEY
from gpusched.policies.fgd_base import PolicyFGD
from gpusched.policies.fgd_fill import FILL_WEIGHT, FillTables, PolicyFGDFill
from gpusched.policies.fragmentation import FragTables, TargetShape
from gpusched.scheduler.framework import CycleState
from gpusched.sim.alibaba import TraceNode, TracePod, pod_info
from gpusched.sim.experiment import RunSpec, build_snapshot, decision_lines, policy_label, run
from gpusched.sim.experiment_profile import experiment_scheduler
from gpusched.sim.workload import target_workload
from tests.conftest import gpusched_executable, run_process

GIB = 1 << 30
SHARE = TargetShape(4000, 500, 1, (), 1)
WHOLE2 = TargetShape(8000, 1000, 2, (), 1)
CPU_ONLY = TargetShape(8000, 0, 0, (), 1)
ONLY_V100 = TargetShape(4000, 500, 1, ("V100M16",), 1)
WITH_MEMORY = TargetShape(4000, 500, 1, (), 1, memory=40 * (1 << 30))
SHAPES = [TargetShape(4000, 500, 1, (), 1), TargetShape(8000, 1000, 1, (), 1)]


def fill(shape: TargetShape, left: list[int], cpu: int, model: str = "T4", memory_gib: int = 512) -> float:
    tables = FillTables(FragTables([shape], ["T4", "V100M16"]))
    row = np.array(["T4", "V100M16"].index(model))
    gpus = np.array(left)
    measure = tables.measure(tables.slot_sums(gpus[None, :])[0], np.maximum(gpus, 0).sum(),
                             np.array(cpu), np.array(memory_gib * GIB), row)
    return int(measure) / tables.measure_scale


@pytest.mark.parametrize("shape, left, cpu, model, memory_gib, expected", [
    (SHARE, [1000, 1000], 6_000, "T4", 512, 1500),      # 4 GPU slots, 1 CPU slot: 2000 - 500
    (SHARE, [1000, 1000], 32_000, "T4", 512, 0),        # 4 pods of 500 use both GPUs
    (SHARE, [700, 300], 32_000, "T4", 512, 500),        # the 300 sliver and 200 of the 700
    (SHARE, [300, 300], 32_000, "T4", 512, 600),        # no GPU slot: all idle counts
    (WHOLE2, [1000, 1000, 1000, -1], 32_000, "T4", 512, 1000),   # one 2-GPU pod: 3000 - 2000
    (WHOLE2, [1000, 1000, 1000, 1000], 8_000, "T4", 512, 2000),  # GPU for 2 pods, CPU for 1
    (CPU_ONLY, [1000, 400], 32_000, "T4", 512, 1400),   # a CPU-only shape uses no GPU (as FGD)
    (ONLY_V100, [1000, 1000], 32_000, "T4", 512, 2000),  # model not allowed (as FGD)
    (ONLY_V100, [1000, 1000], 32_000, "V100M16", 512, 0),
    (SHARE, [1000, 1000], 32_000, "T4", 0, 0),          # a shape without memory: not counted
    (WITH_MEMORY, [1000, 1000], 32_000, "T4", 100, 1000),   # memory for 2 of the 4 pods
    (WITH_MEMORY, [1000, 1000], 32_000, "T4", 39, 2000),    # memory for none
], ids=["cpu-strands-gpus", "fills-both", "remainders", "slivers-only", "two-gpu-pods",
        "two-gpu-cpu-bound", "cpu-only-shape", "model-not-allowed", "model-allowed",
        "shape-without-memory", "memory-strands-gpus", "no-memory-left"])
def test_fill_measure(shape, left, cpu, model, memory_gib, expected):
    assert fill(shape, left, cpu, model, memory_gib) == pytest.approx(expected)


def node(name: str, cpu: int, gpus: int = 2) -> TraceNode:
    return TraceNode(name, cpu, 256 * GIB, gpus, "T4")


def cpu_pod(name: str, cpu: int) -> TracePod:
    return TracePod(name, cpu, GIB, 0, 0)


POD_SHAPES = [(250, 1, 2000), (500, 1, 4000), (1000, 1, 4000), (1000, 2, 8000), (0, 0, 2000),
              (0, 0, 16_000)]


def scores(plugin: PolicyFGD, snap, pod) -> tuple[list[int], list[tuple[int, ...]]]:
    state = CycleState()
    result = plugin.score(state, pod, snap, snap.all_nodes()).tolist()
    selection = state.read(GPU_SELECTION_KEY)
    return result, [selection.get(int(n), ()) for n in snap.all_nodes()] if selection else []


def test_fgd_ties_where_fill_sees_stranded_gpus():
    # an 8-core CPU-only pod on a (40 cores) or b (20 cores), both GPUs free: every target
    # shape still fits once on either node, so FGD scores both 50. On b it leaves 12 cores:
    # 3 of the 4 slots of the 500-share (F' +500) and 1 of the 2 whole GPUs (F' +1000):
    # dF' = -(0.5 * 500 + 0.5 * 1000) = -750, delta = 0.1 * -750 -> int(100 * sigmoid(-0.075)) = 48
    snap = build_snapshot([node("a", 40_000), node("b", 20_000)])
    pod = pod_info(cpu_pod("c", 8_000), 0)
    assert scores(PolicyFGD({"target_workload": SHAPES}), snap, pod)[0] == [50, 50]
    assert scores(PolicyFGDFill({"target_workload": SHAPES}), snap, pod)[0] == [50, 48]
    assert FILL_WEIGHT == Fraction(1, 10)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_fill_sends_the_cpu_pod_where_it_strands_nothing_whatever_the_node_order(seed):
    snap = build_snapshot([node("a", 40_000), node("b", 20_000)])
    sched = experiment_scheduler(snap, PolicyFGDFill.name, {"seed": seed, "target_workload": SHAPES})
    assert sched.schedule_one(pod_info(cpu_pod("c", 8_000), 0)).node == "a"


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(POD_SHAPES) - 1), st.booleans()), min_size=1, max_size=25))
def test_cached_fill_scores_equal_fresh_ones(steps):
    """Whatever placements and removals came before, the cached plugin scores every node (and
    picks every share's GPU) exactly as a fresh one does."""
    snap = build_snapshot([node("a", 32_000, 4), node("b", 12_000, 2), node("c", 64_000, 8)])
    cached = PolicyFGDFill({"target_workload": SHAPES})
    placed: list[str] = []
    for seq, (index, remove) in enumerate(steps):
        milli, gpus, cpu = POD_SHAPES[index]
        pod = pod_info(TracePod(f"p{seq}", cpu, GIB, gpus if milli else 0, milli), seq)
        assert scores(cached, snap, pod) == scores(PolicyFGDFill({"target_workload": SHAPES}), snap, pod)
        if remove and placed:
            snap.remove_pod(placed.pop(0))
            continue
        for row in range(snap.num_nodes):
            assignment = snap.devices[row].allocate(pod)
            if assignment is not None and int(snap.free[row, 0]) >= cpu:
                snap.add_pod(pod, row, assignment)
                placed.append(pod.uid)
                break


@pytest.mark.parametrize("pod_shape", POD_SHAPES, ids=[f"{m}x{g}-cpu{c}" for m, g, c in POD_SHAPES])
def test_many_nodes_scored_once_per_state_equal_node_by_node(pod_shape):
    # 70 nodes (>= DEDUPE_AT) in 15 distinct states (CPU x memory): computed once per state,
    # as one by one; the shapes ask for memory, so a state that left memory out would differ
    shapes = [TargetShape(4000, 500, 1, (), 1, memory=64 * GIB),
              TargetShape(8000, 1000, 1, (), 1, memory=100 * GIB)]
    snap = build_snapshot([TraceNode(f"n{i}", 16_000 * (1 + i % 5), 100 * GIB * (1 + i % 3), 4, "T4")
                           for i in range(70)])
    for row, milli in ((3, 250), (8, 700), (13, 500)):
        placed = pod_info(TracePod(f"by-hand-{row}", 2000, GIB, 1, milli), row)
        snap.add_pod(placed, row, snap.devices[row].allocate(placed))
    milli, gpus, cpu = pod_shape
    pod = pod_info(TracePod("p", cpu, GIB, gpus if milli else 0, milli), 99)
    together = scores(PolicyFGDFill({"target_workload": shapes}), snap, pod)
    one_by_one: tuple[list[int], list[tuple[int, ...]]] = ([], [])
    for row in range(70):
        state = CycleState()
        one_by_one[0].extend(PolicyFGDFill({"target_workload": shapes}).score(
            state, pod, snap, np.array([row])).tolist())
        selection = state.read(GPU_SELECTION_KEY)
        if selection:
            one_by_one[1].append(selection.get(row, ()))
    assert together == one_by_one


def test_scores_follow_a_change_of_free_memory_alone():
    # a pod without CPU request changes only the node's free memory: FGD's node version stays,
    # the fill scores must still move. Shape: 500 milli, 40 GiB. A 500-share asking 1 GiB on
    # [1000, 1000] with 200 GiB free: slots min(GPU 4, memory 5) = 4 -> 3, F' 0 -> 0: score 50.
    # After a 100 GiB pod: slots min(4, 2) = 2 -> min(3, 2) = 2, F' 1000 -> 500:
    # delta = 0.1 * 500 -> int(100 * sigmoid(0.05)) = 51
    shapes = [TargetShape(4000, 500, 1, (), 1, memory=40 * GIB)]
    snap = build_snapshot([TraceNode("a", 32_000, 200 * GIB, 2, "T4")])
    cached = PolicyFGDFill({"target_workload": shapes})
    share = pod_info(TracePod("s", 4000, GIB, 1, 500), 0)
    assert scores(cached, snap, share)[0] == [50]
    hog = pod_info(TracePod("hog", 0, 100 * GIB, 0, 0), 1)
    snap.add_pod(hog, 0, snap.devices[0].allocate(hog))
    assert scores(cached, snap, share)[0] == [51]
    assert scores(PolicyFGDFill({"target_workload": shapes}), snap, share)[0] == [51]


def test_target_shapes_carry_their_pods_median_memory():
    pods = [TracePod(f"p{i}", 4000, gib * GIB, 1, 500) for i, gib in enumerate([1, 2, 10])]
    pods.append(TracePod("cpu", 2000, 3 * GIB, 0, 0))
    assert [(s.gpu_milli, s.memory) for s in target_workload(pods, 100)] == [(500, 2 * GIB), (0, 3 * GIB)]


@pytest.fixture()
def short_trace(trace_dir: Path, tmp_path: Path) -> tuple[str, str]:
    paths = []
    for name, rows in (("openb_node_list_gpu_node.csv", 30), ("openb_pod_list_default.csv", 300)):
        lines = (trace_dir / name).read_text().splitlines(keepends=True)
        (tmp_path / name).write_text("".join(lines[: rows + 1]))
        paths.append(str(tmp_path / name))
    return paths[0], paths[1]


def test_fgdfill_runs_the_protocol_deterministically(short_trace):
    nodes, pods = short_trace
    spec = RunSpec(nodes, pods, "fgdfill", 42)
    result = run(spec)
    assert policy_label("fgdfill") == result.policy == "09-FGD-Fill"
    assert 0 < result.failed < result.pods            # tuned to 1.3 x the 30 nodes' GPUs
    assert 50.0 < result.allocation[100] <= 100.0
    assert decision_lines(spec, limit=120) == decision_lines(spec, limit=120)
    assert decision_lines(spec, limit=120) != decision_lines(RunSpec(nodes, pods, "fgd", 42), limit=120)


def test_replay_runs_fgdfill_through_the_embedded_cluster(short_trace, tmp_path):
    nodes, pods = short_trace
    lines = Path(pods).read_text().splitlines(keepends=True)
    pods = str(tmp_path / "pods-100.csv")
    Path(pods).write_text("".join(lines[:101]))
    done = run_process([gpusched_executable(), "replay", "--nodes", nodes, "--pods", pods,
                           "--policy", "fgdfill", "--seed", "42", "--out", str(tmp_path / "out")])
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "out" / "pods.csv", newline="") as handle:
        records = list(csv.DictReader(handle))
    assert len(records) == 100 and any(r["start_s"] for r in records)
