"""Endpoints and EndpointSlices of Services with a selector, from the pods they select.

As kube-controller-manager's endpoint controller (``pkg/controller/endpoint``) and
EndpointSlice controller (``pkg/controller/endpointslice``) do:

- the pods are the Service's namespace's pods matching ``spec.selector`` that have a ``podIP``
  and are not terminal or being deleted; a pod whose ``Ready`` condition is True (or, as gpusched
  records it, phase Running without a Ready condition) is ready;
- ``Endpoints/<service>``: one subset, ``addresses`` (ready) and ``notReadyAddresses`` (each
  ``ip``, ``nodeName``, ``targetRef`` to the pod), ``ports`` (the service port's name, the
  resolved target port, protocol); no pods -> no subsets; labels copied from the Service;
  annotation ``endpoints.kubernetes.io/last-change-trigger-time``;
- ``EndpointSlice/<service>-<suffix>`` (``discovery.k8s.io/v1``, ``addressType: IPv4``): labels
  ``kubernetes.io/service-name`` and ``endpointslice.kubernetes.io/managed-by:
  endpointslice-controller.k8s.io``, one endpoint per pod with ``conditions`` ready / serving /
  terminating, owned by the Service;
- a named ``targetPort`` resolves to the container port of that name (pods without it are left
  out of that port, as upstream's per-port-set subsets would); a number is used as is;
- Services without a selector (``kubernetes``, ExternalName) are left alone; the objects of a
  deleted Service are deleted.

Neighbours: ``controllers.registry`` runs :func:`reconcile` on its work queue
(``controllers.base``); ``objects.selectors`` matches.
"""

from __future__ import annotations

from typing import Any, Iterable

import copy

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.controllers.base import Informer, WorkQueue, itself, same_name
from gpusched.cluster.controllers.common import is_terminal
from gpusched.cluster.apiserver.view import Key, View
from gpusched.errors import GpuschedError
from gpusched.objects.selectors import matches, selector_from_dict

TRIGGER_ANNOTATION = "endpoints.kubernetes.io/last-change-trigger-time"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"


def _services_of_pods(changes: Changes, keys: list[Key]) -> Iterable[Key]:
    """Changed pods enqueue the Services of their namespace that select them now (or when they
    were deleted), and those whose Endpoints list them: upstream's ``addPod`` / ``updatePod``
    enqueue the Services matching a pod's new and old labels (``getPodServiceMemberships``); the
    journal keeps no old labels, so the Endpoints stand for them (a pod relabelled away is
    listed there until this sync). Each namespace's Services and Endpoints are read once."""
    by_namespace: dict[str, list[Key]] = {}
    for key in keys:
        by_namespace.setdefault(key[1], []).append(key)
    out: list[Key] = []
    for ns, pods in by_namespace.items():
        services = [s for s in changes.view.list("Service", ns)
                    if (s.get("spec") or {}).get("selector")]
        if not services:
            continue
        listed = _listed_pods(changes.view, services)
        selectors = [(s["metadata"]["name"],
                      selector_from_dict({"matchLabels": s["spec"]["selector"]})) for s in services]
        for key in pods:
            labels = ((changes.body(key) or {}).get("metadata") or {}).get("labels") or {}
            out.extend(("Service", ns, name) for name, selector in selectors
                       if matches(selector, labels) or key[2] in listed[name])
    return out


def _listed_pods(view: View, services: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Service name -> the names of the pods its Endpoints hold an address of."""
    out: dict[str, set[str]] = {}
    for service in services:
        meta = service["metadata"]
        endpoints = view.get("Endpoints", meta["name"], meta.get("namespace", "default")) or {}
        out[meta["name"]] = {(address.get("targetRef") or {}).get("name", "")
                             for subset in endpoints.get("subsets") or ()
                             for address in (subset.get("addresses") or [])
                             + (subset.get("notReadyAddresses") or [])}
    return out


# The informers (``endpoints_controller.go`` NewEndpointController): Services, pods, and the
# Endpoints / EndpointSlices themselves (an edited or deleted one is put back).
QUEUE = WorkQueue("Service", (itself("Service"), Informer("Pod", _services_of_pods),
                              same_name("Endpoints", "Service"),
                              same_name("EndpointSlice", "Service", SERVICE_NAME_LABEL)),
                  pod_creator=False)


def reconcile(view: View, changes: Changes | None = None) -> None:
    """Every Service, or (``changes``) those its informers enqueue (``QUEUE``): a Service that
    is gone has its Endpoints and EndpointSlices deleted."""
    if changes is not None:
        for key in sorted(QUEUE.keys(changes)):
            service = view.objects.get(key)
            if service is None:
                _delete_objects_of(view, key[1], key[2])
            elif _selects(service):
                _sync(view, service)
        return
    services = {(s["metadata"].get("namespace", "default"), s["metadata"]["name"]): s
                for s in view.list("Service")}
    for _ns_name, service in sorted(services.items()):
        if _selects(service):
            _sync(view, service)
    _delete_orphans(view, services)


def _selects(service: dict[str, Any]) -> bool:
    """A Service the controller keeps endpoints for: a selector, not ExternalName."""
    spec = service.get("spec") or {}
    return bool(spec.get("selector")) and spec.get("type") != "ExternalName"


def _pods_of(view: View, service: dict[str, Any]) -> list[dict[str, Any]]:
    selector = selector_from_dict({"matchLabels": service["spec"]["selector"]})
    return [p for p in view.list("Pod", service["metadata"].get("namespace", "default"))
            if matches(selector, p["metadata"].get("labels") or {})
            and (p.get("status") or {}).get("podIP") and not is_terminal(p)
            and not p["metadata"].get("deletionTimestamp")]


def is_ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    if ready:
        result: bool = ready[0].get("status") == "True"
        return result
    return status.get("phase") == "Running"


def _target_port(pod: dict[str, Any], port: dict[str, Any]) -> int | None:
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    for container in (pod.get("spec") or {}).get("containers") or []:
        for declared in container.get("ports") or []:
            if declared.get("name") == target:
                return int(declared.get("containerPort", 0)) or None
    return None


def _ports(service: dict[str, Any], pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for port in service["spec"].get("ports") or []:
        resolved = next((n for n in (_target_port(p, port) for p in pods) if n), None)
        if resolved is None and not isinstance(port.get("targetPort", port.get("port")), int):
            continue
        entry = {"port": resolved or port.get("targetPort", port.get("port")),
                 "protocol": port.get("protocol", "TCP")}
        if port.get("name"):
            entry = {"name": port["name"], **entry}
        out.append(entry)
    return out


def _target_ref(pod: dict[str, Any]) -> dict[str, Any]:
    meta = pod["metadata"]
    return {"kind": "Pod", "namespace": meta.get("namespace", "default"), "name": meta["name"],
            "uid": meta.get("uid", "")}


def _sync(view: View, service: dict[str, Any]) -> None:
    pods = sorted(_pods_of(view, service), key=lambda p: p["status"]["podIP"])
    ports = _ports(service, pods)
    _write_endpoints(view, service, pods, ports)
    _write_slice(view, service, pods, ports)


def _write_endpoints(view: View, service: dict[str, Any], pods: list[dict[str, Any]], ports: list[dict[str, Any]]) -> None:
    meta = service["metadata"]
    ns = meta.get("namespace", "default")
    old = view.get("Endpoints", meta["name"], ns)
    addresses = [{"ip": p["status"]["podIP"], "nodeName": p["spec"].get("nodeName", ""),
                  "targetRef": _target_ref(p)} for p in pods]
    ready = [a for a, p in zip(addresses, pods) if is_ready(p)]
    not_ready = [a for a, p in zip(addresses, pods) if not is_ready(p)]
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": meta["name"], "namespace": ns}}
    if meta.get("labels"):
        body["metadata"]["labels"] = dict(meta["labels"])
    subset: dict[str, Any] = {}
    if ready:
        subset["addresses"] = ready
    if not_ready:
        subset["notReadyAddresses"] = not_ready
    if subset and ports:
        subset["ports"] = ports
        body["subsets"] = [subset]
    if old is not None:
        new = copy.deepcopy(old)
        new["metadata"]["labels"] = body["metadata"].get("labels", {})
        if not new["metadata"]["labels"]:
            del new["metadata"]["labels"]
        new.pop("subsets", None)
        if "subsets" in body:
            new["subsets"] = body["subsets"]
        if new != old:
            new["metadata"].setdefault("annotations", {})[TRIGGER_ANNOTATION] = view.timestamp()
            write.update(view, new)
        return
    body["metadata"]["annotations"] = {TRIGGER_ANNOTATION: view.timestamp()}
    _create_endpoints(view, body, f"{ns}/{meta['name']}")


def _create_endpoints(view: View, body: dict[str, Any], service: str) -> None:
    """A refused create is a Warning on the Endpoints (endpoints_controller.go syncService)."""
    try:
        write.create(view, body)
    except GpuschedError as err:
        view.record_event(body, "FailedToCreateEndpoint",
                          f"Failed to create endpoint for service {service}: {err}",
                          "Warning", "endpoint-controller")


def _slice_of(view: View, service: dict[str, Any]) -> dict[str, Any] | None:
    meta = service["metadata"]
    for candidate in view.list("EndpointSlice", meta.get("namespace", "default")):
        labels = candidate["metadata"].get("labels") or {}
        if labels.get(SERVICE_NAME_LABEL) == meta["name"] and labels.get(MANAGED_BY_LABEL) == MANAGED_BY:
            return candidate
    return None


def _write_slice(view: View, service: dict[str, Any], pods: list[dict[str, Any]], ports: list[dict[str, Any]]) -> None:
    meta = service["metadata"]
    ns = meta.get("namespace", "default")
    endpoints = [{"addresses": [p["status"]["podIP"]],
                  "conditions": {"ready": is_ready(p), "serving": is_ready(p), "terminating": False},
                  "nodeName": p["spec"].get("nodeName", ""), "targetRef": _target_ref(p)}
                 for p in pods]
    labels = {**(meta.get("labels") or {}), SERVICE_NAME_LABEL: meta["name"],
              MANAGED_BY_LABEL: MANAGED_BY}
    old = _slice_of(view, service)
    if old is None:
        body = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": f"{meta['name']}-{view.random_suffix()}", "namespace": ns,
                             "generateName": f"{meta['name']}-", "labels": labels,
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Service",
                                                  "name": meta["name"], "uid": meta.get("uid", ""),
                                                  "controller": True, "blockOwnerDeletion": True}]},
                "addressType": "IPv4", "endpoints": endpoints, "ports": ports}
        try:
            write.create(view, body)
        except GpuschedError as err:  # endpointslice reconciler: a Warning on the Service
            view.record_event(service, "FailedToUpdateEndpointSlices",
                              f"Error updating Endpoint Slices for Service {ns}/{meta['name']}: {err}",
                              "Warning", "endpoint-slice-controller")
        return
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = labels
    new["endpoints"] = endpoints
    new["ports"] = ports
    write.update(view, new)


def _delete_objects_of(view: View, ns: str, name: str) -> None:
    """The Endpoints (ours: with the trigger annotation) and managed EndpointSlices of the
    Service ``ns/name``, which is gone."""
    endpoints = view.get("Endpoints", name, ns)
    if endpoints is not None and TRIGGER_ANNOTATION in (endpoints["metadata"].get("annotations") or {}):
        write.delete(view, "Endpoints", name, ns)
    for endpoint_slice in view.list("EndpointSlice", ns):
        labels = endpoint_slice["metadata"].get("labels") or {}
        if labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(SERVICE_NAME_LABEL) == name:
            write.delete(view, "EndpointSlice", endpoint_slice["metadata"]["name"], ns)


def _delete_orphans(view: View, services: dict[tuple[str, str], dict[str, Any]]) -> None:
    for endpoints in view.list("Endpoints"):
        meta = endpoints["metadata"]
        if (meta.get("namespace", "default"), meta["name"]) not in services and \
                TRIGGER_ANNOTATION in (meta.get("annotations") or {}):
            write.delete(view, "Endpoints", meta["name"], meta.get("namespace", "default"))
    for endpoint_slice in view.list("EndpointSlice"):
        meta = endpoint_slice["metadata"]
        labels = meta.get("labels") or {}
        if labels.get(MANAGED_BY_LABEL) == MANAGED_BY and \
                (meta.get("namespace", "default"), labels.get(SERVICE_NAME_LABEL)) not in services:
            write.delete(view, "EndpointSlice", meta["name"], meta.get("namespace", "default"))
