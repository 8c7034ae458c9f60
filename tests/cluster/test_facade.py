"""The Cluster facade's reading and naming: get filters, NotFound wording, delete messages,
Event objects."""

from __future__ import annotations

import pytest
import yaml

from gpusched.errors import GpuschedError, NotFoundError

from .builders import apply, join, pod, pool


@pytest.mark.parametrize("kind,name,message", [
    ("po", "nope", 'pods "nope" not found'),
    ("deploy", "nope", 'deployments.apps "nope" not found'),
    ("no", "nope", 'nodes "nope" not found'),
    ("pc", "nope", 'priorityclasses.scheduling.k8s.io "nope" not found'),
], ids=["pod", "deployment", "node", "priorityclass"])
def test_get_missing_named_object(cluster, kind, name, message):
    with pytest.raises(NotFoundError) as err:
        cluster.get(kind, [name])
    assert str(err.value) == message


def test_get_filters_by_label_and_field_selector_and_namespace(cluster):
    apply(cluster, join(pool(count=1, gpus=0),
                        yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"}}),
                        pod("x", labels={"app": "a"}), pod("y", labels={"app": "b"}),
                        pod("z", namespace="b", labels={"app": "a"})))
    assert [p["metadata"]["name"] for p in cluster.get("pods", selector="app=a")] == ["x"]
    assert [p["metadata"]["name"] for p in cluster.get("pods", all_namespaces=True,
                                                         selector="app=a")] == ["z", "x"]
    assert [p["metadata"]["name"] for p in cluster.get("pods", namespace="b")] == ["z"]
    assert len(cluster.get("pods", all_namespaces=True, field_selector="spec.nodeName=gpu-1")) == 3


def test_delete_messages_and_namespace_cascade(cluster):
    apply(cluster, join(pool(count=1, gpus=0),
                        yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"}}),
                        pod("z", namespace="b")))
    assert cluster.delete("ns", "b", namespace=None) == 'namespace "b" deleted'
    [z] = cluster.get("pods", all_namespaces=True)        # Terminating: graceful, as kubectl's
    assert z["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:30Z"
    cluster.advance(30)
    assert cluster.get("pods", all_namespaces=True) == []
    with pytest.raises(NotFoundError):
        cluster.delete("pod", "z", namespace="b")


def test_scheduled_event_is_a_kubernetes_event(cluster):
    apply(cluster, join(pool(count=1, gpus=0), pod("p")))
    cluster.advance(5)
    [event] = [e for e in cluster.events() if e["reason"] == "Scheduled"]
    uid = cluster.get("pods", ["p"])[0]["metadata"]["uid"]
    assert event["involvedObject"] == {"apiVersion": "v1", "kind": "Pod", "name": "p",
                                       "namespace": "default", "uid": uid}
    assert (event["type"], event["message"], event["count"], event["source"]) == (
        "Normal", "Successfully assigned default/p to gpu-1", 1, {"component": "default-scheduler"})
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2026-01-01T00:00:00Z"
    assert [e["reason"] for e in cluster.events(None)][:1] == ["Scheduled"]


@pytest.mark.parametrize("call,message", [
    (lambda c: c.advance(-1), "cannot advance the clock by a negative duration (-1s)"),
    (lambda c: c.scale("deploy", "nope", 1), 'deployments.apps "nope" not found'),
    (lambda c: c.scale("po", "x", 1), "cannot scale a Pod: only deployments, replicasets and jobs scale"),
    (lambda c: c.cordon("nope"), 'nodes "nope" not found'),
    (lambda c: c.taint("gpu-1", [], [("nope", "NoSchedule")]), 'taint "nope:NoSchedule" not found'),
], ids=["negative-advance", "scale-missing", "scale-pod", "cordon-missing", "untaint-missing"])
def test_user_mistakes_are_clean_errors(cluster, call, message):
    apply(cluster, pool(count=1, gpus=0))
    with pytest.raises(GpuschedError) as err:
        call(cluster)
    assert str(err.value) == message
