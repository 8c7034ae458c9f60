"""Resource arithmetic on raw pod dicts, for admission and quota (canonical integer units).

A container's request for a resource given only as a limit is the limit (API defaulting). A pod's
requests (and limits) are ``max(sum over containers, max over init containers) + overhead``, the
rule kube-scheduler and the quota evaluator use.

Neighbours: used by ``cluster.admission`` and the controllers; ``objects.pod`` computes the same
totals for the scheduler's PodInfo.
"""

from __future__ import annotations

from gpusched.objects.quantity import canonical, format_quantity


def _amounts(values: dict | None) -> dict[str, int]:
    return {str(res): canonical(str(res), value) for res, value in (values or {}).items()}


def container_resources(container: dict) -> tuple[dict[str, int], dict[str, int]]:
    """(requests, limits) of one container; a limit alone sets the request."""
    resources = container.get("resources") or {}
    limits = _amounts(resources.get("limits"))
    requests = _amounts(resources.get("requests"))
    for res, value in limits.items():
        requests.setdefault(res, value)
    return requests, limits


def _pod_total(pod: dict, which: int) -> dict[str, int]:
    spec = pod.get("spec") or {}
    total: dict[str, int] = {}
    for container in spec.get("containers") or []:
        for res, value in container_resources(container)[which].items():
            total[res] = total.get(res, 0) + value
    for container in spec.get("initContainers") or []:
        for res, value in container_resources(container)[which].items():
            total[res] = max(total.get(res, 0), value)
    for res, value in _amounts(spec.get("overhead")).items():
        total[res] = total.get(res, 0) + value
    return total


def pod_requests(pod: dict) -> dict[str, int]:
    """Effective pod requests, e.g. ``{"cpu": 1500, "nvidia.com/gpu": 2}``."""
    return _pod_total(pod, 0)


def pod_limits(pod: dict) -> dict[str, int]:
    return _pod_total(pod, 1)


def format_amount(resource: str, amount: int) -> str:
    """kubectl's rendering of a canonical amount (``500m``, ``1Gi``, ``2``)."""
    if not resource:
        return str(amount)
    return format_quantity(resource, amount)
