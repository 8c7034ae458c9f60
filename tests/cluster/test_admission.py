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


def test_limit_gpu_quota_is_accepted_but_not_enforced(cluster):
    apply(cluster, join(pool(count=1), quota("q", {"limits.nvidia.com/gpu": "1"}),
                        pod("a", gpus=2), pod("b", gpus=2)))
    status = cluster.get("quota", ["q"])[0]["status"]
    # no evaluator tracks limits.<extended> (pods.go MatchingResources), so the quota
    # controller's syncResourceQuota lists nothing under used (Mask of an empty usage)
    assert status == {"hard": {"limits.nvidia.com/gpu": "1"}}


@pytest.mark.parametrize("written,stored", [
    ("100G", "100G"), ("1024Mi", "1Gi"), ("1536Mi", "1536Mi"), ("0.5", "500m"), ("1e3", "1e3"),
    ("8", "8")])
def test_quota_status_hard_keeps_the_written_quantity_format(cluster, written, stored):
    # kubernetes pkg/controller/resourcequota/resource_quota_controller.go syncResourceQuota
    # copies spec.hard's Quantities into status.hard; apimachinery resource.Quantity.String()
    # canonicalizes each in its own format (DecimalSI 100G stays 100G, BinarySI 1024Mi -> 1Gi)
    apply(cluster, join(pool(count=1), quota("q", {"requests.memory": written})))
    assert cluster.get("quota", ["q"])[0]["status"]["hard"] == {"requests.memory": stored}


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
    # A Terminating pod is still charged until its grace period is over (kubernetes
    # pkg/quota/v1/evaluator/core/pods.go, QuotaV1Pod); then it is gone.
    used = cluster.get("quota", ["q"])[0]["status"]["used"]
    assert used == {"pods": "1", "requests.cpu": "500m", "requests.nvidia.com/gpu": "2"}
    cluster.advance(30)
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


# ---- upstream order: mutate, validate the mutated pod, validating admission ---------------------

def runtime_class(name: str = "kata", overhead: dict | None = None, node_selector: dict | None = None,
                  tolerations: list | None = None) -> str:
    body: dict = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                  "metadata": {"name": name}, "handler": name}
    if overhead:
        body["overhead"] = {"podFixed": overhead}
    if node_selector or tolerations:
        body["scheduling"] = {k: v for k, v in (("nodeSelector", node_selector),
                                                 ("tolerations", tolerations)) if v}
    return yaml.safe_dump(body)


ORDER_CASES = [
    # pkg/apis/core/validation ValidateResourceRequirements runs on the LimitRanger-mutated pod:
    # the default limit leaves the GPU request unequal to its limit
    ("limitrange-default-then-validation",
     limit_range([{"type": "Container", "default": {"nvidia.com/gpu": "1"}}]),
     pod_with("p", requests={"nvidia.com/gpu": "2"}),
     'test.yaml: document 0: The Pod "p" is invalid: spec.containers[0].resources.requests'
     '[nvidia.com/gpu]: Invalid value: "2": must be equal to nvidia.com/gpu limit of 1'),
    # the same rule without a LimitRange: a GPU request needs a limit
    ("gpu-request-without-limit", "", pod_with("p", requests={"nvidia.com/gpu": "1"}),
     'test.yaml: document 0: The Pod "p" is invalid: spec.containers[0].resources.limits'
     "[nvidia.com/gpu]: Required value: Limit must be set for non overcommitable resources"),
    # plugin/pkg/admission/runtimeclass/admission.go validateOverhead
    ("overhead-without-runtimeclass", "", pod_with("p", overhead={"cpu": "250m"}),
     'pods "p" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass '
     "defined Overhead"),
    # runtimeclass/admission.go setOverhead
    ("overhead-differs-from-runtimeclass", runtime_class(overhead={"cpu": "250m"}),
     pod_with("p", runtimeClassName="kata", overhead={"cpu": "100m"}),
     "pods \"p\" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined "
     "Overhead"),
    # runtimeclass/admission.go prepareObjects
    ("runtimeclass-not-found", "", pod_with("p", runtimeClassName="nope"),
     'pods "p" is forbidden: pod rejected: RuntimeClass "nope" not found'),
    # runtimeclass/admission.go setScheduling
    ("runtimeclass-nodeselector-conflict", runtime_class(node_selector={"sandbox": "kata"}),
     pod_with("p", runtimeClassName="kata", nodeSelector={"sandbox": "gvisor"}),
     'pods "p" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[sandbox] = kata; '
     "pod.spec.nodeSelector[sandbox] = gvisor"),
    # LimitRanger Validate on the Pod type: podRequests without overhead, sidecars added
    # (plugin/pkg/admission/limitranger/limitranger.go podRequests)
    ("limitrange-pod-counts-sidecars",
     join(limit_range([{"type": "Pod", "max": {"cpu": "2"}}]), runtime_class(overhead={"cpu": "5"})),
     yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
         "runtimeClassName": "kata",
         "initContainers": [{"name": "side", "image": "x", "restartPolicy": "Always",
                             "resources": {"limits": {"cpu": "1500m"}}}],
         "containers": [{"name": "c", "image": "x", "resources": {"limits": {"cpu": "1"}}}]}}),
     'pods "p" is forbidden: maximum cpu usage per Pod is 2, but limit is 2500m'),
    # limitranger.go minConstraint over podRequests: a zero request is a request (kept)
    ("limitrange-pod-zero-request-kept",
     limit_range([{"type": "Pod", "min": {"cpu": "100m"}}]), pod_with("p", requests={"cpu": "0"}),
     'pods "p" is forbidden: minimum cpu usage per Pod is 100m, but request is 0'),
]


@pytest.mark.parametrize("setup,document,message", [c[1:] for c in CASES + ORDER_CASES],
                         ids=[c[0] for c in CASES + ORDER_CASES])
def test_admission_rejects_with_kubernetes_message(cluster, setup, document, message):
    apply(cluster, pool(count=1))
    if setup:
        apply(cluster, setup)
    before = cluster.view().snapshot()
    with pytest.raises(GpuschedError) as err:
        apply(cluster, document)
    assert str(err.value) == message
    assert cluster.view().snapshot() == before


def test_limitrange_default_supplies_gpu_limit(cluster):
    """Validation after LimitRanger (upstream order): the default limit makes the pod valid."""
    apply(cluster, join(pool(count=1), limit_range([{"type": "Container", "default": {"nvidia.com/gpu": "1"}}])))
    apply(cluster, pod_with("p", requests={"nvidia.com/gpu": "1"}))
    body = cluster.get("pods", ["p"])[0]
    assert body["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    # limitranger.go mergePodResourceRequirements annotation
    assert body["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: nvidia.com/gpu limit for container c")
    assert body["status"]["phase"] == "Running"


def test_runtimeclass_sets_overhead_and_scheduling(cluster):
    """runtimeclass/admission.go setOverhead, setScheduling (MergeTolerations)."""
    apply(cluster, join(pool(count=1, labels={"sandbox": "kata"}), runtime_class(
        overhead={"cpu": "250m", "memory": "120Mi"}, node_selector={"sandbox": "kata"},
        tolerations=[{"key": "kata", "operator": "Exists"}])))
    apply(cluster, pod_with("p", limits={"cpu": "1"}, runtimeClassName="kata",
                            tolerations=[{"key": "kata", "operator": "Exists"},
                                         {"key": "x", "operator": "Equal", "value": "y"}]))
    spec = cluster.get("pods", ["p"])[0]["spec"]
    assert spec["overhead"] == {"cpu": "250m", "memory": "120Mi"}
    assert spec["nodeSelector"] == {"sandbox": "kata"}
    # DefaultTolerationSeconds runs before RuntimeClass (AllOrderedPlugins); the RuntimeClass's
    # toleration equal to the pod's is merged away (pkg/util/tolerations MergeTolerations)
    assert spec["tolerations"] == [
        {"key": "kata", "operator": "Exists"}, {"key": "x", "operator": "Equal", "value": "y"},
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300}]
    assert spec["nodeName"] == "gpu-1"


# ---- ResourceQuota scopes and what upstream tracks ----------------------------------------------

def scoped_quota(name: str, hard: dict, scopes: list | None = None, selector: list | None = None) -> str:
    spec: dict = {"hard": hard}
    if scopes:
        spec["scopes"] = scopes
    if selector:
        spec["scopeSelector"] = {"matchExpressions": selector}
    return yaml.safe_dump({"apiVersion": "v1", "kind": "ResourceQuota",
                           "metadata": {"name": name, "namespace": "default"}, "spec": spec})


GPU_POD = pod_with("g", limits={"nvidia.com/gpu": "1"})                     # BestEffort: no cpu/memory
CPU_POD = pod_with("c", limits={"cpu": "1", "nvidia.com/gpu": "1"})         # Guaranteed
DEADLINE_POD = pod_with("d", limits={"cpu": "1"}, activeDeadlineSeconds=60)  # Terminating

# pkg/quota/v1/evaluator/core/pods.go podMatchesScopeFunc, generic.Matches (scopes ANDed)
SCOPE_CASES = [
    ("besteffort-counts-gpu-only-pod", ["BestEffort"], None, {"pods": "5"}, {"pods": "1"}),
    ("notbesteffort", ["NotBestEffort"], None, {"pods": "5", "requests.nvidia.com/gpu": "5"},
     {"pods": "3", "requests.nvidia.com/gpu": "1"}),
    ("terminating", ["Terminating"], None, {"pods": "5"}, {"pods": "1"}),
    ("notterminating-and-notbesteffort", ["NotTerminating", "NotBestEffort"], None,
     {"pods": "5"}, {"pods": "2"}),
    ("priorityclass-in", None, [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}],
     {"pods": "5"}, {"pods": "1"}),
    ("priorityclass-doesnotexist", None, [{"scopeName": "PriorityClass", "operator": "DoesNotExist"}],
     {"pods": "5"}, {"pods": "3"}),
    # count/pods tracks every pod in storage; configmaps are not pods: a scoped quota skips them
    ("unscoped-tracks-counts", None, None, {"count/pods": "9", "configmaps": "9"},
     {"count/pods": "4", "configmaps": "0"}),
]


@pytest.mark.parametrize("scopes,selector,hard,used", [c[1:] for c in SCOPE_CASES],
                         ids=[c[0] for c in SCOPE_CASES])
def test_quota_scopes(cluster, scopes, selector, hard, used):
    apply(cluster, join(pool(count=1), priority_class("high", 1000), scoped_quota("q", hard, scopes, selector)))
    apply(cluster, join(GPU_POD, CPU_POD, DEADLINE_POD))
    high = yaml.safe_load(DEADLINE_POD)
    high["metadata"]["name"] = "h"
    high["spec"]["priorityClassName"] = "high"
    del high["spec"]["activeDeadlineSeconds"]
    apply(cluster, yaml.safe_dump(high))
    assert cluster.get("quota", ["q"])[0]["status"]["used"] == used


def test_scoped_quota_rejects_only_matching_pods(cluster):
    apply(cluster, join(pool(count=1), scoped_quota("be", {"pods": "0"}, ["BestEffort"])))
    apply(cluster, CPU_POD)                    # NotBestEffort: not charged
    with pytest.raises(GpuschedError) as err:
        apply(cluster, GPU_POD)
    assert str(err.value) == ('pods "g" is forbidden: exceeded quota: be, requested: pods=1, '
                              "used: pods=0, limited: pods=0")


# pods.go PodUsageFunc: resourcehelper.PodRequests (sidecars added, overhead added, zeros kept),
# PodLimits (overhead only onto a limit the pod has)
USAGE_CASES = [
    ("sidecar-adds-to-containers",
     {"initContainers": [{"name": "s", "image": "x", "restartPolicy": "Always",
                          "resources": {"requests": {"cpu": "500m"}}}],
      "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]},
     {"requests.cpu": "1500m"}),
    ("init-container-max",
     {"initContainers": [{"name": "i", "image": "x", "resources": {"requests": {"cpu": "3"}}}],
      "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]},
     {"requests.cpu": "3"}),
    ("overhead-on-requests-and-set-limits",
     {"runtimeClassName": "kata",
      "containers": [{"name": "c", "image": "x", "resources": {"limits": {"cpu": "1"}}}]},
     {"requests.cpu": "1250m", "limits.cpu": "1250m"}),
    ("zero-request-kept",
     {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "0"}}}]},
     {"requests.cpu": "0"}),
]


@pytest.mark.parametrize("spec,used", [c[1:] for c in USAGE_CASES], ids=[c[0] for c in USAGE_CASES])
def test_quota_pod_usage(cluster, spec, used):
    apply(cluster, join(pool(count=1), runtime_class(overhead={"cpu": "250m"}),
                        quota("q", {key: "10" for key in used})))
    apply(cluster, yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                   "spec": spec}))
    assert cluster.get("quota", ["q"])[0]["status"]["used"] == used


# pkg/apis/core/validation/validation.go validateResourceQuotaScopes /
# validateScopedResourceSelectorRequirement
QUOTA_SCOPE_VALIDATION = [
    ("conflicting-scopes", {"pods": "1"}, ["BestEffort", "NotBestEffort"], None,
     'spec.scopes: Invalid value: []core.ResourceQuotaScope{"BestEffort", "NotBestEffort"}: '
     "conflicting scopes"),
    ("besteffort-with-cpu", {"requests.cpu": "1"}, ["BestEffort"], None,
     'spec.scopes: Invalid value: []core.ResourceQuotaScope{"BestEffort"}: unsupported scope '
     "applied to resource"),
    ("unsupported-scope", {"pods": "1"}, ["Gpu"], None,
     'spec.scopes: Invalid value: []core.ResourceQuotaScope{"Gpu"}: unsupported scope'),
    ("selector-in-without-values", {"pods": "1"}, None,
     [{"scopeName": "PriorityClass", "operator": "In"}],
     "spec.scopeSelector.matchExpressions.values: Required value: must be at least one value "
     "when `operator` is 'In' or 'NotIn' for scope selector"),
    ("selector-besteffort-not-exists", {"pods": "1"}, None,
     [{"scopeName": "BestEffort", "operator": "In", "values": ["x"]}],
     "spec.scopeSelector.matchExpressions.operator: Invalid value: \"In\": must be 'Exist' when "
     "scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, "
     "ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or "
     "ResourceQuotaScopeCrossNamespacePodAffinity"),
]


@pytest.mark.parametrize("hard,scopes,selector,error", [c[1:] for c in QUOTA_SCOPE_VALIDATION],
                         ids=[c[0] for c in QUOTA_SCOPE_VALIDATION])
def test_quota_scope_validation(cluster, hard, scopes, selector, error):
    with pytest.raises(GpuschedError) as err:
        apply(cluster, scoped_quota("q", hard, scopes, selector))
    assert str(err.value) == f'test.yaml: document 0: The ResourceQuota "q" is invalid: {error}'


# limitranger.go minConstraint / maxConstraint / limitRequestRatioConstraint, one error per
# resource and constraint; min, then max, then the ratio; resources in name order.
CPU, MEM = "cpu", "memory"
LIMIT_ERROR_CASES = [
    ("min-no-request", {"min": {CPU: "1"}}, {}, {},
     ["minimum cpu usage per Container is 1.  No request is specified"]),
    ("min-request-below", {"min": {CPU: "1"}}, {CPU: 500}, {CPU: 2000},
     ["minimum cpu usage per Container is 1, but request is 500m"]),
    ("min-limit-below", {"min": {CPU: "1"}}, {CPU: 1000}, {CPU: 800},
     ["minimum cpu usage per Container is 1, but limit is 800m"]),
    ("max-no-limit", {"max": {CPU: "1"}}, {CPU: 500}, {},
     ["maximum cpu usage per Container is 1.  No limit is specified"]),
    ("max-limit-above", {"max": {CPU: "1"}}, {CPU: 500}, {CPU: 2000},
     ["maximum cpu usage per Container is 1, but limit is 2"]),
    ("max-request-above", {"max": {CPU: "1"}}, {CPU: 1500}, {CPU: 1000},
     ["maximum cpu usage per Container is 1, but request is 1500m"]),
    ("ratio-no-request", {"maxLimitRequestRatio": {CPU: "2"}}, {}, {CPU: 1000},
     ["cpu max limit to request ratio per Container is 2, but no request is specified or request is 0"]),
    ("ratio-no-limit", {"maxLimitRequestRatio": {CPU: "2"}}, {CPU: 1000}, {},
     ["cpu max limit to request ratio per Container is 2, but no limit is specified or limit is 0"]),
    ("ratio-within", {"maxLimitRequestRatio": {CPU: "2"}}, {CPU: 1000}, {CPU: 2000}, []),
    ("min-max-ratio-order", {"maxLimitRequestRatio": {CPU: "1"}, "max": {MEM: "1Gi"}, "min": {MEM: "2Gi", CPU: "2"}},
     {CPU: 1000, MEM: 2**31}, {CPU: 3000},
     ["minimum cpu usage per Container is 2, but request is 1",
      "maximum memory usage per Container is 1Gi.  No limit is specified",
      "cpu max limit to request ratio per Container is 1, but provided ratio is 3.000000"]),
]


@pytest.mark.parametrize("item,req,lim,errors", [c[1:] for c in LIMIT_ERROR_CASES],
                         ids=[c[0] for c in LIMIT_ERROR_CASES])
def test_limit_range_errors(item, req, lim, errors):
    from gpusched.cluster.admission.limit_ranger import _limit_errors
    assert _limit_errors(item, "Container", req, lim) == errors
