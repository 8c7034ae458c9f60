"""controllers.registry: a controller of one kind's objects alone (``_of_kind``: Deployments,
ReplicaSets, DaemonSets, HPAs, VPAs, ClusterPolicies) runs while the view holds an object of
its kind or one of them changed, and is skipped (its module not even imported) otherwise; what
a command imports is held by tests/cli/test_startup_imports.py."""

from __future__ import annotations

from typing import Any

import pytest

from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.controllers import registry
from gpusched.cluster.controllers.autoscaling import autoscaler
from gpusched.cluster.controllers.workloads import deployment

from .builders import apply, pod, pool
from .test_work_queues import deployment_yaml

WEB = ("Deployment", "default", "web")
BARE = ("Pod", "default", "bare")
# case -> (a Deployment in the view, the changed keys (None: a full pass), runs)
CASES: dict[str, tuple[bool, set[Any] | None, bool]] = {
    "none-full-pass": (False, None, False),
    "none-other-kind-changed": (False, {BARE}, False),
    "none-left-after-a-delete": (False, {WEB}, True),
    "one-full-pass": (True, None, True),
    "one-other-kind-changed": (True, {BARE}, True),
}


@pytest.mark.parametrize("present,keys,runs", CASES.values(), ids=CASES.keys())
def test_a_controller_of_one_kind_runs_while_its_kind_is_there(
        cluster: Any, monkeypatch: pytest.MonkeyPatch, present: bool, keys: set[Any] | None,
        runs: bool) -> None:
    apply(cluster, pod("bare") + ("---\n" + deployment_yaml("web", 1, "30d") if present else ""))
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(deployment, "reconcile", lambda *args: calls.append(args))
    reconcile = registry._of_kind("Deployment", "workloads.deployment:reconcile")
    with cluster.store.reading():
        view = cluster._load()
        changes = None if keys is None else Changes(view, frozenset(keys))
        reconcile(view) if changes is None else reconcile(view, changes)
    assert [len(args) for args in calls] == ([1 if changes is None else 2] if runs else [])


def test_the_controllers_imported_when_needed() -> None:
    lazy = {d.name for d in registry.DESCRIPTORS
            if d.reconcile.__qualname__.startswith("_only_when")}
    assert lazy == {"gpu-operator", "horizontal-pod-autoscaler", "vpa-recommender", "deployment",
                    "replicaset", "daemonset", "statefulset", "cluster-autoscaler", "podgroup", "jobset",
                    "kueue-scheduler", "kueue-job", "kueue-jobset", "kueue-pods-ready", "kueue-topology-ungater"}


@pytest.mark.parametrize("autoscaled,runs", [(False, False), (True, True)],
                         ids=["fixed-pool", "autoscaled-pool"])
def test_the_cluster_autoscaler_runs_once_a_pool_is_autoscaled(
        cluster: Any, monkeypatch: pytest.MonkeyPatch, autoscaled: bool, runs: bool) -> None:
    scaling = {"minNodes": 1, "maxNodes": 3} if autoscaled else {}
    apply(cluster, pool("gpu", count=1, **scaling))
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(autoscaler, "reconcile", lambda *args: calls.append(args))
    with cluster.store.reading():
        registry.CONTROLLERS[[n for n, _ in registry.CONTROLLERS].index("cluster-autoscaler")][1](
            cluster._load())
    assert len(calls) == (1 if runs else 0)
