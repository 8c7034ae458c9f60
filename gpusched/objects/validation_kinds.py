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
(``cluster.kinds_admission``); binding claims is the PV controller's (``cluster.controllers.volumes``).

Neighbours: ``objects.validation`` registers ``VALIDATORS``; uses ``fieldcheck``, ``names``,
``podspec`` (labels, selectors, node selector terms).
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from fractions import Fraction
from typing import Any, Callable

from gpusched.errors import FieldError
from gpusched.objects.fieldcheck import Errors
from gpusched.objects.names import config_map_key_errors, dns1123_label_errors
from gpusched.objects.podspec import validate_label_selector, validate_labels

SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
PROTOCOLS = ("SCTP", "TCP", "UDP")
ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
VOLUME_MODES = ("Block", "Filesystem")
MAX_SECRET_BYTES = 1024 * 1024
NODE_PORT_RANGE = (30000, 32767)
# The VPA CRD's enums (kubernetes/autoscaler vertical-pod-autoscaler/deploy/vpa-v1-crd-gen.yaml), in its order.
VPA_UPDATE_MODES = ("Off", "Initial", "Recreate", "InPlaceOrRecreate", "InPlace", "Auto")
VPA_CONTAINER_MODES = ("Auto", "Off")
VPA_CONTROLLED_VALUES = ("RequestsAndLimits", "RequestsOnly")
VPA_CHANGE_REQUIREMENTS = ("TargetHigherThanRequests", "TargetLowerThanRequests")
HPA_METRIC_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")
# PersistentVolume sources gpusched knows by name (the spec must name exactly one).
VOLUME_SOURCES = ("awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi", "fc",
                  "flexVolume", "flocker", "gcePersistentDisk", "glusterfs", "hostPath", "iscsi",
                  "local", "nfs", "photonPersistentDisk", "portworxVolume", "quobyte", "rbd",
                  "scaleIO", "storageos", "vsphereVolume")
_IANA_SVC_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
PORT_NUM_MSG = "must be between 1 and 65535, inclusive"


def _spec(obj: dict[str, Any], e: Errors, path: str = "spec") -> dict[str, Any]:
    spec = obj.get(path)
    if spec is None:
        spec = obj[path] = {}
    if not isinstance(spec, dict):
        e.invalid(path, spec, "must be an object")
        return {}
    return spec


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
    for i, port in enumerate(ports):
        p = f"spec.ports[{i}]"
        if not isinstance(port, dict):
            e.invalid(p, port, "must be an object")
            continue
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
    affinity = e.mapping(spec, "nodeAffinity", "spec.nodeAffinity")
    if affinity is not None:
        _pv_node_affinity(affinity, e)
    status = obj.setdefault("status", {})
    if isinstance(status, dict):
        status.setdefault("phase", "Pending")


def _pv_node_affinity(affinity: dict[str, Any], e: Errors) -> None:
    from gpusched.objects.podspec import _node_selector_term  # one NodeSelectorTerm check
    required = e.mapping(affinity, "required", "spec.nodeAffinity.required")
    if required is None:
        return
    terms = e.items_of(required, "nodeSelectorTerms", "spec.nodeAffinity.required.nodeSelectorTerms")
    if not terms:
        e.required("spec.nodeAffinity.required.nodeSelectorTerms",
                   "must have at least one node selector term")
        return
    for i, term in enumerate(terms):
        _node_selector_term(term, f"spec.nodeAffinity.required.nodeSelectorTerms[{i}]", e)


# ---- NetworkPolicy ------------------------------------------------------------------------------

def _network_policy(obj: dict[str, Any], e: Errors) -> None:
    spec = _spec(obj, e)
    if "podSelector" not in spec:
        e.required("spec.podSelector")
    validate_label_selector(spec.get("podSelector"), "spec.podSelector", e)
    for direction, peers_field in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(e.items_of(spec, direction, f"spec.{direction}") or []):
            p = f"spec.{direction}[{i}]"
            if not isinstance(rule, dict):
                e.invalid(p, rule, "must be an object")
                continue
            _policy_ports(e.items_of(rule, "ports", f"{p}.ports") or [], f"{p}.ports", e)
            for j, peer in enumerate(e.items_of(rule, peers_field, f"{p}.{peers_field}") or []):
                _policy_peer(peer, f"{p}.{peers_field}[{j}]", e)
    types = e.items_of(spec, "policyTypes", "spec.policyTypes")
    if not types:
        spec["policyTypes"] = ["Ingress", *(["Egress"] if spec.get("egress") else [])]
    for i, value in enumerate(types or []):
        if value not in ("Ingress", "Egress"):
            e.unsupported(f"spec.policyTypes[{i}]", value, ("Ingress", "Egress"))
    if types and len(types) > 2:
        e.invalid("spec.policyTypes", types, "may not specify more than two policyTypes")


def _policy_ports(ports: list[Any], path: str, e: Errors) -> None:
    for i, port in enumerate(ports):
        p = f"{path}[{i}]"
        if not isinstance(port, dict):
            e.invalid(p, port, "must be an object")
            continue
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


# ---- autoscalers (accepted and validated; their controllers are not modelled) ------------------

def _scale_target(spec: dict[str, Any], field: str, e: Errors) -> None:
    ref = e.mapping(spec, field, f"spec.{field}")
    if ref is None:
        e.required(f"spec.{field}")
        return
    for key in ("kind", "name"):
        value = e.string(ref, key, f"spec.{field}.{key}")
        if not value:
            e.required(f"spec.{field}.{key}")


def _hpa(obj: dict[str, Any], e: Errors) -> None:
    """validateHorizontalPodAutoscalerSpec's order: minReplicas, maxReplicas, scaleTargetRef."""
    spec = _spec(obj, e)
    if "minReplicas" not in spec:
        spec["minReplicas"] = 1                     # SetDefaults_HorizontalPodAutoscaler
    minimum = e.integer(spec, "minReplicas", "spec.minReplicas")
    maximum = e.integer(spec, "maxReplicas", "spec.maxReplicas")
    if minimum is not None and minimum < 1:
        e.invalid("spec.minReplicas", minimum, "must be greater than or equal to 1")
    if "maxReplicas" not in spec:
        e.required("spec.maxReplicas")
    elif maximum is not None and maximum < 1:
        e.invalid("spec.maxReplicas", maximum, "must be greater than 0")
    if minimum is not None and maximum is not None and maximum < minimum:
        e.invalid("spec.maxReplicas", maximum, "must be greater than or equal to `minReplicas`")
    _scale_target(spec, "scaleTargetRef", e)
    if obj.get("apiVersion") == "autoscaling/v1":
        e.integer(spec, "targetCPUUtilizationPercentage", "spec.targetCPUUtilizationPercentage",
                  minimum=1)
        return
    raw_metrics = spec.get("metrics")
    metrics = e.items_of(spec, "metrics", "spec.metrics")
    if raw_metrics is None or raw_metrics == []:
        # SetDefaults_HorizontalPodAutoscaler (pkg/apis/autoscaling/v2/defaults.go): cpu 80 %
        spec["metrics"] = metrics = [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    for i, metric in enumerate(metrics or []):
        _hpa_metric(metric, f"spec.metrics[{i}]", e)
    behavior = e.mapping(spec, "behavior", "spec.behavior")
    if behavior is not None:
        _hpa_behavior(behavior, e)


# pkg/apis/autoscaling/validation/validation.go: validateMetricSpec and its sources.
_HPA_SOURCE_FIELDS = {"Object": "object", "Pods": "pods", "Resource": "resource",
                      "ContainerResource": "containerResource", "External": "external"}
_HPA_TARGET_TYPES = ("Utilization", "Value", "AverageValue")
MAX_STABILIZATION_WINDOW = 3600     # MaxStabilizationWindowSeconds
MAX_POLICY_PERIOD = 1800            # MaxPeriodSeconds
_PATH_SEGMENT_BAD = (".", "..")


def _hpa_metric(metric: Any, p: str, e: Errors) -> None:
    if not isinstance(metric, dict):
        e.invalid(p, metric, "must be an object")
        return
    kind = metric.get("type")
    if not kind:
        e.required(f"{p}.type", "must specify a metric source type")
    elif kind not in HPA_METRIC_TYPES:
        e.unsupported(f"{p}.type", kind, HPA_METRIC_TYPES)
    present = [f for f in ("object", "pods", "resource", "containerResource", "external")
               if metric.get(f) is not None]
    if present:
        field = present[0]
        source = metric[field]
        if isinstance(source, dict):
            _HPA_SOURCE_CHECKS[field](source, f"{p}.{field}", e)
        else:
            e.invalid(f"{p}.{field}", source, "must be an object")
    expected = _HPA_SOURCE_FIELDS.get(str(kind))
    if expected and metric.get(expected) is None:
        e.required(f"{p}.{expected}", "must populate information for the given metric source")
    if len(present) != 1:
        for field in sorted(set(present) - {expected}):
            e.forbidden(f"{p}.{field}", "must populate the given metric source only")


def _hpa_target(target: Any, p: str, e: Errors) -> dict[str, Any]:
    if not isinstance(target, dict):
        e.required(f"{p}.type", "must specify a metric target type")
        return {}
    kind = target.get("type")
    if not kind:
        e.required(f"{p}.type", "must specify a metric target type")
    elif kind not in _HPA_TARGET_TYPES:
        e.invalid(f"{p}.type", kind, "must be either Utilization, Value, or AverageValue")
    for key in ("value", "averageValue"):
        if target.get(key) is not None:
            amount = _signed_quantity(target[key], f"{p}.{key}", e)
            if amount is not None and amount <= 0:
                e.invalid(f"{p}.{key}", target[key], "must be positive")
    utilization = target.get("averageUtilization")
    if utilization is not None:
        if isinstance(utilization, bool) or not isinstance(utilization, int):
            e.invalid(f"{p}.averageUtilization", utilization, "must be an integer")
        elif utilization < 1:
            e.invalid(f"{p}.averageUtilization", utilization, "must be greater than 0")
    return target


def _signed_quantity(value: Any, path: str, e: Errors) -> Fraction | None:
    from gpusched.objects.quantity import QuantityError, parse_quantity
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        e.invalid(path, value, "must be a quantity (a string or a number)")
        return None
    try:
        return parse_quantity(value)
    except QuantityError as exc:
        e.invalid(path, value, str(exc))
        return None


def _hpa_identifier(source: dict[str, Any], p: str, e: Errors) -> None:
    metric = source.get("metric")
    name = metric.get("name") if isinstance(metric, dict) else None
    if not name:
        e.required(f"{p}.metric.name", "must specify a metric name")
        return
    if name in _PATH_SEGMENT_BAD:
        e.invalid(f"{p}.metric.name", name, f"may not be '{name}'")
    for bad in ("/", "%"):
        if bad in str(name):
            e.invalid(f"{p}.metric.name", name, f"may not contain '{bad}'")
    if isinstance(metric, dict) and metric.get("selector") is not None:
        validate_label_selector(metric["selector"], f"{p}.metric.selector", e)


def _hpa_resource(source: dict[str, Any], p: str, e: Errors) -> None:
    if not source.get("name"):
        e.required(f"{p}.name", "must specify a resource name")
    target = _hpa_target(source.get("target"), f"{p}.target", e)
    if target.get("averageUtilization") is None and target.get("averageValue") is None:
        e.required(f"{p}.target.averageUtilization",
                   "must set either a target raw value or a target utilization")
    if target.get("averageUtilization") is not None and target.get("averageValue") is not None:
        e.forbidden(f"{p}.target.averageValue",
                    "may not set both a target raw value and a target utilization")


def _hpa_container_resource(source: dict[str, Any], p: str, e: Errors) -> None:
    _hpa_resource(source, p, e)
    if not source.get("container"):
        e.required(f"{p}.container", "must specify a container")


def _hpa_pods(source: dict[str, Any], p: str, e: Errors) -> None:
    _hpa_identifier(source, p, e)
    target = _hpa_target(source.get("target"), f"{p}.target", e)
    if target.get("averageValue") is None:
        e.required(f"{p}.target.averageValue", "must specify a positive target averageValue")


def _hpa_object(source: dict[str, Any], p: str, e: Errors) -> None:
    described = source.get("describedObject")
    if not isinstance(described, dict) or not described.get("kind"):
        e.required(f"{p}.describedObject.kind")
    if not isinstance(described, dict) or not described.get("name"):
        e.required(f"{p}.describedObject.name")
    _hpa_identifier(source, p, e)
    target = _hpa_target(source.get("target"), f"{p}.target", e)
    if target.get("value") is None and target.get("averageValue") is None:
        e.required(f"{p}.target.averageValue", "must set either a target value or averageValue")


def _hpa_external(source: dict[str, Any], p: str, e: Errors) -> None:
    _hpa_identifier(source, p, e)
    target = _hpa_target(source.get("target"), f"{p}.target", e)
    if target.get("value") is None and target.get("averageValue") is None:
        e.required(f"{p}.target.averageValue",
                   "must set either a target value for metric or a per-pod target")
    if target.get("value") is not None and target.get("averageValue") is not None:
        e.forbidden(f"{p}.target.value",
                    "may not set both a target value for metric and a per-pod target")


_HPA_SOURCE_CHECKS: dict[str, Callable[[dict[str, Any], str, Errors], None]] = {
    "object": _hpa_object, "pods": _hpa_pods, "resource": _hpa_resource,
    "containerResource": _hpa_container_resource, "external": _hpa_external}


def _hpa_behavior(behavior: dict[str, Any], e: Errors) -> None:
    """validateBehavior / validateScalingRules / validateScalingPolicy, after the defaults of
    GenerateHPAScaleUpRules / GenerateHPAScaleDownRules fill what is unset."""
    for direction in ("scaleUp", "scaleDown"):
        p = f"spec.behavior.{direction}"
        rules = e.mapping(behavior, direction, p)
        if rules is None:
            rules = {}
        defaults = ({"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                     "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                                  {"type": "Percent", "value": 100, "periodSeconds": 15}]}
                    if direction == "scaleUp" else
                    {"selectPolicy": "Max",
                     "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]})
        for key, value in defaults.items():
            if rules.get(key) is None:
                rules[key] = value
        behavior[direction] = rules
        window = e.integer(rules, "stabilizationWindowSeconds", f"{p}.stabilizationWindowSeconds")
        if window is not None and window < 0:
            e.invalid(f"{p}.stabilizationWindowSeconds", window, "must be greater than or equal to zero")
        if window is not None and window > MAX_STABILIZATION_WINDOW:
            e.invalid(f"{p}.stabilizationWindowSeconds", window,
                      f"must be less than or equal to {MAX_STABILIZATION_WINDOW}")
        if rules.get("selectPolicy") not in ("Disabled", "Max", "Min"):
            e.unsupported(f"{p}.selectPolicy", rules.get("selectPolicy"), ("Disabled", "Max", "Min"))
        policies = e.items_of(rules, "policies", f"{p}.policies")
        if not policies:
            e.required(f"{p}.policies", "must specify at least one Policy")
        for i, policy in enumerate(policies or []):
            _hpa_policy(policy if isinstance(policy, dict) else {}, f"{p}.policies[{i}]", e)


def _hpa_policy(policy: dict[str, Any], p: str, e: Errors) -> None:
    if policy.get("type") not in ("Percent", "Pods"):
        e.unsupported(f"{p}.type", policy.get("type", ""), ("Percent", "Pods"))
    value = e.integer(policy, "value", f"{p}.value")
    if value is None or value <= 0:
        e.invalid(f"{p}.value", policy.get("value", 0), "must be greater than zero")
    period = e.integer(policy, "periodSeconds", f"{p}.periodSeconds")
    if period is None or period <= 0:
        e.invalid(f"{p}.periodSeconds", policy.get("periodSeconds", 0), "must be greater than zero")
    elif period > MAX_POLICY_PERIOD:
        e.invalid(f"{p}.periodSeconds", period, f"must be less than or equal to {MAX_POLICY_PERIOD}")


def _vpa(obj: dict[str, Any], e: Errors) -> None:
    """The CRD schema's enums and required fields (the schema itself is
    ``schemas/own/verticalpodautoscaler.yaml``; ``objects.strict`` reports its unknown fields)."""
    spec = _spec(obj, e)
    _scale_target(spec, "targetRef", e)
    policy = e.mapping(spec, "updatePolicy", "spec.updatePolicy") or {}
    _enum(policy, "updateMode", "spec.updatePolicy.updateMode", VPA_UPDATE_MODES, e)
    for i, req in enumerate(e.items_of(policy, "evictionRequirements", "spec.updatePolicy.evictionRequirements")
                            or []):
        if isinstance(req, dict):
            _enum(req, "changeRequirement", f"spec.updatePolicy.evictionRequirements[{i}].changeRequirement",
                  VPA_CHANGE_REQUIREMENTS, e, required=True)
    resource_policy = e.mapping(spec, "resourcePolicy", "spec.resourcePolicy") or {}
    path = "spec.resourcePolicy.containerPolicies"
    for i, container in enumerate(e.items_of(resource_policy, "containerPolicies", path) or []):
        if isinstance(container, dict):
            _enum(container, "mode", f"{path}[{i}].mode", VPA_CONTAINER_MODES, e)
            _enum(container, "controlledValues", f"{path}[{i}].controlledValues", VPA_CONTROLLED_VALUES, e)
    for i, recommender in enumerate(e.items_of(spec, "recommenders", "spec.recommenders") or []):
        if isinstance(recommender, dict) and not recommender.get("name"):
            e.required(f"spec.recommenders[{i}].name")


def _enum(obj: dict[str, Any], key: str, path: str, supported: tuple[str, ...], e: Errors, required: bool = False) -> None:
    """A CRD ``enum``: ``Unsupported value: "x": supported values: ...`` in the schema's order."""
    value = obj.get(key)
    if value is None:
        if required:
            e.required(path)
    elif value not in supported:
        e.unsupported(path, value, supported)


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
