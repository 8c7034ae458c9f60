"""The experiment profile on the real Scheduler: plugins per point, GPU choice honoured at
Reserve, GpuClustering's Reserve bookkeeping, NodeOrder ties, and the tie-break plugins."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gpusched.scheduler.framework import CycleState
from gpusched.policies.saturated_first import GpuSaturatedFirst
from gpusched.scheduler.framework import GPU_SELECTION_KEY
from gpusched.policies.fgd_base import PolicyFGD
from gpusched.policies.fragmentation import TargetShape
from gpusched.sim.alibaba import TraceNode, TracePod, pod_info
from gpusched.errors import UsageError
from gpusched.sim.experiment import build_snapshot, parse_policies
from gpusched.sim.experiment_profile import experiment_profile, experiment_scheduler

GIB = 1 << 30
SHAPES = [TargetShape(4000, 500, 1, (), 1), TargetShape(8000, 1000, 1, (), 1)]


def node(name: str, gpus: int = 2, cpu: int = 32_000, model: str = "T4") -> TraceNode:
    return TraceNode(name, cpu, 64 * GIB, gpus, model if gpus else "")


def pod(name: str, milli: int = 1000, gpus: int = 1, cpu: int = 4000) -> TracePod:
    return TracePod(name, cpu, GIB, gpus if milli else 0, milli if gpus else 0)


def scheduler(nodes, policy="PolicyFGD", seed=42, tie_breaks=()):
    snapshot = build_snapshot(nodes)
    return experiment_scheduler(snapshot, policy, {"seed": seed, "target_workload": SHAPES},
                                tie_breaks), snapshot


def test_profile_points_and_weights():
    config = experiment_profile("PolicyGpuClustering", {"seed": 1}, (("GpuSaturatedFirst", 1250),))
    names = {point: [s.name for s in specs] for point, specs in config.points.items()}
    assert names["filter"] == ["NodeResourcesFit", "GpuDevices"]
    assert names["preFilter"] == ["NodeResourcesFit", "GpuDevices"]
    assert names["postFilter"] == [] and names["queueSort"] == []
    assert [(s.name, s.weight) for s in config.points["score"]] == [
        ("PolicyGpuClustering", 10_000), ("GpuSaturatedFirst", 1250), ("NodeOrder", 1)]
    assert names["reserve"] == ["GpuDevices", "PolicyGpuClustering"]
    assert config.percentage_of_nodes_to_score == 100


def test_share_lands_on_the_gpu_fgd_chose():
    # node a: GPU 0 has 600 free, GPU 1 has 700 (shares placed by hand). A 200 share:
    # on GPU 0 -> [400, 700]: shape A (500) leaves the 400 sliver, B (1000) fits nowhere:
    #   F = 0.5*400 + 0.5*1100 = 750;  on GPU 1 -> [600, 500]: A has no sliver, B nowhere:
    #   F = 0.5*0 + 0.5*1100 = 550. FGD takes GPU 1, where best fit (GpuDevices' default)
    # would take GPU 0: the Reserve must honour the policy's "gpu-selection".
    sched, snap = scheduler([node("a")])
    for seq, (milli, gpu) in enumerate([(400, 0), (300, 1)]):
        placed = pod_info(pod(f"by-hand-{seq}", milli), seq)
        snap.add_pod(placed, 0, snap.devices[0].allocate(placed, gpus=(gpu,)))
    result = sched.schedule_one(pod_info(pod("p", 200), 2))
    assert result.node == "a" and result.assignment.gpu_indices == (1,)
    assert snap.gpu_free_milli[0].tolist() == [600, 500]


def test_gpu_clustering_reserve_counts_tags():
    sched, _ = scheduler([node("a"), node("b")], policy="PolicyGpuClustering")
    first = sched.schedule_one(pod_info(pod("p0"), 0))
    plugin = sched.frameworks["default-scheduler"].plugins["PolicyGpuClustering"]
    row = ["a", "b"].index(first.node)
    assert plugin.counts[row].sum() == 1
    # the node holding a 1-gpu pod now scores 75 + packed for the next 1-gpu pod and wins
    assert sched.schedule_one(pod_info(pod("p1"), 1)).node == first.node


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_ties_follow_the_per_seed_node_order(seed):
    nodes = [node(f"n{i}") for i in range(6)]
    sched, _ = scheduler(nodes, seed=seed)
    rank = np.random.default_rng(seed).permutation(len(nodes))
    assert sched.schedule_one(pod_info(pod("p", 0, 0), 0)).node == f"n{int(np.argmin(rank))}"


def test_unschedulable_pod_is_dropped_without_preemption():
    sched, snap = scheduler([node("a", gpus=1)])
    assert sched.schedule_one(pod_info(pod("big", gpus=2), 0)).scheduled is False
    assert snap.gpu_free_milli[0].tolist() == [1000]


@pytest.mark.parametrize("free, expected", [
    ([1000, 1000], 5), ([0, 0], 7), ([300, 0], 6), ([-1, -1], 7),
], ids=["two-idle-gpus", "saturated", "sliver", "cpu-only-node"])
def test_saturated_first_scores(free, expected):
    sched, snap = scheduler([node("a")])
    snap.gpu_free_milli[0] = free
    cpu_pod = pod_info(pod("c", 0, 0), 0)
    assert GpuSaturatedFirst().score(None, cpu_pod, snap, np.array([0])).tolist() == [expected]
    assert GpuSaturatedFirst().score(None, pod_info(pod("g"), 1), snap, np.array([0])).tolist() == [0]


def test_saturated_first_sends_cpu_pods_to_full_nodes():
    sched, snap = scheduler([node(f"n{i}") for i in range(4)], tie_breaks=(("GpuSaturatedFirst", 1250),))
    snap.add_pod(pod_info(pod("w", 1000, 2), 0), 2,
                 snap.devices[2].allocate(pod_info(pod("w", 1000, 2), 0)))
    assert sched.schedule_one(pod_info(pod("c", 0, 0), 1)).node == "n2"


@pytest.mark.parametrize("retired", ["fgdplus", "fgdtight", "fgdfine", "fgdcoarse"])
def test_variants_that_did_not_beat_fgd_are_not_policies(retired):
    # their findings are in docs/fgd-results.md ("Also tried, did not beat FGD"), not in the code
    with pytest.raises(UsageError, match=f'^unknown policy "{retired}" \\(one of random, '):
        parse_policies(retired)


class _State(dict):
    def write(self, key, value):
        self[key] = value


# ---- the per-node, per-shape score cache of PolicyFGD --------------------------------------

POD_SHAPES = [(250, 1, 2000), (500, 1, 4000), (1000, 1, 4000), (1000, 2, 8000), (0, 0, 2000)]


def fgd_scores(plugin: PolicyFGD, snap, placed) -> tuple[list[int], list[tuple[int, ...]]]:
    state = CycleState()
    nodes = snap.all_nodes()
    scores = plugin.score(state, placed, snap, nodes)
    selection = state.read(GPU_SELECTION_KEY)
    gpus = [selection.get(int(n), ()) for n in nodes] if selection is not None else []
    return scores.tolist(), gpus


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(POD_SHAPES) - 1), st.booleans()), min_size=1, max_size=30))
def test_cached_fgd_scores_equal_fresh_ones(steps):
    """Whatever sequence of placements and removals, the cached plugin scores every node exactly
    as a fresh plugin (no cache) does, GPU choice included."""
    snap = build_snapshot([node("a", 4), node("b", 2), node("c", 8, model="V100M16"), node("cpu", 0)])
    cached = PolicyFGD({"target_workload": SHAPES})
    placed_uids: list[str] = []
    for seq, (shape_index, remove) in enumerate(steps):
        milli, gpus, cpu = POD_SHAPES[shape_index]
        candidate = pod_info(pod(f"p{seq}", milli, gpus, cpu), seq)
        assert fgd_scores(cached, snap, candidate) == fgd_scores(
            PolicyFGD({"target_workload": SHAPES}), snap, candidate)
        if remove and placed_uids:
            snap.remove_pod(placed_uids.pop(0))
            continue
        for row in range(snap.num_nodes):
            devices = snap.devices[row]
            assignment = devices.allocate(candidate) if devices is not None else None
            if assignment is not None and int(snap.free[row, 0]) >= cpu:
                snap.add_pod(candidate, row, assignment)
                placed_uids.append(candidate.uid)
                break


def test_snapshot_journal_names_touched_rows_and_resyncs_after_row_shift():
    snap = build_snapshot([node("a"), node("b"), node("c")])
    mark = snap.journal_mark()
    one = pod_info(pod("one", 500), 0)
    snap.add_pod(one, "c", snap.devices[2].allocate(one))
    assert snap.rows_touched_since(mark).tolist() == [2]
    assert snap.rows_touched_since(snap.journal_mark()).tolist() == []
    later = snap.journal_mark()
    snap.remove_node("a")                       # rows shift: every cache must resync
    assert snap.rows_touched_since(later) is None and snap.rows_touched_since(None) is None
