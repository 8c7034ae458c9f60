"""Validation of the autoscalers: HorizontalPodAutoscaler (autoscaling/v2, v1 accepted) with the
messages of kubernetes ``pkg/apis/autoscaling/validation`` (validateHorizontalPodAutoscalerSpec,
validateMetrics, validateBehavior), and VerticalPodAutoscaler (autoscaling.k8s.io/v1, a CRD
upstream: its schema's enums and required fields).

Neighbours: ``objects.validation_kinds`` registers ``_hpa`` and ``_vpa`` in ``VALIDATORS``; uses
``fieldcheck`` (``Errors``, ``_spec``).
"""

from __future__ import annotations

from typing import Any, Callable

from fractions import Fraction

from gpusched.objects import limits
from gpusched.objects.fieldcheck import Errors, _spec
from gpusched.objects.validation_affinity import validate_label_selector

# The VPA CRD's enums (kubernetes/autoscaler vertical-pod-autoscaler/deploy/vpa-v1-crd-gen.yaml), in its order.
VPA_UPDATE_MODES = ("Off", "Initial", "Recreate", "InPlaceOrRecreate", "InPlace", "Auto")
VPA_CONTAINER_MODES = ("Auto", "Off")
VPA_CONTROLLED_VALUES = ("RequestsAndLimits", "RequestsOnly")
VPA_CHANGE_REQUIREMENTS = ("TargetHigherThanRequests", "TargetLowerThanRequests")
HPA_METRIC_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")


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
    _hpa_replicas(spec, e)
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


def _hpa_replicas(spec: dict[str, Any], e: Errors) -> None:
    """minReplicas >= 1, maxReplicas required and > 0, max >= min; both at most
    ``limits.MAX_REPLICAS`` (the controller writes them into the target's replicas)."""
    minimum = e.integer(spec, "minReplicas", "spec.minReplicas", maximum=limits.MAX_REPLICAS)
    maximum = e.integer(spec, "maxReplicas", "spec.maxReplicas", maximum=limits.MAX_REPLICAS)
    if minimum is not None and minimum < 1:
        e.invalid("spec.minReplicas", minimum, "must be greater than or equal to 1")
    if "maxReplicas" not in spec:
        e.required("spec.maxReplicas")
    elif maximum is not None and maximum < 1:
        e.invalid("spec.maxReplicas", maximum, "must be greater than 0")
    if minimum is not None and maximum is not None and maximum < minimum:
        e.invalid("spec.maxReplicas", maximum, "must be greater than or equal to `minReplicas`")


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
