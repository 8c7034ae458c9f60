"""explain: per-node reasons (all plugins), scores of feasible nodes, and checked suggestions;
plus DefaultPreemption end to end through the runner."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from gpusched.objects.types import NodeInfo, PodInfo, Taint
from gpusched.scheduler import explain as ex
from gpusched.scheduler.runner import Scheduler
from gpusched.scheduler.snapshot import Snapshot
from tests.scheduler import builders, test_preemption_precheck as precheck

TAINT = Taint("dedicated", "gpu", "NoSchedule")


def make_pod(name, cpu=1000, prio=0, gpus=0, **kw) -> PodInfo:
    requests = {"cpu": cpu, **({"nvidia.com/gpu": gpus} if gpus else {})}
    return PodInfo("default", name, f"uid-{name}", requests, priority=prio, **kw)


def make_scheduler(placed=(), gpus=0) -> Scheduler:
    snap = Snapshot()
    extra = {"nvidia.com/gpu": gpus} if gpus else {}
    snap.add_node(NodeInfo("tainted", {"cpu": 4000, "memory": 2**34, **extra}, {}, taints=(TAINT,)))
    snap.add_node(NodeInfo("zone-a", {"cpu": 4000, "memory": 2**34, **extra}, {}, labels={"zone": "a"}))
    for pod, node in placed:
        snap.add_pod(pod, node)
    return Scheduler(snap)


def kinds(expl: ex.Explanation) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    return {s.kind: (s.nodes, s.pods) for s in expl.suggestions}


CASES = [
    ("selector-key-dropped", [], make_pod("p", 1000, node_selector={"zone": "b"}),
     {"node-selector": (("zone-a",), ())}),
    ("toleration-suggested", [(make_pod("big", 4000, 20), "zone-a")], make_pod("p", 1000, 10),
     {"toleration": (("tainted",), ()), "finishing": (("zone-a",), ("default/big",))}),
    ("preemption-and-finishing", [(make_pod("low", 3000, 1, start_time=5.0), "zone-a")],
     make_pod("p", 2000, 10, node_selector={"zone": "a"}),
     {"preemption": (("zone-a",), ("default/low",)), "finishing": (("zone-a",), ("default/low",))}),
    ("equal-priority-only-finishing", [(make_pod("peer", 3000, 10), "zone-a")],
     make_pod("p", 2000, 10, node_selector={"zone": "a"}),
     {"finishing": (("zone-a",), ("default/peer",))}),
]


@pytest.mark.parametrize("placed,pod,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_suggestions(placed, pod, expected):
    expl = ex.explain(make_scheduler(placed), pod)
    assert expl.feasible == ()
    assert kinds(expl) == expected


def test_fewer_gpus_is_the_largest_count_that_fits():
    sched = make_scheduler([(make_pod("g", 0, 20, gpus=5), "zone-a")], gpus=8)
    expl = ex.explain(sched, make_pod("p", 0, 20, gpus=6, node_selector={"zone": "a"}))
    found = [s for s in expl.suggestions if s.kind == "fewer-gpus"]
    assert [s.change for s in found] == ["ask for 3 nvidia.com/gpu instead of 6"]


def test_all_plugins_reported_per_node_and_message():
    sched = make_scheduler([(make_pod("big", 4000, 20), "zone-a")])
    expl = ex.explain(sched, make_pod("p", 5000, 10, node_selector={"zone": "a"}))
    by_node = {v.node: v.reasons for v in expl.nodes}
    assert set(by_node["tainted"]) == {
        ("TaintToleration", "node(s) had untolerated taint(s)"),
        ("NodeAffinity", "node(s) didn't match Pod's node affinity/selector"),
        ("NodeResourcesFit", "Insufficient cpu")}
    assert by_node["zone-a"] == (("NodeResourcesFit", "Insufficient cpu"),)
    assert expl.message.startswith("0/2 nodes are available: ")
    table = ex.render_table(expl)
    assert table.splitlines()[0].split() == ["NODE", "RESULT", "REASONS/SCORE"]
    assert "zone-a   rejected  NodeResourcesFit: Insufficient cpu" in table.splitlines()


def test_feasible_nodes_have_scores_and_json():
    expl = ex.explain(make_scheduler(), make_pod("p", 1000))
    assert expl.feasible == ("zone-a",) and expl.message == "" and expl.suggestions == ()
    zone_a = next(v for v in expl.nodes if v.node == "zone-a")
    assert zone_a.total == sum(s for _, s in zone_a.scores) and zone_a.scores
    data = ex.to_json(expl)
    assert data["feasible"] == ["zone-a"] and data["nodes"][1]["total"] == zone_a.total
    assert "fits" in ex.render_table(expl)


def test_explain_leaves_the_snapshot_unchanged():
    sched = make_scheduler([(make_pod("low", 3000, 1), "zone-a")])
    before = (sched.snapshot.requested.copy(), dict(sched.snapshot.pod_node), sched.snapshot.pods_on(1))
    ex.explain(sched, make_pod("p", 2000, 10))
    assert (sched.snapshot.requested == before[0]).all() and sched.snapshot.pod_node == before[1]
    assert sched.snapshot.pods_on(1) == before[2]


# ---- preemption through the runner ---------------------------------------------------------------

RUNNER_CASES = [
    ("high-priority-preempts-low", make_pod("p", 2000, 10), "zone-a", ("default/low",),
     "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s)."),
    ("never-does-not-preempt", make_pod("p", 2000, 10, preemption_policy="Never"), "", (),
     "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s). "
     "no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."),
    ("equal-priority-no-victims", make_pod("p", 2000, 1), "", (),
     "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s). "
     "no new claims to deallocate, preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
     "1 Preemption is not helpful for scheduling."),
]


@pytest.mark.parametrize("pod,nominated,victims,message", [c[1:] for c in RUNNER_CASES],
                         ids=[c[0] for c in RUNNER_CASES])
def test_preemption_through_runner(pod, nominated, victims, message):
    sched = make_scheduler([(make_pod("low", 3000, 1, start_time=5.0), "zone-a")])
    result = sched.schedule_one(pod)
    assert not result.scheduled
    assert (result.nominated_node, tuple(v.key for v in result.victims)) == (nominated, victims)
    assert result.message == message


# ---- explain's message is the one schedule_one writes ------------------------------------------

def _state(sched):
    snap = sched.snapshot
    return (snap.requested.tolist(), dict(snap.pod_node), snap.gpu_free_milli.tolist(),
            sched.rng.bit_generator.state, dict(sched.nominated), sched.next_start_node_index)


def _assert_explain_message_is_schedule_ones(sched, pod):
    sched.snapshot.request_vector(pod)    # registers the pod's resource columns (not a state change)
    before = _state(sched)
    message = ex.explain(sched, pod).message
    assert _state(sched) == before, "explain changed nothing"
    result = sched.schedule_one(pod)
    assert message == ("" if result.scheduled else result.message)
    return message


@pytest.mark.parametrize("pod,nominated,victims,message", [c[1:] for c in RUNNER_CASES],
                         ids=[c[0] for c in RUNNER_CASES])
def test_explain_message_equals_failed_scheduling(pod, nominated, victims, message):
    sched = make_scheduler([(make_pod("low", 3000, 1, start_time=5.0), "zone-a")])
    assert _assert_explain_message_is_schedule_ones(sched, pod) == message


def test_explain_message_with_a_nominated_pod_counted():
    sched = make_scheduler()
    sched.set_nominated(make_pod("nominee", 4000, 10), "zone-a")
    message = _assert_explain_message_is_schedule_ones(sched, make_pod("p", 1000, 5))
    assert message == ("0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated "
                       "taint(s). no new claims to deallocate, preemption: 0/2 nodes are available: 1 No preemption victims "
                       "found for incoming pod, 1 Preemption is not helpful for scheduling.")


def test_explain_of_a_pod_that_fits_has_no_message():
    assert _assert_explain_message_is_schedule_ones(make_scheduler(), make_pod("p", 1000)) == ""


def test_explain_on_a_large_cluster_draws_no_random_number():
    snap = Snapshot()
    for i in range(150):          # > 100 nodes: the dry run draws its window offset
        snap.add_node(NodeInfo(f"n{i:03d}", {"cpu": 4000, "memory": 2**34}, {}))
        snap.add_pod(make_pod(f"low-{i:03d}", 4000, 1 + i % 3), f"n{i:03d}")
    sched = Scheduler(snap)
    pod = make_pod("p", 2000, 10)
    before = sched.rng.bit_generator.state
    expl = ex.explain(sched, pod)
    assert sched.rng.bit_generator.state == before
    result = sched.schedule_one(pod)
    assert expl.message == result.message and result.nominated_node
    assert kinds(expl)["preemption"] == ((result.nominated_node,), tuple(v.key for v in result.victims))


@settings(max_examples=40, deadline=None)
@given(nodes=st.lists(precheck.node_strategy, min_size=1, max_size=6),
       pods=st.lists(precheck.pod_strategy, max_size=20), pending=precheck.pod_strategy)
def test_explain_message_equals_schedule_one_on_random_clusters(nodes, pods, pending):
    sched = precheck.random_cluster(nodes, pods)
    kind, prio, cpu, _ = pending
    pod = builders.make_pod("pending", cpu=str(cpu * 2), priority=prio + 1, **precheck.POD_KINDS[kind])
    _assert_explain_message_is_schedule_ones(sched, pod)


# render_table's layout, one case per branch: widths follow the longest NODE and RESULT cells.
FITS = ex.NodeVerdict("gpu-node-1", True, (), (("NodeResourcesFit", 40), ("TaintToleration", 60)), 100)
FITS_UNSCORED = ex.NodeVerdict("n2", True, total=0)
REJECTED = ex.NodeVerdict("n3", False, (("TaintToleration", "node(s) had untolerated taint(s)"),
                                         ("", "no plugin")))
SUGGESTION = ex.Suggestion("preemption", "preemption would evict 1 lower-priority pod(s)",
                           ("gpu-node-1",), ("default/low",))
SUGGESTION_NOWHERE = ex.Suggestion("fewer-gpus", "ask for 2 GPUs")
TABLE = ["NODE        RESULT    REASONS/SCORE",
         "gpu-node-1  fits      score 100 (NodeResourcesFit 40, TaintToleration 60)",
         "n2          fits      score 0",
         "n3          rejected  TaintToleration: node(s) had untolerated taint(s); no plugin"]
RENDER_CASES = [
    ("fits-only", ex.Explanation("default/p", "", (FITS, FITS_UNSCORED)),
     ["NODE        RESULT  REASONS/SCORE",
      "gpu-node-1  fits    score 100 (NodeResourcesFit 40, TaintToleration 60)",
      "n2          fits    score 0"]),
    ("rejected-no-suggestion", ex.Explanation("default/p", "0/1 nodes are available.", (REJECTED,)),
     ["NODE  RESULT    REASONS/SCORE",
      "n3    rejected  TaintToleration: node(s) had untolerated taint(s); no plugin", "",
      "0/1 nodes are available.", "", "No single change found that lets it run now."]),
    ("suggestions-with-and-without-nodes",
     ex.Explanation("default/p", "m", (FITS, FITS_UNSCORED, REJECTED), (SUGGESTION, SUGGESTION_NOWHERE)),
     TABLE + ["", "m", "", "Smallest changes that would let it run now:",
              "  - preemption would evict 1 lower-priority pod(s) (default/low) -> fits on gpu-node-1",
              "  - ask for 2 GPUs"]),
    ("facts-first", ex.Explanation("default/p", "", (FITS_UNSCORED,), facts=(ex.Fact("running", "It runs."),)),
     ["It runs.", "", "NODE  RESULT  REASONS/SCORE", "n2    fits    score 0"]),
    ("workload-without-pending-pod",
     ex.Explanation("", "", (), facts=(ex.Fact("running", "All run."),), workload="deployment/web"),
     ["All run.", "", "deployment/web has no Pending pod to explain."]),
    ("workload-oldest-pending-pod", ex.Explanation("default/p", "", (FITS_UNSCORED,), workload="deployment/web"),
     ["", "Its oldest Pending pod, default/p:", "", "NODE  RESULT  REASONS/SCORE", "n2    fits    score 0"]),
]


@pytest.mark.parametrize("expl,lines", [c[1:] for c in RENDER_CASES], ids=[c[0] for c in RENDER_CASES])
def test_render_table_layout(expl, lines):
    assert ex.render_table(expl).split("\n") == lines
