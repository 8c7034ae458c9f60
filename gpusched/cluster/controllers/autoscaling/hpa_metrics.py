"""The HPA's ``computeReplicasForMetrics`` (``pkg/controller/podautoscaler/horizontal.go``): the
target's pods by its selector, then per metric source (Resource, ContainerResource, Pods,
Object, External) a replica proposal and the ``currentMetrics`` status entry; a failing metric
becomes ``ScalingActive=False`` with ``FailedGet<Type>Metric``.

Neighbours: ``controllers.autoscaling.hpa`` (calls it), ``hpa_replicas`` (the arithmetic of a
proposal), ``cluster.usage`` (the metric values).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gpusched.cluster.controllers.autoscaling.hpa_replicas import (_resource_values,
                                                                   per_pod_replicas, plain_replicas,
                                                                   pods_metric_replicas,
                                                                   resource_replicas,
                                                                   usage_ratio_replicas)
from gpusched.cluster.controllers.autoscaling.hpa_sync import MetricError, Sync
from gpusched.cluster.usage import MetricNotFound, milli
from gpusched.errors import UsageError
from gpusched.objects.quantity import QuantityError, parse_quantity
from gpusched.objects.selectors import (matches, parse_selector, selector_from_dict,
                                        selector_to_string)

# ---- computeReplicasForMetrics ----------------------------------------------------------------

def compute_replicas_for_metrics(sync: Sync, target: dict[str, Any], spec_replicas: int,
                                 status_replicas: int) -> tuple[int, str, list[Any], str]:
    """(replicas or -1, metric name, statuses, error text) as upstream's function."""
    selector, message = _validate_and_parse_selector(sync, target)
    if selector is None:
        return -1, "", [], message
    namespace = sync.hpa["metadata"].get("namespace", "default")
    pods = [p for p in sync.view.list("Pod", namespace)
            if matches(selector, (p.get("metadata") or {}).get("labels") or {})]
    specs = (sync.hpa.get("spec") or {}).get("metrics") or []
    found = _propose_per_metric(sync, specs, spec_replicas, status_replicas, pods)
    invalid, replicas, metric = found.invalid, found.replicas, found.metric
    error_text = (f"invalid metrics ({invalid} invalid out of {len(specs)}), first error is: "
                  f"{found.first_error}" if invalid else "")
    if invalid >= len(specs) or (invalid > 0 and replicas < spec_replicas):
        _set_first_condition(sync, found.first_condition)
        return -1, "", found.statuses, error_text
    sync.condition("ScalingActive", "True", "ValidMetricFound",
                   f"the HPA was able to successfully calculate a replica count from {metric}")
    return replicas, metric, found.statuses, error_text


@dataclass(frozen=True)
class _Proposals:
    """The loop of ``computeReplicasForMetrics``: the largest proposal and its metric, a status
    per metric, how many failed, and the first failure's error and condition."""
    replicas: int
    metric: str
    statuses: list[dict[str, Any]]
    invalid: int
    first_error: str
    first_condition: dict[str, Any] | None


def _propose_per_metric(sync: Sync, specs: list[dict[str, Any]], spec_replicas: int,
                        status_replicas: int, pods: list[dict[str, Any]]) -> _Proposals:
    """Each metric's proposal, the largest kept; the first failure's event is recorded (with
    its condition kept for later), later failures only as events."""
    statuses: list[dict[str, Any]] = [{"type": ""} for _ in specs]
    replicas, metric, invalid, first_error, first_condition = 0, "", 0, "", None
    for i, metric_spec in enumerate(specs):
        try:
            proposal, name, statuses[i] = compute_replicas_for_metric(
                sync, metric_spec, spec_replicas, status_replicas, pods)
        except MetricError as err:
            if invalid == 0:
                first_condition, first_error = sync.unable(err), err.wrapped
            else:
                sync.event("Warning", err.reason, str(err))
            invalid += 1
            continue
        if replicas == 0 or proposal > replicas:
            replicas, metric = proposal, name
    return _Proposals(replicas, metric, statuses, invalid, first_error, first_condition)


def _validate_and_parse_selector(sync: Sync, target: dict[str, Any]) -> tuple[Any, str]:
    """``validateAndParseSelector``: (the target's selector, "") or (None, the error), the
    error also an event and ``ScalingActive=False`` (InvalidSelector)."""
    selector_dict = (target.get("spec") or {}).get("selector")
    text = selector_to_string(selector_from_dict(selector_dict)) if selector_dict else ""
    if not text:
        sync.event("Warning", "SelectorRequired", "selector is required")
        sync.condition("ScalingActive", "False", "InvalidSelector",
                       "the HPA target's scale is missing a selector")
        return None, "selector is required"
    try:
        return parse_selector(text), ""
    except UsageError as err:
        message = f"couldn't convert selector into a corresponding internal selector object: {err}"
        sync.event("Warning", "InvalidSelector", message)
        sync.condition("ScalingActive", "False", "InvalidSelector", message)
        return None, message


def _set_first_condition(sync: Sync, condition: dict[str, Any] | None) -> None:
    """The first invalid metric's ``ScalingActive=False`` condition, set once the outcome is
    known to be invalid."""
    if condition is not None:
        sync.condition(**{k: condition[k] for k in ("status", "reason", "message")},
                       type_=condition["type"])


def _milli_of(value: object) -> int | None:
    if value is None:
        return None
    try:
        return math.ceil(parse_quantity(value) * 1000)
    except (QuantityError, ValueError, TypeError):
        return None


def compute_replicas_for_metric(sync: Sync, spec: dict[str, Any], spec_replicas: int, status_replicas: int,
                                pods: list[dict[str, Any]]) -> tuple[int, str, dict[str, Any]]:
    kind = spec.get("type")
    if kind == "Resource":
        return _resource_metric(sync, spec.get("resource") or {}, spec_replicas, pods)
    if kind == "ContainerResource":
        return _resource_metric(sync, spec.get("containerResource") or {}, spec_replicas, pods,
                                container=str((spec.get("containerResource") or {}).get("container", "")))
    if kind == "Pods":
        return _pods_metric(sync, spec.get("pods") or {}, spec_replicas, pods)
    if kind == "Object":
        return _object_metric(sync, spec.get("object") or {}, spec_replicas, status_replicas, pods)
    if kind == "External":
        return _external_metric(sync, spec.get("external") or {}, spec_replicas, status_replicas,
                                pods)
    message = f'unknown metric source type "{kind}"'
    raise MetricError("InvalidMetricSourceType", message)


def _pods_metric(sync: Sync, source: dict[str, Any], spec_replicas: int,
                 pods: list[dict[str, Any]]) -> tuple[int, str, dict[str, Any]]:
    """``computeStatusForPodsMetric``: the custom metrics API's per-pod values."""
    name = (source.get("metric") or {}).get("name", "")
    try:
        target = _milli_of((source.get("target") or {}).get("averageValue")) or 0
        replicas, usage_m = pods_metric_replicas(sync, spec_replicas, target, name, pods)
    except MetricError as err:
        raise MetricError("FailedGetPodsMetric", str(err),
                          f"failed to get pods metric value: {err}") from None
    return replicas, f"pods metric {name}", {
        "type": "Pods", "pods": {"metric": _identifier(source),
                                 "current": {"averageValue": _q(usage_m)}}}


def _identifier(source: dict[str, Any]) -> dict[str, Any]:
    metric = source.get("metric") or {}
    out = {"name": metric.get("name", "")}
    if metric.get("selector") is not None:
        out["selector"] = metric["selector"]
    return out


def _q(value_m: int) -> str:
    from gpusched.cluster.usage import format_milli
    return format_milli(int(value_m))


def _resource_metric(sync: Sync, source: dict[str, Any], current: int, pods: list[dict[str, Any]],
                     container: str = "") -> tuple[int, str, dict[str, Any]]:
    """``computeStatusForResourceMetricGeneric`` for Resource and (with ``container``)
    ContainerResource metrics."""
    name = str(source.get("name", ""))
    target = source.get("target") or {}
    kind, field = ("ContainerResource", "containerResource") if container else ("Resource", "resource")
    identity = {"name": name, "container": container} if container else {"name": name}
    try:
        if target.get("averageValue") is not None:
            value = _milli_of(target.get("averageValue")) or 0
            try:
                replicas, raw = plain_replicas(sync.view.now(),
                                               _resource_values(sync, name, pods, container),
                                               current, value, pods, name)
            except MetricError as err:
                raise MetricError("", f"failed to get {name} usage: {err}") from None
            return replicas, f"{name} resource", {
                "type": kind, field: {**identity, "current": {"averageValue": _q(raw)}}}
        if target.get("averageUtilization") is None:
            raise MetricError("", "invalid resource metric source: neither an average utilization "
                                  "target nor an average value (usage) target was set")
        try:
            replicas, percent, raw = resource_replicas(
                sync.view.now(), current, int(target["averageUtilization"]), name, pods,
                _resource_values(sync, name, pods, container), container)
        except MetricError as err:
            raise MetricError("", f"failed to get {name} utilization: {err}") from None
    except MetricError as err:
        if container:
            raise MetricError("FailedGetContainerResourceMetric", str(err),
                              f"failed to get {container} container metric value: {err}") from None
        raise MetricError("FailedGetResourceMetric", str(err),
                          f"failed to get {name} resource metric value: {err}") from None
    what = "container resource" if container else "resource"
    return replicas, f"{name} {what} utilization (percentage of request)", {
        "type": kind, field: {**identity, "current": {
            "averageUtilization": percent, "averageValue": _q(raw)}}}


def _object_metric(sync: Sync, source: dict[str, Any], spec_replicas: int, status_replicas: int,
                   pods: list[dict[str, Any]]) -> tuple[int, str, dict[str, Any]]:
    described = source.get("describedObject") or {}
    metric = (source.get("metric") or {}).get("name", "")
    target = source.get("target") or {}
    namespace = sync.hpa["metadata"].get("namespace", "default")

    def fetch() -> int:
        try:
            return milli(sync.usage.object_metric(str(described.get("kind", "")),
                                                  str(described.get("name", "")), namespace, metric))
        except MetricNotFound as err:
            # replica_calculator.go GetObjectMetricReplicas: the arguments as upstream orders them
            raise MetricError("FailedGetObjectMetric",
                              f"unable to get metric {metric}: {described.get('kind', '')} on "
                              f"{namespace} {described.get('name', '')}/unable to fetch metrics "
                              f"from custom metrics API: {err}") from None

    try:
        if target.get("type") == "Value" and target.get("value") is not None:
            usage_m = fetch()
            ratio = usage_m / max(1, _milli_of(target["value"]) or 1)
            replicas = usage_ratio_replicas(sync, spec_replicas, ratio, pods)
            return replicas, f"{described.get('kind', '')} metric {metric}", {
                "type": "Object", "object": {"describedObject": described,
                                             "metric": _identifier(source),
                                             "current": {"value": _q(usage_m)}}}
        if target.get("type") == "AverageValue" and target.get("averageValue") is not None:
            try:
                usage_m = fetch()
            except MetricError as err:   # computeStatusForObjectMetric wraps this branch's error
                raise MetricError(err.reason, str(err), f"failed to get {metric} object metric: "
                                                        f"{err}") from None
            replicas, average = per_pod_replicas(status_replicas, usage_m,
                                                 _milli_of(target["averageValue"]) or 1)
            return replicas, f"external metric {metric}({_go_selector(source)})", {
                "type": "Object", "object": {"metric": _identifier(source),
                                             "current": {"averageValue": _q(average)}}}
        raise MetricError("FailedGetObjectMetric", "invalid object metric source: neither a value "
                          "target nor an average value target was set")
    except MetricError as err:
        raise MetricError(err.reason, str(err),
                          f"failed to get object metric value: {err.wrapped}") from None


def _go_selector(source: dict[str, Any]) -> str:
    """``%+v`` of a *metav1.LabelSelector as the controller formats it in metric names."""
    selector = (source.get("metric") or {}).get("selector")
    if selector is None:
        return "nil"
    labels = "".join(f"{k}: {v}," for k, v in sorted((selector.get("matchLabels") or {}).items()))
    return f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{}},}}"


def _external_metric(sync: Sync, source: dict[str, Any], spec_replicas: int, status_replicas: int,
                     pods: list[dict[str, Any]]) -> tuple[int, str, dict[str, Any]]:
    metric = (source.get("metric") or {}).get("name", "")
    selector = (source.get("metric") or {}).get("selector")
    target = source.get("target") or {}
    namespace = sync.hpa["metadata"].get("namespace", "default")

    def fetch() -> int:
        try:
            items = sync.usage.external_metric(namespace, metric, selector)
        except MetricNotFound as err:
            raise MetricError("FailedGetExternalMetric",
                              f"unable to get external metric {namespace}/{metric}/"
                              f"{_go_selector(source)}: unable to fetch metrics from external "
                              f"metrics API: {err}") from None
        return sum(milli(value) for _, value in items)

    try:
        if target.get("averageValue") is not None:
            usage_m = fetch()
            replicas, average = per_pod_replicas(status_replicas, usage_m,
                                                 _milli_of(target["averageValue"]) or 1)
            return replicas, f"external metric {metric}({_go_selector(source)})", {
                "type": "External", "external": {"metric": _identifier(source),
                                                 "current": {"averageValue": _q(average)}}}
        if target.get("value") is not None:
            usage_m = fetch()
            ratio = usage_m / max(1, _milli_of(target["value"]) or 1)
            replicas = usage_ratio_replicas(sync, spec_replicas, ratio, pods)
            return replicas, f"external metric {metric}({_go_selector(source)})", {
                "type": "External", "external": {"metric": _identifier(source),
                                                 "current": {"value": _q(usage_m)}}}
        raise MetricError("FailedGetExternalMetric", "invalid external metric source: neither a "
                          "value target nor an average value target was set")
    except MetricError as err:
        raise MetricError(err.reason, str(err),
                          f"failed to get {metric} external metric value: {err}") from None
