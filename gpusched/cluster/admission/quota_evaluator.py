"""ResourceQuota's evaluators: what a quota tracks, which objects it matches, what each charges.

Shared by the admission plugin (``admission.resource_quota``) and the resourcequota controller
(``controllers.quota``), as upstream's ``pkg/quota/v1/evaluator/core/pods.go`` (the pod
evaluator) and ``staging/src/k8s.io/apiserver/pkg/quota/v1/generic`` (object counts,
``Matches``, ``CalculateUsageStats``) are shared by both.

- Tracked keys: the pod evaluator's ``MatchingResources`` (``pods``, ``count/pods``, ``cpu``,
  ``memory``, ``ephemeral-storage``, their ``requests.``/``limits.`` forms, hugepages, and
  ``requests.<extended>`` such as ``requests.nvidia.com/gpu``, and a DeviceClass's implicit
  ``requests.deviceclass.resource.kubernetes.io/<class>``), the ResourceClaim evaluator's
  (``count/resourceclaims.resource.k8s.io``, ``<class>.deviceclass.resource.k8s.io/devices``:
  :func:`claim_usage`), plus object counts
  (``count/<plural>[.<group>]`` and the legacy ``configmaps``, ``persistentvolumeclaims`` ...).
  Anything else (``limits.nvidia.com/gpu``) is accepted in ``spec.hard`` but neither enforced nor
  listed in ``status.used``, as upstream.
- A pod charges (``PodUsageFunc``) ``count/pods`` always; while not terminal (and not past its
  deletion grace period) ``pods: 1`` and its requests/limits by ``resourcehelper.PodRequests``/
  ``PodLimits`` (sidecars, overhead, zero requests kept), extended resources as ``requests.<name>``.
- Scopes (``spec.scopes`` as ``Exists`` selectors, then ``spec.scopeSelector.matchExpressions``,
  all ANDed; ``podMatchesScopeFunc``): Terminating (``activeDeadlineSeconds >= 0``) /
  NotTerminating, BestEffort (no cpu/memory request or limit in any container) / NotBestEffort,
  PriorityClass (In / NotIn / Exists / DoesNotExist on ``spec.priorityClassName``),
  CrossNamespacePodAffinity. A scoped quota matches pods only.

A pod's quantities come parsed (:class:`~gpusched.cluster.admission.attributes.PodResources`):
the object being admitted brings its cached ones; a stored pod's are parsed as it is counted.

Neighbours: ``admission.resource_quota``, ``controllers.quota``; ``apiserver.resources``.
"""

from __future__ import annotations

import functools
from datetime import datetime, timedelta
from typing import Any

from gpusched.cluster.admission.attributes import PodResources
from gpusched.cluster.apiserver.resources import format_amount
from gpusched.cluster.apiserver.view import View, object_namespace
from gpusched.objects.kinds import KINDS

POD_RESOURCES = frozenset({
    "count/pods", "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage",
    "pods"})
POD_RESOURCE_PREFIXES = ("hugepages-", "requests.hugepages-")
# Object counts upstream also tracks under a legacy name (core/*.go evaluators).
LEGACY_COUNT_KEYS = {"ConfigMap": "configmaps", "PersistentVolumeClaim": "persistentvolumeclaims",
                     "Service": "services", "Secret": "secrets",
                     "ReplicationController": "replicationcontrollers",
                     "ResourceQuota": "resourcequotas"}
NATIVE_RESOURCES = ("cpu", "memory", "ephemeral-storage")
# pkg/quota/v1/evaluator/core/resource_claims.go and pods.go (KEP-5004's implicit names)
CLAIM_DEVICES_SUFFIX = ".deviceclass.resource.k8s.io/devices"
DEVICE_CLASS_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"
ALLOCATION_RESULTS_MAX = 32     # what an All request may take at most (AllocationResultsMaxSize)


def _is_native(name: str) -> bool:
    """``helper.IsNativeResource``: no domain, or a ``kubernetes.io/`` one."""
    return "/" not in name or "kubernetes.io/" in name


def _count_key(kind: str) -> str:
    info = KINDS[kind]
    return f"count/{info.plural}" + (f".{info.group}" if info.group else "")


def tracked_keys(kind: str, keys: list[str]) -> list[str]:
    """The hard keys the evaluator for ``kind`` matches (``MatchingResources``)."""
    if kind == "Pod":
        return [k for k in keys if k in POD_RESOURCES or k.startswith(POD_RESOURCE_PREFIXES)
                or (_is_quota_extended(k[len("requests."):]) and k.startswith("requests."))]
    if kind == "ResourceClaim":
        return [k for k in keys if k == _count_key(kind) or
                (k.endswith(CLAIM_DEVICES_SUFFIX) and len(k) > len(CLAIM_DEVICES_SUFFIX))]
    return [k for k in keys if k in (_count_key(kind), LEGACY_COUNT_KEYS.get(kind))]


def _is_quota_extended(name: str) -> bool:
    """``isExtendedResourceNameForQuota`` (after ``requests.``): not native, or a DeviceClass's
    implicit extended resource ``deviceclass.resource.kubernetes.io/<class>``."""
    return not _is_native(name) or name.startswith(DEVICE_CLASS_RESOURCE_PREFIX)


@functools.lru_cache(maxsize=256)
def _tracking(keys: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the keys some evaluator tracks, the kinds that charge one of them), both sorted."""
    kinds = [k for k, info in KINDS.items() if info.namespaced and k != "Event"]
    charging = sorted(kind for kind in kinds if tracked_keys(kind, list(keys)))
    return tuple(sorted({key for kind in kinds for key in tracked_keys(kind, list(keys))})), \
        tuple(charging)


def all_tracked_keys(keys: list[str]) -> list[str]:
    """Keys some evaluator tracks: what ``status.used`` lists (zero when nothing is charged)."""
    return list(_tracking(tuple(keys))[0])


def hard_keys(quota: dict[str, Any]) -> list[str]:
    return sorted(((quota.get("spec") or {}).get("hard") or {}))


# ---- scopes ------------------------------------------------------------------------------------

def scope_selectors(quota: dict[str, Any]) -> list[dict[str, Any]]:
    """``getScopeSelectorsFromQuota``: ``spec.scopes`` as Exists, then ``scopeSelector``."""
    spec = quota.get("spec") or {}
    selectors = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or []]
    return selectors + list((spec.get("scopeSelector") or {}).get("matchExpressions") or [])


def _is_terminating(pod: dict[str, Any]) -> bool:
    deadline = (pod.get("spec") or {}).get("activeDeadlineSeconds")
    return isinstance(deadline, int) and deadline >= 0


def _cross_namespace_affinity(pod: dict[str, Any]) -> bool:
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        rules = affinity.get(kind) or {}
        terms = list(rules.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        terms += [(w.get("podAffinityTerm") or {}) for w in
                  rules.get("preferredDuringSchedulingIgnoredDuringExecution") or []]
        if any(t.get("namespaces") or t.get("namespaceSelector") is not None for t in terms):
            return True
    return False


def pod_matches_scope(selector: dict[str, Any], pod: dict[str, Any], res: PodResources) -> bool:
    """``podMatchesScopeFunc``."""
    name = selector.get("scopeName")
    if name in ("Terminating", "NotTerminating"):
        return bool(_is_terminating(pod) == (name == "Terminating"))
    if name in ("BestEffort", "NotBestEffort"):
        return bool((res.qos == "BestEffort") == (name == "BestEffort"))
    if name == "CrossNamespacePodAffinity":
        return _cross_namespace_affinity(pod)
    if name == "PriorityClass":
        class_name = (pod.get("spec") or {}).get("priorityClassName") or ""
        operator, values = selector.get("operator"), selector.get("values") or []
        if operator == "Exists":
            return bool(class_name)
        if operator == "DoesNotExist":
            return not class_name
        if operator == "In":
            return bool(class_name) and class_name in values
        if operator == "NotIn":
            return not class_name or class_name not in values
    return False


def quota_matches(quota: dict[str, Any], body: dict[str, Any], res: PodResources | None = None) -> bool:
    """``generic.Matches``: some tracked key, and every scope (none matches non-pods)."""
    kind = body.get("kind", "")
    if not tracked_keys(kind, hard_keys(quota)):
        return False
    selectors = scope_selectors(quota)
    if kind != "Pod":
        return not selectors
    res = res if res is not None else PodResources(body)
    return all(pod_matches_scope(s, body, res) for s in selectors)


# ---- usage -------------------------------------------------------------------------------------

def _charged(pod: dict[str, Any], now: str) -> bool:
    """``QuotaV1Pod``: not terminal, and not past deletionTimestamp + deletionGracePeriodSeconds."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    meta = pod.get("metadata") or {}
    deleted, grace = meta.get("deletionTimestamp"), meta.get("deletionGracePeriodSeconds")
    if deleted and isinstance(grace, int):
        end = datetime.fromisoformat(deleted) + timedelta(seconds=grace)
        return not datetime.fromisoformat(now) > end
    return True


def pod_usage(pod: dict[str, Any], now: str, res: PodResources) -> dict[str, int]:
    """``PodUsageFunc`` / ``podComputeUsageHelper``."""
    usage = {"count/pods": 1}
    if not _charged(pod, now):
        return usage
    requests, limits = res.quota_requests, res.quota_limits
    usage["pods"] = 1
    for name in NATIVE_RESOURCES:
        if name in requests:
            usage[name] = usage[f"requests.{name}"] = requests[name]
        if name in limits:
            usage[f"limits.{name}"] = limits[name]
    for name, amount in requests.items():
        if name.startswith("hugepages-"):
            usage[name] = usage[f"requests.{name}"] = amount
        elif _is_quota_extended(name) and not name.startswith("requests."):
            usage[f"requests.{name}"] = amount
    return usage


def object_usage(body: dict[str, Any], keys: list[str], now: str,
                 res: PodResources | None = None) -> dict[str, int]:
    """What one object charges against the quota keys it is tracked under."""
    kind = body.get("kind", "")
    tracked = tracked_keys(kind, keys)
    if kind == "Pod":
        usage = pod_usage(body, now, res if res is not None else PodResources(body))
        return {k: usage[k] for k in tracked if k in usage}
    if kind == "ResourceClaim":
        usage = claim_usage(body)
        return {k: usage.get(k, 0) for k in tracked}
    return {k: 1 for k in tracked}


def _request_devices(request: dict[str, Any]) -> int:
    """What one exact request (or sub-request) may take: its count, 32 for All, 0 for a mode
    this version does not know."""
    mode = request.get("allocationMode") or "ExactCount"
    if mode == "ExactCount":
        count = request.get("count")
        return count if isinstance(count, int) and count > 0 else 1
    return ALLOCATION_RESULTS_MAX if mode == "All" else 0


def claim_usage(claim: dict[str, Any]) -> dict[str, int]:
    """``resourceClaimEvaluator.Usage``: one ``count/resourceclaims.resource.k8s.io`` and, per
    DeviceClass, ``<class>.deviceclass.resource.k8s.io/devices``: each exact request's devices,
    and for a firstAvailable request the largest of its sub-requests per class (admin access
    is not exempt)."""
    usage = {_count_key("ResourceClaim"): 1}
    devices = ((claim.get("spec") or {}).get("devices") or {})
    for request in devices.get("requests") or ():
        if not isinstance(request, dict):
            continue
        largest: dict[str, int] = {}
        subs = [s for s in request.get("firstAvailable") or () if isinstance(s, dict)]
        exactly = request.get("exactly")
        for sub in subs or ([exactly] if isinstance(exactly, dict) else []):
            key = f"{sub.get('deviceClassName', '')}{CLAIM_DEVICES_SUFFIX}"
            largest[key] = max(largest.get(key, 0), _request_devices(sub))
        for key, amount in largest.items():
            usage[key] = usage.get(key, 0) + amount
    return usage


def quota_used(view: View, quota: dict[str, Any]) -> dict[str, int]:
    """The usage of the objects the quota matches: its namespace's objects of the kinds that
    charge one of its keys (not the whole store)."""
    ns = object_namespace("ResourceQuota", quota)
    keys = hard_keys(quota)
    tracked, kinds = _tracking(tuple(keys))
    used = {k: 0 for k in tracked}
    now = view.timestamp()
    for kind in kinds:
        for body in view.list(kind, ns):
            if not quota_matches(quota, body):
                continue
            for k, v in object_usage(body, keys, now).items():
                used[k] += v
    return used


def resource_of(key: str) -> str:
    for prefix in ("requests.", "limits."):
        if key.startswith(prefix):
            return key[len(prefix):]
    return key


def format_amount_for_key(key: str, amount: int) -> str:
    return format_amount(resource_of(key), amount)
