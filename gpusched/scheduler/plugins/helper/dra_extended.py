"""Extended resources backed by DRA (KEP-5004, beta and on in v1.36): a pod asking
``nvidia.com/gpu: 1`` on a node whose GPUs are published in ResourceSlices gets its devices
through a claim the scheduler makes.

Upstream ``dynamicresources.go`` (``preFilterExtendedResources``, ``filterExtendedResources``,
``createDeviceRequests``, ``createRequestMappings``, ``bindClaim``) and ``extended/``:

- the mapping (``extended.DeviceClassMapping``): each DeviceClass's ``spec.extendedResourceName``
  (two classes with one name: the newest wins, on a tie the first name) and, for every class,
  the implicit ``deviceclass.resource.kubernetes.io/<class>``;
- PreFilter: the pod's non-zero extended requests with a mapping need a claim; the one owned by
  the pod with annotation ``resource.kubernetes.io/extended-resource-claim: "true"`` from an
  earlier cycle, else one in memory named ``<extended-resources>`` (generateName
  ``<pod>-extended-resources-``, owned by the pod);
- Filter, per node: a resource the node has in its allocatable (a device plugin's) is left to
  NodeResourcesFit; one it lacks goes into the node's claim, one request per (container,
  resource): ``container-<i>-request-<j>`` (``i`` over initContainers then containers, ``j`` the
  resource's index among the container's sorted requests), ExactCount of the quantity; an
  unmapped resource the node lacks -> ``cannot fit resource``; a claim from an earlier cycle ->
  ``cannot schedule extended resource claim`` (PostFilter deletes it);
- PreBind: the claim is created (its name from generateName), allocated and reserved for the
  pod, and the pod's ``status.extendedResourceClaimStatus`` records ``requestMappings``
  (containerName, resourceName, requestName) and ``resourceClaimName``.

Neighbours: the DynamicResources plugin; ``helper.dra_manager``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from gpusched.objects.quantity import canonical
from gpusched.objects.types import NodeInfo, PodInfo
from gpusched.scheduler.plugins.helper.dra_allocate import spec_signature
from gpusched.scheduler.plugins.helper.dra_manager import FINALIZER, ClaimWrite, DraManager

SPECIAL_NAME = "<extended-resources>"
ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"
CANNOT_SCHEDULE = "cannot schedule extended resource claim"
CANNOT_FIT = "cannot fit resource"


@dataclass(frozen=True)
class PodExtended:
    """A pod's extended requests and the classes that may serve them."""

    requests: Mapping[str, int]              # the pod's non-zero extended requests
    classes: Mapping[str, str]               # extended resource name -> DeviceClass
    containers: tuple[tuple[str, Mapping[str, Any]], ...]   # (name, requests) init then regular
    user_claims: bool


def is_extended(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: a prefixed name outside ``kubernetes.io/`` (the
    implicit ``deviceclass.resource.kubernetes.io/<class>`` names included)."""
    return "/" in name and not name.startswith("requests.") and (
        "kubernetes.io/" not in name or name.startswith(IMPLICIT_PREFIX))


def class_mapping(classes: Mapping[str, dict[str, Any]]) -> dict[str, str]:
    """Extended resource name -> DeviceClass name (explicit names: newest class, then first)."""
    mapping: dict[str, str] = {IMPLICIT_PREFIX + name: name for name in classes}
    chosen: dict[str, tuple[str, str]] = {}
    for name in sorted(classes):
        body = classes[name]
        resource = (body.get("spec") or {}).get("extendedResourceName")
        if not resource:
            continue
        created = str((body.get("metadata") or {}).get("creationTimestamp") or "")
        if resource not in chosen or created > chosen[resource][0]:
            chosen[resource] = (created, name)
    mapping.update({resource: name for resource, (_, name) in chosen.items()})
    return mapping


def pod_extended(pod: PodInfo, manager: DraManager) -> PodExtended | None:
    """The pod's DRA-backed extended requests, None when it has none."""
    asked = {name: amount for name, amount in pod.requests.items() if amount and is_extended(name)}
    if not asked or not manager.objects.classes:
        return None
    mapping = class_mapping(manager.objects.classes)
    if not any(name in mapping for name in asked):
        return None
    body = manager.objects.pods(pod.uid) or {}
    spec = body.get("spec") or {}
    containers = tuple((str(c.get("name", "")), (c.get("resources") or {}).get("requests") or {})
                       for c in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())])
    return PodExtended(asked, mapping, containers, bool(pod.resource_claims))


def find_or_make_claim(pod: PodInfo, manager: DraManager) -> dict[str, Any]:
    """The pod's claim from an earlier cycle, else a new one in memory (upstream's)."""
    for (namespace, _), body in manager.claims.items():
        meta = body.get("metadata") or {}
        if namespace == pod.namespace and (meta.get("annotations") or {}).get(ANNOTATION) == "true" \
                and any(ref.get("controller") and ref.get("uid") == pod.uid
                        for ref in meta.get("ownerReferences") or ()):
            return body
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"namespace": pod.namespace, "name": SPECIAL_NAME,
                         "uid": f"{SPECIAL_NAME}/{pod.uid}",
                         "generateName": f"{pod.name}-extended-resources-",
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod.name,
                                              "uid": pod.uid, "controller": True,
                                              "blockOwnerDeletion": True}],
                         "annotations": {ANNOTATION: "true"}},
            "spec": {}}


def stored(body: Mapping[str, Any]) -> bool:
    return (body.get("metadata") or {}).get("name") != SPECIAL_NAME


def signature(body: Mapping[str, Any] | None) -> str:
    return spec_signature(body or {})


def node_claim(pod: PodExtended, claim: dict[str, Any], node: NodeInfo, allocatable: np.ndarray,
               columns: Mapping[str, int]) -> tuple[dict[str, Any] | None, str]:
    """The claim for this node (None: nothing to allocate through DRA here), or a problem."""
    if ((claim.get("spec") or {}).get("devices") or {}).get("requests"):
        return None, CANNOT_SCHEDULE
    through_dra: dict[str, int] = {}
    for name, amount in pod.requests.items():
        column = columns.get(name)
        on_node = column is not None and column < len(allocatable) and allocatable[column] > 0
        if name in pod.classes:
            if not on_node:
                through_dra[name] = amount
        elif not on_node:
            return None, CANNOT_FIT
    if not through_dra:
        return None, ""
    mine = copy.deepcopy(claim)
    mine["spec"] = {"devices": {"requests": device_requests(pod, through_dra)}}
    return mine, ""


def device_requests(pod: PodExtended, resources: Mapping[str, int]) -> list[dict[str, Any]]:
    """``createDeviceRequests``: one request per container and DRA-served resource."""
    out = []
    for resource in sorted(resources):
        for index, (_, requests) in enumerate(pod.containers):
            if resource not in requests:
                continue
            count = canonical(resource, requests[resource])
            if not count:
                continue
            position = sorted(requests).index(resource)
            out.append({"name": f"container-{index}-request-{position}",
                        "exactly": {"deviceClassName": pod.classes[resource],
                                    "allocationMode": "ExactCount", "count": count}})
    return out


def request_mappings(pod: PodExtended, claim: Mapping[str, Any]) -> list[dict[str, str]]:
    """``createRequestMappings``: which container's resource each request serves."""
    names = {r.get("name") for r in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ()}
    out = []
    for index, (container, requests) in enumerate(pod.containers):
        for position, resource in enumerate(sorted(requests)):
            request = f"container-{index}-request-{position}"
            if request in names:
                out.append({"containerName": container, "resourceName": resource,
                            "requestName": request})
    return out


def prebind_write(extended: PodExtended | None, node_body: dict[str, Any] | None, pod: PodInfo,
                  allocation: dict[str, Any] | None) -> ClaimWrite | None:
    """PreBind's write of KEP-5004's claim: created with its allocation and the pod reserved
    (``node_body``: the claim Filter made for the chosen node)."""
    if allocation is None or node_body is None or extended is None:
        return None
    body = copy.deepcopy(node_body)
    meta = body["metadata"]
    meta.pop("uid", None)
    meta.pop("name", None)
    meta["finalizers"] = [FINALIZER]
    body["status"] = {"allocation": allocation,
                      "reservedFor": [{"resource": "pods", "name": pod.name, "uid": pod.uid}]}
    return ClaimWrite(body, create=True, pod_uid=pod.uid,
                      mappings=request_mappings(extended, node_body))
