"""Informers and work queues (``cluster.controllers.base``): what a change enqueues, and that a
controller's sync reads its objects through the view's indexes, never a listing of every pod.

Upstream, each controller's event handlers map a changed object to the keys it reconciles:
``pkg/controller/replicaset/replica_set.go`` ``addPod``/``updatePod``/``deletePod`` enqueue the
pod's controlling ReplicaSet (``resolveControllerRef``); ``pkg/controller/deployment/
deployment_controller.go`` ``deletePod``/``getDeploymentForPod`` the Deployment of the pod's
ReplicaSet and ``addReplicaSet`` its Deployment; ``pkg/controller/daemon/daemon_controller.go``
``addNode``/``updateNode`` re-check every DaemonSet; ``pkg/controller/endpoint/
endpoints_controller.go`` ``addPod``/``updatePod`` enqueue the pod's Services; the pod lister a
sync reads is filtered by controller ref (``controller.FilterActivePods`` over
``rsc.podLister.Pods(ns)``, which upstream's indexer serves without a scan of every pod).
"""

from __future__ import annotations

import copy

import pytest
import yaml

from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.controllers.network import endpoints
from gpusched.cluster.controllers.nodes import nodepool
from gpusched.cluster.controllers.workloads import daemonset, deployment, job, replicaset
from gpusched.cluster.apiserver.view import View

from .builders import apply, join, pod, pool
from .test_work_queues import deployment_yaml, job_yaml


def _service(name: str, app: str, namespace: str = "default") -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Service",
                           "metadata": {"name": name, "namespace": namespace},
                           "spec": {"selector": {"app": app}, "ports": [{"port": 80}]}})


def _namespace(name: str) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def _daemonset(name: str) -> str:
    labels = {"app": name}
    return yaml.safe_dump({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
                           "spec": {"selector": {"matchLabels": labels},
                                    "template": {"metadata": {"labels": labels},
                                                 "spec": {"containers": [{"name": "c",
                                                                          "image": "x"}]}}}})


@pytest.fixture
def furnished(cluster):
    """Two nodes of pool ``gpu``, one of pool ``cpu``; a Deployment with a Service, a Service
    selecting nothing, a Job, a DaemonSet, a bare pod; a Service in another namespace."""
    apply(cluster, join(pool(count=2, gpus=8), pool("cpu", gpus=0), _namespace("other"),
                        deployment_yaml("web", 2, "30d"), _service("web", "web"),
                        job_yaml("train", "30d"), _daemonset("agent"),
                        pod("bare", gpus=1, labels={"app": "web"}),
                        pod("elsewhere", namespace="other", labels={"app": "db"}),
                        _service("db", "db", "other"), _service("idle", "nothing")))
    return cluster


def _pod_of(view: View, owner_kind: str, owner_prefix: str) -> tuple[str, str, str]:
    for key, body in sorted(view.objects.items()):
        refs = body["metadata"].get("ownerReferences") or []
        if key[0] == "Pod" and any(r["kind"] == owner_kind and r["name"].startswith(owner_prefix)
                                   for r in refs):
            return key
    raise AssertionError(f"no pod of {owner_kind} {owner_prefix}* among {sorted(view.objects)}")


def _replicaset_key(view: View) -> tuple[str, str, str]:
    return next(k for k in sorted(view.objects) if k[0] == "ReplicaSet")


# (case id, the controller's queue, the changed keys (from the view), the keys it enqueues)
QUEUE_CASES = [
    ("replicaset-pod-enqueues-its-replicaset", replicaset.QUEUE,
     lambda v: {_pod_of(v, "ReplicaSet", "web-")}, lambda v: {_replicaset_key(v)}),
    ("replicaset-bare-pod-enqueues-nothing", replicaset.QUEUE,
     lambda v: {("Pod", "default", "bare")}, lambda v: set()),
    ("deployment-pod-enqueues-the-deployment-of-its-replicaset", deployment.QUEUE,
     lambda v: {_pod_of(v, "ReplicaSet", "web-")}, lambda v: {("Deployment", "default", "web")}),
    ("deployment-replicaset-enqueues-its-deployment", deployment.QUEUE,
     lambda v: {_replicaset_key(v)}, lambda v: {("Deployment", "default", "web")}),
    ("job-pod-enqueues-its-job", job.QUEUE,
     lambda v: {_pod_of(v, "Job", "train")}, lambda v: {("Job", "default", "train")}),
    ("daemonset-pod-enqueues-its-daemonset", daemonset.QUEUE,
     lambda v: {_pod_of(v, "DaemonSet", "agent")}, lambda v: {("DaemonSet", "default", "agent")}),
    ("nodepool-node-enqueues-its-pool", nodepool.QUEUE,
     lambda v: {("Node", "", "gpu-1")}, lambda v: {("NodePool", "", "gpu")}),
    ("nodepool-unowned-node-enqueues-nothing", nodepool.QUEUE,
     lambda v: {("Node", "", "not-a-pool-node")}, lambda v: {("NodePool", "", "cpu"),
                                                             ("NodePool", "", "gpu")}),
    ("endpoints-pod-enqueues-the-services-of-its-namespace-only", endpoints.QUEUE,
     lambda v: {("Pod", "other", "elsewhere")}, lambda v: {("Service", "other", "db")}),
    ("endpoints-pod-enqueues-only-the-services-selecting-it", endpoints.QUEUE,
     lambda v: {_pod_of(v, "ReplicaSet", "web-")}, lambda v: {("Service", "default", "web")}),
    ("endpoints-edited-endpoints-enqueue-their-service", endpoints.QUEUE,
     lambda v: {("Endpoints", "default", "web")}, lambda v: {("Service", "default", "web")}),
    ("endpoints-slice-enqueues-the-service-its-label-names", endpoints.QUEUE,
     lambda v: {next(k for k in sorted(v.objects) if k[0] == "EndpointSlice" and k[1] == "other")},
     lambda v: {("Service", "other", "db")}),
]


@pytest.mark.parametrize("case", QUEUE_CASES, ids=[c[0] for c in QUEUE_CASES])
def test_a_change_enqueues_the_keys_its_informers_map_it_to(furnished, case):
    _id, queue, changed, expected = case
    view = furnished.view()
    changes = Changes(view, frozenset(changed(view)))
    assert not queue.everything(changes)
    assert queue.keys(changes) == expected(view)


def test_a_deleted_pod_still_enqueues_its_owner(furnished):
    """``deletePod`` reads the deleted object's controller ref (the journal keeps it)."""
    view = furnished.view()
    key = _pod_of(view, "ReplicaSet", "web-")
    view.delete(*_kind_name_ns(key))
    assert key not in view.objects
    assert replicaset.QUEUE.keys(Changes(view, frozenset({key}))) == {_replicaset_key(view)}


def test_a_deleted_node_enqueues_every_pool(furnished):
    """Any pool may want a node of that name back (``names`` / ``namePrefix`` are free)."""
    view = furnished.view()
    view.delete("Node", "gpu-1")
    assert nodepool.QUEUE.keys(Changes(view, frozenset({("Node", "", "gpu-1")}))) == \
        {("NodePool", "", "cpu"), ("NodePool", "", "gpu")}


def _kind_name_ns(key: tuple[str, str, str]) -> tuple[str, str, str]:
    return key[0], key[2], key[1]


# (case id, queue, changed key, whether every object of the queue's kind is re-queued)
RESYNC_CASES = [
    ("daemonset-node-change-rechecks-every-daemonset", daemonset.QUEUE, ("Node", "", "gpu-0"),
     True),
    ("replicaset-node-change-is-not-its-concern", replicaset.QUEUE, ("Node", "", "gpu-0"), False),
    ("replicaset-limitrange-retries-refused-creates", replicaset.QUEUE,
     ("LimitRange", "default", "l"), True),
    ("endpoints-limitrange-is-not-its-concern", endpoints.QUEUE, ("LimitRange", "default", "l"),
     False),
    ("nodepool-configmap-may-define-gpu-models", nodepool.QUEUE, ("ConfigMap", "default", "c"),
     True),
]


@pytest.mark.parametrize("case", RESYNC_CASES, ids=[c[0] for c in RESYNC_CASES])
def test_resync_kinds_requeue_everything(furnished, case):
    _id, queue, key, everything = case
    view = furnished.view()
    assert queue.everything(Changes(view, frozenset({key}))) is everything


class _PodListings:
    """Counts ``View.list("Pod", ...)`` calls while active."""

    def __init__(self, monkeypatch) -> None:
        self.calls: list[tuple[str, str | None]] = []
        original = View.list

        def counting(view, kind, namespace=None):
            if kind == "Pod":
                self.calls.append((kind, namespace))
            return original(view, kind, namespace)
        monkeypatch.setattr(View, "list", counting)


def _sync_replicaset(view: View) -> None:
    replicaset.reconcile_one(view, view.objects[_replicaset_key(view)])


def _sync_job(view: View) -> None:
    job.sync_job(view, view.get("Job", "train", "default"))


def _sync_daemonset(view: View) -> None:
    daemonset.reconcile_one(view, view.get("DaemonSet", "agent", "default"))


def _recreate_waits_for_old_pods(view: View) -> None:
    """An old ReplicaSet scaled to 0 whose status says no replicas, its pods still running."""
    scaled_down = copy.deepcopy(view.objects[_replicaset_key(view)])
    scaled_down["spec"]["replicas"] = scaled_down["status"]["replicas"] = 0
    assert deployment._old_pods_running(view, [scaled_down])


# (case id, one sync of one object on the converged view)
SYNC_CASES = [
    ("replicaset-sync", _sync_replicaset),
    ("job-sync", _sync_job),
    ("daemonset-sync", _sync_daemonset),
    ("deployment-recreate-old-pods-running", _recreate_waits_for_old_pods),
]


@pytest.mark.parametrize("case", SYNC_CASES, ids=[c[0] for c in SYNC_CASES])
def test_one_sync_reads_its_pods_through_the_owner_index(furnished, monkeypatch, case):
    """Before: ``owned_pods`` listed the namespace's pods per owner, and the Recreate check every
    pod of the cluster, on every change that enqueued one object."""
    _id, sync = case
    view = furnished.view()
    before = copy.deepcopy(view.objects)
    listings = _PodListings(monkeypatch)
    sync(view)
    assert listings.calls == []
    assert view.objects == before          # the view was converged: the sync changed nothing


def test_a_nodepool_pass_finds_its_nodes_through_the_owner_index(furnished, monkeypatch):
    """Before: each pool's pass listed every Node of the cluster to find the ones it owns."""
    view = furnished.view()
    listed: list[str] = []
    original = View.list
    monkeypatch.setattr(View, "list", lambda v, kind, namespace=None:
                        listed.append(kind) or original(v, kind, namespace))
    nodepool.reconcile(view)
    assert "Node" not in listed
    assert sorted(k[2] for k in view.objects if k[0] == "Node") == ["cpu-1", "gpu-1", "gpu-2"]


def test_a_relabelled_pod_enqueues_the_service_whose_endpoints_list_it(furnished):
    """``updatePod`` enqueues the Services of the old labels too; the Endpoints stand for them."""
    view = furnished.view()
    key = _pod_of(view, "ReplicaSet", "web-")
    relabelled = copy.deepcopy(view.objects[key])
    relabelled["metadata"]["labels"] = {"app": "moved"}
    view.update(relabelled)
    changes = Changes(view, frozenset({key}))
    assert endpoints.QUEUE.keys(changes) == {("Service", "default", "web")}
    endpoints.reconcile(view, changes)
    listed = {a["targetRef"]["name"] for subset in view.get("Endpoints", "web", "default")["subsets"]
              for a in subset.get("addresses", [])}
    assert key[2] not in listed and listed


# (case id, the changed pod, the Services synced)
SYNCED_CASES = [
    ("pod-in-another-namespace", lambda v: ("Pod", "other", "elsewhere"), ["db"]),
    ("deployment-pod", lambda v: _pod_of(v, "ReplicaSet", "web-"), ["web"]),
]


@pytest.mark.parametrize("case", SYNCED_CASES, ids=[c[0] for c in SYNCED_CASES])
def test_a_pod_change_syncs_only_the_services_that_select_it(furnished, monkeypatch, case):
    """Before: the endpoints controller ran its full pass (every Service of every namespace)
    whenever a pod changed in a namespace with a selector Service."""
    _id, changed, expected = case
    view = furnished.view()
    synced: list[str] = []
    original = endpoints._sync
    monkeypatch.setattr(endpoints, "_sync",
                        lambda v, service: synced.append(service["metadata"]["name"])
                        or original(v, service))
    endpoints.reconcile(view, Changes(view, frozenset({changed(view)})))
    assert synced == expected


def test_a_deleted_service_loses_its_endpoints_on_the_work_queue(furnished):
    view = furnished.view()
    view.delete("Service", "db", "other")
    endpoints.reconcile(view, Changes(view, frozenset({("Service", "other", "db")})))
    assert view.get("Endpoints", "db", "other") is None
    assert not [k for k in view.objects if k[0] == "EndpointSlice" and k[1] == "other"]
    assert view.get("Endpoints", "web", "default") is not None     # another Service's stay
