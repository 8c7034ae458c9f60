"""Discovery and OpenAPI documents: how clients learn which resources the server has.

- ``/version``: ``gitVersion`` ``v1.35.0-gpusched`` (``objects.kinds.KUBERNETES_VERSION``).
- Legacy discovery: ``/api`` (APIVersions), ``/apis`` (APIGroupList), ``/api/v1`` and
  ``/apis/<group>/<version>`` (APIResourceList, subresources as ``pods/status``...).
- Aggregated discovery (``apidiscovery.k8s.io`` v2 / v2beta1), chosen by the Accept header:
  kubectl 1.32 asks for it and then skips the per-group-version requests.
- ``/openapi/v3`` and one document per group version, each path's operations carrying
  ``x-kubernetes-group-version-kind`` and the ``fieldValidation`` parameter, which is what
  kubectl needs to use server-side field validation instead of the protobuf ``/openapi/v2``;
  ``components.schemas`` holds the kinds' schemas of Kubernetes v1.35 (``objects.schema``, the
  same ones the server decodes with), so ``kubectl explain pod.spec.containers.resources`` works.
- ``/openapi/v2``: a minimal Swagger 2.0 document without definitions, as protobuf when the
  client accepts ``application/com.github.proto-openapi.spec.v2@v1.0+protobuf`` (kubectl 1.20;
  answered as ``application/octet-stream`` like kube-openapi, since Go's mime parser rejects the
  ``@``) or as JSON. kubectl's client-side validation skips kinds the document does not define, so kubectl
  1.20 applies manifests without ``--validate=false`` and the server validates them.
  Its definitions stay empty; the v3 documents carry the schemas.

The metrics APIs (``metrics.k8s.io``, ``custom.metrics.k8s.io``, ``external.metrics.k8s.io``,
``server.metrics_api``) are listed too, as an aggregated API server's groups are.

Every kind of ``objects.kinds.KINDS`` is served, in its group version, Leases
(``coordination.k8s.io/v1``, for leader election) included. There are no node heartbeat Leases
(no kubelets): ``kubectl describe node`` GETs ``kube-node-lease/leases/<node>``, gets a 404
NotFound Status, and prints ``Lease: Failed to get lease: leases.coordination.k8s.io "<node>"
not found`` (exit 0), as for a real node whose kubelet never registered a lease.

Neighbours: ``server.app`` routes here; ``objects.kinds`` is the table of kinds.
"""

from __future__ import annotations

from typing import Any

import functools
import hashlib
import json

from gpusched.objects import schema
from gpusched.server import metrics_api
from gpusched.objects.kinds import ALSO_SERVED, KINDS, KUBERNETES_VERSION, KindInfo
from gpusched.objects.kueue_conversion import V1BETA1, V1BETA2
from gpusched.server.versions import served_info

GIT_VERSION = f"{KUBERNETES_VERSION}-gpusched"
# Served but deprecated -> the version stored: Kueue's v1beta1, converted on the way in
# (objects.kueue_conversion) and answered as v1beta2 (its objects are read as stored).
DEPRECATED_VERSIONS = {V1BETA1: V1BETA2}
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
STATUS_KINDS = ("Pod", "Node", "Deployment", "ReplicaSet", "DaemonSet", "Job", "ResourceQuota",
                "PodDisruptionBudget", "Namespace", "PersistentVolumeClaim", "NodePool", "Service",
                "PersistentVolume", "HorizontalPodAutoscaler", "VerticalPodAutoscaler",
                "ClusterPolicy", "ClusterQueue", "Cohort", "LocalQueue", "Workload", "PodGroup",
                "JobSet", "ReplicationController", "StatefulSet", "VolumeAttachment",
                "ResourceClaim", "CustomResourceDefinition")
SCALE_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController")
AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
CATEGORIES = {"Pod": ["all"], "Deployment": ["all"], "ReplicaSet": ["all"], "DaemonSet": ["all"],
              "Job": ["all"], "Service": ["all"], "HorizontalPodAutoscaler": ["all"],
              "StatefulSet": ["all"], "ReplicationController": ["all"],
              "CustomResourceDefinition": ["api-extensions"]}


def version() -> dict[str, Any]:
    major, minor = KUBERNETES_VERSION.lstrip("v").split(".")[:2]
    return {"major": major, "minor": minor, "gitVersion": GIT_VERSION,
            "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.25.5", "compiler": "gc",
            "platform": "linux/amd64"}


def group_versions() -> dict[str, list[KindInfo]]:
    """``"v1"``, ``"apps/v1"``, ... -> their kinds, in KINDS order (then ALSO_SERVED's); a deprecated version still
    served (``DEPRECATED_VERSIONS``) after its group's current one, with the same kinds."""
    out: dict[str, list[KindInfo]] = {}
    for info in (*KINDS.values(), *ALSO_SERVED):
        out.setdefault(info.api_version, []).append(info)
    for old, current in DEPRECATED_VERSIONS.items():
        out[old] = list(out[current])
    return out


def find_resource(group_version: str, plural: str) -> KindInfo | None:
    """The kind a path names, its ``api_version`` the path's (a deprecated version's own)."""
    for info in group_versions().get(group_version, []):
        if info.plural == plural:
            return served_info(group_version, info)
    return None


def subresources(info: KindInfo) -> list[tuple[str, str, str, list[str]]]:
    """(name, group, kind, verbs) of the subresources of a kind."""
    out = []
    if info.kind in STATUS_KINDS:
        out.append(("status", info.group, info.kind, ["get", "patch", "update"]))
    if info.kind == "Pod":
        out.append(("binding", "", "Binding", ["create"]))
        out.append(("eviction", "policy", "Eviction", ["create"]))
        out.append(("exec", "", "PodExecOptions", ["create", "get"]))
        out.append(("log", "", "Pod", ["get"]))
    if info.kind in SCALE_KINDS:
        out.append(("scale", "autoscaling", "Scale", ["get", "patch", "update"]))
    return out


def resource_list(group_version: str) -> dict[str, Any] | None:
    kinds = group_versions().get(group_version)
    if kinds is None:
        return metrics_api.resource_list(group_version)
    resources = []
    for info in kinds:
        entry = {"name": info.plural, "singularName": info.singular, "namespaced": info.namespaced,
                 "kind": info.kind, "verbs": VERBS, "shortNames": list(info.short_names),
                 "storageVersionHash": _hash(info.kind)}
        if info.kind in CATEGORIES:
            entry["categories"] = CATEGORIES[info.kind]
        resources.append(entry)
        for name, group, kind, verbs in subresources(info):
            sub = {"name": f"{info.plural}/{name}", "singularName": "", "namespaced": info.namespaced,
                   "kind": kind, "verbs": verbs}
            if group != info.group:
                sub.update(group=group, version="v1")
            resources.append(sub)
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
            "resources": resources}


def api_versions() -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]}


def _group_entry(group: str, versions: list[str]) -> dict[str, Any]:
    listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": listed, "preferredVersion": listed[0]}


def api_groups() -> dict[str, Any]:
    groups: dict[str, list[str]] = {}
    for gv in group_versions():
        if "/" in gv:
            group, v = gv.split("/")
            groups.setdefault(group, []).append(v)
    for gv in metrics_api.DISCOVERY:              # the aggregated metrics APIs
        group, v = gv.split("/")
        groups.setdefault(group, []).append(v)
    return {"kind": "APIGroupList", "apiVersion": "v1",
            "groups": [_group_entry(g, vs) for g, vs in groups.items()]}


def api_group(group: str) -> dict[str, Any] | None:
    versions = [gv.split("/")[1] for gv in [*group_versions(), *metrics_api.DISCOVERY]
                if gv.startswith(group + "/")]
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, versions)}


def _aggregated_resource(info: KindInfo, version: str) -> dict[str, Any]:
    group = info.group
    entry = {"resource": info.plural, "singularResource": info.singular,
             "scope": "Namespaced" if info.namespaced else "Cluster",
             "responseKind": {"group": group, "version": version, "kind": info.kind},
             "verbs": VERBS, "shortNames": list(info.short_names),
             "subresources": [{"subresource": name,
                               "responseKind": {"group": sub_group, "version": "v1", "kind": kind},
                               "verbs": verbs}
                              for name, sub_group, kind, verbs in subresources(info)]}
    if info.kind in CATEGORIES:
        entry["categories"] = CATEGORIES[info.kind]
    return entry


def aggregated(core: bool, version_tag: str) -> dict[str, Any]:
    """The APIGroupDiscoveryList for ``/api`` (core) or ``/apis`` (named groups)."""
    items: list[dict[str, Any]] = []
    by_group: dict[str, dict[str, Any]] = {}
    for gv, kinds in group_versions().items():
        group, _, version = gv.rpartition("/")
        if (group == "") != core:
            continue
        if group not in by_group:
            by_group[group] = {"metadata": {"name": group} if group else {}, "versions": []}
            items.append(by_group[group])
        by_group[group]["versions"].append(
            {"version": version, "freshness": "Current",
             "resources": [_aggregated_resource(i, version) for i in kinds]})
    if not core:
        items += metrics_api.aggregated_items()
    return {"kind": "APIGroupDiscoveryList", "apiVersion": f"apidiscovery.k8s.io/{version_tag}",
            "metadata": {}, "items": items}


def aggregated_tag(accept: str) -> str | None:
    """``v2`` / ``v2beta1`` when the Accept header asks for aggregated discovery (first wins)."""
    for part in accept.split(","):
        compact = part.replace(" ", "")
        if "g=apidiscovery.k8s.io" in compact and "as=APIGroupDiscoveryList" in compact:
            if "v=v2beta1" in compact:
                return "v2beta1"
            if "v=v2" in compact:
                return "v2"
    return None


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ---- OpenAPI v3 ------------------------------------------------------------------------------

def openapi_root() -> dict[str, Any]:
    paths = {}
    for gv in group_versions():
        if gv in DEPRECATED_VERSIONS:         # kubectl validates with the stored version's schema
            continue
        key = "api/v1" if gv == "v1" else f"apis/{gv}"
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={_document_hash(gv)}"}
    return {"paths": paths}


@functools.lru_cache(maxsize=None)
def _document_hash(group_version: str) -> str:
    return _hash(json.dumps(openapi_document(group_version), sort_keys=True)).upper()


def _path_parameter(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string", "uniqueItems": True},
            "description": f"name of the {'Namespace' if name == 'namespace' else 'object'}"}


def _operation(info: KindInfo, verb: str, action: str) -> dict[str, Any]:
    group, _, version = info.api_version.rpartition("/")
    op: dict[str, Any] = {"operationId": f"{verb}{info.kind}", "x-kubernetes-action": action,
          "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": info.kind},
          "responses": {"200": {"description": "OK", "content": {"application/json": {
              "schema": {"$ref": f"#/components/schemas/{_schema_name(info)}"}}}}}}
    if verb in ("create", "replace"):         # kube-openapi: the body is the kind, any media type
        op["requestBody"] = {"required": True, "content": {"*/*": {
            "schema": {"$ref": f"#/components/schemas/{_schema_name(info)}"}}}}
    if verb in ("patch", "create", "replace"):
        op["parameters"] = [
            {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True},
             "description": "Ignore, Warn or Strict: how unknown or duplicate fields are treated"},
            {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
            {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": True}}]
    return op


def _schema_name(info: KindInfo) -> str:
    """The kind's definition name in the v1.35 schemas (``objects.schema``)."""
    found = schema.schema_for(info.api_version, info.kind)
    if found is not None:
        return found.name
    return schema.own_definition_name(info.api_version, info.kind)


def _open_schema(info: KindInfo) -> dict[str, Any]:
    group, _, version = info.api_version.rpartition("/")
    return {"type": "object", "description": f"{info.kind} ({info.api_version})",
            "x-kubernetes-preserve-unknown-fields": True,
            "x-kubernetes-group-version-kind": [{"group": group, "version": version, "kind": info.kind}]}


@functools.lru_cache(maxsize=None)
def openapi_document(group_version: str) -> dict[str, Any] | None:
    """The OpenAPI v3 document of one group version: its paths, and the schemas of its kinds (from
    ``objects.schema``, every definition they refer to included), which ``kubectl explain`` reads."""
    kinds = group_versions().get(group_version)
    if kinds is None:
        return None
    base = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
    paths: dict[str, Any] = {}
    named, opened = [], {}
    for info in kinds:
        scope = f"{base}/namespaces/{{namespace}}/{info.plural}" if info.namespaced else f"{base}/{info.plural}"
        scoped = [_path_parameter("namespace")] if info.namespaced else []
        paths[scope] = {"get": _operation(info, "list", "list"),
                        "post": _operation(info, "create", "post"), "parameters": scoped}
        paths[f"{scope}/{{name}}"] = {"get": _operation(info, "read", "get"),
                                      "put": _operation(info, "replace", "put"),
                                      "patch": _operation(info, "patch", "patch"),
                                      "delete": _operation(info, "delete", "delete"),
                                      "parameters": [_path_parameter("name"), *scoped]}
        if schema.schema_for(info.api_version, info.kind) is None:
            opened[_schema_name(info)] = _open_schema(info)
        else:
            named.append(_schema_name(info))
    definitions = schema.load().definitions
    schemas = {name: schema.openapi_v3(definitions[name]) for name in schema.closure(named)}
    schemas.update(opened)
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": GIT_VERSION},
            "paths": paths, "components": {"schemas": schemas}}


def _proto_string(field_number: int, text: str) -> bytes:
    """One length-delimited protobuf field (wire type 2); lengths here are < 128 bytes."""
    data = text.encode()
    return bytes([field_number << 3 | 2, len(data)]) + data


def openapi_v2_protobuf() -> bytes:
    r"""gnostic ``openapi_v2.Document{swagger: "2.0", info: {title, version}}`` in protobuf.

    >>> openapi_v2_protobuf()[:5]
    b'\n\x032.0'
    """
    info = _proto_string(1, "Kubernetes (gpusched)") + _proto_string(2, GIT_VERSION)
    return _proto_string(1, "2.0") + bytes([2 << 3 | 2, len(info)]) + info


def openapi_v2_json() -> dict[str, Any]:
    return {"swagger": "2.0", "info": {"title": "Kubernetes (gpusched)", "version": GIT_VERSION},
            "paths": {}, "definitions": {}}
