"""validate(): per-kind rules with Kubernetes' exact wording, field paths and defaulting."""

import copy

import pytest

from gpusched.errors import InvalidError, ManifestError
from gpusched.objects.manifest import Manifest
from gpusched.objects.validation import validate, validate_object


def container(name="c", requests=None, limits=None, **extra):
    c = {"name": name, "image": "img", **extra}
    if requests is not None or limits is not None:
        c["resources"] = {k: v for k, v in (("requests", requests), ("limits", limits)) if v is not None}
    return c


def pod(name="p", containers=None, annotations=None, **spec):
    meta = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": containers if containers is not None else [container()], **spec}}


def workload(kind="Deployment", selector=None, labels=None, restart=None, api="apps/v1", **spec):
    template_spec = {"containers": [container()]}
    if restart:
        template_spec["restartPolicy"] = restart
    body = {"template": {"metadata": {"labels": labels if labels is not None else {"app": "web"}},
                         "spec": template_spec}, **spec}
    if selector is not False:
        body["selector"] = selector if selector is not None else {"matchLabels": {"app": "web"}}
    return {"apiVersion": api, "kind": kind, "metadata": {"name": "w"}, "spec": body}


def job(**spec):
    return workload("Job", selector=False, api="batch/v1", restart=spec.pop("restart", "Never"), **spec)


def priority_class(name="high", **fields):
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, **fields}


def simple(kind, api="v1", name="x", **body):
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name}, **body}


def tolerating(*tolerations):
    return pod(tolerations=list(tolerations))


def node_affinity(*expressions):
    return pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": list(expressions)}]}}})


NA = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]"
QUANTITY_RE = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"

BAD = [
    ("gpu-request-ne-limit", pod(containers=[container(requests={"nvidia.com/gpu": 2}, limits={"nvidia.com/gpu": 1})]),
     'The Pod "p" is invalid: spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "2": '
     "must be equal to nvidia.com/gpu limit of 1"),
    ("gpu-request-without-limit", pod(containers=[container(requests={"nvidia.com/gpu": "1"})]),
     'The Pod "p" is invalid: spec.containers[0].resources.limits[nvidia.com/gpu]: Required value: '
     "Limit must be set for non overcommitable resources"),
    ("gpu-fraction", pod(containers=[container(limits={"nvidia.com/gpu": "500m"})]),
     'The Pod "p" is invalid: spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "500m": '
     'must be an integer, spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "500m": '
     "must be an integer"),  # the request defaulted from the limit is checked too, as upstream
    ("cpu-request-over-limit", pod(containers=[container(requests={"cpu": "2"}, limits={"cpu": "1"})]),
     'The Pod "p" is invalid: spec.containers[0].resources.requests[cpu]: Invalid value: "2": '
     "must be less than or equal to cpu limit of 1"),
    ("bad-quantity", pod(containers=[container(requests={"memory": "abc"})]),
     'The Pod "p" is invalid: spec.containers[0].resources.requests[memory]: Invalid value: "abc": ' + QUANTITY_RE),
    ("negative-quantity", pod(containers=[container(requests={"cpu": "-1"})]),
     'The Pod "p" is invalid: spec.containers[0].resources.requests[cpu]: Invalid value: "-1": '
     "must be greater than or equal to 0"),
    ("unknown-resource", pod(containers=[container(requests={"gpu": "1"})]),
     'The Pod "p" is invalid: spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": '
     "must be a standard resource for containers"),
    ("no-containers", pod(containers=[]), 'The Pod "p" is invalid: spec.containers: Required value'),
    ("container-no-name-image", pod(containers=[{"resources": {}}]),
     'The Pod "p" is invalid: spec.containers[0].name: Required value, spec.containers[0].image: Required value'),
    ("duplicate-container", pod(containers=[container("a"), container("a")]),
     'The Pod "p" is invalid: spec.containers[1].name: Duplicate value: "a"'),
    ("bad-name", pod(name="Train_1"),
     'The Pod "Train_1" is invalid: metadata.name: Invalid value: "Train_1": a lowercase RFC 1123 subdomain must '
     "consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
     "character (e.g. 'example.com', regex used for validation is "
     "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ("namespace-dotted", simple("Namespace", name="team.a"),
     'The Namespace "team.a" is invalid: metadata.name: Invalid value: "team.a": a lowercase RFC 1123 label must '
     "consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character "
     "(e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
    ("restart-policy", pod(restartPolicy="Sometimes"),
     'The Pod "p" is invalid: spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
     '"OnFailure", "Never"'),
    ("toleration-exists-with-value", tolerating({"key": "k", "operator": "Exists", "value": "v"}),
     'The Pod "p" is invalid: spec.tolerations[0].operator: Invalid value: {"key":"k","operator":"Exists",'
     '"value":"v"}: value must be empty when `operator` is \'Exists\''),
    ("toleration-bad-effect", tolerating({"key": "k", "value": "v", "effect": "NoRun"}),
     'The Pod "p" is invalid: spec.tolerations[0].effect: Unsupported value: "NoRun": supported values: '
     '"NoSchedule", "PreferNoSchedule", "NoExecute"'),
    ("toleration-empty-key-equal", tolerating({"value": "v"}),
     'The Pod "p" is invalid: spec.tolerations[0].operator: Invalid value: "": operator must be Exists when `key` '
     'is empty, which means "match all values and all keys"'),
    ("toleration-seconds-noschedule", tolerating({"key": "k", "operator": "Exists", "effect": "NoSchedule",
                                                  "tolerationSeconds": 5}),
     'The Pod "p" is invalid: spec.tolerations[0].effect: Invalid value: "NoSchedule": effect must be '
     "'NoExecute' when `tolerationSeconds` is set"),
    ("affinity-in-no-values", node_affinity({"key": "gpu", "operator": "In"}),
     f'The Pod "p" is invalid: {NA}.values: Required value: must be specified when `operator` is \'In\' or '
     "'NotIn'"),
    ("affinity-exists-values", node_affinity({"key": "gpu", "operator": "Exists", "values": ["a"]}),
     f'The Pod "p" is invalid: {NA}.values: Forbidden: may not be specified when `operator` is \'Exists\' or '
     "'DoesNotExist'"),
    ("affinity-gt-two", node_affinity({"key": "gpus", "operator": "Gt", "values": ["1", "2"]}),
     f'The Pod "p" is invalid: {NA}.values: Required value: must be specified single value when `operator` is '
     "'Lt' or 'Gt'"),
    ("affinity-gt-word", node_affinity({"key": "gpus", "operator": "Gt", "values": ["many"]}),
     f'The Pod "p" is invalid: {NA}.values[0]: Invalid value: "many": must be an integer'),
    ("affinity-bad-operator", node_affinity({"key": "gpu", "operator": "Like", "values": ["a"]}),
     f'The Pod "p" is invalid: {NA}.operator: Invalid value: "Like": not a valid selector operator'),
    ("affinity-no-terms", pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}),
     'The Pod "p" is invalid: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.'
     "nodeSelectorTerms: Required value: must have at least one node selector term"),
    ("preferred-weight", pod(affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 0, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}]}}),
     'The Pod "p" is invalid: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: '
     "Invalid value: 0: must be in the range 1-100"),
    ("bad-share-annotation", pod(annotations={"gpusched.io/gpu-milli": "1500"}),
     'The Pod "p" is invalid: metadata.annotations[gpusched.io/gpu-milli]: Invalid value: "1500": '
     "must be an integer between 1 and 1000"),
    ("bad-duration-annotation", pod(annotations={"gpusched.io/duration": "soon"}),
     'The Pod "p" is invalid: metadata.annotations[gpusched.io/duration]: Invalid value: "soon": '
     "must be a duration such as 30m, 1h30m or 2d"),
    ("label-value-type", dict(pod(), metadata={"name": "p", "labels": {"version": 1}}),
     'The Pod "p" is invalid: metadata.labels[version]: Invalid value: 1: must be a string'),
    ("selector-mismatch", workload(labels={"app": "other"}),
     'The Deployment "w" is invalid: spec.template.metadata.labels: Invalid value: {"app":"other"}: '
     "`selector` does not match template `labels`"),
    ("selector-missing", workload(selector=False), 'The Deployment "w" is invalid: spec.selector: Required value'),
    ("selector-empty", workload(selector={}),
     'The Deployment "w" is invalid: spec.selector: Invalid value: {}: empty selector is invalid for deployment'),
    ("replicas-negative", workload(replicas=-1),
     'The Deployment "w" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0'),
    ("replicas-string", workload(replicas="3"),
     'The Deployment "w" is invalid: spec.replicas: Invalid value: "3": must be an integer'),
    ("deployment-never", workload(restart="Never"),
     'The Deployment "w" is invalid: spec.template.spec.restartPolicy: Unsupported value: "Never": '
     'supported values: "Always"'),
    ("template-gpu", dict(workload(), spec=dict(workload()["spec"], template={
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [container(requests={"nvidia.com/gpu": 1})]}})),
     'The Deployment "w" is invalid: spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]: '
     "Required value: Limit must be set for non overcommitable resources"),
    ("daemonset-selector", workload("DaemonSet", labels={"app": "x"}),
     'The DaemonSet "w" is invalid: spec.template.metadata.labels: Invalid value: {"app":"x"}: '
     "`selector` does not match template `labels`"),
    ("job-always", job(restart="Always"),
     'The Job "w" is invalid: spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: '
     '"OnFailure", "Never"'),
    ("job-default-restart", job(restart=None),
     'The Job "w" is invalid: spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: '
     '"OnFailure", "Never"'),
    ("job-negative", job(backoffLimit=-1, activeDeadlineSeconds=-5),
     'The Job "w" is invalid: spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0, '
     "spec.activeDeadlineSeconds: Invalid value: -5: must be greater than or equal to 0"),
    ("pc-too-high", priority_class(value=1000000001),
     'The PriorityClass "high" is invalid: value: Forbidden: maximum allowed value of a user defined priority is '
     "1000000000"),
    ("pc-no-value", priority_class(), 'The PriorityClass "high" is invalid: value: Required value'),
    ("pc-system-prefix", priority_class("system-mine", value=10),
     'The PriorityClass "system-mine" is invalid: metadata.name: Forbidden: priority class names with \'system-\' '
     "prefix are reserved for system use only. error: system-mine is not a known system priority class"),
    ("pc-preemption-policy", priority_class(value=1, preemptionPolicy="Sometimes"),
     'The PriorityClass "high" is invalid: preemptionPolicy: Unsupported value: "Sometimes": supported values: '
     '"PreemptLowerPriority", "Never"'),
    ("quota-bad-quantity", simple("ResourceQuota", spec={"hard": {"requests.nvidia.com/gpu": "lots"}}),
     'The ResourceQuota "x" is invalid: spec.hard[requests.nvidia.com/gpu]: Invalid value: "lots": ' + QUANTITY_RE),
    # found by test_fuzz: a non-map spec.hard reached the scopes check and raised TypeError
    ("quota-hard-not-map", simple("ResourceQuota", spec={"hard": True}),
     'The ResourceQuota "x" is invalid: spec.hard: Invalid value: true: must be an object'),
    ("quota-unknown", simple("ResourceQuota", spec={"hard": {"gpus": "4"}}),
     'The ResourceQuota "x" is invalid: spec.hard[gpus]: Invalid value: "gpus": must be a standard resource for '
     "quota"),
    ("limitrange-type", simple("LimitRange", spec={"limits": [{"type": "Node", "max": {"cpu": "1"}}]}),
     'The LimitRange "x" is invalid: spec.limits[0].type: Unsupported value: "Node": supported values: "Pod", '
     '"Container", "PersistentVolumeClaim"'),
    ("limitrange-min-max", simple("LimitRange", spec={"limits": [{"type": "Container", "min": {"cpu": "2"},
                                                                  "max": {"cpu": "1"}}]}),
     'The LimitRange "x" is invalid: spec.limits[0].min[cpu]: Invalid value: "2": min value 2 is greater than '
     'max value 1, spec.limits[0].defaultRequest[cpu]: Invalid value: "1": min value 2 is greater than default '
     "request value 1"),  # defaulting made defaultRequest = default = max first
    ("pdb-both", simple("PodDisruptionBudget", api="policy/v1", spec={"minAvailable": 1, "maxUnavailable": 1}),
     'The PodDisruptionBudget "x" is invalid: spec: Invalid value: {"maxUnavailable":1,"minAvailable":1}: '
     "minAvailable and maxUnavailable cannot be both set"),
    ("pdb-percent", simple("PodDisruptionBudget", api="policy/v1", spec={"minAvailable": "150%"}),
     'The PodDisruptionBudget "x" is invalid: spec.minAvailable: Invalid value: "150%": must not be greater than '
     "100%"),
    ("pdb-word", simple("PodDisruptionBudget", api="policy/v1", spec={"maxUnavailable": "half"}),
     'The PodDisruptionBudget "x" is invalid: spec.maxUnavailable: Invalid value: "half": a valid percent string '
     "must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is "
     "'[0-9]+%')"),
    ("configmap-number", simple("ConfigMap", data={"replicas": 4}),
     'The ConfigMap "x" is invalid: data[replicas]: Invalid value: 4: must be a string'),
    ("configmap-key", simple("ConfigMap", data={"a b": "x"}),
     'The ConfigMap "x" is invalid: data[a b]: Invalid value: "a b": a valid config key must consist of '
     "alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
     "validation is '[-._a-zA-Z0-9]+')"),
    ("node-taint-effect", simple("Node", spec={"taints": [{"key": "k", "effect": "Never"}]}),
     'The Node "x" is invalid: spec.taints[0].effect: Unsupported value: "Never": supported values: "NoSchedule", '
     '"PreferNoSchedule", "NoExecute"'),
    ("nodepool-both", simple("NodePool", api="gpusched.io/v1alpha1", spec={"count": 1, "names": ["a"]}),
     'The NodePool "x" is invalid: spec.names: Invalid value: ["a"]: may not be set together with spec.count'),
    ("nodepool-taint", simple("NodePool", api="gpusched.io/v1alpha1",
                              spec={"count": 1, "taints": [{"key": "k", "effect": "Bad"}]}),
     'The NodePool "x" is invalid: spec.taints[0].effect: Unsupported value: "Bad": supported values: '
     '"NoSchedule", "PreferNoSchedule", "NoExecute"'),
    ("nodepool-memory", simple("NodePool", api="gpusched.io/v1alpha1", spec={"count": 1, "memory": "lots"}),
     'The NodePool "x" is invalid: spec.memory: Invalid value: "lots": ' + QUANTITY_RE),
]


@pytest.mark.parametrize("obj,message", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_invalid(obj, message):
    with pytest.raises(InvalidError) as err:
        validate(Manifest("f.yaml", 2, obj))
    assert str(err.value) == f"f.yaml: document 2: {message}"


GOOD = [
    ("gpu-limit-only", pod(containers=[container(limits={"nvidia.com/gpu": 1})])),
    ("gpu-equal", pod(containers=[container(requests={"nvidia.com/gpu": "2"}, limits={"nvidia.com/gpu": 2})])),
    ("cpu-burstable", pod(containers=[container(requests={"cpu": "500m"}, limits={"cpu": "1"})])),
    ("tolerate-all", tolerating({"operator": "Exists"})),
    ("affinity-ok", node_affinity({"key": "gpus", "operator": "Gt", "values": ["3"]})),
    ("deployment", workload(replicas=3)),
    ("job", job(completions=4, parallelism=2)),
    ("pc", priority_class(value=1000000, globalDefault=True, preemptionPolicy="Never")),
    ("pc-system", priority_class("system-node-critical", value=2000001000)),
    ("quota", simple("ResourceQuota", spec={"hard": {"requests.nvidia.com/gpu": "4", "limits.nvidia.com/gpu": 4,
                                                     "pods": "10"}})),
    ("pdb", simple("PodDisruptionBudget", api="policy/v1", spec={"minAvailable": "50%",
                                                                 "selector": {"matchLabels": {"a": "b"}}})),
    ("configmap", simple("ConfigMap", data={"any": "version: v1\nsharing: {}\n"})),
    ("nodepool", simple("NodePool", api="gpusched.io/v1alpha1", spec={
        "names": ["gpu-node-1"], "gpu": {"model": "A100-40GB", "count": 8}, "cpu": "64", "memory": "512Gi",
        "labels": {"gpu-type": "a100"}, "migLayout": "all-1g.5gb", "extra": {"kept": True}})),
    ("pvc", simple("PersistentVolumeClaim", spec={"accessModes": ["ReadWriteOnce"],
                                                  "resources": {"requests": {"storage": "10Gi"}}})),
    ("event", simple("Event", involvedObject={"kind": "Pod", "name": "p"}, reason="Scheduled")),
]


@pytest.mark.parametrize("obj", [c[1] for c in GOOD], ids=[c[0] for c in GOOD])
def test_valid_and_not_mutated(obj):
    before = copy.deepcopy(obj)
    out = validate(Manifest("f.yaml", 0, obj))
    assert obj == before
    assert out["metadata"]["name"] == obj["metadata"]["name"]


def test_defaults():
    out = validate(Manifest("f", 0, pod(containers=[container(limits={"nvidia.com/gpu": 1, "cpu": "1"},
                                                              requests={"cpu": "100m"})])))
    assert out["metadata"]["namespace"] == "default"
    assert out["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "100m", "nvidia.com/gpu": 1}
    assert out["spec"]["restartPolicy"] == "Always" and out["spec"]["schedulerName"] == "default-scheduler"
    assert validate(Manifest("f", 0, workload()))["spec"]["replicas"] == 1
    job_spec = validate(Manifest("f", 0, job()))["spec"]
    assert (job_spec["completions"], job_spec["parallelism"], job_spec["backoffLimit"]) == (1, 1, 6)
    assert validate(Manifest("f", 0, priority_class(value=1)))["preemptionPolicy"] == "PreemptLowerPriority"


def test_cluster_scoped_namespace_dropped_and_unknown_fields_kept():
    node = simple("Node", spec={"podCIDR": "10.0.0.0/24"}, status={"capacity": {"cpu": "8"}})
    node["metadata"]["namespace"] = "default"
    out = validate(Manifest("f", 0, node))
    assert "namespace" not in out["metadata"]
    assert out["spec"]["podCIDR"] == "10.0.0.0/24"


def test_limit_range_object_defaulting():
    lr = simple("LimitRange", spec={"limits": [
        {"type": "Container", "max": {"nvidia.com/gpu": "2", "cpu": "4"}, "default": {"cpu": "1"},
         "min": {"memory": "1Gi"}},
        {"type": "Pod", "max": {"cpu": "8"}}]})
    items = validate(Manifest("f", 0, lr))["spec"]["limits"]
    assert items[0]["default"] == {"cpu": "1", "nvidia.com/gpu": "2"}
    assert items[0]["defaultRequest"] == {"cpu": "1", "nvidia.com/gpu": "2", "memory": "1Gi"}
    assert "default" not in items[1]


def test_several_errors_joined():
    with pytest.raises(InvalidError) as err:
        validate(Manifest("f", 0, pod(containers=[container(requests={"cpu": "2", "nvidia.com/gpu": 1},
                                                            limits={"cpu": "1"})])))
    assert [e.path for e in err.value.errors] == ["spec.containers[0].resources.requests[cpu]",
                                                   "spec.containers[0].resources.limits[nvidia.com/gpu]"]


def test_validate_object_unknown_kind():
    with pytest.raises(ManifestError):
        validate_object({"apiVersion": "v1", "kind": "Ingress", "metadata": {"name": "x"}})


def test_null_requests_get_the_limits():
    c = container(limits={"nvidia.com/gpu": 1})
    c["resources"]["requests"] = None
    out = validate(Manifest("f", 0, pod(containers=[c])))
    assert out["spec"]["containers"][0]["resources"]["requests"] == {"nvidia.com/gpu": 1}
