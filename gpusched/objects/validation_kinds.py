"""Validation and defaulting of the core kinds a GPU lab applies beside its workloads.

Service, Endpoints, EndpointSlice, ServiceAccount, Secret, StorageClass, PersistentVolume,
PersistentVolumeClaim, NetworkPolicy, HorizontalPodAutoscaler (autoscaling/v2, v1 accepted) and
VerticalPodAutoscaler (autoscaling.k8s.io/v1, a CRD upstream). Messages follow
kubernetes ``pkg/apis/core/validation/validation.go`` (ValidateService, validateServicePort,
ValidatePersistentVolumeSpec, ValidatePersistentVolumeClaimSpec, ValidateSecret),
``pkg/apis/storage/validation`` (ValidateStorageClass), ``pkg/apis/networking/validation``
(ValidateNetworkPolicySpec) and ``pkg/apis/autoscaling/validation``
(validateHorizontalPodAutoscalerSpec); defaults follow ``pkg/apis/core/v1/defaults.go``
(SetDefaults_Service, SetDefaults_PersistentVolume(Claim), SetDefaults_Secret).

What lives elsewhere: the ClusterIP allocation and immutability checks need the stored object
(``apiserver.strategy``); binding claims is the PV controller's
(``cluster.controllers.storage.volumes``).

HorizontalPodAutoscaler and VerticalPodAutoscaler are checked in ``objects.validation_autoscaling``.

Neighbours: ``objects.validation`` registers ``VALIDATORS``; uses ``fieldcheck``, ``names``,
``validation_affinity`` (labels, selectors, node selector terms).
"""

from __future__ import annotations

from typing import Any, Callable

import base64
import binascii
import ipaddress
import re

from gpusched.errors import FieldError
from gpusched.objects.fieldcheck import Errors, _spec
from gpusched.objects.names import config_map_key_errors, dns1123_label_errors
from gpusched.objects.validation_affinity import (node_selector_term, validate_label_selector,
                                                  validate_labels)
from gpusched.objects.validation_autoscaling import _hpa, _vpa

SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
PROTOCOLS = ("SCTP", "TCP", "UDP")
ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
VOLUME_MODES = ("Block", "Filesystem")
MAX_SECRET_BYTES = 1024 * 1024
NODE_PORT_RANGE = (30000, 32767)
# PersistentVolume sources gpusched knows by name (the spec must name exactly one).
VOLUME_SOURCES = ("awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi", "fc",
                  "flexVolume", "flocker", "gcePersistentDisk", "glusterfs", "hostPath", "iscsi",
                  "local", "nfs", "photonPersistentDisk", "portworxVolume", "quobyte", "rbd",
                  "scaleIO", "storageos", "vsphereVolume")
_IANA_SVC_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
PORT_NUM_MSG = "must be between 1 and 65535, inclusive"


def _port_number(value: Any, path: str, e: Errors) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        e.invalid(path, value, "must be an integer")
    elif not 1 <= value <= 65535:
        e.invalid(path, value, PORT_NUM_MSG)


def _port_name_errors(name: str) -> list[str]:
    """validation.IsValidPortName (IANA_SVC_NAME)."""
    errors = []
    if len(name) > 15:
        errors.append("must be no more than 15 characters")
    if not _IANA_SVC_NAME.match(name):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if "--" in name:
        errors.append("must not contain consecutive hyphens")
    if not re.search(r"[a-z]", name):
        errors.append("must contain at least one letter (a-z)")
    return errors


def _int_or_port_name(value: Any, path: str, e: Errors) -> None:
    if isinstance(value, str):
        for msg in _port_name_errors(value):
            e.invalid(path, value, msg)
    else:
        _port_number(value, path, e)


# ---- Service -----------------------------------------------------------------------------------

def _service(obj: dict[str, Any], e: Errors) -> None:
    spec = _spec(obj, e)
    kind = spec.setdefault("type", "ClusterIP")
    if kind not in SERVICE_TYPES:
        e.unsupported("spec.type", kind, SERVICE_TYPES)
    spec.setdefault("sessionAffinity", "None")
    if spec["sessionAffinity"] not in ("ClientIP", "None"):
        e.unsupported("spec.sessionAffinity", spec["sessionAffinity"], ("ClientIP", "None"))
    selector = e.string_map(spec, "selector", "spec.selector")
    validate_labels(selector, "spec.selector", e)
    headless = spec.get("clusterIP") == "None"
    ports = e.items_of(spec, "ports", "spec.ports") or []
    if kind == "ExternalName":
        name = e.string(spec, "externalName", "spec.externalName")
        if not name:
            e.required("spec.externalName")
    elif not ports and not headless:
        e.required("spec.ports")
    if kind != "ExternalName":
        spec.setdefault("internalTrafficPolicy", "Cluster")
    _service_ports(ports, kind, e)
    cluster_ip = spec.get("clusterIP")
    if cluster_ip not in (None, "", "None"):
        _ip(cluster_ip, "spec.clusterIP", e)


def _service_ports(ports: list[Any], kind: str, e: Errors) -> None:
    names: set[str] = set()
    seen: set[tuple[Any, ...]] = set()
    for p, port in e.objects(ports, "spec.ports"):
        name = e.string(port, "name", f"{p}.name") or ""
        if len(ports) > 1 and not name:
            e.required(f"{p}.name")
        elif name:
            for msg in dns1123_label_errors(name):
                e.invalid(f"{p}.name", name, msg)
            if name in names:
                e.duplicate(f"{p}.name", name)
            names.add(name)
        if "port" not in port:
            e.required(f"{p}.port")
        else:
            _port_number(port["port"], f"{p}.port", e)
        protocol = port.setdefault("protocol", "TCP")
        if protocol not in PROTOCOLS:
            e.unsupported(f"{p}.protocol", protocol, PROTOCOLS)
        port.setdefault("targetPort", port.get("port"))
        _int_or_port_name(port["targetPort"], f"{p}.targetPort", e)
        _node_port(port, kind, p, e)
        key = (port.get("port"), protocol)
        if key in seen:
            e.duplicate(p, f"{port.get('port')}/{protocol}")
        seen.add(key)


def _node_port(port: dict[str, Any], kind: str, p: str, e: Errors) -> None:
    node_port = port.get("nodePort")
    if node_port in (None, 0):
        return
    if kind not in ("NodePort", "LoadBalancer"):
        e.forbidden(f"{p}.nodePort", f"may not be used when `type` is '{kind}'")
        return
    low, high = NODE_PORT_RANGE
    if isinstance(node_port, bool) or not isinstance(node_port, int):
        e.invalid(f"{p}.nodePort", node_port, "must be an integer")
    elif not low <= node_port <= high:
        e.invalid(f"{p}.nodePort", node_port, "provided port is not in the valid range. "
                  f"The range of valid ports is {low}-{high}")


def _ip(value: Any, path: str, e: Errors) -> None:
    try:
        ipaddress.ip_address(str(value))
    except ValueError:
        e.invalid(path, value, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")


# ---- Endpoints / EndpointSlice (written by the controllers; accepted from users too) ------------

def _endpoints(obj: dict[str, Any], e: Errors) -> None:
    for i, subset in enumerate(e.items_of(obj, "subsets", "subsets") or []):
        if not isinstance(subset, dict):
            e.invalid(f"subsets[{i}]", subset, "must be an object")
            continue
        for j, address in enumerate(e.items_of(subset, "addresses", f"subsets[{i}].addresses") or []):
            if isinstance(address, dict):
                _ip(address.get("ip", ""), f"subsets[{i}].addresses[{j}].ip", e)


def _endpoint_slice(obj: dict[str, Any], e: Errors) -> None:
    address_type = obj.get("addressType")
    if not address_type:
        e.required("addressType")
    elif address_type not in ("FQDN", "IPv4", "IPv6"):
        e.unsupported("addressType", address_type, ("FQDN", "IPv4", "IPv6"))
    e.items_of(obj, "endpoints", "endpoints")
    e.items_of(obj, "ports", "ports")


# ---- ServiceAccount / Secret --------------------------------------------------------------------

def _service_account(obj: dict[str, Any], e: Errors) -> None:
    for i, ref in enumerate(e.items_of(obj, "secrets", "secrets") or []):
        if not isinstance(ref, dict):
            e.invalid(f"secrets[{i}]", ref, "must be an object")
    e.boolean(obj, "automountServiceAccountToken", "automountServiceAccountToken")


_SECRET_REQUIRED_KEYS = {
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/basic-auth": (),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
}


def _secret(obj: dict[str, Any], e: Errors) -> None:
    """``stringData`` is merged into ``data`` (base64) as the API server's conversion does."""
    data = e.string_map(obj, "data", "data")
    for key, value in data.items():
        for msg in config_map_key_errors(key):
            e.invalid("data", key, msg)
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            e.invalid(f"data[{key}]", "<secret contents redacted>",
                      "illegal base64 data (the value must be base64-encoded)")
    string_data = e.string_map(obj, "stringData", "stringData")
    for key, value in string_data.items():
        for msg in config_map_key_errors(key):
            e.invalid("stringData", key, msg)
        data[key] = base64.b64encode(value.encode()).decode()
    obj.pop("stringData", None)
    if data:
        obj["data"] = data
    size = sum(len(base64.b64decode(v)) for v in data.values() if _is_b64(v))
    if size > MAX_SECRET_BYTES:
        e.items.append(_too_long("data", MAX_SECRET_BYTES))
    secret_type = obj.setdefault("type", "Opaque")
    for key in _SECRET_REQUIRED_KEYS.get(str(secret_type), ()):
        if key not in data:
            e.required(f"data[{key}]")


def _is_b64(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
        return True
    except (binascii.Error, ValueError):
        return False


def _too_long(path: str, limit: int) -> FieldError:
    return FieldError(path, "Too long", None, f"must have at most {limit} bytes")


# ---- storage ------------------------------------------------------------------------------------

def _storage_class(obj: dict[str, Any], e: Errors) -> None:
    provisioner = e.string(obj, "provisioner", "provisioner")
    if not provisioner:
        e.required("provisioner")
    policy = obj.setdefault("reclaimPolicy", "Delete")
    if policy not in ("Delete", "Retain"):
        e.unsupported("reclaimPolicy", policy, ("Delete", "Retain"))
    mode = obj.setdefault("volumeBindingMode", "Immediate")
    if mode not in BINDING_MODES:
        e.unsupported("volumeBindingMode", mode, BINDING_MODES)
    parameters = e.mapping(obj, "parameters", "parameters") or {}
    if len(parameters) > 512:
        e.invalid("parameters", "", "must have at most 512 parameters")
    e.boolean(obj, "allowVolumeExpansion", "allowVolumeExpansion")


def _access_modes(spec: dict[str, Any], e: Errors) -> None:
    modes = e.items_of(spec, "accessModes", "spec.accessModes")
    if not modes:
        e.required("spec.accessModes", "at least 1 access mode is required")
        return
    for mode in modes:
        if mode not in ACCESS_MODES:
            e.unsupported("spec.accessModes", mode, ACCESS_MODES)
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        e.forbidden("spec.accessModes", "may not use ReadWriteOncePod with other access modes")


def _volume_mode(spec: dict[str, Any], e: Errors) -> None:
    mode = spec.setdefault("volumeMode", "Filesystem")
    if mode not in VOLUME_MODES:
        e.unsupported("spec.volumeMode", mode, VOLUME_MODES)


def _pvc(obj: dict[str, Any], e: Errors) -> None:
    spec = _spec(obj, e)
    _access_modes(spec, e)
    _volume_mode(spec, e)
    resources = e.mapping(spec, "resources", "spec.resources") or {}
    requests = e.mapping(resources, "requests", "spec.resources.requests") or {}
    for name, value in sorted(requests.items()):
        e.quantity(value, f"spec.resources.requests[{name}]")
    if "storage" not in requests:
        e.required("spec.resources[storage]")
    else:
        amount = e.quantity(requests["storage"], "spec.resources[storage]")
        if amount is not None and amount <= 0:
            e.invalid("spec.resources[storage]", requests["storage"], "must be greater than zero")
    e.string(spec, "storageClassName", "spec.storageClassName")
    e.string(spec, "volumeName", "spec.volumeName")
    validate_label_selector(spec.get("selector"), "spec.selector", e)


def _pv(obj: dict[str, Any], e: Errors) -> None:
    """``ValidatePersistentVolumeSpec``'s order: access modes, volume mode, capacity, reclaim
    policy, the one volume source, node affinity; status.phase defaults to Pending."""
    spec = _spec(obj, e)
    _access_modes(spec, e)
    _volume_mode(spec, e)
    capacity = e.mapping(spec, "capacity", "spec.capacity") or {}
    if "storage" not in capacity or len(capacity) > 1:
        e.unsupported("spec.capacity", capacity, ("storage",))
    elif (amount := e.quantity(capacity["storage"], "spec.capacity[storage]")) is not None \
            and amount <= 0:
        e.invalid("spec.capacity[storage]", capacity["storage"], "must be greater than zero")
    policy = spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
    if policy not in RECLAIM_POLICIES:
        e.unsupported("spec.persistentVolumeReclaimPolicy", policy, RECLAIM_POLICIES)
    _pv_source(spec, e)
    affinity = e.mapping(spec, "nodeAffinity", "spec.nodeAffinity")
    if affinity is not None:
        _pv_node_affinity(affinity, e)
    status = obj.setdefault("status", {})
    if isinstance(status, dict):
        status.setdefault("phase", "Pending")


def _pv_source(spec: dict[str, Any], e: Errors) -> None:
    """Exactly one volume source; ``local`` needs node affinity, ``hostPath`` a path."""
    sources = [name for name in VOLUME_SOURCES if spec.get(name) is not None]
    if not sources:
        e.required("spec", "must specify a volume type")
    for extra in sources[1:]:
        e.forbidden(f"spec.{extra}", "may not specify more than 1 volume type")
    if "local" in sources and not ((spec.get("nodeAffinity") or {}).get("required")):
        e.required("spec.nodeAffinity", "Local volume requires node affinity")
    if "hostPath" in sources:
        path = (spec.get("hostPath") or {}).get("path") if isinstance(spec.get("hostPath"), dict) else None
        if not path:
            e.required("spec.hostPath.path")


def _pv_node_affinity(affinity: dict[str, Any], e: Errors) -> None:
    required = e.mapping(affinity, "required", "spec.nodeAffinity.required")
    if required is None:
        return
    terms = e.items_of(required, "nodeSelectorTerms", "spec.nodeAffinity.required.nodeSelectorTerms")
    if not terms:
        e.required("spec.nodeAffinity.required.nodeSelectorTerms",
                   "must have at least one node selector term")
        return
    for i, term in enumerate(terms):
        node_selector_term(term, f"spec.nodeAffinity.required.nodeSelectorTerms[{i}]", e)


# ---- NetworkPolicy ------------------------------------------------------------------------------

def _network_policy(obj: dict[str, Any], e: Errors) -> None:
    """``ValidateNetworkPolicySpec``: podSelector, ingress/egress rules, policyTypes (defaulted)."""
    spec = _spec(obj, e)
    if "podSelector" not in spec:
        e.required("spec.podSelector")
    validate_label_selector(spec.get("podSelector"), "spec.podSelector", e)
    for direction, peers_field in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(e.items_of(spec, direction, f"spec.{direction}") or []):
            _policy_rule(rule, f"spec.{direction}[{i}]", peers_field, e)
    types = e.items_of(spec, "policyTypes", "spec.policyTypes")
    if not types:
        spec["policyTypes"] = ["Ingress", *(["Egress"] if spec.get("egress") else [])]
    for i, value in enumerate(types or []):
        if value not in ("Ingress", "Egress"):
            e.unsupported(f"spec.policyTypes[{i}]", value, ("Ingress", "Egress"))
    if types and len(types) > 2:
        e.invalid("spec.policyTypes", types, "may not specify more than two policyTypes")


def _policy_rule(rule: Any, p: str, peers_field: str, e: Errors) -> None:
    """One ingress (``from``) or egress (``to``) rule: its ports, then its peers."""
    if not isinstance(rule, dict):
        e.invalid(p, rule, "must be an object")
        return
    _policy_ports(e.items_of(rule, "ports", f"{p}.ports") or [], f"{p}.ports", e)
    for j, peer in enumerate(e.items_of(rule, peers_field, f"{p}.{peers_field}") or []):
        _policy_peer(peer, f"{p}.{peers_field}[{j}]", e)


def _policy_ports(ports: list[Any], path: str, e: Errors) -> None:
    for p, port in e.objects(ports, path):
        protocol = port.setdefault("protocol", "TCP")
        if protocol not in PROTOCOLS:
            e.unsupported(f"{p}.protocol", protocol, PROTOCOLS)
        if port.get("port") is not None:
            _int_or_port_name(port["port"], f"{p}.port", e)
        end = port.get("endPort")
        if end is not None:
            if not isinstance(port.get("port"), int):
                e.required(f"{p}.port", "When endPort is specified, port must be specified")
            elif isinstance(end, int) and end < port["port"]:
                e.invalid(f"{p}.endPort", end, "must be greater than or equal to `port`")


def _policy_peer(peer: Any, p: str, e: Errors) -> None:
    if not isinstance(peer, dict):
        e.invalid(p, peer, "must be an object")
        return
    chosen = [k for k in ("podSelector", "namespaceSelector", "ipBlock") if k in peer]
    if not chosen:
        e.required(p, "must specify a peer")
    if "ipBlock" in peer and len(chosen) > 1:
        e.forbidden(p, "may not specify both ipBlock and another peer")
    for key in ("podSelector", "namespaceSelector"):
        validate_label_selector(peer.get(key), f"{p}.{key}", e)
    block = peer.get("ipBlock")
    if isinstance(block, dict):
        try:
            ipaddress.ip_network(str(block.get("cidr", "")), strict=False)
        except ValueError:
            e.invalid(f"{p}.ipBlock.cidr", block.get("cidr", ""),
                      "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")


VALIDATORS: dict[str, Callable[[dict[str, Any], Errors], Any]] = {
    "Service": _service,
    "Endpoints": _endpoints,
    "EndpointSlice": _endpoint_slice,
    "ServiceAccount": _service_account,
    "Secret": _secret,
    "StorageClass": _storage_class,
    "PersistentVolume": _pv,
    "PersistentVolumeClaim": _pvc,
    "NetworkPolicy": _network_policy,
    "HorizontalPodAutoscaler": _hpa,
    "VerticalPodAutoscaler": _vpa,
}
