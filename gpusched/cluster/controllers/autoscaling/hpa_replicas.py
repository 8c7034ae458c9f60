"""The HPA's replica arithmetic, as ``pkg/controller/podautoscaler/replica_calculator.go``: the
usage ratio with tolerance 0.1, missing and unready pods (``groupPods``, the CPU
initialization period and initial readiness delay), and per-pod targets.

Neighbours: ``hpa_metrics`` (asks for a proposal per metric), ``hpa_sync`` (settings).
"""

from __future__ import annotations

from typing import Any, Callable

import math

from gpusched.cluster.controllers.common import is_ready
from gpusched.cluster.controllers.autoscaling.hpa_sync import (CPU_INITIALIZATION_PERIOD,
                                                               INITIAL_READINESS_DELAY,
                                                               METRIC_WINDOW, MetricError, Sync,
                                                               TOLERANCE)
from gpusched.cluster.apiserver.store import seconds_of
from gpusched.cluster.usage import MetricNotFound, milli, pod_requests

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
    metrics, ready, unready, missing = _counted(now, pods, metrics, resource)
    requests = _pod_requests(pods, resource, container)
    ratio, utilization, raw = utilization_ratio(metrics, requests, target_utilization)
    fallback = max(100, target_utilization)
    replicas = _replica_count(
        current, ratio, ready, metrics, unready, missing,
        lambda name: requests[name] * fallback // 100,
        lambda values: utilization_ratio(values, requests, target_utilization)[0])
    return replicas, utilization, raw


def _pod_requests(pods: list[dict[str, Any]], resource: str, container: str) -> dict[str, int]:
    """``calculatePodRequests``: each pod's request (milli-values; of one container when
    ``container`` is set); a container without one is an error."""
    requests = {}
    for pod in pods:
        counted = [c for c in pod["spec"].get("containers") or []
                   if not container or c.get("name") == container]
        request = pod_requests({"spec": {"containers": counted}}, resource) if counted else 0
        if request is None:
            missing_in = next((c.get("name", "") for c in counted
                               if pod_requests({"spec": {"containers": [c]}}, resource) is None), "")
            raise MetricError("", f"missing request for {resource} in container {missing_in} of "
                                  f"Pod {pod['metadata']['name']}")
        requests[pod["metadata"]["name"]] = request * (1 if resource == "cpu" else 1000)
    return requests


def _replica_count(current: int, ratio: float, ready: int, metrics: dict[str, Any],
                   unready: set[str], missing: set[str], missing_value: Callable[[str], int],
                   ratio_of: Callable[[dict[str, Any]], float]) -> int:
    """What ``GetResourceReplicas`` and ``calcPlainMetricReplicas`` share after the first ratio:
    without missing pods (or unready ones while scaling up) the ratio over the ready pods;
    otherwise missing pods count as ``missing_value`` (scaling down) or 0 (up), unready pods
    as 0 when scaling up, and the ratio of ``metrics`` so filled (``ratio_of``) decides."""
    scale_up_with_unready = bool(unready) and ratio > 1.0
    if not scale_up_with_unready and not missing:
        if abs(1.0 - ratio) <= TOLERANCE:
            return current
        return math.ceil(ratio * ready)
    for name in missing:
        metrics[name] = missing_value(name) if ratio < 1.0 else 0
    if scale_up_with_unready:
        for name in unready:
            metrics[name] = 0
    return _rebalanced(current, ratio, ratio_of(metrics), len(metrics))


def _rebalanced(current: int, ratio: float, new_ratio: float, counted: int) -> int:
    """The proposal over ``counted`` pods after filling in missing and unready ones: the
    current count when within tolerance, when the fill flipped the direction, or when it
    would move against ``new_ratio``."""
    if (abs(1.0 - new_ratio) <= TOLERANCE or (ratio < 1.0 and new_ratio > 1.0)
            or (ratio > 1.0 and new_ratio < 1.0)):
        return current
    new = math.ceil(new_ratio * counted)
    if (new_ratio < 1.0 and new > current) or (new_ratio > 1.0 and new < current):
        return current
    return new


def utilization_ratio(metrics: dict[str, Any], requests: dict[str, Any], target: int) -> tuple[float, int, int]:
    """``GetResourceUtilizationRatio``: (ratio, utilization %, raw average)."""
    total = sum(metrics[n] for n in metrics if n in requests)
    request_total = sum(requests[n] for n in metrics if n in requests)
    entries = sum(1 for n in metrics if n in requests)
    if request_total == 0:
        raise MetricError("", "no metrics returned matched known pods")
    utilization = int(total * 100 / request_total)
    return utilization / target, utilization, int(total / entries)


def _counted(now: float, pods: list[dict[str, Any]], metrics: dict[str, Any],
             resource: str) -> tuple[dict[str, Any], int, set[str], set[str]]:
    """The opening both replica calculations share (replica_calculator.go): no pods is an
    error, pods' ready/unready/missing/ignored groups, the metrics of ignored and unready pods
    dropped (a copy), and nothing left is an error."""
    metrics = dict(metrics)
    if not pods:
        raise MetricError("", "no pods returned by selector while calculating replica count")
    ready, unready, missing, ignored = group_pods(now, pods, metrics, resource)
    for name in ignored | unready:
        metrics.pop(name, None)
    if not metrics:
        raise MetricError("", "did not receive metrics for targeted pods (pods might be unready)")
    return metrics, ready, unready, missing


def plain_replicas(now: float, metrics: dict[str, Any], current: int, target: int, pods: list[dict[str, Any]],
                   resource: str = "") -> tuple[int, int]:
    """``calcPlainMetricReplicas``: (replicas, average usage milli-value)."""
    metrics, ready, unready, missing = _counted(now, pods, metrics, resource)
    ratio, usage_m = _usage_ratio(metrics, target)
    replicas = _replica_count(current, ratio, ready, metrics, unready, missing,
                              lambda name: target, lambda values: _usage_ratio(values, target)[0])
    return replicas, usage_m


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
