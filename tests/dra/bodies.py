"""Tiny builders for stored DRA objects (``resource.k8s.io/v1`` dicts: what the scheduler
plugin and the cluster read; ``tests.dra.builders`` builds the allocator's parsed views), shaped
like upstream's
``pkg/scheduler/testing/wrappers.go`` ``MakeResourceSlice`` / ``MakeResourceClaim`` /
``MakeDeviceClass`` so a test case reads like the upstream case it reproduces.

``resource_slice("worker", "some-driver", "instance-1")`` is a node-local slice whose pool is
the node; ``claim("my-pod-my-resource", ("req-1", "my-resource-class"))`` a claim with one
ExactCount request; ``allocated(claim_body, "worker", "instance-1")`` the same claim with the
allocation upstream writes (``nodeSelector`` on ``metadata.name``).
"""

from __future__ import annotations

import copy
from typing import Any

API = "resource.k8s.io/v1"
NODE_FIELD = "metadata.name"


def device_class(name: str = "my-resource-class", *expressions: str,
                 extended: str | None = None, created: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if expressions:
        spec["selectors"] = [{"cel": {"expression": e}} for e in expressions]
    if extended:
        spec["extendedResourceName"] = extended
    meta: dict[str, Any] = {"name": name}
    if created:
        meta["creationTimestamp"] = created
    return {"apiVersion": API, "kind": "DeviceClass", "metadata": meta, "spec": spec}


def device(name: str, attributes: dict[str, Any] | None = None,
           capacity: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name}
    if attributes:
        body["attributes"] = attributes
    if capacity:
        body["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    body.update(fields)
    return body


def resource_slice(node: str, driver: str = "some-driver", *devices: str | dict[str, Any],
                   pool: str | None = None, name: str | None = None,
                   **spec: Any) -> dict[str, Any]:
    """A slice of ``node`` (``nodeName``; pass ``allNodes=True`` / ``nodeSelector=...`` in
    ``spec`` with ``node=""`` for a shared one)."""
    pool = pool if pool is not None else node
    body_spec: dict[str, Any] = {"driver": driver,
                                 "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                                 "devices": [d if isinstance(d, dict) else device(d) for d in devices]}
    if node:
        body_spec["nodeName"] = node
    body_spec.update(spec)
    return {"apiVersion": API, "kind": "ResourceSlice",
            "metadata": {"name": name or f"{node or pool}-{driver}"}, "spec": body_spec}


def request(name: str, device_class_name: str, count: int = 1, *selectors: str,
            **exactly: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": device_class_name, "allocationMode": "ExactCount",
                            "count": count}
    if selectors:
        body["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    body.update(exactly)
    return {"name": name, "exactly": body}


def first_available(name: str, *subrequests: tuple[str, str, int]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": [
        {"name": sub, "deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
        for sub, cls, count in subrequests]}


def claim(name: str = "my-pod-my-resource", *requests: tuple[str, str] | dict[str, Any],
          namespace: str = "default", owner: tuple[str, str] | None = None,
          uid: str | None = None) -> dict[str, Any]:
    """A claim; each request is ``(name, class)`` (ExactCount 1) or a ``request(...)`` dict;
    ``owner``: (pod name, pod uid) as controller (a claim made from a template)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}"}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner[0],
                                    "uid": owner[1], "controller": True}]
    built = [r if isinstance(r, dict) else request(r[0], r[1]) for r in requests]
    return {"apiVersion": API, "kind": "ResourceClaim", "metadata": meta,
            "spec": {"devices": {"requests": built}}}


def node_selector(node: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchFields": [
        {"key": NODE_FIELD, "operator": "In", "values": [node]}]}]}


def allocated(body: dict[str, Any], node: str, *devices: str, driver: str = "some-driver",
              request_name: str = "req-1", pool: str | None = None) -> dict[str, Any]:
    out = copy.deepcopy(body)
    out["status"] = {"allocation": {
        "devices": {"results": [{"request": request_name, "driver": driver,
                                 "pool": pool if pool is not None else node, "device": d}
                                for d in devices]},
        "nodeSelector": node_selector(node)}}
    return out


def reserved(body: dict[str, Any], *pods: tuple[str, str]) -> dict[str, Any]:
    out = copy.deepcopy(body)
    out.setdefault("status", {})["reservedFor"] = [
        {"resource": "pods", "name": name, "uid": uid} for name, uid in pods]
    return out


def pod(name: str = "my-pod", *claims: tuple[str, str], uid: str | None = None,
        namespace: str = "default", templates: dict[str, str | None] | None = None,
        requests: dict[str, str] | None = None) -> dict[str, Any]:
    """A pod naming ``claims`` as (entry name, ResourceClaim name); ``templates``: entry name ->
    the claim name recorded in ``status.resourceClaimStatuses`` (an entry from a template)."""
    entries: list[dict[str, Any]] = [{"name": e, "resourceClaimName": c} for e, c in claims]
    statuses = []
    for entry, recorded in (templates or {}).items():
        entries.append({"name": entry, "resourceClaimTemplateName": f"{entry}-template"})
        if recorded != "":
            statuses.append({"name": entry, "resourceClaimName": recorded})
    container: dict[str, Any] = {"name": "ctr", "image": "pause"}
    if claims or templates:
        container["resources"] = {"claims": [{"name": e["name"]} for e in entries]}
    if requests:
        container.setdefault("resources", {})["requests"] = dict(requests)
        container["resources"]["limits"] = dict(requests)
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": name, "namespace": namespace,
                                         "uid": uid or f"uid-{name}"},
                            "spec": {"containers": [container]}}
    if entries:
        body["spec"]["resourceClaims"] = entries
    if statuses:
        body["status"] = {"resourceClaimStatuses": statuses}
    return body
