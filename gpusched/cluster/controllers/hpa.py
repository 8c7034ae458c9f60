"""The HorizontalPodAutoscaler controller (autoscaling/v2), as kube-controller-manager's
``pkg/controller/podautoscaler/horizontal.go`` and ``replica_calculator.go`` compute it.

Every HPA is synced every ``SYNC_PERIOD`` (``--horizontal-pod-autoscaler-sync-period``, 15 s) of
virtual time, the first time one period after it was created (upstream queues it rate-limited).
A sync (``reconcileAutoscaler``):

1. reads the target's scale (Deployment / ReplicaSet): ``FailedGetScale`` otherwise;
2. outside [minReplicas, maxReplicas] it moves inside; at 0 replicas scaling is disabled;
3. otherwise every metric proposes ``ceil(current x ratio)`` (tolerance 0.1; missing metrics
   count 100 % of the request on a scale-down and 0 on a scale-up; unready pods 0 on a
   scale-up), the largest proposal wins; a metric that fails sets ``ScalingActive=False`` with
   ``FailedGet<Type>Metric`` and the event of that name;
4. stabilization (without ``behavior``: the highest recommendation of the last 300 s; with it
   the windows of ``scaleUp``/``scaleDown``) and rate limits (without ``behavior``:
   ``max(2 x current, 4)``; with it the policies and ``selectPolicy``), then min/max;
5. a change updates ``spec.replicas`` of the target, the ``SuccessfulRescale`` event
   (``New size: 3; reason: cpu resource utilization (percentage of request) above target``)
   and ``status.lastScaleTime``; conditions AbleToScale / ScalingActive / ScalingLimited.

The controller's in-memory history (recommendations, scale events) is kept in
``view.stats["hpa"]`` so it survives between commands. Metrics come from ``cluster.usage``,
the same source ``serve``'s metrics APIs answer from.

Neighbours: ``cluster.usage`` (metrics), ``controllers.common`` (pods, selectors).
"""

from __future__ import annotations

from typing import Any

import copy
import math
from dataclasses import dataclass, field

from gpusched.cluster.controllers.common import is_ready
from gpusched.cluster.store import seconds_of
from gpusched.cluster.usage import MetricNotFound, Usage, milli, pod_requests
from gpusched.cluster.view import View
from gpusched.objects.quantity import QuantityError, parse_quantity
from gpusched.errors import UsageError
from gpusched.objects.selectors import (matches, parse_selector, selector_from_dict,
                                        selector_to_string)

COMPONENT = "horizontal-pod-autoscaler"
SYNC_PERIOD = 15.0                  # --horizontal-pod-autoscaler-sync-period
DOWNSCALE_WINDOW = 300              # --horizontal-pod-autoscaler-downscale-stabilization
TOLERANCE = 0.1                     # --horizontal-pod-autoscaler-tolerance
CPU_INITIALIZATION_PERIOD = 300.0   # --horizontal-pod-autoscaler-cpu-initialization-period
INITIAL_READINESS_DELAY = 30.0      # --horizontal-pod-autoscaler-initial-readiness-delay
METRIC_WINDOW = 30.0
SCALE_UP_LIMIT_FACTOR, SCALE_UP_LIMIT_MINIMUM = 2.0, 4.0
SCALABLE = {"Deployment": "deployments.apps", "ReplicaSet": "replicasets.apps"}
# pkg/apis/autoscaling/v2/defaults.go: defaultHPAScaleUpRules / defaultHPAScaleDownRules
DEFAULT_SCALE_UP: dict[str, Any] = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                    "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                                 {"type": "Percent", "value": 100, "periodSeconds": 15}]}
DEFAULT_SCALE_DOWN: dict[str, Any] = {"selectPolicy": "Max",
                      "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


class MetricError(Exception):
    """A metric could not be computed: ``reason`` is the condition/event reason."""

    def __init__(self, reason: str, message: str, wrapped: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.wrapped = wrapped if wrapped is not None else message


@dataclass
class Sync:
    """One reconcileAutoscaler: the HPA being changed, its conditions and events."""

    view: View
    hpa: dict[str, Any]
    state: dict[str, Any]
    usage: Usage
    conditions: list[Any] = field(default_factory=list)

    def condition(self, type_: str, status: str, reason: str, message: str) -> None:
        """``setConditionInList``: replace in place, lastTransitionTime only on a change."""
        for cond in self.conditions:
            if cond["type"] == type_:
                if cond["status"] != status:
                    cond["lastTransitionTime"] = self.view.timestamp()
                cond.update(status=status, reason=reason, message=message)
                return
        self.conditions.append({"type": type_, "status": status,
                                "lastTransitionTime": self.view.timestamp(),
                                "reason": reason, "message": message})

    def event(self, type_: str, reason: str, message: str) -> None:
        self.view.record_event(self.hpa, reason, message, type_, COMPONENT)

    def unable(self, err: MetricError) -> dict[str, Any]:
        """``getUnableComputeReplicaCountCondition``: the event now, the condition for later."""
        self.event("Warning", err.reason, str(err))
        return {"type": "ScalingActive", "status": "False", "reason": err.reason,
                "message": f"the HPA was unable to compute the replica count: {err}"}


# ---- controller entry points ------------------------------------------------------------------

def _key(hpa: dict[str, Any]) -> str:
    meta = hpa["metadata"]
    return f"{meta.get('namespace', 'default')}/{meta['name']}"


def _states(view: View) -> dict[str, Any]:
    result: dict[str, Any] = view.stats.setdefault("hpa", {})
    return result


def sync_due(view: View, hpa: dict[str, Any]) -> float | None:
    """When the HPA is next synced (``controllers.registry.TIMED``)."""
    state = view.stats.get("hpa", {}).get(_key(hpa))
    if state is None or state.get("uid") != hpa["metadata"].get("uid"):
        return view.now()
    return float(state["lastSync"]) + SYNC_PERIOD


def reconcile(view: View) -> None:
    states = _states(view)
    hpas = view.list("HorizontalPodAutoscaler")
    live = {_key(h) for h in hpas}
    for gone in sorted(set(states) - live):       # reconcileKey: deleted -> forget its history
        del states[gone]
    usage = None
    for hpa in hpas:
        key, uid = _key(hpa), hpa["metadata"].get("uid")
        state = states.get(key)
        if state is None or state.get("uid") != uid:
            states[key] = {"uid": uid, "lastSync": view.now(), "recommendations": [],
                           "up": [], "down": []}
            view.touch(hpa)
            continue
        if view.now() < float(state["lastSync"]) + SYNC_PERIOD:
            continue
        state["lastSync"] = view.now()
        usage = usage or Usage(view)
        reconcile_autoscaler(view, hpa, state, usage)
        view.touch(hpa)


# ---- reconcileAutoscaler ----------------------------------------------------------------------

def _scale(view: View, hpa: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """(target, error) as the scale subresource answers."""
    ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
    kind, name = str(ref.get("kind", "")), str(ref.get("name", ""))
    api_version = str(ref.get("apiVersion", ""))
    group = api_version.split("/")[0] if "/" in api_version else ""
    if kind not in SCALABLE or group not in ("apps", ""):
        return None, f'no matches for kind "{kind}" in group "{group}"'
    target = view.get(kind, name, hpa["metadata"].get("namespace", "default"))
    if target is None:
        return None, f'{SCALABLE[kind]} "{name}" not found'
    return target, ""


def reconcile_autoscaler(view: View, hpa: dict[str, Any], state: dict[str, Any], usage: Usage) -> None:
    spec, status = hpa.get("spec") or {}, copy.deepcopy(hpa.get("status") or {})
    sync = Sync(view, hpa, state, usage, list(status.get("conditions") or []))
    target, error = _scale(view, hpa)
    if target is None:
        sync.event("Warning", "FailedGetScale", error)
        sync.condition("AbleToScale", "False", "FailedGetScale",
                       f"the HPA controller was unable to get the target's current scale: {error}")
        _write(view, hpa, {**status, "conditions": sync.conditions})
        return
    sync.condition("AbleToScale", "True", "SucceededGetScale",
                   "the HPA controller was able to get the target's current scale")
    current = int((target.get("spec") or {}).get("replicas", 1))
    status_replicas = int((target.get("status") or {}).get("replicas", 0))
    if not state["recommendations"]:                      # recordInitialRecommendation
        state["recommendations"].append([current, view.now()])
    minimum, maximum = int(spec.get("minReplicas", 1)), int(spec.get("maxReplicas", 1))
    desired, reason, rescale = 0, "", True
    statuses: list[dict[str, Any]] = []
    if current == 0 and minimum != 0:
        rescale = False
        sync.condition("ScalingActive", "False", "ScalingDisabled",
                       "scaling is disabled since the replica count of the target is zero")
    elif current > maximum:
        reason, desired = "Current number of replicas above Spec.MaxReplicas", maximum
    elif current < minimum:
        reason, desired = "Current number of replicas below Spec.MinReplicas", minimum
    else:
        proposal, metric, statuses, error_text = compute_replicas_for_metrics(
            sync, target, current, status_replicas)
        if proposal == -1:
            _write(view, hpa, {**_status(status, current, status.get("desiredReplicas", 0),
                                         statuses), "conditions": sync.conditions})
            sync.event("Warning", "FailedComputeMetricsReplicas", error_text)
            return
        rescale_metric = ""
        if proposal > desired:
            desired, rescale_metric = proposal, metric
        if desired > current:
            reason = f"{rescale_metric} above target"
        if desired < current:
            reason = "All metrics below target"
        if spec.get("behavior") is None:
            desired = normalize(sync, current, desired, minimum, maximum)
        else:
            desired = normalize_with_behaviors(sync, current, desired, minimum, maximum)
        rescale = desired != current
    new_status = _status(status, current, desired if rescale else current, statuses)
    if rescale:
        _set_replicas(view, target, desired)
        sync.condition("AbleToScale", "True", "SucceededRescale",
                       f"the HPA controller was able to update the target scale to {desired}")
        sync.event("Normal", "SuccessfulRescale", f"New size: {desired}; reason: {reason}")
        store_scale_event(sync, current, desired)
        new_status["lastScaleTime"] = view.timestamp()
    _write(view, hpa, {**new_status, "conditions": sync.conditions})


def _status(old: dict[str, Any], current: int, desired: int, statuses: list[Any]) -> dict[str, Any]:
    """``setStatus``: currentReplicas, desiredReplicas, lastScaleTime, currentMetrics."""
    out: dict[str, Any] = {"currentReplicas": current, "desiredReplicas": desired}
    if old.get("lastScaleTime"):
        out["lastScaleTime"] = old["lastScaleTime"]
    if statuses:
        out["currentMetrics"] = statuses
    return out


def _write(view: View, hpa: dict[str, Any], status: dict[str, Any]) -> None:
    """``updateStatusIfNeeded``: write only a changed status."""
    if status.get("conditions") == []:
        status.pop("conditions")
    if hpa.get("status") == status:
        return
    new = copy.deepcopy(hpa)
    new["status"] = status
    view.update(new)


def _set_replicas(view: View, target: dict[str, Any], replicas: int) -> None:
    new = copy.deepcopy(target)
    new.setdefault("spec", {})["replicas"] = int(replicas)
    view.update(new)


# ---- computeReplicasForMetrics ----------------------------------------------------------------

def compute_replicas_for_metrics(sync: Sync, target: dict[str, Any], spec_replicas: int,
                                 status_replicas: int) -> tuple[int, str, list[Any], str]:
    """(replicas or -1, metric name, statuses, error text) as upstream's function."""
    selector_dict = (target.get("spec") or {}).get("selector")
    text = selector_to_string(selector_from_dict(selector_dict)) if selector_dict else ""
    if not text:
        sync.event("Warning", "SelectorRequired", "selector is required")
        sync.condition("ScalingActive", "False", "InvalidSelector",
                       "the HPA target's scale is missing a selector")
        return -1, "", [], "selector is required"
    try:
        selector = parse_selector(text)
    except UsageError as err:
        message = f"couldn't convert selector into a corresponding internal selector object: {err}"
        sync.event("Warning", "InvalidSelector", message)
        sync.condition("ScalingActive", "False", "InvalidSelector", message)
        return -1, "", [], message
    namespace = sync.hpa["metadata"].get("namespace", "default")
    pods = [p for p in sync.view.list("Pod", namespace)
            if matches(selector, (p.get("metadata") or {}).get("labels") or {})]
    specs = (sync.hpa.get("spec") or {}).get("metrics") or []
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
    error_text = (f"invalid metrics ({invalid} invalid out of {len(specs)}), first error is: "
                  f"{first_error}" if invalid else "")
    if invalid >= len(specs) or (invalid > 0 and replicas < spec_replicas):
        if first_condition is not None:
            sync.condition(**{k: first_condition[k] for k in ("status", "reason", "message")},
                           type_=first_condition["type"])
        return -1, "", statuses, error_text
    sync.condition("ScalingActive", "True", "ValidMetricFound",
                   f"the HPA was able to successfully calculate a replica count from {metric}")
    return replicas, metric, statuses, error_text


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
        source = spec.get("pods") or {}
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
    if kind == "Object":
        return _object_metric(sync, spec.get("object") or {}, spec_replicas, status_replicas, pods)
    if kind == "External":
        return _external_metric(sync, spec.get("external") or {}, spec_replicas, status_replicas,
                                pods)
    message = f'unknown metric source type "{kind}"'
    raise MetricError("InvalidMetricSourceType", message)


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


# ---- replica_calculator.go --------------------------------------------------------------------

def _resource_values(sync: Sync, resource: str, pods: list[dict[str, Any]],
                     container: str = "") -> dict[str, int]:
    """``GetResourceMetric``: milli-values per pod name from the resource metrics API (of one
    container when ``container`` is set; pods without it have no value)."""
    if resource not in ("cpu", "memory"):
        raise MetricError("", f"unable to get metrics for resource {resource}: unable to fetch "
                              "metrics from resource metrics API: the server could not find the "
                              f"requested resource (get pods.metrics.k8s.io)")
    values = {}
    scale = 1 if resource == "cpu" else 1000
    for pod in pods:
        usage = sync.usage.pod_usage(pod)
        if usage is None:
            continue
        if not container:
            values[pod["metadata"]["name"]] = usage[resource] * scale
            continue
        for name, cpu, memory in sync.usage.container_usage(pod):
            if name == container:
                values[pod["metadata"]["name"]] = (cpu if resource == "cpu" else memory) * scale
    if not values:
        raise MetricError("", f"unable to get metrics for resource {resource}: no metrics "
                              "returned from resource metrics API")
    return values


def group_pods(now: float, pods: list[dict[str, Any]], metrics: dict[str, Any],
               resource: str) -> tuple[int, set[str], set[str], set[str]]:
    """``groupPods``: (ready count, unready, missing, ignored) pod names."""
    ready = 0
    unready: set[str] = set()
    missing: set[str] = set()
    ignored: set[str] = set()
    for pod in pods:
        name, status = pod["metadata"]["name"], pod.get("status") or {}
        if pod["metadata"].get("deletionTimestamp") or status.get("phase") == "Failed":
            ignored.add(name)
            continue
        if status.get("phase") == "Pending":
            unready.add(name)
            continue
        if name not in metrics:
            missing.add(name)
            continue
        if resource == "cpu" and _cpu_unready(pod, now):
            unready.add(name)
            continue
        ready += 1
    return ready, unready, missing, ignored


def _cpu_unready(pod: dict[str, Any], now: float) -> bool:
    status = pod.get("status") or {}
    condition = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    if condition is None or not status.get("startTime"):
        return True
    start = seconds_of(status["startTime"])
    changed = seconds_of(condition.get("lastTransitionTime") or status["startTime"])
    if start + CPU_INITIALIZATION_PERIOD > now:
        # the sample is taken at ``now`` over the last METRIC_WINDOW seconds
        return condition.get("status") == "False" or now < changed + METRIC_WINDOW
    return condition.get("status") == "False" and start + INITIAL_READINESS_DELAY > changed


def resource_replicas(now: float, current: int, target_utilization: int, resource: str,
                      pods: list[dict[str, Any]], metrics: dict[str, int],
                      container: str = "") -> tuple[int, int, int]:
    """``GetResourceReplicas``: (replicas, utilization %, raw average milli-value) from the
    pods' milli-values ``metrics`` (by pod name)."""
    metrics = dict(metrics)
    if not pods:
        raise MetricError("", "no pods returned by selector while calculating replica count")
    ready, unready, missing, ignored = group_pods(now, pods, metrics, resource)
    for name in ignored | unready:
        metrics.pop(name, None)
    if not metrics:
        raise MetricError("", "did not receive metrics for targeted pods (pods might be unready)")
    requests = {}
    for pod in pods:                                       # calculatePodRequests
        counted = [c for c in pod["spec"].get("containers") or []
                   if not container or c.get("name") == container]
        request = pod_requests({"spec": {"containers": counted}}, resource) if counted else 0
        if request is None:
            missing_in = next((c.get("name", "") for c in counted
                               if pod_requests({"spec": {"containers": [c]}}, resource) is None), "")
            raise MetricError("", f"missing request for {resource} in container {missing_in} of "
                                  f"Pod {pod['metadata']['name']}")
        requests[pod["metadata"]["name"]] = request * (1 if resource == "cpu" else 1000)
    ratio, utilization, raw = utilization_ratio(metrics, requests, target_utilization)
    scale_up_with_unready = bool(unready) and ratio > 1.0
    if not scale_up_with_unready and not missing:
        if abs(1.0 - ratio) <= TOLERANCE:
            return current, utilization, raw
        return math.ceil(ratio * ready), utilization, raw
    if missing:
        fallback = max(100, target_utilization)
        for name in missing:
            metrics[name] = requests[name] * fallback // 100 if ratio < 1.0 else 0
    if scale_up_with_unready:
        for name in unready:
            metrics[name] = 0
    new_ratio, _, _ = utilization_ratio(metrics, requests, target_utilization)
    if (abs(1.0 - new_ratio) <= TOLERANCE or (ratio < 1.0 and new_ratio > 1.0)
            or (ratio > 1.0 and new_ratio < 1.0)):
        return current, utilization, raw
    new = math.ceil(new_ratio * len(metrics))
    if (new_ratio < 1.0 and new > current) or (new_ratio > 1.0 and new < current):
        return current, utilization, raw
    return new, utilization, raw


def utilization_ratio(metrics: dict[str, Any], requests: dict[str, Any], target: int) -> tuple[float, int, int]:
    """``GetResourceUtilizationRatio``: (ratio, utilization %, raw average)."""
    total = sum(metrics[n] for n in metrics if n in requests)
    request_total = sum(requests[n] for n in metrics if n in requests)
    entries = sum(1 for n in metrics if n in requests)
    if request_total == 0:
        raise MetricError("", "no metrics returned matched known pods")
    utilization = int(total * 100 / request_total)
    return utilization / target, utilization, int(total / entries)


def plain_replicas(now: float, metrics: dict[str, Any], current: int, target: int, pods: list[dict[str, Any]],
                   resource: str = "") -> tuple[int, int]:
    """``calcPlainMetricReplicas``: (replicas, average usage milli-value)."""
    metrics = dict(metrics)
    if not pods:
        raise MetricError("", "no pods returned by selector while calculating replica count")
    ready, unready, missing, ignored = group_pods(now, pods, metrics, resource)
    for name in ignored | unready:
        metrics.pop(name, None)
    if not metrics:
        raise MetricError("", "did not receive metrics for targeted pods (pods might be unready)")
    ratio, usage_m = _usage_ratio(metrics, target)
    scale_up_with_unready = bool(unready) and ratio > 1.0
    if not scale_up_with_unready and not missing:
        if abs(1.0 - ratio) <= TOLERANCE:
            return current, usage_m
        return math.ceil(ratio * ready), usage_m
    for name in missing:
        metrics[name] = target if ratio < 1.0 else 0
    if scale_up_with_unready:
        for name in unready:
            metrics[name] = 0
    new_ratio, _ = _usage_ratio(metrics, target)
    if (abs(1.0 - new_ratio) <= TOLERANCE or (ratio < 1.0 and new_ratio > 1.0)
            or (ratio > 1.0 and new_ratio < 1.0)):
        return current, usage_m
    new = math.ceil(new_ratio * len(metrics))
    if (new_ratio < 1.0 and new > current) or (new_ratio > 1.0 and new < current):
        return current, usage_m
    return new, usage_m


def _usage_ratio(metrics: dict[str, Any], target: int) -> tuple[float, int]:
    """``GetMetricUsageRatio``: integer average (Go int64 division), then the ratio."""
    average = sum(metrics.values()) // len(metrics)
    return average / target, average


def pods_metric_replicas(sync: Sync, current: int, target: int, metric: str,
                         pods: list[dict[str, Any]]) -> tuple[int, int]:
    """``GetMetricReplicas`` over the custom metrics API's per-pod values."""
    namespace = sync.hpa["metadata"].get("namespace", "default")
    try:
        values = sync.usage.pods_metric(namespace, metric, names=tuple(
            p["metadata"]["name"] for p in pods))
    except MetricNotFound as err:
        raise MetricError("", f"unable to get metric {metric}: unable to fetch metrics from custom "
                              f"metrics API: {err}") from None
    if not values:
        raise MetricError("", f"unable to get metric {metric}: no metrics returned from custom "
                              "metrics API")
    metrics = {v.name: milli(v.value) for v in values}
    return plain_replicas(sync.view.now(), metrics, current, target, pods)


def usage_ratio_replicas(sync: Sync, current: int, ratio: float, pods: list[dict[str, Any]]) -> int:
    """``getUsageRatioReplicaCount``: scale by the ratio over the ready pods."""
    if current == 0:
        return math.ceil(ratio)
    if abs(1.0 - ratio) <= TOLERANCE:
        return current
    if not pods:
        raise MetricError("", "unable to calculate ready pods: no pods returned by selector "
                              "while calculating replica count")
    ready = sum(1 for p in pods if is_ready(p))
    return math.ceil(ratio * ready)


def per_pod_replicas(status_replicas: int, usage_m: int, target_m: int) -> tuple[int, int]:
    """``GetObjectPerPodMetricReplicas`` / ``GetExternalPerPodMetricReplicas``."""
    replicas = status_replicas
    ratio = usage_m / (target_m * replicas) if replicas else math.inf
    if abs(1.0 - ratio) > TOLERANCE:
        replicas = math.ceil(usage_m / target_m)
    average = math.ceil(usage_m / status_replicas) if status_replicas else usage_m
    return replicas, average


# ---- normalization ----------------------------------------------------------------------------

def normalize(sync: Sync, current: int, desired: int, minimum: int, maximum: int) -> int:
    """``normalizeDesiredReplicas`` (no ``behavior``): 300 s downscale stabilization, then
    ``convertDesiredReplicasWithRules``."""
    stabilized = _stabilize(sync, desired)
    if stabilized != desired:
        sync.condition("AbleToScale", "True", "ScaleDownStabilized",
                       "recent recommendations were higher than current one, applying the "
                       "highest recent recommendation")
    else:
        sync.condition("AbleToScale", "True", "ReadyForNewScale",
                       "recommended size matches current size")
    result, reason, message = _with_rules(current, stabilized, minimum, maximum)
    sync.condition("ScalingLimited", "False" if result == stabilized else "True", reason, message)
    return result


def _stabilize(sync: Sync, desired: int) -> int:
    now, best = sync.view.now(), desired
    recs = sync.state["recommendations"]
    cutoff, old = now - DOWNSCALE_WINDOW, None
    for i, (rec, stamp) in enumerate(recs):
        if stamp < cutoff:
            old = i
        elif rec > best:
            best = rec
    if old is not None:
        recs[old] = [desired, now]
    else:
        recs.append([desired, now])
    return best


def _with_rules(current: int, desired: int, minimum: int, maximum: int) -> tuple[int, str, str]:
    limit = int(max(SCALE_UP_LIMIT_FACTOR * current, SCALE_UP_LIMIT_MINIMUM))
    if maximum > limit:
        top, reason, message = limit, "ScaleUpLimit", ("the desired replica count is increasing "
                                                       "faster than the maximum scale rate")
    else:
        top, reason, message = maximum, "TooManyReplicas", ("the desired replica count is more "
                                                            "than the maximum replica count")
    if desired < minimum:
        return minimum, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
    if desired > top:
        return top, reason, message
    return desired, "DesiredWithinRange", "the desired count is within the acceptable range"


def rules_of(hpa: dict[str, Any], direction: str) -> dict[str, Any]:
    """The defaulted scaling rules (``GenerateHPAScale{Up,Down}Rules`` and
    ``maybeInitScaleDownStabilizationWindow``)."""
    given = ((hpa.get("spec") or {}).get("behavior") or {}).get(direction) or {}
    rules = copy.deepcopy(DEFAULT_SCALE_UP if direction == "scaleUp" else DEFAULT_SCALE_DOWN)
    for key in ("selectPolicy", "stabilizationWindowSeconds", "policies"):
        if given.get(key) is not None:
            rules[key] = given[key]
    rules.setdefault("stabilizationWindowSeconds", DOWNSCALE_WINDOW)
    return rules


def normalize_with_behaviors(sync: Sync, current: int, desired: int, minimum: int,
                             maximum: int) -> int:
    up, down = rules_of(sync.hpa, "scaleUp"), rules_of(sync.hpa, "scaleDown")
    stabilized, reason, message = _stabilize_with_behaviors(sync, current, desired, up, down)
    if stabilized != desired:
        sync.condition("AbleToScale", "True", reason, message)
    else:
        sync.condition("AbleToScale", "True", "ReadyForNewScale",
                       "recommended size matches current size")
    result, reason, message = _with_behavior_rate(sync, current, stabilized, minimum, maximum,
                                                  up, down)
    sync.condition("ScalingLimited", "False" if result == stabilized else "True", reason, message)
    return result


def _stabilize_with_behaviors(sync: Sync, current: int, desired: int, up: dict[str, Any],
                              down: dict[str, Any]) -> tuple[int, str, str]:
    now = sync.view.now()
    up_cut = now - int(up["stabilizationWindowSeconds"])
    down_cut = now - int(down["stabilizationWindowSeconds"])
    up_rec, down_rec, old = desired, desired, None
    recs = sync.state["recommendations"]
    for i, (rec, stamp) in enumerate(recs):
        if stamp > up_cut:
            up_rec = min(rec, up_rec)
        if stamp > down_cut:
            down_rec = max(rec, down_rec)
        if stamp < up_cut and stamp < down_cut:
            old = i
    result = max(current, up_rec)
    result = min(result, down_rec)
    if old is not None:
        recs[old] = [desired, now]
    else:
        recs.append([desired, now])
    if desired >= current:
        return result, "ScaleUpStabilized", ("recent recommendations were lower than current one, "
                                             "applying the lowest recent recommendation")
    return result, "ScaleDownStabilized", ("recent recommendations were higher than current one, "
                                           "applying the highest recent recommendation")


def _changes(events: list[Any], period: float, now: float) -> int:
    """``getReplicasChangePerPeriod``."""
    return sum(int(change) for change, stamp, _ in events if stamp > now - period)


def scale_up_limit(current: int, up_events: list[Any], down_events: list[Any], rules: dict[str, Any],
                   now: float) -> int:
    """``calculateScaleUpLimitWithScalingRules``."""
    select = rules.get("selectPolicy", "Max")
    if select == "Disabled":
        return current
    pick, result = (min, math.inf) if select == "Min" else (max, -math.inf)
    for policy in rules.get("policies") or []:
        period = float(policy.get("periodSeconds", 0))
        start = current - _changes(up_events, period, now) + _changes(down_events, period, now)
        value = int(policy.get("value", 0))
        proposed = (start + value if policy.get("type") == "Pods"
                    else math.ceil(start * (1 + value / 100)))
        result = pick(result, proposed)
    return int(result) if math.isfinite(result) else current


def scale_down_limit(current: int, up_events: list[Any], down_events: list[Any], rules: dict[str, Any],
                     now: float) -> int:
    """``calculateScaleDownLimitWithBehaviors``."""
    select = rules.get("selectPolicy", "Max")
    if select == "Disabled":
        return current
    pick, result = (max, -math.inf) if select == "Min" else (min, math.inf)
    for policy in rules.get("policies") or []:
        period = float(policy.get("periodSeconds", 0))
        start = current - _changes(up_events, period, now) + _changes(down_events, period, now)
        value = int(policy.get("value", 0))
        proposed = (start - value if policy.get("type") == "Pods"
                    else int(start * (1 - value / 100)))
        result = pick(result, proposed)
    return int(result) if math.isfinite(result) else current


def _with_behavior_rate(sync: Sync, current: int, desired: int, minimum: int, maximum: int,
                        up: dict[str, Any], down: dict[str, Any]) -> tuple[int, str, str]:
    """``convertDesiredReplicasWithBehaviorRate``."""
    now, state = sync.view.now(), sync.state
    if desired > current:
        limit = max(current, scale_up_limit(current, state["up"], state["down"], up, now))
        if maximum > limit:
            top, reason, message = limit, "ScaleUpLimit", ("the desired replica count is "
                                                           "increasing faster than the maximum "
                                                           "scale rate")
        else:
            top, reason, message = maximum, "TooManyReplicas", ("the desired replica count is "
                                                                "more than the maximum replica "
                                                                "count")
        if desired > top:
            return top, reason, message
    elif desired < current:
        limit = min(current, scale_down_limit(current, state["up"], state["down"], down, now))
        if minimum < limit:
            bottom, reason, message = limit, "ScaleDownLimit", ("the desired replica count is "
                                                                "decreasing faster than the "
                                                                "maximum scale rate")
        else:
            bottom, reason, message = minimum, "TooFewReplicas", ("the desired replica count is "
                                                                  "less than the minimum replica "
                                                                  "count")
        if desired < bottom:
            return bottom, reason, message
    return desired, "DesiredWithinRange", "the desired count is within the acceptable range"


def store_scale_event(sync: Sync, previous: int, new: int) -> None:
    """``storeScaleEvent``: only with ``behavior``; an outdated entry is reused."""
    if (sync.hpa.get("spec") or {}).get("behavior") is None:
        return
    direction = "up" if new > previous else "down"
    rules = rules_of(sync.hpa, "scaleUp" if direction == "up" else "scaleDown")
    longest = max((int(p.get("periodSeconds", 0)) for p in rules.get("policies") or []), default=0)
    events, now = sync.state[direction], sync.view.now()
    for event in events:                                  # markScaleEventsOutdated
        if event[1] < now - longest:
            event[2] = True
    entry = [abs(new - previous), now, False]
    old = max((i for i, event in enumerate(events) if event[2]), default=None)
    if old is not None:
        events[old] = entry
    else:
        events.append(entry)
