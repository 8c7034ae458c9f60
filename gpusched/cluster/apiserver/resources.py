"""Resource arithmetic on raw pod dicts for admission, in canonical integer units.

One computation, ``objects.pod.pod_resource_totals`` (containers, restartable "sidecar" init
containers, then regular init containers, as ``resourcehelper.PodRequests``/``PodLimits`` in
kubernetes ``pkg/api/v1/resource/helpers.go``), read the way each admission plugin reads it:

- ResourceQuota (``pkg/quota/v1/evaluator/core/pods.go`` ``PodUsageFunc``): with ``spec.overhead``
  (added to every request, to a limit only where the pod has that limit), zero amounts kept;
- LimitRanger type Pod (``plugin/pkg/admission/limitranger/limitranger.go`` ``podRequests``/
  ``podLimits``): the same rule without overhead, zero amounts kept;
- one container (``container_resources``): its requests and limits, a limit alone setting the
  request (API defaulting, ``SetDefaults_Container``... ``pkg/apis/core/v1/defaults.go``).

Neighbours: used by ``cluster.admission``; the scheduler reads ``objects.pod.pod_info``.
"""

from __future__ import annotations

from typing import Any

from gpusched.objects.pod import pod_resource_totals
from gpusched.objects.quantity import canonical, format_quantity


def _amounts(values: dict[str, Any] | None) -> dict[str, int]:
    return {str(res): canonical(str(res), value) for res, value in (values or {}).items()}


def container_resources(container: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    """(requests, limits) of one container; a limit alone sets the request."""
    resources = container.get("resources") or {}
    limits = _amounts(resources.get("limits"))
    requests = _amounts(resources.get("requests"))
    for res, value in limits.items():
        requests.setdefault(res, value)
    return requests, limits


def quota_requests(pod: dict[str, Any]) -> dict[str, int]:
    """``resourcehelper.PodRequests`` as quota charges it, e.g. ``{"cpu": 1500, "nvidia.com/gpu": 2}``."""
    return pod_resource_totals(pod, keep_zero=True)


def quota_limits(pod: dict[str, Any]) -> dict[str, int]:
    """``resourcehelper.PodLimits`` as quota charges it."""
    return pod_resource_totals(pod, limits=True, keep_zero=True)


def limit_range_pod_requests(pod: dict[str, Any]) -> dict[str, int]:
    """LimitRanger's ``podRequests`` (no overhead)."""
    return pod_resource_totals(pod, overhead=False, keep_zero=True)


def limit_range_pod_limits(pod: dict[str, Any]) -> dict[str, int]:
    """LimitRanger's ``podLimits`` (no overhead)."""
    return pod_resource_totals(pod, limits=True, overhead=False, keep_zero=True)


def format_amount(resource: str, amount: int) -> str:
    """kubectl's rendering of a canonical amount (``500m``, ``1Gi``, ``2``)."""
    if not resource:
        return str(amount)
    return format_quantity(resource, amount)
