"""Deployment rollouts and ReplicaSet scale-down as kube-controller-manager does them.

Each case names the upstream function (kubernetes pkg/controller/deployment/{rolling.go,
sync.go,recreate.go,progress.go,util/deployment_util.go}, pkg/controller/controller_utils.go,
pkg/controller/replicaset/replica_set.go) and, where one exists, its upstream test.
"""

from __future__ import annotations

import pytest
import yaml

from gpusched.cluster.controllers.workloads import deployment_util as dc
from gpusched.cluster.controllers.workloads.replicaset import pods_to_delete

from .builders import apply, join, pool


def deploy(name: str = "web", replicas: int = 3, gpus: int = 1, image: str = "v1",
           strategy: dict | None = None, **spec) -> str:
    container = {"name": "c", "image": image}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [container]}}, **spec}}
    if strategy is not None:
        body["spec"]["strategy"] = strategy
    return yaml.safe_dump(body)


def sets(cluster) -> dict[str, tuple[int, str]]:
    """image -> (spec.replicas, revision) of every ReplicaSet."""
    return {rs["spec"]["template"]["spec"]["containers"][0]["image"]:
            (rs["spec"]["replicas"], rs["metadata"]["annotations"][dc.ANN_REVISION])
            for rs in cluster.get("rs")}


def phases(cluster) -> list[tuple[str, str]]:
    return sorted((p["spec"]["containers"][0]["image"], p["status"]["phase"])
                  for p in cluster.get("pods"))


def condition(cluster, type_: str, name: str = "web") -> tuple[str, str]:
    status = cluster.get("deploy", [name])[0]["status"]
    cond = next(c for c in status["conditions"] if c["type"] == type_)
    return cond["status"], cond["reason"]


# ---- deployment_util.go: ResolveFenceposts, MaxSurge, MaxUnavailable, NewRSNewReplicas ---------

@pytest.mark.parametrize("surge, unavailable, desired, expected", [
    pytest.param(None, None, 3, (1, 0), id="defaults-25%-of-3-surge-up-unavailable-down"),
    pytest.param(None, None, 4, (1, 1), id="defaults-25%-of-4"),
    pytest.param(None, None, 10, (3, 2), id="defaults-25%-of-10"),
    pytest.param(0, 0, 5, (0, 1), id="TestResolveFenceposts-both-zero-unavailable-1"),
    pytest.param("0%", "0%", 5, (0, 1), id="TestResolveFenceposts-zero-percent"),
    pytest.param("50%", "50%", 1, (1, 0), id="TestResolveFenceposts-50%-of-1"),
    pytest.param(2, "10%", 5, (2, 0), id="TestResolveFenceposts-int-and-percent"),
    pytest.param("100%", 0, 3, (3, 0), id="surge-100%"),
])
def test_resolve_fenceposts(surge, unavailable, desired, expected):
    # deployment_util.go ResolveFenceposts / GetScaledValueFromIntOrPercent
    assert dc.resolve_fenceposts(surge, unavailable, desired) == expected


def _d(replicas: int, surge=None, unavailable=None, type_: str = "RollingUpdate") -> dict:
    strategy: dict = {"type": type_}
    if type_ == "RollingUpdate":
        strategy["rollingUpdate"] = {k: v for k, v in (("maxSurge", surge),
                                                       ("maxUnavailable", unavailable)) if v is not None}
    return {"metadata": {"name": "d"}, "spec": {"replicas": replicas, "strategy": strategy}}


@pytest.mark.parametrize("body, expected", [
    pytest.param(_d(10, 1, 2), 2, id="TestMaxUnavailable-maxUnavailable-less-than-replicas"),
    pytest.param(_d(5, 0, 10), 5, id="TestMaxUnavailable-capped-at-replicas"),
    pytest.param(_d(0, 0, 1), 0, id="TestMaxUnavailable-zero-replicas"),
    pytest.param(_d(10, 0, 0), 1, id="TestMaxUnavailable-both-zero"),
    pytest.param(_d(10, type_="Recreate"), 0, id="TestMaxUnavailable-recreate"),
])
def test_max_unavailable(body, expected):
    assert dc.max_unavailable(body) == expected


@pytest.mark.parametrize("body, set_sizes, new_size, expected", [
    pytest.param(_d(1, 1), [5, 0], 0, 0, id="TestNewRSNewReplicas-surge-exhausted"),
    pytest.param(_d(3, 1), [3, 0], 0, 1, id="surge-1-of-3"),
    pytest.param(_d(3, "100%"), [3, 0], 0, 3, id="surge-100%-whole-new-set"),
    pytest.param(_d(3, type_="Recreate"), [3, 0], 0, 3, id="TestNewRSNewReplicas-recreate"),
    pytest.param(_d(4, 1, 1), [3, 1], 1, 2, id="rolling-step-after-old-scaled-down"),
])
def test_new_rs_new_replicas(body, set_sizes, new_size, expected):
    rss = [{"spec": {"replicas": n}, "metadata": {}} for n in set_sizes]
    assert dc.new_rs_new_replicas(body, rss, new_size) == expected


def _rs(name: str, replicas: int, created: str = "2026-01-01T00:00:00Z", available: int = 0) -> dict:
    return {"metadata": {"name": name, "creationTimestamp": created},
            "spec": {"replicas": replicas}, "status": {"availableReplicas": available}}


@pytest.mark.parametrize("new, old, expected", [
    pytest.param(_rs("new", 0), [_rs("a", 3)], "a", id="the-only-active-set"),
    pytest.param(_rs("new", 0), [_rs("a", 0)], "new", id="none-active-the-new-set"),
    pytest.param(None, [_rs("a", 0, "2026-01-01T00:00:00Z"), _rs("b", 0, "2026-01-02T00:00:00Z")],
                 "b", id="none-active-no-new-set-the-newest-old"),
    pytest.param(_rs("new", 1), [_rs("a", 2)], None, id="several-active-none"),
    pytest.param(None, [], None, id="no-sets-none"),
])
def test_find_active_or_latest(new, old, expected):
    # deployment_util.go FindActiveOrLatest
    from gpusched.cluster.controllers.workloads import deployment
    sets = ([new] if new is not None else []) + old
    active = [rs for rs in sets if rs["spec"]["replicas"] > 0]
    found = deployment._find_active_or_latest(new, old, sets, active)
    assert (found or {}).get("metadata", {}).get("name") == expected


@pytest.mark.parametrize("new, saturated", [
    pytest.param(_rs("new", 3, available=3), True, id="all-wanted-and-available"),
    pytest.param(_rs("new", 3, available=2), False, id="not-all-available"),
    pytest.param(_rs("new", 2, available=2), False, id="fewer-than-wanted"),
    pytest.param(None, False, id="no-new-set"),
])
def test_is_saturated(new, saturated):
    # deployment_util.go IsSaturated (sync.go scale then scales the old sets to 0)
    from gpusched.cluster.controllers.workloads import deployment
    assert deployment._is_saturated(_d(3), new) is saturated


# ---- rolling.go rolloutRolling on a cluster ----------------------------------------------------

def test_surge_pod_on_full_gpu_cluster_stays_pending_and_old_pods_keep_running(cluster):
    # replicas 3: maxSurge 1 (25% up), maxUnavailable 0 (25% down): reconcileOldReplicaSets may
    # not scale down while the new pod is unavailable (rolling.go maxScaledDown <= 0).
    apply(cluster, join(pool(count=1, gpus=3), deploy(replicas=3)))
    apply(cluster, deploy(replicas=3, image="v2"))
    assert sets(cluster) == {"v1": (3, "1"), "v2": (1, "2")}
    assert phases(cluster) == [("v1", "Running")] * 3 + [("v2", "Pending")]
    assert condition(cluster, "Available") == ("True", "MinimumReplicasAvailable")
    # sync.go syncRolloutStatus: updatedReplicas 0 -> 1 is progress (DeploymentProgressing)
    assert condition(cluster, "Progressing") == ("True", "ReplicaSetUpdated")
    status = cluster.get("deploy", ["web"])[0]["status"]
    assert (status["replicas"], status["updatedReplicas"], status["availableReplicas"],
            status["unavailableReplicas"]) == (4, 1, 3, 1)
    # progress.go DeploymentTimedOut: lastUpdateTime + progressDeadlineSeconds (600) < now
    cluster.advance(600)
    assert condition(cluster, "Progressing") == ("True", "ReplicaSetUpdated")
    cluster.advance(1)
    assert condition(cluster, "Progressing") == ("False", "ProgressDeadlineExceeded")
    cond = next(c for c in cluster.get("deploy", ["web"])[0]["status"]["conditions"]
                if c["type"] == "Progressing")
    assert cond["message"].endswith("has timed out progressing.")
    assert phases(cluster) == [("v1", "Running")] * 3 + [("v2", "Pending")]


@pytest.mark.parametrize("replicas, gpus, strategy, expected_events", [
    pytest.param(4, 4, None, [
        "Scaled up replica set NEW from 0 to 1", "Scaled down replica set OLD from 4 to 3",
        "Scaled up replica set NEW from 1 to 2", "Scaled down replica set OLD from 3 to 2",
        "Scaled up replica set NEW from 2 to 3", "Scaled down replica set OLD from 2 to 1",
        "Scaled up replica set NEW from 3 to 4", "Scaled down replica set OLD from 1 to 0"],
        id="rolling.go-surge-1-unavailable-1-on-a-full-node"),
    pytest.param(2, 4, {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "100%",
                                                                   "maxUnavailable": 0}}, [
        "Scaled up replica set NEW from 0 to 2", "Scaled down replica set OLD from 2 to 0"],
        id="rolling.go-surge-100%-blue-green"),
    pytest.param(2, 4, {"type": "Recreate"}, [
        "Scaled down replica set OLD from 2 to 0", "Scaled up replica set NEW from 0 to 2"],
        id="recreate.go-rolloutRecreate-old-first"),
])
def test_rollout_steps(cluster, replicas, gpus, strategy, expected_events):
    apply(cluster, join(pool(count=1, gpus=gpus), deploy(replicas=replicas, strategy=strategy)))
    [old] = [rs["metadata"]["name"] for rs in cluster.get("rs")]
    before = len(cluster.events())
    apply(cluster, deploy(replicas=replicas, image="v2", strategy=strategy))
    # Each old pod holds its GPUs for its 30 s grace period (Terminating) before a new one fits.
    cluster.advance(30 * replicas)
    [new] = [rs["metadata"]["name"] for rs in cluster.get("rs") if rs["metadata"]["name"] != old]
    messages = [e["message"].replace(new, "NEW").replace(old, "OLD")
                for e in cluster.events()[before:] if e["reason"] == "ScalingReplicaSet"]
    assert messages == expected_events
    assert phases(cluster) == [("v2", "Running")] * replicas
    assert condition(cluster, "Progressing") == ("True", "NewReplicaSetAvailable")


def test_recreate_waits_for_old_pods_to_be_gone(cluster):
    # recreate.go oldPodsRunning: a new pod never starts while an old one still runs
    apply(cluster, join(pool(count=1, gpus=2), deploy(replicas=2, strategy={"type": "Recreate"})))
    apply(cluster, deploy(replicas=2, image="v2", strategy={"type": "Recreate"}))
    # Terminating old pods still count as running: no new ReplicaSet during their grace period.
    assert sets(cluster) == {"v1": (0, "1")}
    cluster.advance(30)
    assert sets(cluster) == {"v1": (0, "1"), "v2": (2, "2")}


def test_undo_by_old_template_reuses_replicaset_with_next_revision(cluster):
    # sync.go getNewReplicaSet + deployment_util.go SetNewReplicaSetAnnotations:
    # the old set becomes revision 3 and remembers 1 in revision-history
    apply(cluster, join(pool(count=1, gpus=4), deploy(replicas=2)))
    apply(cluster, deploy(replicas=2, image="v2"))
    cluster.advance(60)       # old pods' grace periods, one rolling step each
    apply(cluster, deploy(replicas=2, image="v1"))
    cluster.advance(60)
    assert sets(cluster) == {"v1": (2, "3"), "v2": (0, "2")}
    v1 = next(rs for rs in cluster.get("rs") if rs["spec"]["replicas"] == 2)
    assert v1["metadata"]["annotations"][dc.ANN_REVISION_HISTORY] == "1"
    assert cluster.get("deploy", ["web"])[0]["metadata"]["annotations"][dc.ANN_REVISION] == "3"


def test_revision_history_limit_deletes_oldest_empty_sets(cluster):
    # sync.go cleanupDeployment: ReplicaSetsByRevision, oldest first, beyond the limit
    apply(cluster, join(pool(count=1, gpus=4), deploy(replicas=1, revisionHistoryLimit=1)))
    for image in ("v2", "v3", "v4"):
        apply(cluster, deploy(replicas=1, image=image, revisionHistoryLimit=1))
    assert sets(cluster) == {"v3": (0, "3"), "v4": (1, "4")}


def test_change_cause_annotation_is_copied_to_the_new_replicaset(cluster):
    # deployment_util.go copyDeploymentAnnotationsToReplicaSet (skips last-applied-configuration)
    body = yaml.safe_load(deploy(replicas=1))
    body["metadata"]["annotations"] = {"kubernetes.io/change-cause": "first"}
    apply(cluster, join(pool(count=1, gpus=1), yaml.safe_dump(body)))
    [rs] = cluster.get("rs")
    annotations = rs["metadata"]["annotations"]
    assert annotations["kubernetes.io/change-cause"] == "first"
    assert "kubectl.kubernetes.io/last-applied-configuration" not in annotations
    assert annotations[dc.ANN_DESIRED] == "1" and annotations[dc.ANN_MAX] == "2"


def test_scaling_mid_rollout_is_proportional(cluster):
    # sync.go scale + deployment_util.go GetProportion: v2 asks for more GPUs than any node has,
    # so the rollout sticks at 8 old + 5 new (surge 3, unavailable 2). 10 -> 15: allowed
    # 15+4=19, 6 to add; old gets round(8*19/13)-8=4, new round(5*19/13)-5=2
    apply(cluster, join(pool(count=1, gpus=10), deploy(replicas=10)))
    apply(cluster, deploy(replicas=10, image="v2", gpus=20))
    assert sets(cluster) == {"v1": (8, "1"), "v2": (5, "2")}
    apply(cluster, deploy(replicas=15, image="v2", gpus=20))
    assert sets(cluster) == {"v1": (12, "1"), "v2": (7, "2")}


# ---- controller_utils.go ActivePodsWithRanks via replica_set.go getPodsToDelete ----------------

NOW = 10_000.0


def _pod(name: str, node: str = "n1", phase: str = "Running", ready: bool = True,
         created: int = 0, ready_at: int | None = None, restarts: int = 0, cost: str | None = None,
         uid: str = "") -> dict:
    from gpusched.cluster.apiserver.store import rfc3339
    conditions = [{"type": "Ready", "status": "True" if ready else "False",
                   "lastTransitionTime": rfc3339(ready_at if ready_at is not None else created)}]
    meta = {"name": name, "uid": uid or name, "creationTimestamp": rfc3339(created)}
    if cost is not None:
        meta["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": cost}
    return {"metadata": meta, "spec": {"nodeName": node},
            "status": {"phase": phase, "conditions": conditions,
                       "containerStatuses": [{"restartCount": restarts}]}}


@pytest.mark.parametrize("pods, expected_first", [
    pytest.param([_pod("a"), _pod("b", node="")], "b", id="1-unassigned-before-assigned"),
    pytest.param([_pod("a"), _pod("b", phase="Pending", ready=False)], "b",
                 id="2-pending-before-running"),
    pytest.param([_pod("a"), _pod("b", ready=False)], "b", id="3-not-ready-before-ready"),
    pytest.param([_pod("a", cost="10"), _pod("b", cost="-5")], "b",
                 id="4-lower-pod-deletion-cost-first"),
    pytest.param([_pod("a", node="n1"), _pod("b", node="n2"), _pod("c", node="n2")], "b",
                 id="5-doubled-up-node-first"),
    pytest.param([_pod("a", ready_at=10), _pod("b", ready_at=9000)], "b",
                 id="6-ready-for-less-time-first"),
    pytest.param([_pod("a", ready_at=9000, restarts=0), _pod("b", ready_at=9000, restarts=3)], "b",
                 id="7-same-ready-time-more-restarts-first"),
    pytest.param([_pod("a", created=10, ready_at=9000), _pod("b", created=9000, ready_at=9000)], "b",
                 id="8-newer-first"),
    pytest.param([_pod("b", created=9000, uid="u2"), _pod("a", created=9001, uid="u1")], "a",
                 id="8-same-log2-bucket-lower-uid-first"),
])
def test_scale_down_victim_order(pods, expected_first):
    # controller_utils.go ActivePodsWithRanks.Less (TestSortingActivePodsWithRanks)
    victims = pods_to_delete(pods, pods, 1, NOW)
    assert victims[0]["metadata"]["name"] == expected_first


def test_scale_down_deletes_the_pending_pod_first(cluster):
    # replica_set.go getPodsToDelete end to end: the Pending replica goes, Running ones stay
    apply(cluster, join(pool(count=1, gpus=2), deploy(replicas=3)))
    pending = [p["metadata"]["name"] for p in cluster.get("pods")
               if p["status"]["phase"] == "Pending"]
    assert len(pending) == 1
    cluster.scale("deploy", "web", 2)
    names = [p["metadata"]["name"] for p in cluster.get("pods")]
    assert len(names) == 2 and pending[0] not in names


# ---- DaemonSet updates (pkg/controller/daemon/update.go) ----------------------------------------

def daemonset(image: str = "a1", strategy: dict | None = None) -> str:
    body = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "template": {"metadata": {"labels": {"app": "agent"}},
                                  "spec": {"containers": [{"name": "a", "image": image}]}}}}
    if strategy is not None:
        body["spec"]["updateStrategy"] = strategy
    return yaml.safe_dump(body)


def agent_images(cluster) -> list[str]:
    return sorted(p["spec"]["containers"][0]["image"] for p in cluster.get("pods")
                  if p["metadata"]["labels"].get("app") == "agent")


def revisions(cluster) -> dict[str, int]:
    return {r["data"]["spec"]["template"]["spec"]["containers"][0]["image"]: r["revision"]
            for r in cluster.get("controllerrevisions")}


@pytest.mark.parametrize("strategy, images_after", [
    pytest.param(None, ["a2", "a2", "a2"], id="RollingUpdate-default-replaces-every-pod"),
    pytest.param({"type": "OnDelete"}, ["a1", "a1", "a1"], id="OnDelete-keeps-old-pods"),
])
def test_daemonset_template_change(cluster, strategy, images_after):
    apply(cluster, join(pool(count=3, gpus=0), daemonset(strategy=strategy)))
    before = {p["metadata"]["name"] for p in cluster.get("pods")}
    apply(cluster, daemonset("a2", strategy=strategy))
    cluster.advance(30)   # replaced pods terminate for their 30 s grace period
    assert agent_images(cluster) == images_after
    assert revisions(cluster) == {"a1": 1, "a2": 2}
    status = cluster.get("ds", ["agent"])[0]["status"]
    assert status.get("updatedNumberScheduled", 0) == images_after.count("a2")
    if images_after[0] == "a2":
        assert not before & {p["metadata"]["name"] for p in cluster.get("pods")}


def test_daemonset_rollback_raises_the_old_revision(cluster):
    # update.go constructHistory/dedupCurHistories: an equal template reuses its revision object
    apply(cluster, join(pool(count=2, gpus=0), daemonset()))
    apply(cluster, daemonset("a2"))
    apply(cluster, daemonset("a1"))
    cluster.advance(30)
    assert revisions(cluster) == {"a1": 3, "a2": 2}
    pod_hashes = {p["metadata"]["labels"]["controller-revision-hash"] for p in cluster.get("pods")}
    [a1] = [r for r in cluster.get("controllerrevisions") if r["revision"] == 3]
    assert pod_hashes == {a1["metadata"]["labels"]["controller-revision-hash"]}


def test_daemonset_rollout_restart_recreates_every_pod(cluster):
    # objectrestarter.go: kubectl.kubernetes.io/restartedAt on the template (the operator's hook)
    from gpusched.cluster import rollout
    apply(cluster, join(pool(count=2, gpus=0), daemonset()))
    before = {p["metadata"]["uid"] for p in cluster.get("pods")}
    cluster.write(lambda view: rollout.restart(view, view.get("DaemonSet", "agent", "default")))
    cluster.advance(30)
    after = {p["metadata"]["uid"] for p in cluster.get("pods")}
    assert len(after) == 2 and not before & after
