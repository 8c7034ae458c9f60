"""``gpusched condition node NAME Ready=STATUS``: a node's Ready condition as its kubelet
reports it (kubernetes ``pkg/kubelet/nodestatus/setters.go`` ``ReadyCondition``: KubeletReady /
KubeletNotReady) or as the node lifecycle controller writes it for a silent kubelet
(``pkg/controller/nodelifecycle/node_lifecycle_controller.go`` ``tryUpdateNodeHealth``: every
condition Unknown, NodeStatusUnknown, "Kubelet stopped posting node status."); the controller's
taints follow (``doNoScheduleTaintingPass``, ``markNodeForTainting``) and pods without a
toleration are evicted after DefaultTolerationSeconds' 300 s
(``plugin/pkg/admission/defaulttolerationseconds``)."""

from __future__ import annotations

import pytest

from gpusched.cluster.nodes import parse_condition
from gpusched.errors import UsageError

from .builders import apply, join, phase, pod, pool, terminating_names


def conditions(cluster, node: str = "gpu-1") -> dict[str, tuple[str, str, str]]:
    body = cluster.get("nodes", [node])[0]
    return {c["type"]: (c["status"], c.get("reason", ""), c.get("message", ""))
            for c in body["status"]["conditions"]}


def taints(cluster, node: str = "gpu-1") -> list[str]:
    body = cluster.get("nodes", [node])[0]
    return sorted(f"{t['key']}:{t['effect']}" for t in body["spec"].get("taints") or [])


# (case id, status, Ready condition, MemoryPressure condition, taints)
CASES = [
    ("false-kubelet-not-ready", "False",
     ("False", "KubeletNotReady", "node made NotReady with gpusched condition"),
     ("False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
     ["node.kubernetes.io/not-ready:NoExecute", "node.kubernetes.io/not-ready:NoSchedule"]),
    ("unknown-every-condition-unknown", "Unknown",
     ("Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."),
     ("Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."),
     ["node.kubernetes.io/unreachable:NoExecute", "node.kubernetes.io/unreachable:NoSchedule"]),
    ("true-kubelet-ready", "True",
     ("True", "KubeletReady", "kubelet is posting ready status"),
     ("False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"), []),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_condition_sets_ready_and_the_controller_taints_follow(cluster, case):
    _id, status, ready, memory, wanted_taints = case
    apply(cluster, pool(count=1))
    assert cluster.set_ready("gpu-1", status) == f"node/gpu-1 condition Ready={status}"
    got = conditions(cluster)
    assert got["Ready"] == ready
    assert got["MemoryPressure"] == memory
    assert taints(cluster) == wanted_taints


def test_back_to_ready_restores_the_kubelet_report_and_removes_the_taints(cluster):
    apply(cluster, pool(count=1))
    cluster.set_ready("gpu-1", "Unknown")
    cluster.set_ready("gpu-1", "True")
    got = conditions(cluster)
    assert got["Ready"] == ("True", "KubeletReady", "kubelet is posting ready status")
    assert got["DiskPressure"] == ("False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure")
    assert taints(cluster) == []


def test_pods_without_a_toleration_are_evicted_after_300_seconds(cluster):
    apply(cluster, join(pool(count=1), pod("train", gpus=1)))
    cluster.set_ready("gpu-1", "False")
    cluster.advance(299)
    assert phase(cluster, "train") == "Running" and terminating_names(cluster) == []
    cluster.advance(1)
    assert terminating_names(cluster) == ["train"]


@pytest.mark.parametrize("text,error", [
    ("Ready", 'invalid condition "Ready": expected Ready=True, Ready=False or Ready=Unknown'),
    ("MemoryPressure=True", 'invalid condition "MemoryPressure=True": expected Ready=True'),
    ("Ready=false", 'invalid condition "Ready=false": the status must be True, False or Unknown'),
], ids=["no-status", "other-condition", "lower-case-status"])
def test_bad_condition_is_one_clear_error(text, error):
    with pytest.raises(UsageError) as err:
        parse_condition(text)
    assert str(err.value).startswith(error)
