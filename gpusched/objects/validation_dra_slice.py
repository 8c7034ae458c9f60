"""Validation of ``resource.k8s.io/v1`` ResourceSlices: the pool rules, node selection, devices,
counters and taints, with kube-apiserver's field paths, limits and messages.

From ``pkg/apis/resource/validation/validation.go`` (``validateResourceSliceSpec``,
``validateDevice``, ``validateCounterSet``, ``validateDeviceAttribute``,
``validateRequestPolicy``, ``validateDeviceTaint``, ``validateDeviceBindingParameters``) and the
limits of ``staging/src/k8s.io/api/resource/v1/types.go``:

- ``spec.driver`` a driver name; ``spec.pool.name`` required, at most 253 bytes, DNS subdomains
  separated by ``/``; ``resourceSliceCount`` > 0; ``generation`` >= 0;
- exactly one of ``nodeName`` (non-empty), ``nodeSelector`` (one term), ``allNodes`` (true),
  ``perDeviceNodeSelection`` (true), and then each device names its own nodes;
- only one of ``sharedCounters`` (at most 8 sets of at most 32 counters) or ``devices``;
- at most 128 devices, 64 when a device has taints or consumes counters; each a unique DNS-label
  name with at most 32 attributes and capacities together, qualified names, exactly one typed
  value per attribute (strings at most 64 bytes, versions semver), a ``requestPolicy`` only with
  ``allowMultipleAllocations``, at most 2 counter consumptions, at most 16 taints.

Neighbours: validation_dra (shared checks), validation_affinity (node selector terms); used by
objects.validation.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any, Callable

from gpusched.errors import FieldError
from gpusched.objects.fieldcheck import Errors
from gpusched.objects.names import dns1123_subdomain_errors, label_value_errors
from gpusched.objects.quantity import QuantityError, parse_quantity, quantity_string
from gpusched.objects.validation_affinity import node_selector_term
from gpusched.objects.validation_dra import (as_list, dns_label, pool_name, driver_name, duplicates, items_within,
                                             label_key, qualified_name)

SLICE_MAX_DEVICES = 128                # ResourceSliceMaxDevices
SLICE_MAX_DEVICES_ADVANCED = 64        # ResourceSliceMaxDevicesWithTaintsOrConsumesCounters
SLICE_MAX_COUNTER_SETS = 8             # ResourceSliceMaxCounterSets
MAX_COUNTERS_PER_SET = 32              # ResourceSliceMaxCountersPerCounterSet
MAX_CONSUMPTIONS_PER_DEVICE = 2        # ResourceSliceMaxDeviceCounterConsumptionsPerDevice
MAX_COUNTERS_PER_CONSUMPTION = 32      # ResourceSliceMaxCountersPerDeviceCounterConsumption
MAX_ATTRIBUTES_AND_CAPACITIES = 32     # ResourceSliceMaxAttributesAndCapacitiesPerDevice
ATTRIBUTE_MAX_VALUE_LENGTH = 64        # DeviceAttributeMaxValueLength
DEVICE_TAINTS_MAX = 16                 # DeviceTaintsMaxLength
BINDING_CONDITIONS_MAX = 4             # BindingConditionsMaxSize, BindingFailureConditionsMaxSize
VALID_VALUES_MAX = 10                  # CapacityRequestPolicyDiscreteMaxOptions
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")
NODE_FIELDS = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
DEVICE_NODE_FIELDS = ("exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
                      "`perDeviceNodeSelection` is set to true in the ResourceSlice spec")
UNSET_OR_TRUE = "must be either unset or set to true"
_NUMERIC = r"(0|[1-9]\d*)"
_PRERELEASE = r"(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD = r"[0-9a-zA-Z-]+"
SEMVER_RE = re.compile(rf"^{_NUMERIC}\.{_NUMERIC}\.{_NUMERIC}(-{_PRERELEASE}(\.{_PRERELEASE})*)?"
                       rf"(\+{_BUILD}(\.{_BUILD})*)?$")


def _node_name(value: str, path: str, e: Errors) -> None:
    for msg in dns1123_subdomain_errors(value):
        e.invalid(path, value, msg)


def _node_selector(selector: Any, path: str, e: Errors, one_term: bool) -> None:
    """``ValidateNodeSelector`` (at least one term), plus DRA's exactly one term."""
    terms = selector.get("nodeSelectorTerms") if isinstance(selector, dict) else None
    terms = terms if isinstance(terms, list) else []
    if not terms:
        e.required(f"{path}.nodeSelectorTerms", "must have at least one node selector term")
    for i, term in enumerate(terms):
        node_selector_term(term, f"{path}.nodeSelectorTerms[{i}]", e)
    if one_term and len(terms) != 1:
        e.invalid(f"{path}.nodeSelectorTerms", terms, "must have exactly one node selector term")


def _node_selection(spec: dict[str, Any], path: str, e: Errors, device: bool) -> list[str]:
    """The node-selection fields set (``nodeName`` ...), each checked on the way."""
    chosen = []
    if spec.get("nodeName") is not None:
        name = str(spec["nodeName"])
        if name:
            chosen.append("`nodeName`")
            _node_name(name, f"{path}.nodeName", e)
        else:
            e.invalid(f"{path}.nodeName", name, "must not be empty" if device
                      else "must be either unset or set to a non-empty string")
    if spec.get("nodeSelector") is not None:
        chosen.append("`nodeSelector`")
        _node_selector(spec["nodeSelector"], f"{path}.nodeSelector", e, one_term=not device)
    for field in ("allNodes",) if device else ("allNodes", "perDeviceNodeSelection"):
        if spec.get(field) is True:
            chosen.append(f"`{field}`")
        elif spec.get(field) is not None:
            e.invalid(f"{path}.{field}", spec[field], UNSET_OR_TRUE)
    return chosen


def _counters(owner: dict[str, Any], path: str, most: int, e: Errors) -> None:
    """A counter map: required, at most ``most``, DNS-label keys, quantities."""
    counters = owner.get("counters")
    if not counters or not isinstance(counters, dict):
        e.required(f"{path}.counters")
        return
    if len(counters) > most:
        e.too_many(f"{path}.counters", len(counters), most)
        return
    for name, counter in counters.items():
        dns_label(name, f"{path}.counters[{name}]", e)
        _quantity((counter or {}).get("value") if isinstance(counter, dict) else None,
                  f"{path}.counters[{name}].value", e)


def _quantity(value: Any, path: str, e: Errors) -> Fraction | None:
    try:
        return parse_quantity(value)
    except (QuantityError, TypeError, ValueError):
        e.invalid(path, value, "must be a quantity")
        return None


def _counters_of(owner: Any, key: str, most: int, path: str, e: Errors) -> None:
    """A CounterSet (``key`` ``name``) or a DeviceCounterConsumption (``key`` ``counterSet``): an
    object whose ``key`` is a required DNS label, with at most ``most`` counters."""
    if not isinstance(owner, dict):
        e.invalid(path, owner, "must be an object")
        return
    if not owner.get(key):
        e.required(f"{path}.{key}")
    else:
        dns_label(owner[key], f"{path}.{key}", e)
    _counters(owner, path, most, e)


def _attribute(name: str, attribute: Any, path: str, e: Errors) -> None:
    """``validateDeviceAttribute``: exactly one of int, bool, string, version."""
    qualified_name(name, path, e)
    values = {k: v for k, v in (attribute or {}).items() if v is not None} \
        if isinstance(attribute, dict) else {}
    typed = [k for k in ("bool", "int", "string", "version") if k in values]
    if isinstance(values.get("string"), str) and len(values["string"]) > ATTRIBUTE_MAX_VALUE_LENGTH:
        e.too_long(f"{path}.string", ATTRIBUTE_MAX_VALUE_LENGTH)
    version = values.get("version")
    if isinstance(version, str):
        if not SEMVER_RE.fullmatch(version):
            e.invalid(f"{path}.version", version, "must be a string compatible with semver.org spec 2.0.0")
        if len(version) > ATTRIBUTE_MAX_VALUE_LENGTH:
            e.too_long(f"{path}.version", ATTRIBUTE_MAX_VALUE_LENGTH)
    if not typed:
        e.invalid(path, "", "exactly one value must be specified")
    elif len(typed) > 1:
        e.invalid(path, values, "exactly one value must be specified")


Amount = tuple[Fraction, str]   # a parsed quantity and its text as Quantity.String() prints it


def _amount(value: Any, path: str, e: Errors) -> Amount | None:
    parsed = _quantity(value, path, e)
    return None if parsed is None else (parsed, quantity_string(value))


def _capacity(name: str, capacity: Any, path: str, multiple: bool, e: Errors) -> None:
    qualified_name(name, path, e)
    if not isinstance(capacity, dict):
        return
    value = _amount(capacity.get("value"), f"{path}.value", e)
    policy = capacity.get("requestPolicy")
    if policy is None:
        return
    if not multiple:
        e.forbidden(f"{path}.requestPolicy", "allowMultipleAllocations must be true")
    elif isinstance(policy, dict) and value is not None:
        _request_policy(value, policy, f"{path}.requestPolicy", e)


def _request_policy(maximum: Amount, policy: dict[str, Any], path: str, e: Errors) -> None:
    """``validateRequestPolicy``: validValues or validRange, with a default that fits."""
    valid_values, valid_range = as_list(policy.get("validValues")), policy.get("validRange")
    if valid_values and valid_range is not None:
        e.forbidden(path, 'exactly one policy can be specified, cannot specify "validValues" and '
                          '"validRange" at the same time')
        return
    kind = "validValues" if valid_values else "validRange" if valid_range is not None else ""
    if not kind:
        return
    if policy.get("default") is None:
        e.required(f"{path}.default", f"required when {kind} is defined")
        return
    default = _amount(policy["default"], f"{path}.default", e)
    if default is None:
        return
    if valid_values:
        _valid_values(default, maximum, valid_values, f"{path}.validValues", e)
    elif isinstance(valid_range, dict):
        _valid_range(default, maximum, valid_range, f"{path}.validRange", e)


def _valid_values(default: Amount, maximum: Amount, raw: list[Any], path: str, e: Errors) -> None:
    """``validateRequestPolicyValidValues``."""
    parsed = [_amount(v, f"{path}[{i}]", e) for i, v in enumerate(raw)]
    options = [v for v in parsed if v is not None]
    for i in range(len(options) - 1):
        if options[i][0] > options[i + 1][0]:
            e.invalid(f"{path}[{i + 1}]", options[i + 1][1], "values must be sorted in ascending order")
    if len(options) > VALID_VALUES_MAX:
        e.too_many(path, len(options), VALID_VALUES_MAX)
        return
    for i, option in enumerate(options):
        if option[0] > maximum[0]:
            e.invalid(f"{path}[{i}]", option[1], f"option is larger than capacity value: {maximum[1]}")
    duplicates(options, lambda v: v[0], path, e)
    if all(option[0] != default[0] for option in options):
        e.invalid(path, default[1], "default value is not valid according to the requestPolicy")


def _valid_range(default: Amount, maximum: Amount, raw: dict[str, Any], path: str, e: Errors) -> None:
    """``validateRequestPolicyRange``."""
    if raw.get("min") is None:
        e.required(f"{path}.min", "required when validRange is defined")
        return
    low = _amount(raw["min"], f"{path}.min", e)
    high = _amount(raw["max"], f"{path}.max", e) if raw.get("max") is not None else None
    if low is None:
        return
    if low[0] > maximum[0]:
        e.invalid(f"{path}.min", low[1], f"min is larger than capacity value: {maximum[1]}")
    if default[0] < low[0]:
        e.invalid(f"{path}.min", default[1], f"default is less than min: {low[1]}")
    if high is not None:
        if low[0] > high[0]:
            e.invalid(f"{path}.max", low[1], f"min is larger than max: {high[1]}")
        if high[0] > maximum[0]:
            e.invalid(f"{path}.max", high[1], f"max is larger than capacity value: {maximum[1]}")
        if default[0] > high[0]:
            e.invalid(f"{path}.max", default[1], f"default is more than max: {high[1]}")
    step = _amount(raw["step"], f"{path}.step", e) if raw.get("step") is not None else None
    if step and step[0]:
        _range_steps(default, low, high, step, maximum, f"{path}.step", e)


def _range_steps(default: Amount, low: Amount, high: Amount | None, step: Amount, maximum: Amount,
                 path: str, e: Errors) -> None:
    one_step = low[0] + step[0]
    if one_step > maximum[0]:
        shown = quantity_string(int(one_step)) if one_step.denominator == 1 else str(float(one_step))
        e.invalid(path, step[1], f"one step {shown} is larger than capacity value: {maximum[1]}")
    for value in (default, high) if high is not None else (default,):
        if (int(value[0]) - int(low[0])) % int(step[0] or 1):
            e.invalid(path, value[1], f"value is not a multiple of a given step ({step[1]}) from ({low[1]})")


def device_taint(taint: Any, path: str, e: Errors) -> None:
    """``validateDeviceTaint``: a label-name key, a label value, an effect."""
    if not isinstance(taint, dict):
        e.invalid(path, taint, "must be an object")
        return
    label_key(taint.get("key"), f"{path}.key", e)
    if taint.get("value"):
        for msg in label_value_errors(str(taint["value"])):
            e.invalid(f"{path}.value", taint["value"], msg)
    effect = taint.get("effect")
    if not effect:
        e.required(f"{path}.effect")
    elif effect not in TAINT_EFFECTS:
        e.unsupported(f"{path}.effect", effect, TAINT_EFFECTS)


def _binding_conditions(device: dict[str, Any], path: str, e: Errors) -> None:
    """``validateDeviceBindingParameters``."""
    lists = {}
    for field in ("bindingConditions", "bindingFailureConditions"):
        lists[field] = [str(c) for c in items_within(e, device, field, f"{path}.{field}",
                                                     BINDING_CONDITIONS_MAX)]
        for i, condition in enumerate(lists[field]):
            label_key(condition, f"{path}.{field}[{i}]", e)
        duplicates(lists[field], str, f"{path}.{field}", e)
    conditions, failures = lists["bindingConditions"], lists["bindingFailureConditions"]
    for i, condition in enumerate(failures):
        if condition in conditions:
            e.invalid(f"{path}.bindingFailureConditions[{i}]", condition,
                      "bindingFailureConditions must not overlap with bindingConditions")
    if failures and not conditions:
        e.invalid(f"{path}.bindingConditions", [], "bindingConditions are required to use bindingFailureConditions")
    if conditions and not failures:
        e.invalid(f"{path}.bindingFailureConditions", [],
                  "bindingFailureConditions are required to use bindingConditions")


def _device(device: Any, path: str, per_device: bool, e: Errors) -> None:
    """``validateDevice``."""
    if not isinstance(device, dict):
        e.invalid(path, device, "must be an object")
        return
    dns_label(device.get("name"), f"{path}.name", e)
    attributes = e.mapping(device, "attributes", f"{path}.attributes") or {}
    capacity = e.mapping(device, "capacity", f"{path}.capacity") or {}
    if len(attributes) + len(capacity) > MAX_ATTRIBUTES_AND_CAPACITIES:
        e.invalid(path, len(attributes) + len(capacity), "the total number of attributes and capacities "
                  f"must not exceed {MAX_ATTRIBUTES_AND_CAPACITIES}")
    for name, attribute in attributes.items():
        _attribute(name, attribute, f"{path}.attributes[{name}]", e)
    multiple = device.get("allowMultipleAllocations") is True
    for name, value in capacity.items():
        _capacity(name, value, f"{path}.capacity[{name}]", multiple, e)
    for i, taint in enumerate(items_within(e, device, "taints", f"{path}.taints", DEVICE_TAINTS_MAX)):
        device_taint(taint, f"{path}.taints[{i}]", e)
    consumptions = items_within(e, device, "consumesCounters", f"{path}.consumesCounters",
                                MAX_CONSUMPTIONS_PER_DEVICE)
    for i, consumption in enumerate(consumptions):
        _counters_of(consumption, "counterSet", MAX_COUNTERS_PER_CONSUMPTION, f"{path}.consumesCounters[{i}]", e)
    duplicates(consumptions, lambda c: c.get("counterSet", "") if isinstance(c, dict) else None,
               f"{path}.consumesCounters", e)
    _device_nodes(device, path, per_device, e)
    _binding_conditions(device, path, e)


def _device_nodes(device: dict[str, Any], path: str, per_device: bool, e: Errors) -> None:
    if per_device:
        chosen = _node_selection(device, path, e, device=True)
        if not chosen:
            e.required(path, DEVICE_NODE_FIELDS)
        elif len(chosen) > 1:
            _chosen_fields(path, chosen, DEVICE_NODE_FIELDS, e)
    elif any(device.get(k) is not None for k in ("nodeName", "nodeSelector", "allNodes")):
        e.invalid(path, None, "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                              "`perDeviceNodeSelection` is set to true in the ResourceSlice spec")


def _chosen_fields(path: str, chosen: list[str], detail: str, e: Errors) -> None:
    """``Invalid value: "{`nodeName`, `allNodes`}"``: a string upstream, so quoted, although it
    starts with a brace (which ``FieldError`` would print bare, as a rendered object)."""
    value = '"{' + ", ".join(chosen) + '}"'
    e.items.append(FieldError(path, "Invalid value", value, detail, quoted=False))


def _advanced(devices: list[Any]) -> bool:
    """A device with taints or counter consumptions lowers the slice's limit to 64."""
    return any(isinstance(d, dict) and (d.get("taints") or d.get("consumesCounters")) for d in devices)


def _pool(spec: dict[str, Any], e: Errors) -> None:
    pool = e.mapping(spec, "pool", "spec.pool") or {}
    pool_name(pool.get("name"), "spec.pool.name", e)
    count = pool.get("resourceSliceCount") or 0
    if isinstance(count, int) and count <= 0:
        e.invalid("spec.pool.resourceSliceCount", count, "must be greater than zero")
    generation = pool.get("generation") or 0
    if isinstance(generation, int) and generation < 0:
        e.invalid("spec.pool.generation", generation, "must be greater than or equal to zero")


def _resource_slice(obj: dict[str, Any], e: Errors) -> None:
    spec = e.mapping(obj, "spec", "spec") or {}
    driver_name(spec.get("driver"), "spec.driver", e)
    _pool(spec, e)
    chosen = _node_selection(spec, "spec", e, device=False)
    if not chosen:
        e.required("spec", NODE_FIELDS)
    elif len(chosen) > 1:
        _chosen_fields("spec", chosen, NODE_FIELDS + ", but multiple fields are set", e)
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        e.invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed")
    raw = spec["devices"] if isinstance(spec.get("devices"), list) else []
    most = SLICE_MAX_DEVICES_ADVANCED if _advanced(raw) else SLICE_MAX_DEVICES
    devices = items_within(e, spec, "devices", "spec.devices", most)
    for i, device in enumerate(devices):
        _device(device, f"spec.devices[{i}]", spec.get("perDeviceNodeSelection") is True, e)
    duplicates(devices, lambda d: d.get("name", "") if isinstance(d, dict) else None, "spec.devices", e)
    sets = items_within(e, spec, "sharedCounters", "spec.sharedCounters", SLICE_MAX_COUNTER_SETS)
    for i, counter_set in enumerate(sets):
        _counters_of(counter_set, "name", MAX_COUNTERS_PER_SET, f"spec.sharedCounters[{i}]", e)
    duplicates(sets, lambda s: s.get("name", "") if isinstance(s, dict) else None, "spec.sharedCounters", e)


VALIDATORS: dict[str, Callable[[dict[str, Any], Errors], None]] = {"ResourceSlice": _resource_slice}
