"""DefaultPreemption: eligibility, minimal victims (reprieve), PDBs, the six tie-breaks, the
``preemption: ...`` messages, snapshot restoration, and a property: never a victim of equal or
higher priority."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gpusched.objects.types import LabelSelector, NodeInfo, PodInfo, Taint
from gpusched.scheduler import preemption as pre
from gpusched.scheduler.framework import Code, CycleState, Diagnosis, Rejection
from gpusched.scheduler.plugins import default_preemption, node_resources_fit, node_unschedulable, taint_toleration
from gpusched.scheduler.snapshot import Snapshot

K = 2**31   # MaxInt32 + 1


def make_framework():
    fit = node_resources_fit.new()
    return SimpleNamespace(pre_filter=(fit,),
                           filter=(node_unschedulable.new(), taint_toleration.new(), fit))


_seq = iter(range(10**6))


def make_pod(cpu=1000, prio=0, name=None, start=None, labels=None, **kw) -> PodInfo:
    n = next(_seq)
    name = name or f"p{n}"
    return PodInfo("default", name, f"uid-{name}", {"cpu": cpu}, priority=prio, start_time=start,
                   labels=labels or {}, creation_seq=n, **kw)


def make_snapshot(nodes: dict[str, list[PodInfo]], cpu=4000, tainted=()) -> Snapshot:
    snap = Snapshot()
    for name, pods in nodes.items():
        taints = (Taint("dedicated", "infra", "NoSchedule"),) if name in tainted else ()
        snap.add_node(NodeInfo(name, {"cpu": cpu, "memory": 2**36, "pods": 110}, {}, taints=taints))
        for p in pods:
            snap.add_pod(p, name)
    return snap


def diagnose(snap: Snapshot, pod: PodInfo, framework) -> Diagnosis:
    """What the runner's Filter phase records: plugins in order, narrowing the candidates."""
    state = CycleState()
    for plugin in framework.pre_filter:
        plugin.pre_filter(state, pod, snap)
    diagnosis = Diagnosis(snap.num_nodes)
    candidates = snap.all_nodes()
    for plugin in framework.filter:
        rejected = np.zeros(snap.num_nodes, dtype=bool)
        for r in plugin.filter(state, pod, snap, candidates):
            diagnosis.rejections.append(r)
            rejected |= r.nodes
        candidates = candidates[~rejected[candidates]]
    assert len(candidates) == 0, "test setup: the pod must fit nowhere"
    return diagnosis


def run_preemption(snap: Snapshot, pod: PodInfo, pdbs=(), rng=None):
    framework = make_framework()
    diagnosis = diagnose(snap, pod, framework)
    before = (snap.requested.copy(), dict(snap.pod_node))
    result = pre.preempt(snap, pod, diagnosis, pre.framework_fit_check(framework, snap), pdbs, rng)
    assert np.array_equal(snap.requested, before[0]) and snap.pod_node == before[1], "snapshot restored"
    return result


def names(pods) -> list[str]:
    return [p.name for p in pods]


# ---- victims on one node -----------------------------------------------------------------------

VICTIM_CASES = [
    # free 1000; removing both frees 4000; reprieve b (prio 2) -> 2000 free, fits; a cannot come back
    ("minimal-victims-reprieve-most-important",
     {"n1": [make_pod(1000, 1, "a"), make_pod(2000, 2, "b")]}, make_pod(2000, 10), ["a"]),
    ("all-lower-needed", {"n1": [make_pod(2000, 1, "a"), make_pod(2000, 2, "b")]}, make_pod(4000, 10), ["b", "a"]),
    ("equal-priority-is-not-a-victim",
     {"n1": [make_pod(2000, 10, "peer"), make_pod(2000, 1, "low")]}, make_pod(2000, 10), ["low"]),
    ("earlier-start-reprieved-first",
     {"n1": [make_pod(2000, 1, "late", start=200.0), make_pod(2000, 1, "early", start=100.0)]},
     make_pod(2000, 10), ["late"]),
    ("not-started-counts-as-latest",
     {"n1": [make_pod(2000, 1, "pending"), make_pod(2000, 1, "running", start=5.0)]},
     make_pod(2000, 10), ["pending"]),
]


@pytest.mark.parametrize("nodes,pod,victims", [c[1:] for c in VICTIM_CASES], ids=[c[0] for c in VICTIM_CASES])
def test_victims(nodes, pod, victims):
    result = run_preemption(make_snapshot(nodes), pod)
    assert result.status.ok and result.nominated_node == "n1"
    assert names(result.victims) == victims


# ---- PDBs ------------------------------------------------------------------------------------------

DB = LabelSelector(match_labels=(("app", "db"),))


def test_pdb_violating_pod_is_reprieved_first():
    # "b" is more important (earlier start) but "a" is protected by a PDB with 0 disruptions
    # allowed, so "a" is reprieved first and "b" becomes the victim.
    nodes = {"n1": [make_pod(2000, 1, "a", start=100.0, labels={"app": "db"}), make_pod(2000, 1, "b", start=50.0)]}
    pdb = pre.PdbInfo("default", DB, 0, "db-pdb")
    assert names(run_preemption(make_snapshot(nodes), make_pod(2000, 10), [pdb]).victims) == ["b"]
    assert names(run_preemption(make_snapshot(nodes), make_pod(2000, 10)).victims) == ["a"]


def test_node_with_fewer_pdb_violations_preferred():
    nodes = {"n1": [make_pod(4000, 1, "guarded", labels={"app": "db"})], "n2": [make_pod(4000, 5, "free")]}
    pdb = pre.PdbInfo("default", DB, 0)
    result = run_preemption(make_snapshot(nodes), make_pod(4000, 10), [pdb])
    assert (result.nominated_node, names(result.victims)) == ("n2", ["free"])


@pytest.mark.parametrize("allowed,violating", [(0, ["x", "y"]), (1, ["y"]), (2, [])],
                         ids=["none-allowed", "one-allowed", "two-allowed"])
def test_split_by_pdb(allowed, violating):
    pods = [make_pod(name="x", labels={"app": "db"}), make_pod(name="y", labels={"app": "db"}), make_pod(name="z")]
    bad, ok = pre.split_by_pdb(pods, [pre.PdbInfo("default", DB, allowed)])
    assert names(bad) == violating
    assert names(ok) == [n for n in ("x", "y", "z") if n not in violating]


def test_empty_pdb_selector_covers_nothing():
    bad, ok = pre.split_by_pdb([make_pod()], [pre.PdbInfo("default", LabelSelector(), 0)])
    assert (bad, len(ok)) == ([], 1)


# ---- the six tie-breaks, each isolated ------------------------------------------------------------

def cand(node, prios, starts=None, violations=0):
    starts = starts or [None] * len(prios)
    victims = tuple(sorted((make_pod(prio=p, start=s) for p, s in zip(prios, starts)), key=pre.importance_key))
    return pre.Candidate(node, f"n{node}", victims, violations)


TIE_BREAKS = [
    ("1-fewest-pdb-violations", [cand(0, [1], violations=1), cand(1, [9])], 1),
    ("2-lowest-highest-priority", [cand(0, [5, 1]), cand(1, [3, 3, 3])], 1),
    ("3-smallest-priority-sum", [cand(0, [3, 3]), cand(1, [3, 1])], 1),
    # equal highest (10^9) and equal shifted sums: 10^9 + K == 10^9 + (-K) + 2K
    ("4-fewest-victims", [cand(0, [10**9, -K]), cand(1, [10**9])], 1),
    ("5-latest-start-of-top-victims", [cand(0, [5], [100.0]), cand(1, [5], [200.0])], 1),
    ("5-not-started-is-latest", [cand(0, [5], [100.0]), cand(1, [5], [None])], 1),
    ("6-first-in-node-order", [cand(1, [5], [100.0]), cand(0, [5], [100.0])], 0),
    ("no-victims-wins-outright", [cand(0, [1]), pre.Candidate(1, "n1", (), 0)], 1),
]


@pytest.mark.parametrize("candidates,winner", [c[1:] for c in TIE_BREAKS], ids=[c[0] for c in TIE_BREAKS])
def test_pick_one_node(candidates, winner):
    assert pre.pick_one_node(candidates).node == winner


def test_tie_break_on_a_real_cluster_prefers_lower_victims():
    nodes = {"n1": [make_pod(4000, 5, "mid")], "n2": [make_pod(4000, 3, "low")]}
    result = run_preemption(make_snapshot(nodes), make_pod(4000, 10))
    assert (result.nominated_node, names(result.victims)) == ("n2", ["low"])


# ---- eligibility and messages ---------------------------------------------------------------------

MESSAGE_CASES = [
    ("policy-never", {"n1": [make_pod(4000, 1)]}, make_pod(4000, 10, preemption_policy="Never"), (),
     "preemption: not eligible due to preemptionPolicy=Never."),
    ("terminating-victim-on-nominated-node",
     {"n1": [make_pod(4000, 1, terminating=True, disruption_reason=pre.PREEMPTION_BY_SCHEDULER)]},
     make_pod(4000, 10, nominated_node="n1"), (),
     "preemption: not eligible due to a terminating pod on the nominated node."),
    ("no-lower-priority-pods", {"n1": [make_pod(4000, 10)]}, make_pod(4000, 10), (),
     "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."),
    ("still-insufficient", {"n1": [make_pod(1000, 1), make_pod(3000, 20)]}, make_pod(2000, 10), (),
     "preemption: 0/1 nodes are available: 1 Insufficient cpu."),
    ("mixed-histogram",
     {"n1": [make_pod(4000, 1)], "n2": [make_pod(4000, 10)], "n3": [make_pod(1000, 1), make_pod(3000, 20)]},
     make_pod(2000, 10), ("n1",),
     "preemption: 0/3 nodes are available: 1 Insufficient cpu, 1 No preemption victims found for incoming pod, "
     "1 Preemption is not helpful for scheduling."),
]


@pytest.mark.parametrize("nodes,pod,tainted,message", [c[1:] for c in MESSAGE_CASES], ids=[c[0] for c in MESSAGE_CASES])
def test_messages(nodes, pod, tainted, message):
    result = run_preemption(make_snapshot(nodes, tainted=tainted), pod)
    assert result.status.code == Code.UNSCHEDULABLE and not result.victims
    assert result.status.reasons == (message,)


def test_terminating_pod_not_by_preemption_does_not_block():
    nodes = {"n1": [make_pod(4000, 1, terminating=True)]}
    result = run_preemption(make_snapshot(nodes), make_pod(4000, 10, nominated_node="n1"))
    assert result.status.ok and result.nominated_node == "n1"


def test_num_candidates_window():
    assert [pre.num_candidates(n) for n in (5, 100, 500, 2000)] == [5, 100, 100, 200]


def test_plugin_reads_handle_and_pdbs():
    snap = make_snapshot({"n1": [make_pod(4000, 1, "guarded", labels={"app": "db"})], "n2": [make_pod(4000, 5, "x")]})
    pod = make_pod(4000, 10)
    framework = make_framework()
    plugin = default_preemption.new({"pdbs": [pre.PdbInfo("default", DB, 0)]})
    state = CycleState()
    assert plugin.post_filter(state, pod, snap, diagnose(snap, pod, framework)).status.code == Code.ERROR
    state.write(pre.HANDLE_KEY, pre.FrameworkHandle(framework, np.random.default_rng(0)))
    assert plugin.post_filter(state, pod, snap, diagnose(snap, pod, framework)).nominated_node == "n2"
    plugin.set_pdbs([])
    assert plugin.post_filter(state, pod, snap, diagnose(snap, pod, framework)).nominated_node == "n1"


def test_nominated_pods_occupy_their_node_for_lower_or_equal_priority():
    snap = make_snapshot({"n1": []})
    nominee = make_pod(3000, 10, nominated_node="n1")
    for prio, expected in ((5, 3000), (10, 3000), (20, 0)):
        with pre.nominated_pods_added(snap, make_pod(1000, prio), [nominee]):
            assert snap.requested[0, snap.resources["cpu"]] == expected
    assert snap.requested[0, snap.resources["cpu"]] == 0


# ---- property ------------------------------------------------------------------------------------

pods_strategy = st.lists(st.tuples(st.integers(1, 4), st.integers(0, 3), st.sampled_from([500, 1000, 2000])),
                         min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(placed=pods_strategy, prio=st.integers(0, 3), cpu=st.sampled_from([1000, 2000, 4000]))
def test_never_evicts_equal_or_higher_priority(placed, prio, cpu):
    nodes: dict[str, list[PodInfo]] = {f"n{i}": [] for i in range(1, 5)}
    used = {name: 0 for name in nodes}
    for node, p, c in placed:
        name = f"n{node}"
        if used[name] + c <= 4000:
            nodes[name].append(make_pod(c, p))
            used[name] += c
    if any(4000 - u >= cpu for u in used.values()):
        return   # the pod fits somewhere: no PostFilter
    snap = make_snapshot(nodes)
    pod = make_pod(cpu, prio)
    result = run_preemption(snap, pod)
    assert all(v.priority < pod.priority for v in result.victims)
    if result.status.ok:
        node = snap.index[result.nominated_node]
        assert used[result.nominated_node] - sum(v.requests["cpu"] for v in result.victims) + cpu <= 4000
        assert {v.uid for v in result.victims} <= {p.uid for p in snap.pods_on(node)}
