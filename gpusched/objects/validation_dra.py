"""Validation and defaulting of ``resource.k8s.io/v1`` DeviceClass, ResourceClaim and
ResourceClaimTemplate, with kube-apiserver's field paths, limits and messages.

From ``pkg/apis/resource/validation/validation.go`` (``ValidateResourceClaim``,
``ValidateDeviceClass``, ``ValidateResourceClaimTemplate``), the limits of
``staging/src/k8s.io/api/resource/v1/types.go`` and the defaults of
``pkg/apis/resource/v1/defaults.go``:

- defaults: a request's (and sub-request's) ``allocationMode`` is ``ExactCount`` and its
  ``count`` 1 when unset; a toleration's ``operator`` is ``Equal``;
- ``spec.devices.requests`` (at most 32, unique names, each a DNS label) hold exactly one of
  ``exactly`` or ``firstAvailable`` (at most 8 sub-requests); a request names a DeviceClass (a
  DNS subdomain), at most 32 CEL selectors (each at most 10 KiB), ``count`` > 0 for ExactCount
  and none for All; constraints and config name requests of the claim (``req`` or
  ``req/sub``); a constraint's ``matchAttribute`` is a fully qualified name; config is opaque
  (a driver name and a JSON object of at most 10 KiB);
- a DeviceClass: at most 32 selectors and 32 configs, ``extendedResourceName`` a valid
  extended resource name;
- ResourceSlices are ``objects.validation_dra_slice``'s.

Whether a selector's CEL compiles (and its cost) is checked where the CEL environment lives,
above this layer: ``cluster.apiserver.strategy_dra`` at create time. Only the structural rules
are here.

Neighbours: fieldcheck (Errors), names, validation_affinity (labels); used by
objects.validation (the kinds' entries) and objects.validation_dra_slice (shared checks).
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from gpusched.objects.fieldcheck import Errors
from gpusched.objects.names import (dns1123_label_errors, dns1123_subdomain_errors,
                                    label_value_errors, qualified_name_errors)
from gpusched.objects.validation_affinity import validate_labels
from gpusched.objects.validation_meta import validate_annotations

# staging/src/k8s.io/api/resource/v1/types.go
DEVICE_REQUESTS_MAX = 32              # DeviceRequestsMaxSize (= AllocationResultsMaxSize)
DEVICE_SELECTORS_MAX = 32             # DeviceSelectorsMaxSize
DEVICE_CONSTRAINTS_MAX = 32           # DeviceConstraintsMaxSize
DEVICE_CONFIG_MAX = 32                # DeviceConfigMaxSize
FIRST_AVAILABLE_MAX = 8               # FirstAvailableDeviceRequestMaxSize
DEVICE_TOLERATIONS_MAX = 16           # DeviceTolerationsMaxLength (declarative +k8s:maxItems)
CEL_EXPRESSION_MAX_LENGTH = 10 * 1024  # CELSelectorExpressionMaxLength
OPAQUE_PARAMETERS_MAX_LENGTH = 10 * 1024  # OpaqueParametersMaxLength
DRIVER_NAME_MAX_LENGTH = 63           # DriverNameMaxLength
DEVICE_MAX_ID_LENGTH = 32             # DeviceMaxIDLength
POOL_NAME_MAX_LENGTH = 253            # PoolNameMaxLength
CONFIG_SOURCES = ("FromClaim", "FromClass")
ALLOCATION_MODES = ("All", "ExactCount")
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")
TOLERATION_OPERATORS = ("Equal", "Exists")
ONE_REQUEST_TYPE = "exactly one of `exactly` or `firstAvailable` is required"
REQUEST_REF = ("must be the name of a request in the claim or the name of a request and a "
               "subrequest separated by '/'")
_C_IDENTIFIER = "[A-Za-z_][A-Za-z0-9_]*"
_C_IDENTIFIER_RE = re.compile(f"^{_C_IDENTIFIER}$")
C_IDENTIFIER_MSG = ("a valid C identifier must start with alphabetic character or '_', followed by "
                    "a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or "
                    f"'MyName', regex used for validation is '{_C_IDENTIFIER}')")

RequestNames = dict[str, set[str] | None]


def items_within(e: Errors, obj: dict[str, Any], key: str, path: str, most: int) -> list[Any]:
    """``validateSlice``'s size check: a list longer than ``most`` is one ``Too many`` error and
    its items are not looked at (upstream short-circuits, for DoS protection)."""
    items = e.items_of(obj, key, path) or []
    if most >= 0 and len(items) > most:
        e.too_many(path, len(items), most)
        return []
    return items


def duplicates(items: list[Any], key: Callable[[Any], Any], path: str, e: Errors) -> None:
    """``validateSet``'s uniqueness: ``<path>[i]: Duplicate value: <key>`` for each repeat."""
    seen: set[Any] = set()
    for i, item in enumerate(items):
        value = key(item)
        if isinstance(value, (dict, list)):     # a wrong type, reported where it is read
            continue
        if value in seen:
            e.duplicate(f"{path}[{i}]", value)
        seen.add(value)


def as_list(value: Any) -> list[Any]:
    """A list field as read before validation reports a wrong type: the list, or nothing."""
    return value if isinstance(value, list) else []


def _name_of(item: Any, field: str = "name") -> Any:
    return item.get(field, "") if isinstance(item, dict) else None


def dns_label(value: Any, path: str, e: Errors) -> None:
    text = value if isinstance(value, str) else ""
    for msg in dns1123_label_errors(text):
        e.invalid(path, text, msg)


def driver_name(value: Any, path: str, e: Errors) -> None:
    """``ValidateCSIDriverName``: required, at most 63 bytes, a DNS subdomain once lowercased."""
    text = value if isinstance(value, str) else ""
    if not text:
        e.required(path)
    if len(text) > DRIVER_NAME_MAX_LENGTH:
        e.too_long(path, DRIVER_NAME_MAX_LENGTH)
    for msg in dns1123_subdomain_errors(text.lower()):
        e.invalid(path, text, msg)


def pool_name(value: Any, path: str, e: Errors) -> None:
    """``validatePoolName``: required, at most 253 bytes, each ``/``-part a DNS subdomain."""
    name = value if isinstance(value, str) else ""
    if not name:
        e.required(path)
        return
    if len(name) > POOL_NAME_MAX_LENGTH:
        e.too_long(path, POOL_NAME_MAX_LENGTH)
    for part in name.split("/"):
        for msg in dns1123_subdomain_errors(part):
            e.invalid(path, part, msg)


def label_key(value: Any, path: str, e: Errors) -> None:
    """``metav1validation.ValidateLabelName``."""
    text = value if isinstance(value, str) else ""
    for msg in qualified_name_errors(text):
        e.invalid(path, text, msg)


def c_identifier(value: str, path: str, e: Errors) -> None:
    if len(value) > DEVICE_MAX_ID_LENGTH:
        e.too_long(path, DEVICE_MAX_ID_LENGTH)
    if not _C_IDENTIFIER_RE.fullmatch(value):
        e.invalid(path, value, C_IDENTIFIER_MSG)


def qualified_name(name: str, path: str, e: Errors) -> None:
    """``validateQualifiedName``: ``name`` (a C identifier) or ``domain/name`` (a driver name and
    a C identifier); more slashes are let through, as upstream (a TODO there)."""
    parts = name.split("/")
    if len(parts) == 1:
        c_identifier(parts[0], path, e)
    elif len(parts) == 2:
        if parts[0]:
            driver_name(parts[0], path, e)
        else:
            e.invalid(path, "", "the domain must not be empty")
        if parts[1]:
            c_identifier(parts[1], path, e)
        else:
            e.invalid(path, "", "the name must not be empty")


def fully_qualified_name(value: Any, path: str, e: Errors) -> None:
    name = value if isinstance(value, str) else ""
    qualified_name(name, path, e)
    if "/" not in name:
        e.invalid(path, name, "a fully qualified name must be a domain and a name separated by a slash")


# ---- defaults ---------------------------------------------------------------------------------

def _default_request(request: dict[str, Any]) -> None:
    """``SetDefaults_ExactDeviceRequest`` / ``SetDefaults_DeviceSubRequest`` and the
    tolerations' ``SetDefaults_DeviceToleration``."""
    if not request.get("allocationMode"):
        request["allocationMode"] = "ExactCount"
    if request["allocationMode"] == "ExactCount" and not request.get("count"):
        request["count"] = 1
    for toleration in as_list(request.get("tolerations")):
        if isinstance(toleration, dict) and not toleration.get("operator"):
            toleration["operator"] = "Equal"


def default_claim_spec(spec: Any) -> None:
    devices = spec.get("devices") if isinstance(spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    for request in requests if isinstance(requests, list) else ():
        if not isinstance(request, dict):
            continue
        if isinstance(request.get("exactly"), dict):
            _default_request(request["exactly"])
        for sub in as_list(request.get("firstAvailable")):
            if isinstance(sub, dict):
                _default_request(sub)


# ---- requests ---------------------------------------------------------------------------------

def selectors(obj: dict[str, Any], path: str, e: Errors) -> None:
    """``validateSelectorSlice``: at most 32, each with ``cel.expression`` of at most 10 KiB."""
    for i, selector in enumerate(items_within(e, obj, "selectors", path, DEVICE_SELECTORS_MAX)):
        cel = selector.get("cel") if isinstance(selector, dict) else None
        if not isinstance(cel, dict):
            e.required(f"{path}[{i}].cel")
        elif len(str(cel.get("expression") or "")) > CEL_EXPRESSION_MAX_LENGTH:
            e.too_long(f"{path}[{i}].cel.expression", CEL_EXPRESSION_MAX_LENGTH)


def _allocation_mode(request: dict[str, Any], path: str, e: Errors) -> None:
    mode, count = request.get("allocationMode"), request.get("count") or 0
    if mode == "All":
        if count != 0:
            e.invalid(f"{path}.count", count, "must not be specified when allocationMode is 'All'")
    elif mode == "ExactCount":
        if isinstance(count, int) and count <= 0:
            e.invalid(f"{path}.count", count, "must be greater than zero")
    else:
        e.unsupported(f"{path}.allocationMode", mode, ALLOCATION_MODES)


def device_toleration(toleration: Any, path: str, e: Errors) -> None:
    """``validateDeviceToleration``."""
    if not isinstance(toleration, dict):
        e.invalid(path, toleration, "must be an object")
        return
    if toleration.get("key"):
        label_key(toleration["key"], f"{path}.key", e)
    operator, value = toleration.get("operator"), str(toleration.get("value") or "")
    if operator == "Exists":
        if value:
            e.invalid(f"{path}.value", value, "must be empty for operator `Exists`")
    elif operator == "Equal":
        for msg in label_value_errors(value):
            e.invalid(f"{path}.value", value, msg)
    elif not operator:
        e.required(f"{path}.operator")
    else:
        e.unsupported(f"{path}.operator", operator, TOLERATION_OPERATORS)
    effect = toleration.get("effect")
    if effect and effect not in TAINT_EFFECTS:
        e.unsupported(f"{path}.effect", effect, TAINT_EFFECTS)


def _device_class_name(request: dict[str, Any], path: str, e: Errors) -> None:
    name = request.get("deviceClassName")
    if not name:
        e.required(f"{path}.deviceClassName")
    else:
        for msg in dns1123_subdomain_errors(str(name)):
            e.invalid(f"{path}.deviceClassName", name, msg)


def _exact(request: dict[str, Any], path: str, e: Errors) -> None:
    """``validateExactDeviceRequest`` / ``validateDeviceSubRequest`` (after the name)."""
    _device_class_name(request, path, e)
    selectors(request, f"{path}.selectors", e)
    _allocation_mode(request, path, e)
    tolerations = items_within(e, request, "tolerations", f"{path}.tolerations", DEVICE_TOLERATIONS_MAX)
    for i, toleration in enumerate(tolerations):
        device_toleration(toleration, f"{path}.tolerations[{i}]", e)


def _request(request: Any, path: str, e: Errors) -> None:
    """``validateDeviceRequest``: a DNS-label name and exactly one of the two request types."""
    if not isinstance(request, dict):
        e.invalid(path, request, "must be an object")
        return
    dns_label(request.get("name"), f"{path}.name", e)
    exactly, first = request.get("exactly"), request.get("firstAvailable")
    first = first if first not in (None, [], {}, "", 0, False) else []
    if exactly is None and not first:
        e.required(path, ONE_REQUEST_TYPE)
    elif exactly is not None and first:
        e.invalid(path, None, ONE_REQUEST_TYPE + ", but multiple fields are set")
    elif first:
        subs = items_within(e, request, "firstAvailable", f"{path}.firstAvailable", FIRST_AVAILABLE_MAX)
        for i, sub in enumerate(subs):
            sub_path = f"{path}.firstAvailable[{i}]"
            if isinstance(sub, dict):
                dns_label(sub.get("name"), f"{sub_path}.name", e)
                _exact(sub, sub_path, e)
        duplicates(subs, _name_of, f"{path}.firstAvailable", e)
    elif isinstance(exactly, dict):
        _exact(exactly, f"{path}.exactly", e)


def request_names(devices: dict[str, Any]) -> RequestNames:
    """``gatherRequestNames``: request -> its sub-request names (None without any)."""
    names: RequestNames = {}
    for request in as_list(devices.get("requests")):
        if not isinstance(request, dict):
            continue
        subs = [s.get("name") for s in as_list(request.get("firstAvailable")) if isinstance(s, dict)]
        names[str(request.get("name", ""))] = {str(s) for s in subs} if subs else None
    return names


def _has_request(names: RequestNames, ref: str) -> bool:
    segments = ref.split("/")
    if len(segments) > 2 or segments[0] not in names:
        return False
    subs = names[segments[0]]
    return len(segments) == 1 or (subs is not None and segments[1] in subs)


def request_refs(obj: dict[str, Any], path: str, names: RequestNames, e: Errors, one: bool = False) -> None:
    """A constraint's or a config's ``requests``: each ``req`` or ``req/sub`` of this claim
    (``one``: a single reference at ``path``, an allocation result's ``request``)."""
    refs = items_within(e, obj, "requests", path, DEVICE_REQUESTS_MAX)
    for i, ref in enumerate(refs):
        text, ref_path = str(ref), path if one else f"{path}[{i}]"
        segments = text.split("/")
        if len(segments) > 2:
            e.invalid(ref_path, text, REQUEST_REF)
            continue
        for segment in segments:
            dns_label(segment, ref_path, e)
        if not _has_request(names, text):
            e.invalid(ref_path, text, REQUEST_REF)
    duplicates(refs, str, path, e)


def _constraint(constraint: Any, path: str, names: RequestNames, e: Errors) -> None:
    if not isinstance(constraint, dict):
        e.invalid(path, constraint, "must be an object")
        return
    request_refs(constraint, f"{path}.requests", names, e)
    if constraint.get("matchAttribute") is not None:
        fully_qualified_name(constraint["matchAttribute"], f"{path}.matchAttribute", e)
    elif constraint.get("distinctAttribute") is not None:
        fully_qualified_name(constraint["distinctAttribute"], f"{path}.distinctAttribute", e)
    else:   # DRAConsumableCapacity is on (beta) in 1.36; upstream's wording, as it is
        e.required(path, 'exactly one of "matchAttribute" or "distinctAttribute" is required, '
                         "but multiple fields are set")


def device_configuration(config: Any, path: str, e: Errors) -> None:
    """``validateDeviceConfiguration``: ``opaque`` with a driver and a JSON object."""
    opaque = config.get("opaque") if isinstance(config, dict) else None
    if not isinstance(opaque, dict):
        e.required(f"{path}.opaque")
        return
    driver_name(opaque.get("driver"), f"{path}.opaque.driver", e)
    parameters, params_path = opaque.get("parameters"), f"{path}.opaque.parameters"
    if parameters is None:
        e.required(params_path)
    elif len(json.dumps(parameters, separators=(",", ":"))) > OPAQUE_PARAMETERS_MAX_LENGTH:
        e.too_long(params_path, OPAQUE_PARAMETERS_MAX_LENGTH)
    elif not isinstance(parameters, dict):
        e.invalid(params_path, "<value omitted>", "must be a valid JSON object")


def validate_claim_spec(spec: Any, path: str, e: Errors) -> None:
    """``validateResourceClaimSpec`` at ``path`` (``spec`` or a template's ``spec.spec``)."""
    devices = spec.get("devices") if isinstance(spec, dict) else None
    if devices is None:
        return
    if not isinstance(devices, dict):
        e.invalid(f"{path}.devices", devices, "must be an object")
        return
    path = f"{path}.devices"
    names = request_names(devices)
    requests = items_within(e, devices, "requests", f"{path}.requests", DEVICE_REQUESTS_MAX)
    for i, request in enumerate(requests):
        _request(request, f"{path}.requests[{i}]", e)
    duplicates(requests, _name_of, f"{path}.requests", e)
    constraints = items_within(e, devices, "constraints", f"{path}.constraints", DEVICE_CONSTRAINTS_MAX)
    for i, constraint in enumerate(constraints):
        _constraint(constraint, f"{path}.constraints[{i}]", names, e)
    for i, config in enumerate(items_within(e, devices, "config", f"{path}.config", DEVICE_CONFIG_MAX)):
        if isinstance(config, dict):
            request_refs(config, f"{path}.config[{i}].requests", names, e)
        device_configuration(config, f"{path}.config[{i}]", e)


# ---- a claim's allocation (a status write) ----------------------------------------------------

def validate_allocation(allocation: Any, names: RequestNames, path: str, e: Errors) -> None:
    """``validateAllocationResult`` of a new allocation: at most 32 results, each naming a
    request of the claim, a driver, a pool and a device; configs from the claim or the class."""
    if not isinstance(allocation, dict):
        return
    devices: dict[str, Any] = allocation["devices"] if isinstance(allocation.get("devices"), dict) else {}
    results_path = f"{path}.devices.results"
    for i, result in enumerate(items_within(e, devices, "results", results_path, DEVICE_REQUESTS_MAX)):
        p = f"{results_path}[{i}]"
        result = result if isinstance(result, dict) else {}
        request_refs({"requests": [result.get("request", "")]}, f"{p}.request", names, e, one=True)
        driver_name(result.get("driver"), f"{p}.driver", e)
        pool_name(result.get("pool"), f"{p}.pool", e)
        dns_label(result.get("device"), f"{p}.device", e)
    configs_path = f"{path}.devices.config"
    for i, config in enumerate(items_within(e, devices, "config", configs_path, 2 * DEVICE_CONFIG_MAX)):
        p = f"{configs_path}[{i}]"
        source = config.get("source") if isinstance(config, dict) else None
        if not source:
            e.required(f"{p}.source")
        elif source not in CONFIG_SOURCES:
            e.unsupported(f"{p}.source", source, CONFIG_SOURCES)
        if isinstance(config, dict):
            request_refs(config, f"{p}.requests", names, e)
        device_configuration(config, p, e)


# ---- the kinds --------------------------------------------------------------------------------

def _spec(obj: dict[str, Any], e: Errors) -> dict[str, Any]:
    spec = e.mapping(obj, "spec", "spec")
    return spec if spec is not None else {}


def _resource_claim(obj: dict[str, Any], e: Errors) -> None:
    spec = _spec(obj, e)
    default_claim_spec(spec)
    validate_claim_spec(spec, "spec", e)


def _resource_claim_template(obj: dict[str, Any], e: Errors) -> None:
    """``validateResourceClaimTemplateSpec``: the claims' metadata (labels, annotations) and spec."""
    spec = _spec(obj, e)
    meta = e.mapping(spec, "metadata", "spec.metadata") or {}
    validate_labels(e.string_map(meta, "labels", "spec.metadata.labels"), "spec.metadata.labels", e)
    validate_annotations(e.string_map(meta, "annotations", "spec.metadata.annotations"),
                         "spec.metadata.annotations", e)
    claim_spec = e.mapping(spec, "spec", "spec.spec") or {}
    default_claim_spec(claim_spec)
    validate_claim_spec(claim_spec, "spec.spec", e)


def is_extended_resource_name(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: not native (a domain outside ``kubernetes.io/``),
    not ``requests.``-prefixed, and a qualified name once ``requests.`` is put in front."""
    native = "/" not in name or "kubernetes.io/" in name
    if native or name.startswith("requests."):
        return False
    return not qualified_name_errors(f"requests.{name}")


def _device_class(obj: dict[str, Any], e: Errors) -> None:
    spec = _spec(obj, e)
    selectors(spec, "spec.selectors", e)
    for i, config in enumerate(items_within(e, spec, "config", "spec.config", DEVICE_CONFIG_MAX)):
        device_configuration(config, f"spec.config[{i}]", e)
    name = spec.get("extendedResourceName")
    if name is not None and not is_extended_resource_name(str(name)):
        e.invalid("spec.extendedResourceName", name, "must be a valid extended resource name")


VALIDATORS: dict[str, Callable[[dict[str, Any], Errors], None]] = {
    "DeviceClass": _device_class,
    "ResourceClaim": _resource_claim,
    "ResourceClaimTemplate": _resource_claim_template,
}
