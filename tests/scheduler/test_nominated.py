"""Nominated pods in the runner: a pod nominated to a node (preemptor waiting for its victims)
occupies it for pods of equal or lower priority - in the Filter phase and in the preemption dry
run - and not for higher-priority ones; the preemptor tries its nominated node first; the
Scheduler keeps its ``nominated`` dict as upstream's nominator does."""

from __future__ import annotations

import pytest

from tests.scheduler.builders import make_node, make_pod, scheduler_of


def two_gpu_nodes():
    """Two 2-GPU nodes; a nominee (priority 10, 2 GPUs) is nominated to ``a``."""
    sched = scheduler_of(make_node("a", gpus=2, model="T4"), make_node("b", gpus=2, model="T4"))
    sched.set_nominated(make_pod("nominee", gpus=2, priority=10), "a")
    return sched


@pytest.mark.parametrize("priority,node", [(5, "b"), (10, "b"), (20, "a")],
                         ids=["lower-avoids-nominated-node", "equal-avoids-nominated-node",
                              "higher-ignores-nomination"])
def test_filter_counts_nominated_pods_by_priority(priority, node):
    sched = two_gpu_nodes()
    sched.snapshot.add_pod(make_pod("elsewhere", cpu="1"), "b")     # b is a little busier: a scores higher
    result = sched.schedule_one(make_pod("newcomer", gpus=2, priority=priority))
    assert result.node == node


def test_lower_priority_pod_waits_when_the_only_room_is_nominated():
    sched = scheduler_of(make_node("a", gpus=2, model="T4"))
    sched.set_nominated(make_pod("nominee", gpus=2, priority=10), "a")
    result = sched.schedule_one(make_pod("late", gpus=1, priority=5))
    assert not result.scheduled
    assert result.message.startswith("0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")
    assert sched.snapshot.requested.sum() == 0, "the nominee is not left in the snapshot"


def test_dry_run_counts_nominated_pods():
    # a holds a low pod (1 GPU) and the nominee (prio 10, 1 GPU) is nominated there; a pod of
    # prio 8 asking for 2 GPUs could evict the low pod, but the nominee's GPU is not its to take
    sched = scheduler_of(make_node("a", gpus=2, model="T4"))
    sched.schedule_one(make_pod("low", gpus=1, priority=1))
    sched.set_nominated(make_pod("nominee", gpus=1, priority=10), "a")
    result = sched.schedule_one(make_pod("mid", gpus=2, priority=8))
    assert not result.nominated_node
    assert result.message.endswith("preemption: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")
    sched.clear_nominated("uid-nominee")
    assert sched.schedule_one(make_pod("mid2", gpus=2, priority=8)).nominated_node == "a"


def test_preemptor_is_nominated_then_bound_on_its_nominated_node_first():
    sched = scheduler_of(make_node("a", cpu="4"), make_node("b", cpu="4"))
    low_a = make_pod("low-a", cpu="4", priority=1, node_name="a")
    sched.schedule_one(low_a)
    sched.schedule_one(make_pod("low-b", cpu="4", priority=2, node_name="b"))
    preemptor = make_pod("high", cpu="4", priority=10)
    first = sched.schedule_one(preemptor)
    assert first.nominated_node == "a" and [v.name for v in first.victims] == ["low-a"]
    assert sched.nominated["uid-high"].nominated_node == "a"
    # a pod of equal priority arriving before the victims are gone cannot take the freed room
    sched.snapshot.remove_pod(low_a.uid)
    assert not sched.schedule_one(make_pod("rival", cpu="4", priority=10)).scheduled
    second = sched.schedule_one(preemptor)
    assert second.node == "a" and "uid-high" not in sched.nominated


def test_nominated_node_tried_first_even_when_another_scores_higher():
    sched = scheduler_of(make_node("big", cpu="64"), make_node("small", cpu="8"))
    sched.set_nominated(make_pod("p", cpu="1"), "small")
    assert sched.schedule_one(make_pod("p", cpu="1")).node == "small"


@pytest.mark.parametrize("policy,kept", [("PreemptLowerPriority", False), ("Never", True)],
                         ids=["no-candidate-clears", "ineligible-keeps"])
def test_failed_attempt_clears_or_keeps_the_nomination(policy, kept):
    sched = scheduler_of(make_node("a", cpu="4"))
    sched.schedule_one(make_pod("peer", cpu="4", priority=10))
    pod = make_pod("waiting", cpu="4", priority=10, preemption_policy=policy)
    sched.set_nominated(pod, "a")
    assert not sched.schedule_one(pod).scheduled
    assert ("uid-waiting" in sched.nominated) is kept


def test_preemption_drops_lower_priority_nominations_to_the_same_node():
    sched = scheduler_of(make_node("a", cpu="4"))
    sched.schedule_one(make_pod("low", cpu="4", priority=1))
    sched.set_nominated(make_pod("earlier", cpu="1", priority=3), "b-gone")
    sched.set_nominated(make_pod("small", cpu="1", priority=2), "a")
    result = sched.schedule_one(make_pod("high", cpu="4", priority=10))
    assert result.nominated_node == "a"
    assert sorted(sched.nominated) == ["uid-earlier", "uid-high"]
