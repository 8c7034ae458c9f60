"""Preemption applied end to end: victims marked, evented and deleted gracefully, owned ones
recreated, the preemptor nominated, then bound once the victims' grace period is over."""

from __future__ import annotations

import copy

import yaml

from .builders import apply, join, node_of, pod, pool, priority_class


def low_deployment(replicas: int = 2) -> str:
    return yaml.safe_dump({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "low"},
                           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "low"}},
                                    "template": {"metadata": {"labels": {"app": "low"}}, "spec": {
                                        "priorityClassName": "low", "containers": [{
                                            "name": "c", "image": "x",
                                            "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}})


CLASSES = join(priority_class("high", 1000), priority_class("low", 10),
               priority_class("never", 1000, policy="Never"))


def test_high_priority_pod_preempts_low_ones(cluster):
    apply(cluster, join(pool(count=1, gpus=2, model="T4"), CLASSES, low_deployment()))
    victims = {p["metadata"]["name"]: p["metadata"]["uid"] for p in cluster.get("pods")}
    apply(cluster, pod("urgent", gpus=2, priority_class="high"))
    # pkg/scheduler/framework/preemption/preemption.go prepareCandidate: victims get the
    # DisruptionTarget condition and a graceful delete; the preemptor waits Pending, nominated.
    urgent = cluster.get("pods", ["urgent"])[0]
    assert urgent["status"]["nominatedNodeName"] == "gpu-1" and "nodeName" not in urgent["spec"]
    for name in victims:
        body = cluster.get("pods", [name])[0]
        assert body["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:30Z"
        assert body["metadata"]["deletionGracePeriodSeconds"] == 30
        cond = next(c for c in body["status"]["conditions"] if c["type"] == "DisruptionTarget")
        assert (cond["reason"], cond["message"]) == (
            "PreemptionByScheduler", "default-scheduler: preempting to accommodate a higher "
            "priority pod")
    cluster.advance(29)
    assert node_of(cluster, "urgent") == ""
    cluster.advance(1)                     # the victims' grace period ends: they are gone
    urgent = cluster.get("pods", ["urgent"])[0]
    assert urgent["spec"]["nodeName"] == "gpu-1" and urgent["status"]["phase"] == "Running"
    events = cluster.events()
    preempted = [e for e in events if e["reason"] == "Preempted"]
    assert sorted(e["involvedObject"]["name"] for e in preempted) == sorted(victims)
    assert {e["message"] for e in preempted} == {
        f"Preempted by pod {urgent['metadata']['uid']} on node gpu-1"}
    pods = {p["metadata"]["name"]: p for p in cluster.get("pods", selector="app=low")}
    assert len(pods) == 2 and not set(pods) & set(victims)            # recreated by the RS
    for body in pods.values():
        cond = body["status"]["conditions"][0]
        assert (cond["type"], cond["status"], cond["reason"]) == ("PodScheduled", "False", "Unschedulable")
    order = [e["reason"] for e in events if e["involvedObject"]["name"] == "urgent"]
    assert order == ["FailedScheduling", "Scheduled", "Started"]


def test_never_policy_pod_does_not_preempt(cluster):
    apply(cluster, join(pool(count=1, gpus=2, model="T4"), CLASSES, low_deployment()))
    apply(cluster, pod("polite", gpus=2, priority_class="never"))
    assert node_of(cluster, "polite") == ""
    message = cluster.get("pods", ["polite"])[0]["status"]["conditions"][0]["message"]
    assert message == ("0/1 nodes are available: 1 Insufficient nvidia.com/gpu. no new claims to deallocate, preemption: not "
                       "eligible due to preemptionPolicy=Never.")
    assert all(p["status"]["phase"] == "Running" for p in cluster.get("pods", selector="app=low"))


def test_failed_scheduling_repeats_count_instead_of_duplicating(cluster):
    apply(cluster, join(pool(count=1, gpus=1, model="T4"), pod("big", gpus=4)))
    cluster.label("node", "gpu-1", {"x": "y"})      # a node change: the pod is retried
    cluster.label("pod", "big", {"a": "b"})         # nothing relevant: no retry
    failed = [e for e in cluster.events() if e["reason"] == "FailedScheduling"]
    assert len(failed) == 1 and failed[0]["count"] == 2


def test_preemption_prefers_node_without_pdb_violation(cluster):
    pdb = yaml.safe_dump({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                          "metadata": {"name": "protect"},
                          "spec": {"minAvailable": 1, "selector": {"matchLabels": {"keep": "yes"}}}})
    apply(cluster, join(pool(count=2, gpus=1, model="T4"), CLASSES, pdb,
                        pod("guarded", gpus=1, priority_class="low", labels={"keep": "yes"}),
                        pod("free", gpus=1, priority_class="low")))
    guarded_node = node_of(cluster, "guarded")
    apply(cluster, pod("urgent", gpus=1, priority_class="high"))
    nominated = cluster.get("pods", ["urgent"])[0]["status"]["nominatedNodeName"]
    assert nominated != guarded_node
    cluster.advance(30)                    # the victim's grace period
    assert node_of(cluster, "urgent") == nominated
    assert [p["metadata"]["name"] for p in cluster.get("pods")] == ["guarded", "urgent"]


def test_explain_and_node_devices(cluster):
    apply(cluster, join(pool(count=1, gpus=2, model="T4"), pod("a", gpus=1), pod("big", gpus=4)))
    devices = cluster.node_devices("gpu-1")
    uid = cluster.get("pods", ["a"])[0]["metadata"]["uid"]
    assert devices.holders == (uid,)
    explanation = cluster.explain("big")
    assert explanation.feasible == ()
    assert explanation.message.startswith("0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")
    running = cluster.explain("a")                 # a bound pod is explained as if pending
    assert running.feasible == ("gpu-1",)


def test_pending_nominated_pods_are_registered_with_the_scheduler(cluster):
    """A pending pod's status.nominatedNodeName (e.g. set by a secondary scheduler through the
    API) is handed to the scheduler, so it counts on that node for equal/lower-priority pods."""
    from gpusched.cluster.scheduling.cache import build_snapshot
    from gpusched.cluster.scheduling.profiles import make_scheduler

    apply(cluster, join(pool(count=1, gpus=8), pod("waiting", gpus=8, nodeSelector={"x": "y"})))

    def nominate(view):
        body = copy.deepcopy(view.get("Pod", "waiting", "default"))
        body["status"]["nominatedNodeName"] = "gpu-1"
        view.update(body)
    cluster.write(nominate, settle=False)

    view = cluster.view()
    snapshot, order = build_snapshot(view)
    with_order = make_scheduler(snapshot, view, order)
    assert [p.name for p in with_order.nominated.values()] == ["waiting"]
    assert next(iter(with_order.nominated.values())).nominated_node == "gpu-1"
    assert not make_scheduler(snapshot, view).nominated


def test_nominated_pods_keep_their_pod_info_between_passes(cluster, monkeypatch):
    """A scheduling pass derives a nominated pod's PodInfo once, not at every pass (upstream's
    nominator keeps it from the nominating event, pkg/scheduler/backend/queue/nominator.go);
    a changed body is derived again. Under overload every pass re-derived each nominated pod."""
    from gpusched.cluster.scheduling import profiles
    from gpusched.cluster.scheduling.cache import build_snapshot

    apply(cluster, join(pool(count=1, gpus=8), pod("waiting", gpus=8, nodeSelector={"x": "y"})))

    def nominate(node):
        def write(view):
            body = copy.deepcopy(view.get("Pod", "waiting", "default"))
            body["status"]["nominatedNodeName"] = node
            view.update(body)
        return write
    cluster.write(nominate("gpu-1"), settle=False)
    derived = []
    real = profiles.pod_info
    monkeypatch.setattr(profiles, "pod_info", lambda pod, seq=0: derived.append(seq) or real(pod, seq))
    view = cluster.view()
    snapshot, order = build_snapshot(view)
    passes = [profiles.make_scheduler(snapshot, view, order) for _ in range(3)]
    assert len(derived) == 1
    assert all(s.nominated[next(iter(s.nominated))].nominated_node == "gpu-1" for s in passes)
    nominate("gpu-2")(view)                    # a new body: derived again
    assert profiles.make_scheduler(snapshot, view, order).nominated
    assert len(derived) == 2
