"""Each kind's registry strategy: what the API server does to an object beside admission.

kube-apiserver's ``pkg/registry/<group>/<kind>/strategy.go`` (``PrepareForCreate``,
``PrepareForUpdate``, ``ValidateUpdate``) and the REST storage's allocations, run by the write
path (``apiserver.write``) after mutating admission:

- Pod (``podStrategy``): a new pod's ``status`` is the cluster's (dropped before admission; set
  to ``Pending`` with its ``qosClass`` and, when it has scheduling gates, the
  ``PodScheduled=False SchedulingGated`` condition, after admission);
- Namespace: labelled ``kubernetes.io/metadata.name=<name>`` (v1.21+); created ``Active`` with
  the ``kubernetes`` finalizer in ``spec.finalizers``, both kept as stored on update;
- Service IP allocation (``pkg/registry/core/service/ipallocator``): ``spec.clusterIP`` from the
  service CIDR ``10.96.0.0/12`` (kubeadm's default; ``10.96.0.1`` is the ``kubernetes``
  Service's), chosen deterministically (hash of namespace/name, then the next free address) where
  upstream picks at random; a requested IP must be in range and free; ``clusterIP: None`` makes a
  headless Service; ``ExternalName`` gets none. NodePorts from 30000-32767 the same way. On
  update the allocated IPs and ports are kept when the new body leaves them out (as ``kubectl
  apply``'s merge keeps them) and may not change (``may not change once set``);
- a custom resource's update (Kueue's kinds, PodGroup, JobSet): the CRD's transition rules
  (``objects.crd_validation.validate_custom_update``), as apiextensions' ``ValidateUpdate``;
- the ``resource.k8s.io`` kinds (``apiserver.strategy_dra``): a claim's status, immutable specs,
  CEL selectors compiled at create time, a claim's reservations on a status write;
- PersistentVolumeClaim / PersistentVolume updates by a user (:func:`user_update`): the fields
  controllers and admission wrote survive an apply that leaves them out; a claim's spec is
  immutable but for its requests.

Neighbours: ``apiserver.write``; ``controllers.nodes.bootstrap`` creates the furniture these label.
"""

from __future__ import annotations

from typing import Any

import hashlib
import ipaddress

from gpusched.cluster.apiserver import strategy_dra
from gpusched.cluster.apiserver.view import View
from gpusched.errors import FieldError, InvalidError
from gpusched.objects.crd_validation import validate_custom_update
from gpusched.objects.fieldcheck import Errors
from gpusched.objects.kinds import CRD_KINDS

SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")
KUBERNETES_SERVICE_IP = "10.96.0.1"
NODE_PORTS = (30000, 32767)
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def label_namespace(namespace: dict[str, Any]) -> None:
    """The API server labels every Namespace ``kubernetes.io/metadata.name=<name>`` (v1.21+)."""
    meta = namespace.setdefault("metadata", {})
    meta.setdefault("labels", {})[NAMESPACE_NAME_LABEL] = meta.get("name", "")


def prepare_namespace(namespace: dict[str, Any], old: dict[str, Any] | None) -> None:
    """registry/core/namespace/strategy.go: on create the phase is Active and ``spec.finalizers``
    holds ``kubernetes``; on update both stay as stored (the namespace controller owns them)."""
    if old is not None:
        spec = namespace.setdefault("spec", {})
        if "finalizers" in (old.get("spec") or {}):
            spec["finalizers"] = list(old["spec"]["finalizers"])
        else:
            spec.pop("finalizers", None)
        namespace["status"] = dict(old.get("status") or {})
        return
    namespace["status"] = {"phase": "Active"}
    finalizers = namespace.setdefault("spec", {}).setdefault("finalizers", [])
    if "kubernetes" not in finalizers:
        finalizers.append("kubernetes")


# ---- claim and volume updates ----------------------------------------------------------------

CLAIM_SERVER_FIELDS = ("volumeName", "storageClassName", "volumeMode")
CLAIM_IMMUTABLE = ("spec is immutable after creation except resources.requests and "
                   "volumeAttributesClassName for bound claims")


def admit_claim_update(claim: dict[str, Any], old: dict[str, Any]) -> None:
    """Fields the controllers and admission wrote survive an apply that leaves them out; any
    other spec change is refused as ValidatePersistentVolumeClaimUpdate does."""
    spec, old_spec = claim.setdefault("spec", {}), old.get("spec") or {}
    for key in CLAIM_SERVER_FIELDS:
        if key in old_spec and key not in spec:
            spec[key] = old_spec[key]
    if _without_requests(spec) != _without_requests(old_spec):
        raise InvalidError("PersistentVolumeClaim", claim["metadata"]["name"],
                           [FieldError("spec", "Forbidden", None, CLAIM_IMMUTABLE)])


def _without_requests(spec: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in spec.items() if k != "volumeAttributesClassName"}
    resources = dict(out.get("resources") or {})
    resources.pop("requests", None)
    out["resources"] = resources
    return out


def admit_volume_update(volume: dict[str, Any], old: dict[str, Any]) -> None:
    """The controller's claimRef survives an apply that leaves it out."""
    spec, old_spec = volume.setdefault("spec", {}), old.get("spec") or {}
    if "claimRef" in old_spec and "claimRef" not in spec:
        spec["claimRef"] = old_spec["claimRef"]


# ---- Services -------------------------------------------------------------------------------

def admit_service(view: View, service: dict[str, Any], old: dict[str, Any] | None) -> None:
    spec = service.setdefault("spec", {})
    if old is not None:
        _keep_allocations(spec, old.get("spec") or {}, service["metadata"]["name"])
    if spec.get("type") == "ExternalName":
        spec.pop("clusterIP", None)
        spec.pop("clusterIPs", None)
    elif old is None or not spec.get("clusterIP"):
        _allocate_cluster_ip(view, service)
    if spec.get("type") in ("NodePort", "LoadBalancer"):
        _allocate_node_ports(view, service)


def _keep_allocations(spec: dict[str, Any], old_spec: dict[str, Any], name: str) -> None:
    old_ip = old_spec.get("clusterIP")
    if old_ip and not spec.get("clusterIP"):
        spec["clusterIP"] = old_ip
        spec["clusterIPs"] = list(old_spec.get("clusterIPs") or [old_ip])
    elif old_ip and spec.get("clusterIP") != old_ip and spec.get("type") != "ExternalName":
        raise InvalidError("Service", name, [FieldError(
            "spec.clusterIPs[0]", "Invalid value", spec["clusterIP"], "may not change once set")])
    old_ports = {(p.get("port"), p.get("protocol", "TCP")): p.get("nodePort")
                 for p in old_spec.get("ports") or [] if isinstance(p, dict)}
    for port in spec.get("ports") or []:
        key = (port.get("port"), port.get("protocol", "TCP"))
        if not port.get("nodePort") and old_ports.get(key):
            port["nodePort"] = old_ports[key]


def _used_ips(view: View, skip: tuple[str, str]) -> set[str]:
    used: set[str] = set()
    for svc in view.list("Service"):
        meta = svc["metadata"]
        if (meta.get("namespace"), meta["name"]) != skip:
            used.update((svc.get("spec") or {}).get("clusterIPs") or [])
    return used


def _allocate_cluster_ip(view: View, service: dict[str, Any]) -> None:
    spec, meta = service["spec"], service["metadata"]
    requested = spec.get("clusterIP")
    if requested == "None":
        spec["clusterIPs"] = ["None"]
        return
    used = _used_ips(view, (meta.get("namespace", "default"), meta["name"]))
    if requested:
        problem = _requested_problem(str(requested), used)
        if problem:
            raise InvalidError("Service", meta["name"], [FieldError(
                "spec.clusterIPs", "Invalid value", f'["{requested}"]',
                f"failed to allocate IP {requested}: {problem}")])
        chosen = str(requested)
    else:
        chosen = _free_address(f"{meta.get('namespace', 'default')}/{meta['name']}", used)
    spec["clusterIP"] = chosen
    spec["clusterIPs"] = [chosen]
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")


def _requested_problem(requested: str, used: set[str]) -> str:
    try:
        address = ipaddress.ip_address(requested)
    except ValueError:
        return "not a valid IP address"
    if address not in SERVICE_CIDR or address in (SERVICE_CIDR.network_address,
                                                   SERVICE_CIDR.broadcast_address):
        return (f"the provided IP ({requested}) is not in the valid range. "
                f"The range of valid IPs is {SERVICE_CIDR}")
    if requested in used:
        return "provided IP is already allocated"
    return ""


def _free_address(key: str, used: set[str]) -> str:
    size = SERVICE_CIDR.num_addresses - 2
    start = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % size
    for step in range(size):
        candidate = str(SERVICE_CIDR.network_address + 1 + (start + step) % size)
        if candidate not in used and candidate != KUBERNETES_SERVICE_IP:
            return candidate
    raise InvalidError("Service", key, [FieldError("spec.clusterIPs", "Invalid value", "[]",
                                                   "failed to allocate IP: range is full")])


def _allocate_node_ports(view: View, service: dict[str, Any]) -> None:
    meta = service["metadata"]
    used = {p.get("nodePort") for svc in view.list("Service")
            if (svc["metadata"].get("namespace"), svc["metadata"]["name"])
            != (meta.get("namespace", "default"), meta["name"])
            for p in (svc.get("spec") or {}).get("ports") or [] if isinstance(p, dict)}
    low, high = NODE_PORTS
    for i, port in enumerate(service["spec"].get("ports") or []):
        if port.get("nodePort"):
            if port["nodePort"] in used:
                raise InvalidError("Service", meta["name"], [FieldError(
                    f"spec.ports[{i}].nodePort", "Invalid value", str(port["nodePort"]),
                    "provided port is already allocated", quoted=False)])
            used.add(port["nodePort"])
            continue
        key = f"{meta.get('namespace', 'default')}/{meta['name']}/{i}"
        start = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")
        span = high - low + 1
        port["nodePort"] = next(low + (start + s) % span for s in range(span)
                                if low + (start + s) % span not in used)
        used.add(port["nodePort"])


# ---- the strategy steps the write path runs -----------------------------------------------------

SCHEDULING_GATED = "Scheduling is blocked due to non-empty scheduling gates"


def before_create(body: dict[str, Any]) -> None:
    """``PrepareForCreate``'s first half, before admission: a new pod's status is the cluster's."""
    if body.get("kind") == "Pod":
        body.pop("status", None)
    strategy_dra.before_create(body)


def prepare(view: View, body: dict[str, Any], old: dict[str, Any] | None) -> None:
    """After mutating admission, on the main resource: a namespace's label, a service's IPs."""
    kind = body.get("kind")
    if kind == "Namespace":
        label_namespace(body)
        prepare_namespace(body, old)
    elif kind == "Service":
        admit_service(view, body, old)
    elif kind in CRD_KINDS and old is not None:
        validate_crd_update(body, old)
    elif kind in strategy_dra.KINDS:
        strategy_dra.prepare(body, old)


def status_update(body: dict[str, Any], old: dict[str, Any]) -> None:
    """A ``status`` write's checks beside admission: a ResourceClaim's reservations."""
    strategy_dra.status_update(body, old)


def validate_crd_update(body: dict[str, Any], old: dict[str, Any]) -> None:
    """A custom resource's ``ValidateUpdate`` (apiextensions' strategy): the CRD's transition
    rules, those reading ``oldSelf`` (``LocalQueue.spec.clusterQueue: field is immutable``)."""
    errors = Errors()
    validate_custom_update(body, old, errors)
    if errors:
        raise InvalidError(str(body.get("kind")), str((body.get("metadata") or {}).get("name", "")),
                           errors.items)


def user_update(body: dict[str, Any], old: dict[str, Any]) -> None:
    """A user's update of a claim or a volume (``apply``, PUT, PATCH): the fields the
    controllers and admission wrote survive a body that leaves them out, and a claim's spec is
    immutable but for its requests. Controllers' own writes set those fields (binding)."""
    if body.get("kind") == "PersistentVolumeClaim":
        admit_claim_update(body, old)
    elif body.get("kind") == "PersistentVolume":
        admit_volume_update(body, old)


def pod_status(view: View, pod: dict[str, Any], qos: str) -> None:
    """``PrepareForCreate``'s pod status, once admission let the pod through: Pending with its
    QoS class; gated pods get ``PodScheduled=False`` (strategy.go applySchedulingGatedCondition)."""
    pod["status"] = {"phase": "Pending", "qosClass": qos}
    if (pod.get("spec") or {}).get("schedulingGates"):
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False",
                                        "reason": "SchedulingGated", "message": SCHEDULING_GATED,
                                        "lastProbeTime": None, "lastTransitionTime": view.timestamp()}]

