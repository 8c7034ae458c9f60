"""Node taints kept by the node lifecycle controller, and the evictions they cause.

Cases cite kubernetes ``pkg/controller/nodelifecycle/node_lifecycle_controller.go``
(``doNoScheduleTaintingPass``: UnschedulableTaintTemplate and the taints by condition;
``markNodeForTainting``/``swapNodeControllerTaint``: NotReady/Unreachable NoExecute taints with
timeAdded), ``pkg/controller/tainteviction/taint_eviction.go`` (eviction after
tolerationSeconds) and ``plugin/pkg/admission/defaulttolerationseconds`` (the 300 s tolerations).
"""

from __future__ import annotations

import copy

import pytest

from .builders import apply, join, pod, pod_names, pool, terminating_names


def taints(cluster, node: str = "gpu-1") -> list[tuple]:
    spec = cluster.get("nodes", [node])[0].get("spec") or {}
    return [(t["key"], t["effect"], "timeAdded" in t) for t in spec.get("taints") or []]


def set_ready(cluster, status: str, node: str = "gpu-1") -> None:
    """What a kubelet (False) or the node lifecycle controller (Unknown) reports."""
    def change(view):
        body = copy.deepcopy(view.get("Node", node))
        for cond in body["status"]["conditions"]:
            if cond["type"] == "Ready":
                cond["status"] = status
        view.update(body)
    cluster.write(change)


def test_cordon_adds_the_unschedulable_taint_and_uncordon_removes_it(cluster):
    apply(cluster, pool(count=1, gpus=0))
    cluster.cordon("gpu-1")
    assert taints(cluster) == [("node.kubernetes.io/unschedulable", "NoSchedule", False)]
    cluster.uncordon("gpu-1")
    assert taints(cluster) == []


@pytest.mark.parametrize("ready, key", [
    pytest.param("False", "node.kubernetes.io/not-ready", id="Ready-False-not-ready"),
    pytest.param("Unknown", "node.kubernetes.io/unreachable", id="Ready-Unknown-unreachable"),
])
def test_not_ready_node_taints_and_evictions(cluster, ready, key):
    def tolerate(seconds=None):
        toleration = {"key": key, "operator": "Exists", "effect": "NoExecute"}
        if seconds is not None:
            toleration["tolerationSeconds"] = seconds
        return [toleration]
    apply(cluster, join(pool(count=1, gpus=0), pod("plain"), pod("impatient", tolerations=tolerate(10)),
                        pod("forever", tolerations=tolerate())))
    set_ready(cluster, ready)
    assert taints(cluster) == [(key, "NoSchedule", False), (key, "NoExecute", True)]
    cluster.advance(9)
    assert terminating_names(cluster) == []
    cluster.advance(1)                     # impatient's tolerationSeconds
    assert terminating_names(cluster) == ["impatient"]
    cluster.advance(289)
    assert terminating_names(cluster) == []
    cluster.advance(1)                     # plain: the 300 s DefaultTolerationSeconds toleration
    assert terminating_names(cluster) == ["plain"]
    events = [e for e in cluster.events() if e["reason"] == "TaintManagerEviction"]
    assert [e["involvedObject"]["name"] for e in events] == ["impatient", "plain"]
    [plain] = cluster.get("pods", ["plain"])
    cond = next(c for c in plain["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert (cond["reason"], cond["message"]) == ("DeletionByTaintManager",
                                                 "Taint manager: deleting due to NoExecute taint")
    cluster.advance(30)
    assert pod_names(cluster) == ["forever"]


def test_ready_again_removes_the_taints_and_keeps_tolerating_pods(cluster):
    apply(cluster, join(pool(count=1, gpus=0), pod("p")))   # DefaultTolerationSeconds: 300 s
    set_ready(cluster, "Unknown")
    cluster.advance(100)
    set_ready(cluster, "True")
    assert taints(cluster) == []
    cluster.advance(600)
    assert pod_names(cluster) == ["p"] and terminating_names(cluster) == []


def test_new_pods_avoid_a_not_ready_node(cluster):
    apply(cluster, pool(count=1, gpus=0))
    set_ready(cluster, "False")
    apply(cluster, pod("late"))
    message = cluster.get("pods", ["late"])[0]["status"]["conditions"][0]["message"]
    assert message.startswith("0/1 nodes are available: 1 node(s) had untolerated taint(s).")
