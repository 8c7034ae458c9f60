"""``objects.typed_views`` is generated from the vendored OpenAPI schemas by
``scripts/gen_typed_views.py``: regenerating it gives the committed text byte for byte, and the
generator maps each schema shape to the Python type a reader sees."""

from __future__ import annotations

import importlib.util
import typing
from pathlib import Path
from types import ModuleType

import pytest

from gpusched.objects import typed_views

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
