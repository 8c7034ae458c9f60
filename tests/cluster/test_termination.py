"""Graceful pod termination on the cluster clock.

Each case names the upstream code it reproduces: kubernetes ``pkg/registry/core/pod/strategy.go``
(``CheckGracefulDelete``: which grace period applies), ``staging/src/k8s.io/apiserver/pkg/
registry/rest/delete.go`` (``BeforeDelete``: deletionTimestamp = now + grace, a second delete
may only shorten it), ``pkg/kubelet`` (a Terminating pod keeps its resources until its
containers are stopped) and ``pkg/controller/podgc/gc_controller.go`` (``gcOrphaned``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from gpusched.cluster.apiserver.store import rfc3339

from .builders import apply, join, node_of, pod, pod_names, pool, terminating_names


@dataclass(frozen=True)
class GraceCase:
    id: str
    spec: dict = field(default_factory=dict)        # extra pod spec / builder arguments
    grace: int | None = None                         # DeleteOptions.gracePeriodSeconds
    first_advance: float = 0                         # before the delete
    expect_period: int | None = 30                   # None: deleted at once
    bound: bool = True


GRACE_CASES = [
    GraceCase("CheckGracefulDelete-default-terminationGracePeriodSeconds-30"),
    GraceCase("CheckGracefulDelete-pod-spec-period", {"terminationGracePeriodSeconds": 5},
              expect_period=5),
    GraceCase("CheckGracefulDelete-options-override-pod-spec",
              {"terminationGracePeriodSeconds": 5}, grace=12, expect_period=12),
    GraceCase("CheckGracefulDelete-options-zero-is-immediate", grace=0, expect_period=None),
    GraceCase("CheckGracefulDelete-pod-spec-zero-is-immediate",
              {"terminationGracePeriodSeconds": 0}, expect_period=None),
    GraceCase("CheckGracefulDelete-unscheduled-pod-is-immediate", {"gpus": 99},
              expect_period=None, bound=False),
    GraceCase("CheckGracefulDelete-succeeded-pod-is-immediate", {"duration": "10s"},
              first_advance=10, expect_period=None),
]


@pytest.mark.parametrize("case", GRACE_CASES, ids=[c.id for c in GRACE_CASES])
def test_grace_period_of_a_delete(cluster, case):
    apply(cluster, join(pool(count=1, gpus=8), pod("p", **case.spec)))
    assert bool(node_of(cluster, "p")) == case.bound
    if case.first_advance:
        cluster.advance(case.first_advance)
    start = cluster.now()
    cluster.delete("pod", "p", grace=case.grace)
    if case.expect_period is None:
        assert pod_names(cluster) == []
        return
    [body] = cluster.get("pods")
    assert body["metadata"]["deletionTimestamp"] == rfc3339(start + case.expect_period)
    assert body["metadata"]["deletionGracePeriodSeconds"] == case.expect_period
    assert body["status"]["phase"] == "Running"
    cluster.advance(case.expect_period - 1)
    assert terminating_names(cluster) == ["p"]
    cluster.advance(1)
    assert pod_names(cluster) == []


@pytest.mark.parametrize("second, expect_left", [
    pytest.param(10, 10, id="BeforeDelete-shorter-period-moves-deletionTimestamp-forward"),
    pytest.param(60, 30, id="BeforeDelete-longer-period-changes-nothing"),
    pytest.param(0, 0, id="BeforeDelete-zero-deletes-now"),
])
def test_second_delete_may_only_shorten(cluster, second, expect_left):
    apply(cluster, join(pool(count=1, gpus=0), pod("p")))
    cluster.delete("pod", "p")
    version = cluster.get("pods", ["p"])[0]["metadata"]["resourceVersion"]
    cluster.delete("pod", "p", grace=second)
    if expect_left == 0:
        assert pod_names(cluster) == []
        return
    body = cluster.get("pods", ["p"])[0]
    assert body["metadata"]["deletionTimestamp"] == rfc3339(expect_left)
    assert (body["metadata"]["resourceVersion"] == version) == (expect_left == 30)
    cluster.advance(expect_left)
    assert pod_names(cluster) == []


def test_terminating_pod_keeps_its_gpus_until_gone(cluster):
    # pkg/kubelet: resources are released when the containers are stopped, not at the delete
    apply(cluster, join(pool(count=1, gpus=2, model="T4"), pod("old", gpus=2)))
    cluster.delete("pod", "old")
    apply(cluster, pod("new", gpus=2))
    assert node_of(cluster, "new") == ""
    message = cluster.get("pods", ["new"])[0]["status"]["conditions"][0]["message"]
    assert message.startswith("0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")
    cluster.advance(30)
    assert node_of(cluster, "new") == "gpu-1"
    assert cluster.get("pods", ["new"])[0]["status"]["phase"] == "Running"


def test_containers_exiting_during_the_grace_period_end_it_early(cluster):
    # kubelet: the pod is removed once its containers have stopped (here: its run time ends)
    apply(cluster, join(pool(count=1, gpus=0), pod("p", duration="40s")))
    cluster.advance(20)
    cluster.delete("pod", "p")
    cluster.advance(19)
    assert terminating_names(cluster) == ["p"]
    cluster.advance(1)
    assert pod_names(cluster) == []


def test_watch_sees_modified_then_deleted(cluster):
    apply(cluster, join(pool(count=1, gpus=0), pod("p")))
    rv = cluster.store.conn.execute("SELECT MAX(rv) FROM changes").fetchone()[0]
    cluster.delete("pod", "p")
    cluster.advance(30)
    changes = [(kind, name, change) for _rv, kind, _ns, name, change
               in cluster.store.changes_since(rv) if kind == "Pod"]
    assert changes == [("Pod", "p", "MODIFIED"), ("Pod", "p", "DELETED")]


def test_deleting_a_node_deletes_its_pods(cluster):
    # podgc gcOrphaned: Failed + DisruptionTarget DeletionByPodGC, then a delete with grace 0
    apply(cluster, join(pool(count=2, gpus=0), pod("a", nodeName="gpu-1"), pod("b", nodeName="gpu-2")))
    rv = cluster.store.conn.execute("SELECT MAX(rv) FROM changes").fetchone()[0]
    assert cluster.delete("node", "gpu-1", namespace=None) == 'node "gpu-1" deleted'
    assert pod_names(cluster) == ["b"]
    pod_changes = [change for _rv, kind, _ns, name, change in cluster.store.changes_since(rv)
                   if kind == "Pod" and name == "a"]
    assert pod_changes[-1] == "DELETED"


def test_nodepool_shrinking_deletes_the_pods_of_its_removed_nodes(cluster):
    apply(cluster, join(pool(count=2, gpus=0), pod("a", nodeName="gpu-1"), pod("b", nodeName="gpu-2")))
    apply(cluster, pool(count=1, gpus=0))
    assert [n["metadata"]["name"] for n in cluster.get("nodes")] == ["gpu-1"]
    assert pod_names(cluster) == ["a"]
    gc = [e for e in cluster.events() if e["involvedObject"]["name"] == "b"]
    assert gc == [] or all(e["reason"] != "Killing" for e in gc)    # force: no grace, no Killing
