"""``objects.typed_views`` is generated from the vendored OpenAPI schemas by
``scripts/gen_typed_views.py``: regenerating it gives the committed text byte for byte, and the
generator maps each schema shape to the Python type a reader sees."""

from __future__ import annotations

import importlib.util
import typing
from pathlib import Path
from types import ModuleType, UnionType

import pytest

from gpusched.cluster.cluster import Cluster
from gpusched.objects import typed_views
from tests.cluster.builders import apply, join, pod, pool, priority_class

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "gen_typed_views.py"


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_typed_views", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_module_is_what_the_generator_writes(generator: ModuleType) -> None:
    committed = (REPO / "gpusched" / "objects" / "typed_views.py").read_text(encoding="utf-8")
    assert committed == generator.generated(), \
        "gpusched/objects/typed_views.py is stale: run scripts/gen_typed_views.py"


REF = "#/definitions/"


@pytest.mark.parametrize("schema,expected", [
    pytest.param({"type": "string"}, "str", id="string"),
    pytest.param({"type": "integer", "format": "int32"}, "int", id="integer"),
    pytest.param({"type": "number", "format": "double"}, "float", id="number"),
    pytest.param({"type": "boolean"}, "bool", id="boolean"),
    pytest.param({"type": "array", "items": {"type": "string"}}, "list[str]", id="array"),
    pytest.param({"type": "object", "additionalProperties": {"type": "string"}}, "dict[str, str]",
                 id="string-map"),
    pytest.param({"type": "object", "additionalProperties":
                  {"$ref": REF + "io.k8s.apimachinery.pkg.api.resource.Quantity"}},
                 "dict[str, Quantity]", id="resource-list"),
    pytest.param({"$ref": REF + "io.k8s.apimachinery.pkg.util.intstr.IntOrString"}, "IntOrString",
                 id="int-or-string"),
    pytest.param({"$ref": REF + "io.k8s.apimachinery.pkg.apis.meta.v1.Time"}, "str", id="time"),
    pytest.param({"$ref": REF + "io.k8s.api.core.v1.PodSpec"}, "PodSpec", id="viewed-definition"),
    pytest.param({"type": "array", "items": {"$ref": REF + "io.k8s.api.core.v1.Toleration"}},
                 "list[Toleration]", id="list-of-viewed"),
    pytest.param({"$ref": REF + "io.k8s.api.core.v1.Probe"}, "dict[str, Any]", id="unviewed-definition"),
    pytest.param({"type": "object"}, "dict[str, Any]", id="free-form-object"),
])
def test_schema_shapes_map_to_python_types(generator: ModuleType, schema: dict[str, object],
                                           expected: str) -> None:
    assert generator.type_of(schema) == expected


@pytest.mark.parametrize("view,field,expected", [
    pytest.param("Pod", "spec", "PodSpec", id="pod-spec"),
    pytest.param("PodSpec", "containers", "list[Container]", id="containers"),
    pytest.param("ResourceRequirements", "limits", "dict[str, Quantity]", id="limits"),
    pytest.param("ObjectMeta", "annotations", "dict[str, str]", id="annotations"),
    pytest.param("NodeStatus", "allocatable", "dict[str, Quantity]", id="allocatable"),
    pytest.param("Toleration", "tolerationSeconds", "int", id="toleration-seconds"),
])
def test_the_views_hold_the_fields_the_core_reads(view: str, field: str, expected: str) -> None:
    cls = getattr(typed_views, view)
    assert typing.is_typeddict(cls) and not cls.__total__
    annotation = cls.__annotations__[field]          # a ForwardRef: the module defers annotations
    assert getattr(annotation, "__forward_arg__", annotation) == expected


# ----------------------------------------------------------------------------------------------
# The views describe what the store really holds: every stored Pod and Node of a busy cluster
# (GPU pods bound and running, shares, scheduling constraints, a preemption) conforms.

def problems(value: object, annotation: object, path: str) -> list[str]:
    """Where ``value`` does not have the type ``annotation`` (a resolved view annotation)."""
    if annotation is typing.Any:
        return []
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, UnionType):
        return [] if any(not problems(value, arg, path) for arg in args) else \
            [f"{path}: {value!r} is not {annotation}"]
    if typing.is_typeddict(annotation):
        if not isinstance(value, dict):
            return [f"{path}: {value!r} is not an object"]
        hints = typing.get_type_hints(annotation)
        return [p for key, item in value.items() if key in hints
                for p in problems(item, hints[key], f"{path}.{key}")]
    if origin is list:
        if not isinstance(value, list):
            return [f"{path}: {value!r} is not a list"]
        return [p for i, item in enumerate(value) for p in problems(item, args[0], f"{path}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{path}: {value!r} is not a map"]
        return [p for key, item in value.items() for p in problems(item, args[1], f"{path}[{key}]")]
    wanted = {str: (str,), int: (int,), float: (int, float), bool: (bool,)}[annotation]
    ok = isinstance(value, wanted) and (annotation is bool or not isinstance(value, bool))
    return [] if ok else [f"{path}: {value!r} is not {annotation.__name__}"]


CONSTRAINED = """
apiVersion: v1
kind: Pod
metadata: {name: constrained, labels: {app: a}, annotations: {gpusched.io/gpu-milli: "300"}}
spec:
  tolerations: [{key: k, operator: Exists, effect: NoExecute, tolerationSeconds: 30}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/os, operator: In, values: [linux]}]}]
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 10
        podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: b}}}
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway,
     labelSelector: {matchLabels: {app: a}}}
  containers:
  - name: c
    image: busybox
    ports: [{containerPort: 80, hostPort: 8080}]
    resources: {requests: {cpu: 500m, memory: 1Gi}, limits: {nvidia.com/gpu: 1, memory: 1Gi}}
"""


def test_stored_pods_and_nodes_conform_to_the_views(tmp_path) -> None:
    with Cluster.open(str(tmp_path / "cluster.db")) as cluster:
        apply(cluster, join(pool("a100", count=2, gpus=2), priority_class("high", 1000), CONSTRAINED,
                            pod("low-1", gpus=2, duration="1h"), pod("low-2", gpus=1),
                            pod("high", gpus=2, priority_class="high")))
        cluster.delete("pods", "low-2")
        pods = cluster.get("pods", namespace=None)         # low-2 Terminating, in its grace period
        cluster.advance(60)                                  # its grace period over, all bound
        pods += cluster.get("pods", namespace=None)
        nodes = cluster.get("nodes", namespace=None)
    assert any(body["metadata"].get("deletionTimestamp") for body in pods)
    assert any(body["status"].get("startTime") for body in pods) and nodes
    found = [p for body in pods for p in problems(body, typed_views.Pod, body["metadata"]["name"])]
    found += [p for body in nodes for p in problems(body, typed_views.Node, body["metadata"]["name"])]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("value,view,expected", [
    pytest.param({"spec": {"nodeName": 3}}, "Pod", ["p.spec.nodeName: 3 is not str"], id="wrong-scalar"),
    pytest.param({"spec": {"priority": True}}, "Pod", ["p.spec.priority: True is not int"], id="bool-is-not-int"),
    pytest.param({"status": {"capacity": {"cpu": "8", "pods": 110}}}, "Node", [], id="quantity-string-or-number"),
    pytest.param({"status": {"capacity": {"cpu": ["8"]}}}, "Node",
                 ["p.status.capacity[cpu]: ['8'] is not str | int | float"], id="quantity-list"),
    pytest.param({"spec": {"containers": [{"ports": [{"hostPort": "80"}]}]}}, "Pod",
                 ["p.spec.containers[0].ports[0].hostPort: '80' is not int"], id="nested"),
    pytest.param({"metadata": {"x-unknown": 1}}, "Pod", [], id="unknown-field-not-judged"),
])
def test_the_conformance_check_finds_each_kind_of_mismatch(value: dict, view: str, expected: list[str]) -> None:
    assert problems(value, getattr(typed_views, view), "p") == expected
