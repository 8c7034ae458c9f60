"""The StatefulSet controller's OrderedReady management (kubernetes
``pkg/controller/statefulset/stateful_set_control.go`` ``updateStatefulSet``, monotonic path;
``stateful_set_utils.go`` ``newStatefulSetPod``; ``stateful_pod_control.go`` ``recordPodEvent``):
pods ``<set>-0..N-1`` created one at a time, each after the previous is Running and Ready, and
removed highest ordinal first, one at a time."""

from __future__ import annotations

import yaml

from .builders import apply, join, live_names, pool, terminating_names


def statefulset(replicas: int, gpus: int = 1, name: str = "db") -> str:
    container = {"name": "c", "image": "postgres:16",
                 "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    return yaml.safe_dump({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
                           "spec": {"replicas": replicas, "serviceName": name,
                                    "selector": {"matchLabels": {"app": name}},
                                    "template": {"metadata": {"labels": {"app": name}},
                                                 "spec": {"containers": [container]}}}})


def test_next_pod_waits_for_the_previous_to_be_running_and_ready(cluster):
    """One 1-GPU node: db-0 runs, db-1 stays Pending, so db-2 is not created."""
    apply(cluster, join(pool(count=1, gpus=1), statefulset(replicas=3)))
    pods = {p["metadata"]["name"]: p for p in cluster.get("pods", selector="app=db")}
    assert sorted(pods) == ["db-0", "db-1"]
    assert pods["db-0"]["status"]["phase"] == "Running" and pods["db-1"]["status"]["phase"] == "Pending"
    [sts] = cluster.get("sts")
    assert sts["status"] == {"replicas": 2, "readyReplicas": 1, "currentReplicas": 2,
                             "updatedReplicas": 2, "availableReplicas": 1, "observedGeneration": 1}
    apply(cluster, pool(count=3, gpus=1))
    assert live_names(cluster, selector="app=db") == ["db-0", "db-1", "db-2"]


def test_pod_identity(cluster):
    apply(cluster, join(pool(count=1, gpus=1), statefulset(replicas=1)))
    [pod] = cluster.get("pods", selector="app=db")
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["labels"] == {"app": "db", "statefulset.kubernetes.io/pod-name": "db-0",
                              "apps.kubernetes.io/pod-index": "0"}
    assert (spec["hostname"], spec["subdomain"]) == ("db-0", "db")
    owner = meta["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("StatefulSet", "db", True)
    messages = [e["message"] for e in cluster.get("events") if e["reason"] == "SuccessfulCreate"]
    assert messages == ["create Pod db-0 in StatefulSet db successful"]


def test_scale_down_highest_ordinal_first_one_at_a_time(cluster):
    apply(cluster, join(pool(count=3, gpus=1), statefulset(replicas=3)))
    assert live_names(cluster, selector="app=db") == ["db-0", "db-1", "db-2"]
    apply(cluster, statefulset(replicas=1))
    assert terminating_names(cluster) == ["db-2"]
    assert live_names(cluster, selector="app=db") == ["db-0", "db-1"]
    cluster.advance(30)
    assert terminating_names(cluster) == ["db-1"]
    cluster.advance(30)
    assert live_names(cluster, selector="app=db") == ["db-0"] and terminating_names(cluster) == []
