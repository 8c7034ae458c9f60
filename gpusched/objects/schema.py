"""The field schemas of every kind gpusched serves: Kubernetes v1.35's OpenAPI, plus gpusched's own.

Two sources, both data files beside this module:

- ``schemas/kubernetes.json``: the definitions of the official OpenAPI spec of the emulated
  release (``api/openapi-spec/swagger.json`` of kubernetes/kubernetes ``release-1.35``), trimmed to
  the kinds gpusched serves by ``scripts/gen_openapi_schemas.py``; never edited by hand. It keeps
  every ``x-kubernetes-*`` extension (patch strategy and merge key, list type, int-or-string).
- ``schemas/own/*.yaml``: one small file per kind that is not in that spec (gpusched's NodePool,
  CRD kinds such as the VerticalPodAutoscaler or NVIDIA's ClusterPolicy), each holding the
  kind's ``apiVersion``, ``kind`` and ``schema`` (an OpenAPI v3 object schema, as a CRD's
  ``openAPIV3Schema``). ``apiVersion``, ``kind`` and ``metadata`` (ObjectMeta) are added as the
  API server adds them to a CRD. Adding an own kind is adding one file.

``schema_for("apps/v1", "Deployment")`` gives a :class:`KindSchema` (its definition name, root
node, whether it is a built-in type or a custom resource); ``resolve(node)`` follows ``$ref``.
Older apiVersions gpusched still accepts (``policy/v1beta1`` ...) use the current version's schema.

Neighbours: used by objects.strict (decoding), server.discovery (``/openapi/v3``).
"""

from __future__ import annotations

from typing import Any

import functools
import json
import os
from dataclasses import dataclass

import yaml

SCHEMA_DIR = os.path.join(os.path.dirname(__file__), "schemas")
KUBERNETES_SCHEMAS = os.path.join(SCHEMA_DIR, "kubernetes.json")
OWN_SCHEMAS = os.path.join(SCHEMA_DIR, "own")
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)   # the same documents, parsed by libyaml
# apiVersions accepted on input that the v1.35 spec no longer has: decoded as the current version.
OLDER_VERSIONS = {"policy/v1beta1": "policy/v1", "scheduling.k8s.io/v1beta1": "scheduling.k8s.io/v1"}


@dataclass(frozen=True, slots=True)
class KindSchema:
    api_version: str
    kind: str
    name: str          # definition name, e.g. io.k8s.api.apps.v1.Deployment
    custom: bool       # a custom resource (own kind / CRD): validated as apiextensions does


@dataclass(frozen=True)
class Schemas:
    release: str
    source: str
    definitions: dict[str, Any]       # name -> OpenAPI (v2-style "#/definitions/" refs) schema
    kinds: dict[str, Any]             # "apiVersion Kind" -> KindSchema


def own_definition_name(api_version: str, kind: str) -> str:
    """A CRD's schema name as the API server publishes it: the group reversed, then version, kind.

    >>> own_definition_name("nvidia.com/v1", "ClusterPolicy")
    'com.nvidia.v1.ClusterPolicy'
    """
    group, _, version = api_version.rpartition("/")
    return ".".join([*reversed(group.split(".")), version, kind])


def _own_kind(path: str) -> tuple[KindSchema, dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        doc = yaml.load(handle, Loader=SAFE_LOADER)   # libyaml: 5 ms, not 55 ms, at each CLI start
    api_version, kind = doc["apiVersion"], doc["kind"]
    group, _, version = api_version.rpartition("/")
    schema = dict(doc["schema"])
    properties = {"apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema "
                                 "of this representation of an object."},
                  "kind": {"type": "string", "description": "Kind is a string value representing the REST "
                           "resource this object represents."},
                  "metadata": {"$ref": f"#/definitions/{OBJECT_META}",
                               "description": "Standard object's metadata."}}
    properties.update(schema.get("properties") or {})
    schema["properties"] = properties
    schema["x-kubernetes-group-version-kind"] = [{"group": group, "version": version, "kind": kind}]
    name = own_definition_name(api_version, kind)
    return KindSchema(api_version, kind, name, True), schema


@functools.lru_cache(maxsize=1)
def _official() -> Schemas:
    """The official spec's schemas alone: what decoding a built-in kind reads, without parsing
    the own kinds' YAML (about 5 ms of CPU of a one-pod ``apply``)."""
    with open(KUBERNETES_SCHEMAS, encoding="utf-8") as handle:
        data = json.load(handle)
    kinds = {}
    for key, name in data["kinds"].items():
        api_version, kind = key.split(" ")
        kinds[key] = KindSchema(api_version, kind, name, False)
    return Schemas(data["release"], data["source"], data["definitions"], kinds)


@functools.lru_cache(maxsize=1)
def load() -> Schemas:
    """The schemas, read once: the official ones, then gpusched's own (neither kinds nor
    definition names shared with the official ones)."""
    official = _official()
    definitions, kinds = dict(official.definitions), dict(official.kinds)
    for file in sorted(os.listdir(OWN_SCHEMAS)):
        if file.endswith((".yaml", ".yml")):
            info, schema = _own_kind(os.path.join(OWN_SCHEMAS, file))
            kinds[f"{info.api_version} {info.kind}"] = info
            definitions[info.name] = schema
    return Schemas(official.release, official.source, definitions, kinds)


def schema_for(api_version: str, kind: str) -> KindSchema | None:
    api_version = OLDER_VERSIONS.get(api_version, api_version)
    key = f"{api_version} {kind}"
    found: KindSchema | None = _official().kinds.get(key)
    return found if found is not None else load().kinds.get(key)


def resolve(node: dict[str, Any]) -> dict[str, Any]:
    """Follow ``$ref`` (possibly repeatedly) to the definition it names (an official one is
    found without loading the own kinds)."""
    official = _official().definitions
    while "$ref" in node:
        name = node["$ref"].rpartition("/")[2]
        node = official[name] if name in official else load().definitions[name]
    return node


def closure(names: list[str]) -> list[str]:
    """The named definitions and every definition they refer to, sorted."""
    definitions = load().definitions
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(_refs(definitions[name]) - seen)
    return sorted(seen)


def _refs(node: object) -> set[str]:
    if isinstance(node, list):
        return set().union(*map(_refs, node)) if node else set()
    if not isinstance(node, dict):
        return set()
    found = {node["$ref"].rpartition("/")[2]} if isinstance(node.get("$ref"), str) else set()
    for value in node.values():
        found |= _refs(value)
    return found


def openapi_v3(node: object) -> object:
    """A definition as OpenAPI v3 publishes it: refs to ``#/components/schemas/``, and a ref with
    siblings (a description) wrapped in ``allOf``, as kube-openapi's v3 builder does."""
    if isinstance(node, list):
        return [openapi_v3(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: openapi_v3(value) for key, value in node.items() if key != "$ref"}
    if isinstance(node.get("$ref"), str):
        ref = {"$ref": "#/components/schemas/" + node["$ref"].rpartition("/")[2]}
        if not out:
            return ref
        out["allOf"] = [ref]
    return out


def patch_strategy(definition: str, field: str) -> tuple[str, str]:
    """(``x-kubernetes-patch-strategy``, ``x-kubernetes-patch-merge-key``) of one field, as the
    strategic merge patch reads them from the Go struct tags (``""`` where there is none).

    >>> patch_strategy("io.k8s.api.core.v1.PodSpec", "containers")
    ('merge', 'name')
    >>> patch_strategy("io.k8s.api.core.v1.Container", "volumeMounts")
    ('merge', 'mountPath')
    """
    node = resolve({"$ref": f"#/definitions/{definition}"}).get("properties", {}).get(field, {})
    return node.get("x-kubernetes-patch-strategy", ""), node.get("x-kubernetes-patch-merge-key", "")


def ref_name(node: dict[str, Any]) -> str:
    """The definition name a node refers to (``""`` when it is inline)."""
    ref = node.get("$ref")
    return ref.rpartition("/")[2] if isinstance(ref, str) else ""
