"""Validation and defaulting of the policy kinds: PriorityClass (``value`` bounds, system classes,
preemptionPolicy), ResourceQuota (hard quantities, scopes and scopeSelector), LimitRange (item
types, quantities, defaulting, the min <= defaultRequest <= default <= max order),
PodDisruptionBudget (one of minAvailable / maxUnavailable) and ConfigMap (keys, string data, 1 MiB of
data and binaryData in all). LimitRange ``maxLimitRequestRatio`` values are at least 1.
Messages follow kubernetes ``pkg/apis/scheduling/validation``, ``pkg/apis/core/validation``
(ValidateResourceQuota, ValidateLimitRange, ValidateConfigMap) and ``pkg/apis/policy/validation``.

Neighbours: ``objects.validation`` registers these validators; uses ``fieldcheck``, ``names``,
``limits``.
"""

from __future__ import annotations

from typing import Any

import base64

from gpusched.errors import FieldError
from gpusched.objects.fieldcheck import Errors, _spec, quantity_text
from gpusched.objects.names import PERCENT_MSG, config_map_key_errors, is_percent
from gpusched.objects.quantity import quantity_string
from gpusched.objects.validation_meta import utf8_size
from gpusched.objects.validation_affinity import validate_label_selector

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASSES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}
_QUOTA_STANDARD = frozenset({
    "pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
    "persistentvolumeclaims", "services.nodeports", "services.loadbalancers", "cpu", "memory", "storage",
    "ephemeral-storage", "requests.cpu", "requests.memory", "requests.storage", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage"})

# ----------------------------------------------------------------------------------------------
# Policy kinds


def _priority_class(obj: dict[str, Any], e: Errors) -> None:
    name = str(obj["metadata"].get("name") or "") if isinstance(obj.get("metadata"), dict) else ""
    value = obj.get("value")
    if value is None:
        e.required("value")
    value = e.integer(obj, "value", "value")
    global_default = e.boolean(obj, "globalDefault", "globalDefault")
    if name.startswith("system-"):
        wanted = SYSTEM_PRIORITY_CLASSES.get(name)
        if wanted is None:
            problem = f"{name} is not a known system priority class"
        elif value != wanted:
            problem = f"value of {name} PriorityClass must be {wanted}"
        elif global_default:
            problem = f"globalDefault of {name} PriorityClass must be false"
        else:
            problem = ""
        if problem:
            e.forbidden("metadata.name", "priority class names with 'system-' prefix are reserved for system use "
                        f"only. error: {problem}")
    elif value is not None and value > HIGHEST_USER_DEFINABLE_PRIORITY:
        e.forbidden("value", f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}")
    if obj.get("preemptionPolicy") is None:
        obj["preemptionPolicy"] = "PreemptLowerPriority"
    if obj["preemptionPolicy"] not in ("PreemptLowerPriority", "Never"):
        e.unsupported("preemptionPolicy", obj["preemptionPolicy"], ("PreemptLowerPriority", "Never"))


def _resource_quota(obj: dict[str, Any], e: Errors) -> None:
    spec = _spec(obj, e)
    for name, value in sorted((e.mapping(spec, "hard", "spec.hard") or {}).items()):
        path = f"spec.hard[{name}]"
        if "/" not in name and name not in _QUOTA_STANDARD and not name.startswith(("hugepages-", "requests.hugepages-")):
            e.invalid(path, name, "must be a standard resource for quota")
            continue
        e.quantity(value, path)
    _quota_scopes(spec, e)


# ResourceQuota scopes, pkg/apis/core/validation/validation.go validateResourceQuotaScopes and
# validateScopedResourceSelectorRequirement; values render as Go's %#v of the internal types.
_QUOTA_SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
                 "CrossNamespacePodAffinity", "VolumeAttributesClass")
_POD_COMPUTE_QUOTA = frozenset({"cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu",
                                "requests.memory"})
_EXISTS_ONLY = ("BestEffort", "NotBestEffort", "Terminating", "NotTerminating", "CrossNamespacePodAffinity")
_CONFLICTING = (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating"))


def _scope_valid_for(scope: str, resource: str) -> bool:
    """``IsResourceQuotaScopeValidForResource``."""
    if scope in ("Terminating", "NotTerminating", "NotBestEffort", "PriorityClass",
                 "CrossNamespacePodAffinity"):
        return resource == "pods" or resource in _POD_COMPUTE_QUOTA
    if scope == "BestEffort":
        return resource == "pods"
    return True


def _go_strings(type_name: str, values: list[Any] | None) -> str:
    if values is None:
        return f"[]{type_name}(nil)"
    return f"[]{type_name}{{" + ", ".join(f'"{v}"' for v in values) + "}"


def _go_selector(selector: dict[str, Any]) -> str:
    reqs = ", ".join(
        f'core.ScopedResourceSelectorRequirement{{ScopeName:"{r.get("scopeName", "")}", '
        f'Operator:"{r.get("operator", "")}", Values:{_go_strings("string", r.get("values"))}}}'
        for r in selector.get("matchExpressions") or [] if isinstance(r, dict))
    return f"&core.ScopeSelector{{MatchExpressions:[]core.ScopedResourceSelectorRequirement{{{reqs}}}}}"


def _invalid_go(e: Errors, path: str, go_value: str, detail: str) -> None:
    e.items.append(FieldError(path, "Invalid value", go_value, detail, False))


def _quota_standard_keys(spec: dict[str, Any]) -> list[str]:
    """The standard resource names of ``spec.hard``, sorted: the ones scopes are checked against."""
    quantities = spec.get("hard")
    hard = sorted(k for k in quantities if isinstance(k, str)) if isinstance(quantities, dict) else []
    return [k for k in hard if "/" not in k
            and (k in _QUOTA_STANDARD or k.startswith(("hugepages-", "requests.hugepages-")))]


def _quota_scopes(spec: dict[str, Any], e: Errors) -> None:
    """``validateResourceQuotaScopes`` then ``validateScopeSelector``."""
    standard = _quota_standard_keys(spec)
    scopes = e.items_of(spec, "scopes", "spec.scopes")
    rendered = _go_strings("core.ResourceQuotaScope", scopes)
    for scope in scopes or []:
        if scope not in _QUOTA_SCOPES:
            _invalid_go(e, "spec.scopes", rendered, "unsupported scope")
        for key in standard:
            if not _scope_valid_for(str(scope), key):
                _invalid_go(e, "spec.scopes", rendered, "unsupported scope applied to resource")
    for pair in _CONFLICTING:
        if all(p in (scopes or []) for p in pair):
            _invalid_go(e, "spec.scopes", rendered, "conflicting scopes")
    selector = e.mapping(spec, "scopeSelector", "spec.scopeSelector")
    if selector is not None:
        _scope_selector(selector, standard, rendered, e)


def _scope_selector(selector: dict[str, Any], standard: list[str], rendered: str, e: Errors) -> None:
    """``validateScopeSelector``: each requirement, then the conflicting pairs among their scope names."""
    path = "spec.scopeSelector.matchExpressions"
    names = []
    for req in e.items_of(selector, "matchExpressions", path) or []:
        if not isinstance(req, dict):
            continue
        names.append(req.get("scopeName"))
        _scope_requirement(req, selector, standard, e)
    for pair in _CONFLICTING:
        if all(p in names for p in pair):
            _invalid_go(e, path, rendered, "conflicting scopes")


def _scope_requirement(req: dict[str, Any], selector: dict[str, Any], standard: list[str], e: Errors) -> None:
    """``validateScopedResourceSelectorRequirement``: scope name, scope vs resources, operator, values."""
    path = "spec.scopeSelector.matchExpressions"
    name, operator = req.get("scopeName"), req.get("operator")
    if name not in _QUOTA_SCOPES:
        e.invalid(f"{path}.scopeName", name, "unsupported scope")
    for key in standard:
        if not _scope_valid_for(str(name), key):
            _invalid_go(e, path, _go_selector(selector), "unsupported scope applied to resource")
    if name in _EXISTS_ONLY and operator != "Exists":
        e.invalid(f"{path}.operator", operator, "must be 'Exist' when scope is any of "
                  "ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, "
                  "ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or "
                  "ResourceQuotaScopeCrossNamespacePodAffinity")
    _scope_requirement_values(operator, req.get("values") or [], e)


def _scope_requirement_values(operator: Any, values: Any, e: Errors) -> None:
    """The operator's own rule for ``values``: In/NotIn need some, Exists/DoesNotExist none."""
    path = "spec.scopeSelector.matchExpressions"
    if operator in ("In", "NotIn"):
        if not values:
            e.required(f"{path}.values", "must be at least one value when `operator` is 'In' "
                       "or 'NotIn' for scope selector")
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            _invalid_go(e, f"{path}.values", _go_strings("string", values), "must be no value when "
                        "`operator` is 'Exist' or 'DoesNotExist' for scope selector")
    else:
        e.invalid(f"{path}.operator", operator, "not a valid selector operator")


_LIMIT_TYPES = ("Pod", "Container", "PersistentVolumeClaim")
MAX_CONFIG_MAP_SIZE = 1024 * 1024        # core.MaxSecretSize: data plus binaryData, in bytes
_LIMIT_FIELDS = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")


def _limit_range(obj: dict[str, Any], e: Errors) -> None:
    spec = _spec(obj, e)
    items = e.items_of(spec, "limits", "spec.limits")
    if items is None:
        e.required("spec.limits")
    for p, item in e.objects(items or (), "spec.limits"):
        kind = item.get("type")
        if kind not in _LIMIT_TYPES:
            e.unsupported(f"{p}.type", kind if kind is not None else "", _LIMIT_TYPES)
        parsed: dict[str, dict[str, Any]] = {}
        for field in _LIMIT_FIELDS:
            values = e.mapping(item, field, f"{p}.{field}") or {}
            parsed[field] = {}
            for name, value in sorted(values.items()):
                amount = e.quantity(value, f"{p}.{field}[{name}]")
                if amount is not None:
                    parsed[field][name] = (amount, quantity_text(value))
        if kind == "Pod":
            for field in ("default", "defaultRequest"):
                if item.get(field):
                    e.forbidden(f"{p}.{field}", "may not be specified when `type` is 'Pod'")
        if kind == "Container":
            _default_limit_range_item(item, parsed)
        _limit_order(parsed, p, e)
        _limit_ratios(parsed, p, e)


def _limit_ratios(parsed: dict[str, dict[str, Any]], p: str, e: Errors) -> None:
    """``maxLimitRequestRatio`` values are at least 1 (a Quantity value, printed with its
    ``String()``: ``Invalid value: 500m``)."""
    for name, (amount, text) in sorted(parsed["maxLimitRequestRatio"].items()):
        if amount < 1:
            _invalid_go(e, f"{p}.maxLimitRequestRatio[{name}]", quantity_string(text),
                        "ratio must be greater than or equal to 1")


def _default_limit_range_item(item: dict[str, Any], parsed: dict[str, dict[str, Any]]) -> None:
    """v1 defaulting (type Container): default=max, defaultRequest=default, else defaultRequest=min."""
    for source, target in (("max", "default"), ("default", "defaultRequest"), ("min", "defaultRequest")):
        for name in sorted(parsed[source]):
            if name not in parsed[target]:
                raw = item[source][name]
                if not isinstance(item.get(target), dict):
                    item[target] = {}
                item[target][name] = raw
                parsed[target][name] = parsed[source][name]


def _limit_order(parsed: dict[str, dict[str, Any]], p: str, e: Errors) -> None:
    low_high = (("min", "max", "min[{}]", "min value {} is greater than max value {}"),
                ("min", "defaultRequest", "defaultRequest[{}]", "min value {} is greater than default request value {}"),
                ("defaultRequest", "default", "defaultRequest[{}]",
                 "default request value {} is greater than default limit value {}"),
                ("default", "max", "default[{}]", "default value {} is greater than max value {}"),
                ("defaultRequest", "max", "defaultRequest[{}]", "default request value {} is greater than max value {}"))
    for low, high, path, message in low_high:
        for name in sorted(set(parsed[low]) & set(parsed[high])):
            (low_amount, low_text), (high_amount, high_text) = parsed[low][name], parsed[high][name]
            if low_amount > high_amount:
                value = low_text if path.startswith(low) else high_text
                e.invalid(f"{p}.{path.format(name)}", value, message.format(low_text, high_text))


def _int_or_percent(spec: dict[str, Any], field: str, e: Errors) -> None:
    value, path = spec.get(field), f"spec.{field}"
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        e.invalid(path, value, "must be an integer or a percentage (e.g. '5%')")
    elif isinstance(value, int):
        if value < 0:
            e.invalid(path, value, "must be greater than or equal to 0")
    elif not is_percent(value):
        e.invalid(path, value, PERCENT_MSG)
    elif int(value[:-1]) > 100:
        e.invalid(path, value, "must not be greater than 100%")


def _pdb(obj: dict[str, Any], e: Errors) -> None:
    spec = _spec(obj, e)
    given = [f for f in ("minAvailable", "maxUnavailable") if spec.get(f) is not None]
    if len(given) == 2:
        e.invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set")
    elif not given:
        e.required("spec", "one of minAvailable or maxUnavailable must be set")
    for field in given:
        _int_or_percent(spec, field, e)
    validate_label_selector(spec.get("selector"), "spec.selector", e)


def _config_map(obj: dict[str, Any], e: Errors) -> None:
    data = e.mapping(obj, "data", "data") or {}
    for key, value in data.items():
        for msg in config_map_key_errors(key):
            e.invalid(f"data[{key}]", key, msg)
        if not isinstance(value, str):
            e.invalid(f"data[{key}]", value, "must be a string")
    binary = e.mapping(obj, "binaryData", "binaryData") or {}
    for key in binary:
        if key in data:
            e.invalid(f"data[{key}]", key, "duplicate of key present in binaryData")
    for key in binary:
        for msg in config_map_key_errors(key):
            e.invalid(f"binaryData[{key}]", key, msg)
    size = sum(utf8_size(v) for v in data.values() if isinstance(v, str))
    size += sum(_decoded_size(v) for v in binary.values())
    if size > MAX_CONFIG_MAP_SIZE:       # core.MaxSecretSize; the path "" prints as "[]"
        e.too_long("[]", MAX_CONFIG_MAP_SIZE)


def _decoded_size(value: Any) -> int:
    """The bytes a binaryData value holds (its base64 was checked when the body was decoded)."""
    try:
        return len(base64.b64decode(str(value).replace("\n", "").replace("\r", "")))
    except ValueError:
        return 0
