"""kubectl drain's pod filters and taint's refusals (``cluster.nodes``), as tables.

Drain: k8s.io/kubectl/pkg/drain/filters.go (daemonSetFilter, unreplicatedFilter,
localStorageFilter; "Any finished pod can be removed") and kubectl/pkg/cmd/drain/drain.go RunDrain
(``unable to drain node ... continuing command...``). Taint: kubectl/pkg/cmd/taint (deleteTaints's
``taint "k:e" not found``; ``already has k taint(s) with same effect(s) and --overwrite is false``).
"""

from __future__ import annotations

from typing import Any

import pytest

from gpusched.cluster.nodes import (DAEMON_SET_FATAL, LOCAL_STORAGE_FATAL, UNMANAGED_FATAL,
                                    DrainOptions, drain_refused, pods_for_deletion)
from gpusched.errors import GpuschedError
from gpusched.objects.types import Taint

from .builders import apply, pool


def make_pod(name: str, owner: str = "ReplicaSet", phase: str = "Running",
             emptydir: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if owner:
        meta["ownerReferences"] = [{"kind": owner, "name": "o", "controller": True}]
    spec: dict[str, Any] = {"nodeName": "n"}
    if emptydir:
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


FILTER_CASES = [
    # (id, pod, options, evicted, DaemonSet pods left alone, errors)
    ("replicated-pod-goes", make_pod("a"), DrainOptions(), ["a"], [], {}),
    ("daemonset-pod-refuses", make_pod("a", owner="DaemonSet"), DrainOptions(), [],
     ["default/a"], {DAEMON_SET_FATAL: ["default/a"]}),
    ("daemonset-pod-ignored", make_pod("a", owner="DaemonSet"),
     DrainOptions(ignore_daemonsets=True), [], ["default/a"], {}),
    ("finished-daemonset-pod-goes", make_pod("a", owner="DaemonSet", phase="Succeeded"),
     DrainOptions(), ["a"], [], {}),
    ("daemonset-pod-with-emptydir-is-a-daemonset-pod", make_pod("a", owner="DaemonSet", emptydir=True),
     DrainOptions(ignore_daemonsets=True), [], ["default/a"], {}),
    ("unmanaged-pod-refuses", make_pod("a", owner=""), DrainOptions(), [], [],
     {UNMANAGED_FATAL: ["default/a"]}),
    ("unmanaged-pod-goes-with-force", make_pod("a", owner=""), DrainOptions(force=True), ["a"], [], {}),
    ("finished-unmanaged-pod-goes", make_pod("a", owner="", phase="Failed"), DrainOptions(), ["a"],
     [], {}),
    ("emptydir-pod-refuses", make_pod("a", emptydir=True), DrainOptions(), [], [],
     {LOCAL_STORAGE_FATAL: ["default/a"]}),
    ("emptydir-pod-goes-with-delete-emptydir-data", make_pod("a", emptydir=True),
     DrainOptions(delete_emptydir_data=True), ["a"], [], {}),
    ("finished-emptydir-pod-goes", make_pod("a", emptydir=True, phase="Succeeded"), DrainOptions(),
     ["a"], [], {}),
    # filters.go makeFilters: localStorageFilter before unreplicatedFilter
    ("unmanaged-emptydir-pod-is-refused-for-local-storage", make_pod("a", owner="", emptydir=True),
     DrainOptions(), [], [], {LOCAL_STORAGE_FATAL: ["default/a"]}),
    ("unmanaged-emptydir-pod-with-delete-emptydir-data-is-refused-as-unmanaged",
     make_pod("a", owner="", emptydir=True), DrainOptions(delete_emptydir_data=True), [], [],
     {UNMANAGED_FATAL: ["default/a"]}),
    ("unmanaged-emptydir-pod-with-force-is-refused-for-local-storage",
     make_pod("a", owner="", emptydir=True), DrainOptions(force=True), [], [],
     {LOCAL_STORAGE_FATAL: ["default/a"]}),
]


@pytest.mark.parametrize("pod,options,evicted,daemon,errors",
                         [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES])
def test_pod_filters(pod, options, evicted, daemon, errors):
    found = pods_for_deletion([pod], options)
    assert [p["metadata"]["name"] for p in found.pods] == evicted
    assert (found.daemon_set_pods, found.errors) == (daemon, errors)


def test_refusals_keep_the_order_first_met_and_the_daemonset_refusal_comes_last():
    pods = [make_pod("ds", owner="DaemonSet"), make_pod("local", emptydir=True),
            make_pod("bare", owner=""), make_pod("bare2", owner=""), make_pod("web")]
    found = pods_for_deletion(pods, DrainOptions())
    assert list(found.errors.items()) == [(LOCAL_STORAGE_FATAL, ["default/local"]),
                                          (UNMANAGED_FATAL, ["default/bare", "default/bare2"]),
                                          (DAEMON_SET_FATAL, ["default/ds"])]
    assert [p["metadata"]["name"] for p in found.pods] == ["web"]


REFUSAL_CASES = [
    ("one-reason", {UNMANAGED_FATAL: ["default/a", "default/b"]},
     'unable to drain node "n" due to error: cannot delete Pods that declare no controller '
     "(use --force to override): default/a, default/b, continuing command..."),
    ("several-reasons-bracketed", {LOCAL_STORAGE_FATAL: ["default/a"], DAEMON_SET_FATAL: ["default/d"]},
     'unable to drain node "n" due to error: [cannot delete Pods with local storage (use '
     "--delete-emptydir-data to override): default/a, cannot delete DaemonSet-managed Pods (use "
     "--ignore-daemonsets to ignore): default/d], continuing command..."),
]


@pytest.mark.parametrize("errors,message", [c[1:] for c in REFUSAL_CASES],
                         ids=[c[0] for c in REFUSAL_CASES])
def test_drain_refusal_message(errors, message):
    assert str(drain_refused("n", errors)) == message


TAINT_REFUSALS = [
    ("remove-missing-key", [], [("gone", None)], 'taint "gone" not found'),
    ("remove-missing-key-and-effect", [], [("dedicated", "NoExecute")],
     'taint "dedicated:NoExecute" not found'),
    ("add-same-key-and-effect-without-overwrite", [Taint("dedicated", "other", "NoSchedule")], [],
     "node gpu-1 already has dedicated taint(s) with same effect(s) and --overwrite is false"),
]


@pytest.mark.parametrize("add,remove,message", [c[1:] for c in TAINT_REFUSALS],
                         ids=[c[0] for c in TAINT_REFUSALS])
def test_taint_refusals_change_nothing(cluster, add, remove, message):
    apply(cluster, pool(count=1, gpus=0))
    cluster.taint("gpu-1", [Taint("dedicated", "gpu", "NoSchedule")], [])
    with pytest.raises(GpuschedError) as err:
        cluster.taint("gpu-1", add, remove)
    assert str(err.value) == message
    assert cluster.get("nodes")[0]["spec"]["taints"] == [
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]


def test_taint_overwrite_replaces_and_no_execute_gets_time_added(cluster):
    apply(cluster, pool(count=1, gpus=0))
    cluster.taint("gpu-1", [Taint("dedicated", "gpu", "NoSchedule")], [])
    assert cluster.taint("gpu-1", [Taint("dedicated", "other", "NoSchedule"),
                                   Taint("down", "", "NoExecute")], [], overwrite=True) == \
        "node/gpu-1 tainted"
    taints = cluster.get("nodes")[0]["spec"]["taints"]
    assert taints[0] == {"key": "dedicated", "value": "other", "effect": "NoSchedule"}
    assert taints[1]["key"] == "down" and "value" not in taints[1] and "timeAdded" in taints[1]
    assert cluster.taint("gpu-1", [], [("dedicated", None), ("down", "NoExecute")]) == \
        "node/gpu-1 untainted"
    assert "taints" not in cluster.get("nodes")[0]["spec"]
