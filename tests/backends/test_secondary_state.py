"""The secondary scheduler's state fed with the dicts an API serves (taken from a real embedded
cluster): incremental snapshot, decisions, assumptions, other schedulers' pods left alone."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from gpusched.backends.secondary import BIND, PREEMPT, UNSCHEDULABLE, SchedulerState
from gpusched.cluster.cluster import Cluster
from gpusched.scheduler.profile import default_profile
from tests.cluster.builders import apply, join, pod, pool, priority_class

NAME = "gpusched"


def ours(name: str, gpus: int = 1, **spec) -> str:
    return pod(name, gpus=gpus, schedulerName=NAME, **spec)


@pytest.fixture
def cluster(tmp_path):
    with Cluster.open(str(tmp_path / "cluster.db")) as c:
        apply(c, join(pool("a", count=1, gpus=2), priority_class("high", 1000)))
        yield c


def state_from(cluster: Cluster) -> SchedulerState:
    state = SchedulerState([default_profile(NAME)], np.random.default_rng(0), lambda: 0.0)
    state.replace("Node", cluster.get("nodes"))
    state.replace("Pod", cluster.get("pods", all_namespaces=True))
    state.replace("ConfigMap", cluster.get("configmaps", all_namespaces=True))
    return state


def bound(pod_dict: dict, node: str) -> dict:
    new = copy.deepcopy(pod_dict)
    new["spec"]["nodeName"] = node
    return new


def test_embedded_cluster_leaves_other_schedulers_pods_pending(cluster):
    apply(cluster, join(ours("mine"), pod("theirs", gpus=1)))
    mine, theirs = cluster.get("pods", ["mine", "theirs"])
    assert mine["spec"].get("nodeName") is None
    assert "conditions" not in mine.get("status", {})
    assert theirs["spec"]["nodeName"] == "a-1"
    assert [e["reason"] for e in cluster.events() if e["involvedObject"]["name"] == "mine"] == []


def test_binds_only_its_own_pods_and_counts_the_others(cluster):
    apply(cluster, join(pod("theirs", gpus=1), ours("mine-1"), ours("mine-2")))
    state = state_from(cluster)
    decisions = state.decisions()
    assert [(d.action, d.pod["metadata"]["name"], d.node) for d in decisions] == [
        (BIND, "mine-1", "a-1"), (UNSCHEDULABLE, "mine-2", "")]
    assert decisions[0].assignment.gpu_indices == (1,)          # GPU 0 is held by "theirs"
    assert decisions[1].message == ("0/1 nodes are available: 1 Insufficient nvidia.com/gpu. "
                                    "no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption "
                                    "victims found for incoming pod.")
    assert state.decisions() == []                               # nothing changed: no retry


@pytest.mark.parametrize("event", ["DELETED", "succeeded"], ids=["deleted", "finished"])
def test_freed_capacity_retries_the_unschedulable_pod(cluster, event):
    apply(cluster, join(pod("theirs", gpus=2), ours("mine")))
    state = state_from(cluster)
    assert [d.action for d in state.decisions()] == [UNSCHEDULABLE]
    theirs = cluster.get("pods", ["theirs"])[0]
    if event == "DELETED":
        state.observe("Pod", "DELETED", theirs)
    else:
        theirs["status"]["phase"] = "Succeeded"
        state.observe("Pod", "MODIFIED", theirs)
    assert [(d.action, d.node) for d in state.decisions()] == [(BIND, "a-1")]


def test_assumed_pod_holds_its_gpu_until_seen_bound(cluster):
    apply(cluster, join(ours("one", gpus=2), ours("two", gpus=2)))
    state = state_from(cluster)
    first, second = state.decisions()
    assert (first.action, second.action) == (BIND, UNSCHEDULABLE)
    stale = cluster.get("pods", ["one"])[0]           # the annotation patch, still unbound
    state.observe("Pod", "MODIFIED", stale)
    assert state.pending()[0]["metadata"]["name"] == "two"
    state.observe("Pod", "MODIFIED", bound(stale, "a-1"))
    assert state.decisions() == []                    # still full: no retry, no double booking
    assert state.scheduler.snapshot.node_of(stale["metadata"]["uid"]) == "a-1"


def test_forget_releases_a_failed_bind(cluster):
    apply(cluster, ours("one", gpus=2))
    state = state_from(cluster)
    (decision,) = state.decisions()
    state.forget(decision.pod["metadata"]["uid"])
    assert [d.action for d in state.decisions()] == [BIND]


def test_node_update_in_place_and_new_node_rebuilds(cluster):
    apply(cluster, ours("one", gpus=2))
    state = state_from(cluster)
    node = cluster.get("nodes", ["a-1"])[0]
    node["spec"]["unschedulable"] = True
    state.observe("Node", "MODIFIED", node)
    assert state.scheduler is None or state.scheduler.snapshot.unschedulable.tolist() == [True]
    (decision,) = state.decisions()
    assert decision.action == UNSCHEDULABLE
    assert state.scheduler.snapshot.unschedulable.tolist() == [True]
    node = copy.deepcopy(node)
    node["spec"].pop("unschedulable")
    state.observe("Node", "MODIFIED", node)
    assert state.scheduler is not None                 # same devices: updated in place
    assert [(d.action, d.node) for d in state.decisions()] == [(BIND, "a-1")]
    apply(cluster, pool("b", count=1, gpus=4))
    state.observe("Node", "ADDED", cluster.get("nodes", ["b-1"])[0])
    assert state.scheduler is None                     # a new node: rebuilt on the next pass


def test_preemption_decision_names_victims(cluster):
    apply(cluster, join(pod("low", gpus=2, schedulerName=NAME), ))
    state = state_from(cluster)
    (first,) = state.decisions()
    state.observe("Pod", "MODIFIED", bound(first.pod, first.node))
    apply(cluster, ours("urgent", gpus=2, priorityClassName="high"))
    state.observe("Pod", "ADDED", cluster.get("pods", ["urgent"])[0])
    (decision,) = state.decisions()
    assert (decision.action, decision.node) == (PREEMPT, "a-1")
    assert [v.name for v in decision.victims] == ["low"]
