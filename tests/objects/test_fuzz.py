"""Fuzz: malformed documents through load + validate + pod_info raise only GpuschedError.

Random JSON-like values (nested dicts/lists/scalars, random strings as quantities) are planted
at the fields a pod spec and the other kinds read; whatever comes out, the only exceptions
allowed are gpusched's user-facing ones (a traceback for bad input would be a bug).
"""

import json

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusched.errors import GpuschedError
from gpusched.objects.manifest import Manifest, load_text
from gpusched.objects.node import node_info
from gpusched.objects.pod import pod_info
from gpusched.objects.validation import validate

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
                    st.sampled_from(["500m", "1Gi", "1e3", "-1", "0.5", "abc", "In", "Exists", "Gt", "NoSchedule",
                                     "Always", "Never", "1%", "150%", "nvidia.com/gpu", ""]))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)), max_leaves=12)
quantity_maps = st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "gpusched.io/gpu-milli", "x"]),
                                json_values, max_size=3)
resources = st.fixed_dictionaries({}, optional={"requests": st.one_of(quantity_maps, json_values),
                                                "limits": st.one_of(quantity_maps, json_values)})
containers = st.lists(st.fixed_dictionaries({}, optional={
    "name": st.one_of(st.text(max_size=6), json_values), "image": json_values,
    "resources": st.one_of(resources, json_values), "restartPolicy": json_values}), max_size=3)
affinity = st.fixed_dictionaries({}, optional={"nodeAffinity": st.fixed_dictionaries({}, optional={
    "requiredDuringSchedulingIgnoredDuringExecution": st.fixed_dictionaries({}, optional={
        "nodeSelectorTerms": st.lists(st.fixed_dictionaries({}, optional={
            "matchExpressions": st.lists(st.fixed_dictionaries({}, optional={
                "key": json_values, "operator": json_values, "values": json_values}), max_size=2),
            "matchFields": json_values}), max_size=2)}),
    "preferredDuringSchedulingIgnoredDuringExecution": json_values}),
    "podAntiAffinity": json_values})
pod_specs = st.fixed_dictionaries({}, optional={
    "containers": st.one_of(containers, json_values), "initContainers": st.one_of(containers, json_values),
    "overhead": st.one_of(quantity_maps, json_values), "tolerations": st.one_of(st.lists(st.fixed_dictionaries(
        {}, optional={"key": json_values, "operator": json_values, "value": json_values, "effect": json_values,
                      "tolerationSeconds": json_values}), max_size=2), json_values),
    "affinity": st.one_of(affinity, json_values), "nodeSelector": json_values, "priority": json_values,
    "restartPolicy": json_values, "topologySpreadConstraints": json_values, "volumes": json_values,
    "preemptionPolicy": json_values})
metadata = st.fixed_dictionaries({"name": st.one_of(st.just("p"), json_values)}, optional={
    "namespace": json_values, "labels": json_values, "generateName": json_values,
    "annotations": st.one_of(st.dictionaries(st.sampled_from(["gpusched.io/gpu-milli", "gpusched.io/duration",
                                                              "gpusched.io/gpu-model", "a"]), json_values),
                             json_values)})
KINDS = [("v1", "Pod"), ("apps/v1", "Deployment"), ("batch/v1", "Job"), ("apps/v1", "DaemonSet"),
         ("scheduling.k8s.io/v1", "PriorityClass"), ("v1", "ResourceQuota"), ("v1", "LimitRange"),
         ("policy/v1", "PodDisruptionBudget"), ("v1", "ConfigMap"), ("v1", "Node"), ("gpusched.io/v1alpha1", "NodePool"),
         ("v1", "Namespace"), ("v1", "PersistentVolumeClaim")]


@st.composite
def documents(draw):
    api, kind = draw(st.sampled_from(KINDS))
    doc = {"apiVersion": api, "kind": kind, "metadata": draw(metadata)}
    spec = draw(pod_specs)
    if kind in ("Deployment", "Job", "DaemonSet"):
        spec = {"template": draw(st.one_of(st.fixed_dictionaries(
            {"metadata": st.fixed_dictionaries({}, optional={"labels": json_values}), "spec": st.just(spec)}),
            json_values)), "selector": draw(json_values), "replicas": draw(json_values)}
    elif kind != "Pod":
        spec = draw(st.dictionaries(st.sampled_from(["hard", "limits", "minAvailable", "maxUnavailable", "taints",
                                                     "count", "names", "gpu", "memory", "selector", "resources"]),
                                    json_values, max_size=4))
    doc["spec"] = draw(st.one_of(st.just(spec), json_values))
    for extra in draw(st.lists(st.sampled_from(["value", "data", "status", "preemptionPolicy"]), max_size=2)):
        doc[extra] = draw(json_values)
    return doc


def run_all(doc):
    try:
        obj = validate(Manifest("f", 0, doc))
    except GpuschedError:
        return
    if obj["kind"] == "Pod":
        pod_info(obj)
    elif obj["kind"] == "Node":
        node_info(obj)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_validate_never_raises_anything_else(doc):
    run_all(doc)


@settings(max_examples=150, deadline=None)
@given(documents())
def test_load_yaml_and_json_never_raise_anything_else(doc):
    for text in (yaml.safe_dump(doc), json.dumps(doc)):
        try:
            manifests = load_text(text, "f.yaml")
        except GpuschedError:
            continue
        for manifest in manifests:
            run_all(manifest.obj)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abc:-[]{}'\"!&*#|>%@`\n\t 01.,=", max_size=80))
def test_random_text_never_raises_anything_else(text):
    try:
        for manifest in load_text(text, "f.yaml"):
            run_all(manifest.obj)
    except GpuschedError:
        pass


quantity_texts = st.one_of(st.sampled_from(["500m", "1", "2", "1Gi", "1e3", "0.5", "0", "100Mi", "3"]),
                           st.integers(0, 16), st.text(alphabet="0123456789.emGiKk", min_size=1, max_size=5))
near_resources = st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "gpusched.io/gpu-milli"]),
                                 quantity_texts, max_size=3)
near_containers = st.lists(st.builds(
    lambda i, req, lim, sidecar: {"name": f"c{i}", "image": "img", "resources": {"requests": req, "limits": lim},
                                  **({"restartPolicy": "Always"} if sidecar else {})},
    st.integers(0, 1000), near_resources, near_resources, st.booleans()), min_size=1, max_size=3, unique_by=lambda c: c["name"])
near_requirements = st.lists(st.fixed_dictionaries({
    "key": st.sampled_from(["gpu", "zone", "nvidia.com/gpu.count"]),
    "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]),
    "values": st.lists(st.sampled_from(["1", "a100", "x", "8"]), max_size=2)}), max_size=2)
near_pods = st.builds(
    lambda containers, init, annotations, reqs, tolerations, prio: {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": annotations},
        "spec": {"containers": containers, "initContainers": [dict(c, name="i" + c["name"]) for c in init],
                 "priority": prio, "tolerations": tolerations,
                 "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                     "nodeSelectorTerms": [{"matchExpressions": reqs}]}}}}},
    near_containers, st.lists(near_containers.map(lambda cs: cs[0]), max_size=1),
    st.dictionaries(st.sampled_from(["gpusched.io/gpu-milli", "gpusched.io/gpu-model"]),
                    st.sampled_from(["1", "470", "1000", "0", "A|B|A", "x"]), max_size=2),
    near_requirements,
    st.lists(st.fixed_dictionaries({"key": st.sampled_from(["", "k"]), "operator": st.sampled_from(["Exists", "Equal"]),
                                    "effect": st.sampled_from(["", "NoSchedule", "NoExecute"])}), max_size=2),
    st.integers(-10, 10**9))


@settings(max_examples=300, deadline=None)
@given(near_pods)
def test_valid_pods_always_give_pod_info(pod):
    try:
        obj = validate(Manifest("f", 0, pod))
    except GpuschedError:
        return
    info = pod_info(obj)
    assert all(isinstance(v, int) and v > 0 for v in info.requests.values())
    assert 0 <= info.gpu_milli < 1000


def test_a_pod_whose_containers_add_up_past_one_gpu_in_milli_is_refused_at_validation():
    # found by test_valid_pods_always_give_pod_info on a fresh clone: each container's
    # gpusched.io/gpu-milli is in range, their sum (500 + 501) is not; validation passed it and
    # the first reader of the pod raised
    containers = [{"name": f"c{i}", "image": "img", "resources": {"limits": {"gpusched.io/gpu-milli": milli}}}
                  for i, milli in enumerate((500, 501))]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": containers}}
    with pytest.raises(GpuschedError, match=r"gpu-milli.*must be an integer between 1 and 1000"):
        validate(Manifest("f", 0, pod))
