"""The scheduling cycle end to end on small clusters."""

import numpy as np
import pytest

from gpusched.scheduler.framework import Code, CycleState
from gpusched.scheduler.profile import parse_config
from gpusched.scheduler.plugins import REGISTRY
from gpusched.objects.types import NodeSelectorTerm
from tests.scheduler.builders import (make_node, make_pod, req, scheduler_of, taint, term,
                                      toleration)

NO_PREEMPTION = parse_config({"profiles": [{"plugins": {"postFilter": {"disabled": [{"name": "*"}]}}}]})


def test_time_sliced_gpus_take_eight_pods_and_the_ninth_waits():
    sched = scheduler_of(make_node("ts", gpus=2, replicas=4), profiles=NO_PREEMPTION)
    results = [sched.schedule_one(make_pod(gpus=1, cpu="100m")) for _ in range(9)]
    assert [r.node for r in results[:8]] == ["ts"] * 8
    held = [r.assignment.device_ids[0] for r in results[:8]]
    assert len(set(held)) == 8
    assert not results[8].scheduled
    assert results[8].message == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    assert results[8].status.code == Code.UNSCHEDULABLE


@pytest.mark.skipif("DefaultPreemption" not in REGISTRY, reason="preemption plugin not registered")
def test_ninth_time_sliced_pod_with_preemption_message():
    sched = scheduler_of(make_node("ts", gpus=2, replicas=4))
    for _ in range(8):
        assert sched.schedule_one(make_pod(gpus=1)).scheduled
    result = sched.schedule_one(make_pod(gpus=1))
    assert result.message.startswith("0/1 nodes are available: 1 Insufficient nvidia.com/gpu. no new claims to deallocate, preemption: ")


def test_mixed_reasons_message():
    sched = scheduler_of(make_node("small", gpus=1), make_node("tainted", gpus=8, taints=(taint("dedicated", "gpu"),)),
                         make_node("v100", gpus=8, model="V100-16GB", labels={"gpu": "v100"}),
                         make_node("cordoned", gpus=8, unschedulable=True), profiles=NO_PREEMPTION)
    pod = make_pod(gpus=2, node_selector={"kubernetes.io/hostname": "small"}, )
    result = sched.schedule_one(pod)
    assert result.message == ("0/4 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) didn't match "
                              "Pod's node affinity/selector, 1 node(s) had untolerated taint(s), "
                              "1 node(s) were unschedulable.")


def test_flexible_pod_prefers_a100_then_falls_back_to_v100():
    a100_first = (req("gpu", "In", "a100"),)
    from gpusched.objects.types import PreferredTerm, NodeSelectorTerm
    pods = [make_pod(gpus=4, preferred_terms=(PreferredTerm(100, NodeSelectorTerm(a100_first)),)) for _ in range(3)]
    sched = scheduler_of(make_node("a", gpus=8, labels={"gpu": "a100"}),
                         make_node("v", gpus=8, model="V100-16GB", labels={"gpu": "v100"}), profiles=NO_PREEMPTION)
    assert [sched.schedule_one(p).node for p in pods] == ["a", "a", "v"]


def test_scheduled_pod_is_assumed_into_the_snapshot():
    sched = scheduler_of(make_node("n", gpus=2, cpu="4"))
    pod = make_pod(gpus=1, cpu="1")
    result = sched.schedule_one(pod)
    snap = sched.snapshot
    assert snap.node_of(pod.uid) == "n" and snap.assignments[pod.uid] == result.assignment
    assert snap.requested[0, snap.resources["cpu"]] == 1000
    assert sorted(snap.gpu_free_milli[0].tolist()) == [0, 1000]


def test_ties_broken_by_seeded_rng_repeat_per_seed():
    nodes = [make_node(f"n{i}") for i in range(6)]

    def pick(seed):
        return scheduler_of(*nodes, seed=seed).schedule_one(make_pod(cpu="1", name="p")).node

    assert all(pick(seed) == pick(seed) for seed in range(5))
    assert len({pick(seed) for seed in range(10)}) > 1     # all six tie: the rng decides


def test_nominated_node_is_tried_first():
    sched = scheduler_of(make_node("big", cpu="64"), make_node("small", cpu="8"))
    assert sched.schedule_one(make_pod(cpu="1", nominated_node="small")).node == "small"


def test_prefilter_rejection_gives_prefilter_message():
    class Refuse:
        name = "Refuse"

        def pre_filter(self, state, pod, snapshot):
            from gpusched.scheduler.framework import Status
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("pod has unbound immediate PersistentVolumeClaims",))

    sched = scheduler_of(make_node("a"), make_node("b"))
    framework = sched.frameworks["default-scheduler"]
    framework.pre_filter = (Refuse(),) + framework.pre_filter
    result = sched.schedule_one(make_pod())
    # schedule_one.go: PostFilter runs after the PreFilter's FitError too; every node carries the
    # UnschedulableAndUnresolvable PreFilter status, so preemption finds none helpful
    assert result.message == ("0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. "
                              "no new claims to deallocate, preemption: 0/2 nodes are available: "
                              "2 Preemption is not helpful for scheduling.")


def test_unknown_scheduler_name_is_an_error_result():
    result = scheduler_of(make_node("a")).schedule_one(make_pod(scheduler_name="other"))
    assert result.status.code == Code.ERROR
    assert result.message == 'profile not found for scheduler name "other"'


def test_run_filters_all_plugins_mode_reports_every_reason():
    sched = scheduler_of(make_node("a", cpu="1", taints=(taint("k", "v"),)), make_node("b"))
    pod = make_pod(cpu="2")
    upstream = sched.run_filters(None, pod)
    everything = sched.run_filters(None, pod, stop_at_first=False)
    assert upstream.feasible.tolist() == everything.feasible.tolist() == [1]
    assert upstream.diagnosis.node_reasons(0) == ["node(s) had untolerated taint(s)"]
    assert everything.diagnosis.node_reasons(0) == ["node(s) had untolerated taint(s)", "Insufficient cpu"]


def test_run_filters_after_remove_pod_sees_freed_room():
    sched = scheduler_of(make_node("a", gpus=1), profiles=NO_PREEMPTION)
    low = make_pod(gpus=1, name="low")
    assert sched.schedule_one(low).scheduled
    high = make_pod(gpus=1, name="high", priority=10)
    assert sched.run_filters(None, high).feasible.tolist() == []
    row, assignment = sched.snapshot.remove_pod(low.uid)
    assert sched.run_filters(None, high, np.array([row])).feasible.tolist() == [0]
    sched.snapshot.add_pod(low, row, assignment)
    assert sched.run_filters(None, high).feasible.tolist() == []


def test_gpu_selection_hook_is_honoured_by_reserve():
    class PickLastGpu:
        name = "GpuDevices"   # reuse a registered name slot is not needed: inserted directly

        def score(self, state, pod, snapshot, nodes):
            state.write("gpu-selection", {int(n): (3,) for n in nodes})
            return np.zeros(len(nodes), dtype=np.int64)

    sched = scheduler_of(make_node("a", gpus=4))
    framework = sched.frameworks["default-scheduler"]
    framework.score = framework.score + ((PickLastGpu(), 1, None),)
    assert sched.schedule_one(make_pod(gpus=1)).assignment.gpu_indices == (3,)


def test_percentage_of_nodes_to_score_rotates_start():
    nodes = [make_node(f"n{i:03d}") for i in range(200)]
    sched = scheduler_of(*nodes, profiles=parse_config({"percentageOfNodesToScore": 10}))
    first = sched.schedule_one(make_pod(cpu="1", name="p1"))
    assert first.evaluated_nodes == 100 and first.feasible_nodes == 200
    assert sched.next_start_node_index == 100
    sched.schedule_one(make_pod(cpu="1", name="p2"))
    assert sched.next_start_node_index == 0


def test_permit_rejection_undoes_the_assume_and_unreserves():
    from gpusched.scheduler.framework import Status

    class Deny:
        name = "Deny"

        def permit(self, state, pod, node):
            return Status(Code.UNSCHEDULABLE, ("denied",))

    sched = scheduler_of(make_node("a", gpus=2), profiles=NO_PREEMPTION)
    sched.frameworks["default-scheduler"].permit = (Deny(),)
    pod = make_pod(gpus=1, cpu="1")
    result = sched.schedule_one(pod)
    # upstream schedule_one.go: a Permit rejection is a FitError over the one assumed node
    assert not result.scheduled and result.status.plugin == "Deny"
    assert result.message == "0/1 nodes are available: 1 denied."
    snap = sched.snapshot
    assert pod.uid not in snap.pod_node and snap.requested[0].sum() == 0
    assert snap.gpu_free_milli[0, :2].tolist() == [1000, 1000]


def test_cordon_via_update_node_keeps_pods_and_rejects_new_ones():
    sched = scheduler_of(make_node("a"), profiles=NO_PREEMPTION)
    first = make_pod(cpu="1")
    assert sched.schedule_one(first).node == "a"
    sched.snapshot.update_node(make_node("a", unschedulable=True)[0])
    assert sched.snapshot.node_of(first.uid) == "a" and sched.snapshot.requested[0, 0] == 1000
    assert sched.schedule_one(make_pod()).message == "0/1 nodes are available: 1 node(s) were unschedulable."


def test_fractional_pods_pack_onto_partly_used_gpu():
    sched = scheduler_of(make_node("a", gpus=2), profiles=NO_PREEMPTION)
    placed = [sched.schedule_one(make_pod(gpu_milli=300)).assignment.gpu_indices for _ in range(4)]
    assert placed == [(0,), (0,), (0,), (1,)]


# NodeAffinity's PreFilter narrows the nodes to those named by matchFields metadata.name In
# (kubernetes pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go PreFilter returns
# PreFilterResult{NodeNames}, or "pod affinity terms conflict" when the terms name no node in
# common); schedule_one.go findNodesThatFitPod filters only those nodes and gives the others the
# absent-node status "node(s) didn't satisfy plugin(s) [NodeAffinity]", which FitError.Error()
# (framework/types.go) counts into the histogram like any other reason.
def _pinned(*names: str, gpus: int = 2, **fields):
    return make_pod(gpus=gpus, required_terms=(NodeSelectorTerm(match_fields=(req("metadata.name", "In", *names),)),),
                    **fields)


PINNED_CASES = [
    ("named-node-too-small", _pinned("small"),
     "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, "
     "2 node(s) didn't satisfy plugin(s) [NodeAffinity]."),
    ("named-node-fails-its-selector", _pinned("big-1", node_selector={"gpu": "v100"}),
     "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
     "2 node(s) didn't satisfy plugin(s) [NodeAffinity]."),
    ("no-such-node", _pinned("gone"),
     "0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [NodeAffinity]."),
    ("term-names-no-node-in-common",
     make_pod(gpus=1, required_terms=(NodeSelectorTerm(match_fields=(
         req("metadata.name", "In", "big-1"), req("metadata.name", "In", "big-2"))),)),
     "0/3 nodes are available: pod affinity terms conflict."),
    ("label-terms-do-not-narrow", make_pod(gpus=1, required_terms=(term(req("gpu", "In", "v100")),)),
     "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."),
]


@pytest.mark.parametrize("pod,message", [c[1:] for c in PINNED_CASES], ids=[c[0] for c in PINNED_CASES])
def test_node_affinity_pre_filter_narrows_to_named_nodes(pod, message):
    sched = scheduler_of(make_node("small", gpus=1), make_node("big-1", gpus=8),
                         make_node("big-2", gpus=8), profiles=NO_PREEMPTION)
    result = sched.schedule_one(pod)
    assert (result.scheduled, result.message) == (False, message)


def test_pinned_pod_binds_to_its_named_node_and_preemption_skips_the_others():
    sched = scheduler_of(make_node("small", gpus=1), make_node("big-1", gpus=8), make_node("big-2", gpus=8))
    assert sched.schedule_one(_pinned("big-2", "gone")).node == "big-2"
    assert sched.schedule_one(_pinned("small", gpus=1)).node == "small"
    result = sched.schedule_one(_pinned("small", gpus=1))
    assert result.message == (
        "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't satisfy "
        "plugin(s) [NodeAffinity]. no new claims to deallocate, preemption: 0/3 nodes are "
        "available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful "
        "for scheduling.")
