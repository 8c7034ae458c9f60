"""Preemption's shortcuts (``prejudge`` + ``FrameworkFitCheck.precheck``, the resource test in
the reprieve, the pod-blind filters skipped in what-ifs) change nothing but speed: on random GPU
clusters the dry run with them gives the same candidates, victims, per-node reasons, stop point
and ``preemption: ...`` message as the plain node-by-node dry run; and the snapshot's per-priority requests follow adds and removes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gpusched.scheduler import preemption as pre
from gpusched.scheduler.framework import Code, CycleState
from tests.scheduler.builders import make_node, make_pod, scheduler_of, taint, toleration

TEAM = taint("dedicated", "infra")


def plain(fits: pre.FrameworkFitCheck):
    """The reference FitCheck: no pre-check, no shortcut in the reprieve, every Filter plugin
    (none skipped) after a fresh PreFilter, stopping at the first that rejects the node."""
    framework, snapshot = fits.framework, fits.snapshot

    def check(pod, node):
        state, skipped = CycleState(), set()
        for plugin in framework.pre_filter:
            status = plugin.pre_filter(state, pod, snapshot)
            if status.code == Code.SKIP:
                skipped.add(plugin.name)
            elif not status.ok:
                return status.reasons
        for plugin in framework.filter:
            if plugin.name not in skipped:
                found = plugin.filter(state, pod, snapshot, np.array([node]))
                reasons = tuple(dict.fromkeys(r.reason for r in found if r.nodes[node]))
                if reasons:
                    return reasons
        return ()
    return check


def both_ways(scheduler, pod, seed: int = 3):
    """(with pre-check, plain): PostFilterResult and DryRun of each, on the same snapshot."""
    framework = scheduler.framework_for(pod)
    outcome = scheduler.run_filters(None, pod, None, True, framework)
    assert not len(outcome.feasible), "test setup: the pod must fit nowhere"
    snap = scheduler.snapshot
    fits = pre.framework_fit_check(framework, snap)
    assert fits.precheck is not None, "the default profile allows the pre-check"
    potential = np.flatnonzero(~pre.unresolvable_nodes(outcome.diagnosis))
    runs = []
    for check in (fits, plain(fits)):
        before = (snap.requested.copy(), dict(snap.pod_node), snap.gpu_free_milli.copy())
        dry = pre.dry_run(snap, pod, potential, check, (), np.random.default_rng(seed))
        result = pre.preempt(snap, pod, outcome.diagnosis, check, (), np.random.default_rng(seed))
        after = (snap.requested, snap.pod_node, snap.gpu_free_milli)
        assert np.array_equal(before[0], after[0]) and before[1] == after[1]
        assert np.array_equal(before[2], after[2]), "snapshot restored"
        runs.append((result, dry))
    return runs


def assert_same(runs):
    (fast, fast_dry), (slow, slow_dry) = runs
    assert fast.status == slow.status
    assert fast.nominated_node == slow.nominated_node
    assert [v.uid for v in fast.victims] == [v.uid for v in slow.victims]
    assert fast_dry.failures == slow_dry.failures
    assert fast_dry.evaluated.tolist() == slow_dry.evaluated.tolist()
    assert [c.node for c in fast_dry.candidates] == [c.node for c in slow_dry.candidates]


# ---- property: random clusters --------------------------------------------------------------------

NODE_KINDS = [dict(gpus=0), dict(gpus=2, model="T4"), dict(gpus=4, model="V100-16GB"),
              dict(gpus=2, model="T4", replicas=2), dict(gpus=8)]
POD_KINDS = [dict(), dict(gpus=1), dict(gpus=2), dict(gpus=4), dict(gpu_milli=500),
             dict(extra={"nvidia.com/gpu": 1})]

node_strategy = st.tuples(st.integers(0, len(NODE_KINDS) - 1), st.booleans(), st.sampled_from([2, 4, 8]))
pod_strategy = st.tuples(st.integers(0, len(POD_KINDS) - 1), st.integers(0, 3),
                         st.sampled_from([1, 2, 3]), st.booleans())


def random_cluster(nodes, pods):
    built = [make_node(f"n{i}", cpu=str(cpu), pods=4, taints=(TEAM,) if tainted else (),
                       **NODE_KINDS[kind]) for i, (kind, tainted, cpu) in enumerate(nodes)]
    scheduler = scheduler_of(*built)
    for j, (kind, prio, cpu, tolerates) in enumerate(pods):
        pod = make_pod(f"p{j}", cpu=str(cpu), priority=prio,
                       tolerations=(toleration("dedicated", "Exists"),) if tolerates else (),
                       **POD_KINDS[kind])
        scheduler.schedule_one(pod)          # placed where the real profile puts it, or not at all
    return scheduler


@settings(max_examples=150, deadline=None)
@given(nodes=st.lists(node_strategy, min_size=1, max_size=8),
       pods=st.lists(pod_strategy, min_size=0, max_size=30),
       pending=pod_strategy)
def test_precheck_matches_plain_dry_run(nodes, pods, pending):
    scheduler = random_cluster(nodes, pods)
    kind, prio, cpu, tolerates = pending
    pod = make_pod("pending", cpu=str(cpu * 2), priority=prio + 1,
                   tolerations=(toleration("dedicated", "Exists"),) if tolerates else (), **POD_KINDS[kind])
    outcome = scheduler.run_filters(None, pod)
    if len(outcome.feasible):
        return
    assert_same(both_ways(scheduler, pod))


# ---- a window larger than the node count cap: the stop point must agree -------------------------

def test_window_stop_point_agrees_on_a_large_cluster():
    nodes = [make_node(f"n{i:03d}", cpu="4", pods=110) for i in range(300)]
    scheduler = scheduler_of(*nodes)
    for i in range(300):
        # every third node holds a high-priority pod (pre-check rejects), the others a low one
        scheduler.schedule_one(make_pod(f"fill-{i:03d}", cpu="4", priority=50 if i % 3 == 0 else 1,
                                        node_name=f"n{i:03d}"))
    pod = make_pod("big", cpu="4", priority=10)
    fast, slow = both_ways(scheduler, pod, seed=7)
    assert_same((fast, slow))
    assert fast[0].status.ok and len(fast[1].candidates) == 100
    assert len(fast[1].evaluated) < 300, "the dry run stopped early"


@pytest.mark.parametrize("prio,expected", [(0, "1 No preemption victims found for incoming pod"),
                                           (10, "1 Insufficient nvidia.com/gpu")],
                         ids=["no-lower-pods", "still-short-after-removal"])
def test_precheck_reasons_in_the_message(prio, expected):
    scheduler = scheduler_of(make_node("n1", gpus=2, model="T4"))
    scheduler.schedule_one(make_pod("low", gpus=1, priority=0))
    scheduler.schedule_one(make_pod("high", gpus=1, priority=20))
    result = scheduler.schedule_one(make_pod("want2", gpus=2, priority=prio))
    assert result.message.endswith(f"preemption: 0/1 nodes are available: {expected}.")


# ---- the snapshot's per-priority requests -----------------------------------------------------------

def test_requested_below_follows_adds_and_removes():
    scheduler = scheduler_of(make_node("a", cpu="8"), make_node("b", cpu="8"))
    snap = scheduler.snapshot
    cpu = snap.resources["cpu"]
    low, mid = make_pod("low", cpu="1", priority=1), make_pod("mid", cpu="2", priority=5)
    snap.add_pod(low, "a")
    snap.add_pod(mid, "a")
    rows = snap.all_nodes()
    assert snap.priority_levels() == [1, 5]
    assert snap.requested_below(5, rows)[:, cpu].tolist() == [1000, 0]
    assert snap.requested_below(6, rows)[:, cpu].tolist() == [3000, 0]
    assert snap.requested_below(1, rows)[:, cpu].tolist() == [0, 0]
    snap.remove_pod(low.uid)
    assert snap.priority_levels() == [5] and snap.requested_below(6, rows)[:, cpu].tolist() == [2000, 0]
    snap.remove_node("a")
    assert snap.priority_levels() == []


def test_removed_node_row_is_clean_for_the_next_node():
    scheduler = scheduler_of(make_node("a", cpu="8"), make_node("b", cpu="8"))
    snap = scheduler.snapshot
    snap.add_pod(make_pod("on-b", cpu="3", priority=2), "b")
    snap.remove_node("b")
    snap.add_node(make_node("c", cpu="8")[0])
    row = snap.index["c"]
    assert snap.requested[row].sum() == 0 and snap.free[row, snap.resources["cpu"]] == 8000
    assert snap.min_pod_priority[row] == np.iinfo(np.int64).max
