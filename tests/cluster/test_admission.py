"""Admission: namespaces, PriorityClass, LimitRange, ResourceQuota, each message exact."""

from __future__ import annotations

import pytest
import yaml

from gpusched.errors import GpuschedError

from .builders import apply, join, pod, pool, priority_class


def quota(name: str, hard: dict, namespace: str = "default") -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "ResourceQuota",
                           "metadata": {"name": name, "namespace": namespace},
                           "spec": {"hard": hard}})


def limit_range(items: list, namespace: str = "default") -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "LimitRange",
                           "metadata": {"name": "limits", "namespace": namespace},
                           "spec": {"limits": items}})


def pod_with(name: str, limits: dict | None = None, requests: dict | None = None, **spec) -> str:
    resources = {}
    if limits:
        resources["limits"] = limits
    if requests:
        resources["requests"] = requests
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                           "spec": {"containers": [{"name": "c", "image": "x",
                                                    "resources": resources}], **spec}})


CASES = [
    ("namespace-missing", "", pod("p", namespace="team-a"), 'namespaces "team-a" not found'),
    ("second-global-default", priority_class("a", 10, default=True),
     priority_class("b", 20, default=True),
     'priorityclasses.scheduling.k8s.io "b" is forbidden: PriorityClass a is already marked as '
     "default. Only one default can exist"),
    ("priority-class-value-immutable", priority_class("a", 10), priority_class("a", 11),
     'The PriorityClass "a" is invalid: value: Forbidden: may not be changed in an update.'),
    ("priority-class-policy-immutable", priority_class("a", 10), priority_class("a", 10, policy="Never"),
     'The PriorityClass "a" is invalid: preemptionPolicy: Invalid value: "Never": field is immutable'),
    ("unknown-priority-class", "", pod("p", priority_class="nope"),
     'pods "p" is forbidden: no PriorityClass with name nope was found'),
    ("priority-mismatch", priority_class("high", 1000), pod("p", priority_class="high", priority=5),
     'pods "p" is forbidden: the integer value of priority (5) must not be provided in pod spec; '
     "priority admission controller computed 1000 from the given PriorityClass name"),
    ("limitrange-max-container",
     limit_range([{"type": "Container", "max": {"cpu": "2"}}]),
     pod_with("p", limits={"cpu": "4"}),
     'pods "p" is forbidden: maximum cpu usage per Container is 2, but limit is 4'),
    ("limitrange-min-and-max-aggregated",
     limit_range([{"type": "Container", "min": {"memory": "1Gi"}, "max": {"cpu": "1"}}]),
     pod_with("p", limits={"cpu": "2", "memory": "512Mi"}),
     'pods "p" is forbidden: [minimum memory usage per Container is 1Gi, but request is 512Mi, '
     "maximum cpu usage per Container is 1, but limit is 2]"),
    ("limitrange-ratio",
     limit_range([{"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}}]),
     pod_with("p", limits={"cpu": "4"}, requests={"cpu": "1"}),
     'pods "p" is forbidden: cpu max limit to request ratio per Container is 2, but provided '
     "ratio is 4.000000"),
    ("limitrange-pod-max",
     limit_range([{"type": "Pod", "max": {"cpu": "3"}}]),
     yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
         "containers": [{"name": n, "image": "x", "resources": {"limits": {"cpu": "2"}}}
                        for n in ("a", "b")]}}),
     'pods "p" is forbidden: maximum cpu usage per Pod is 3, but limit is 4'),
    ("quota-gpu-exceeded",
     join(quota("team-a", {"requests.nvidia.com/gpu": "4"}), pod("a", gpus=3)),
     pod("b", gpus=2),
     'pods "b" is forbidden: exceeded quota: team-a, requested: requests.nvidia.com/gpu=2, '
     "used: requests.nvidia.com/gpu=3, limited: requests.nvidia.com/gpu=4"),
    ("quota-several-keys-sorted",
     join(quota("q", {"requests.nvidia.com/gpu": "1", "pods": "1", "requests.cpu": "10"}),
          pod("a", gpus=1, cpu="1")),
     pod("b", gpus=1, cpu="1"),
     'pods "b" is forbidden: exceeded quota: q, requested: pods=1,requests.nvidia.com/gpu=1, '
     "used: pods=1,requests.nvidia.com/gpu=1, limited: pods=1,requests.nvidia.com/gpu=1"),
    # pkg/quota/v1/evaluator/core/pods.go Constraints: "<key> for: <containers>" joined by "; "
    ("quota-must-specify", quota("q", {"requests.cpu": "4", "limits.memory": "8Gi"}), pod("p"),
     'pods "p" is forbidden: failed quota: q: must specify limits.memory for: c; '
     "requests.cpu for: c"),
    ("quota-count-deployments",
     join(quota("q", {"count/deployments.apps": "0"})),
     yaml.safe_dump({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                     "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                         "metadata": {"labels": {"a": "b"}},
                         "spec": {"containers": [{"name": "c", "image": "x"}]}}}}),
     'deployments.apps "d" is forbidden: exceeded quota: q, requested: count/deployments.apps=1, '
     "used: count/deployments.apps=0, limited: count/deployments.apps=0"),
]


@pytest.mark.parametrize("setup,document,message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_admission_rejects_with_kubernetes_message(cluster, setup, document, message):
    apply(cluster, pool(count=1))
    if setup:
        apply(cluster, setup)
    before = cluster.view().snapshot()
    with pytest.raises(GpuschedError) as err:
        apply(cluster, document)
    assert str(err.value) == message
    assert cluster.view().snapshot() == before


def test_limit_gpu_quota_is_accepted_but_not_enforced(cluster):
    apply(cluster, join(pool(count=1), quota("q", {"limits.nvidia.com/gpu": "1"}),
                        pod("a", gpus=2), pod("b", gpus=2)))
    status = cluster.get("quota", ["q"])[0]["status"]
    # no evaluator tracks limits.<extended> (pods.go MatchingResources), so the quota
    # controller's syncResourceQuota lists nothing under used (Mask of an empty usage)
    assert status == {"hard": {"limits.nvidia.com/gpu": "1"}}


def test_quota_used_follows_pod_changes(cluster):
    apply(cluster, join(pool(count=1), quota("q", {"requests.nvidia.com/gpu": "8", "pods": "10",
                                                   "requests.cpu": "20"}),
                        pod("a", gpus=2, cpu="500m"), pod("b", gpus=1, cpu="1", duration="10m")))
    used = cluster.get("quota", ["q"])[0]["status"]["used"]
    assert used == {"pods": "2", "requests.cpu": "1500m", "requests.nvidia.com/gpu": "3"}
    cluster.advance(600)      # b finishes: Succeeded pods are not charged
    used = cluster.get("quota", ["q"])[0]["status"]["used"]
    assert used == {"pods": "1", "requests.cpu": "500m", "requests.nvidia.com/gpu": "2"}
    cluster.delete("pod", "a")
    used = cluster.get("quota", ["q"])[0]["status"]["used"]
    assert used == {"pods": "0", "requests.cpu": "0", "requests.nvidia.com/gpu": "0"}


@pytest.mark.parametrize("classes,pod_class,want_priority,want_class,want_policy", [
    ("", "", 0, None, "PreemptLowerPriority"),
    (priority_class("normal", 100, default=True), "", 100, "normal", "PreemptLowerPriority"),
    (join(priority_class("normal", 100, default=True), priority_class("low", 10, policy="Never")),
     "low", 10, "low", "Never"),
    ("", "system-node-critical", 2000001000, "system-node-critical", "PreemptLowerPriority"),
], ids=["no-default-zero", "global-default-written", "explicit-class-policy", "system-class"])
def test_pod_priority_resolution(cluster, classes, pod_class, want_priority, want_class, want_policy):
    apply(cluster, pool(count=1, gpus=0))
    if classes:
        apply(cluster, classes)
    apply(cluster, pod("p", priority_class=pod_class))
    spec = cluster.get("pods", ["p"])[0]["spec"]
    assert (spec["priority"], spec.get("priorityClassName"), spec["preemptionPolicy"]) == (
        want_priority, want_class, want_policy)


def test_limit_range_defaults_are_applied(cluster):
    apply(cluster, join(pool(count=1, gpus=0), limit_range([
        {"type": "Container", "max": {"cpu": "2"}, "defaultRequest": {"memory": "256Mi"},
         "default": {"memory": "512Mi"}}])))
    stored = cluster.get("limits", ["limits"])[0]["spec"]["limits"][0]
    assert stored["default"] == {"cpu": "2", "memory": "512Mi"}
    assert stored["defaultRequest"] == {"cpu": "2", "memory": "256Mi"}
    apply(cluster, pod("p"))
    resources = cluster.get("pods", ["p"])[0]["spec"]["containers"][0]["resources"]
    assert resources == {"limits": {"cpu": "2", "memory": "512Mi"},
                         "requests": {"cpu": "2", "memory": "256Mi"}}


def test_system_namespaces_exist_from_the_start(cluster):
    # a real cluster's API server creates default, kube-system, kube-public, kube-node-lease
    assert [n["metadata"]["name"] for n in cluster.get("ns")] == [
        "default", "kube-node-lease", "kube-public", "kube-system"]
    apply(cluster, pod("p"))
    assert len(cluster.get("ns")) == 4


def test_namespace_in_same_apply_is_usable(cluster):
    apply(cluster, join(yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace",
                                        "metadata": {"name": "team-a"}}),
                        pod("p", namespace="team-a")))
    assert [p["metadata"]["name"] for p in cluster.get("pods", namespace="team-a")] == ["p"]
