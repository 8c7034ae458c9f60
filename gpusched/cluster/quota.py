"""ResourceQuota: what a quota tracks, what an object charges, admission and ``status``.

Upstream sources: ``pkg/quota/v1/evaluator/core/pods.go`` (the pod evaluator),
``staging/src/k8s.io/apiserver/pkg/quota/v1/generic`` (object counts, ``Matches``,
``CalculateUsageStats``), ``plugin/pkg/admission/resourcequota/controller.go`` (``checkRequest``)
and ``pkg/controller/resourcequota/resource_quota_controller.go`` (``syncResourceQuota``).

- Tracked keys: the pod evaluator's ``MatchingResources`` (``pods``, ``count/pods``, ``cpu``,
  ``memory``, ``ephemeral-storage``, their ``requests.``/``limits.`` forms, hugepages, and
  ``requests.<extended>`` such as ``requests.nvidia.com/gpu``), plus object counts
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
- Admission (``checkRequest``): for each matching quota, cpu/memory keys require every container
  to declare them (``failed quota: q: must specify requests.cpu for: a,b; ...``), then
  ``used + requested <= hard`` on the keys the object charges (``exceeded quota: q, requested:
  ..., used: ..., limited: ...``).

Neighbours: ``cluster.admission`` calls :func:`check_quota`; ``cluster.cluster`` calls
:func:`refresh_quotas` in every settle round.
"""

from __future__ import annotations

from typing import Any

import copy
from datetime import datetime, timedelta

from gpusched.cluster.apiserver.resources import (container_resources, format_amount, quota_limits,
                                        quota_requests)
from gpusched.cluster.apiserver.view import View, object_namespace
from gpusched.errors import ForbiddenError
from gpusched.objects.kinds import KINDS
from gpusched.objects.quantity import canonical, quantity_string

POD_RESOURCES = frozenset({
    "count/pods", "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage",
    "pods"})
POD_RESOURCE_PREFIXES = ("hugepages-", "requests.hugepages-")
VALIDATION_SET = ("cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu",
                  "limits.memory")
# Object counts upstream also tracks under a legacy name (core/*.go evaluators).
LEGACY_COUNT_KEYS = {"ConfigMap": "configmaps", "PersistentVolumeClaim": "persistentvolumeclaims",
                     "Service": "services", "Secret": "secrets",
                     "ReplicationController": "replicationcontrollers",
                     "ResourceQuota": "resourcequotas"}
NATIVE_RESOURCES = ("cpu", "memory", "ephemeral-storage")


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
                or (not _is_native(k) and k.startswith("requests."))]
    return [k for k in keys if k in (_count_key(kind), LEGACY_COUNT_KEYS.get(kind))]


def all_tracked_keys(keys: list[str]) -> list[str]:
    """Keys some evaluator tracks: what ``status.used`` lists (zero when nothing is charged)."""
    kinds = [k for k, info in KINDS.items() if info.namespaced and k != "Event"]
    return sorted({key for kind in kinds for key in tracked_keys(kind, keys)})


# ---- scopes ------------------------------------------------------------------------------------

def scope_selectors(quota: dict[str, Any]) -> list[dict[str, Any]]:
    """``getScopeSelectorsFromQuota``: ``spec.scopes`` as Exists, then ``scopeSelector``."""
    spec = quota.get("spec") or {}
    selectors = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or []]
    return selectors + list((spec.get("scopeSelector") or {}).get("matchExpressions") or [])


def pod_qos(pod: dict[str, Any]) -> str:
    """``qos.GetPodQOS`` (pkg/apis/core/helper/qos): BestEffort when no container or init
    container has a positive cpu/memory request or limit; Guaranteed when every one limits both
    cpu and memory and the summed requests equal the summed limits; else Burstable."""
    spec = pod.get("spec") or {}
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    guaranteed = True
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        container_requests, container_limits = container_resources(container)
        for name in ("cpu", "memory"):
            if container_requests.get(name, 0) > 0:
                requests[name] = requests.get(name, 0) + container_requests[name]
            if container_limits.get(name, 0) > 0:
                limits[name] = limits.get(name, 0) + container_limits[name]
        if not all(container_limits.get(name, 0) > 0 for name in ("cpu", "memory")):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and requests == limits:
        return "Guaranteed"
    return "Burstable"


def is_best_effort(pod: dict[str, Any]) -> bool:
    return pod_qos(pod) == "BestEffort"


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


def pod_matches_scope(selector: dict[str, Any], pod: dict[str, Any]) -> bool:
    """``podMatchesScopeFunc``."""
    name = selector.get("scopeName")
    if name in ("Terminating", "NotTerminating"):
        return bool(_is_terminating(pod) == (name == "Terminating"))
    if name in ("BestEffort", "NotBestEffort"):
        return bool(is_best_effort(pod) == (name == "BestEffort"))
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


def quota_matches(quota: dict[str, Any], body: dict[str, Any]) -> bool:
    """``generic.Matches``: some tracked key, and every scope (none matches non-pods)."""
    kind = body.get("kind", "")
    keys = sorted(((quota.get("spec") or {}).get("hard") or {}))
    if not tracked_keys(kind, keys):
        return False
    selectors = scope_selectors(quota)
    if kind != "Pod":
        return not selectors
    return all(pod_matches_scope(s, body) for s in selectors)


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


def pod_usage(pod: dict[str, Any], now: str) -> dict[str, int]:
    """``PodUsageFunc`` / ``podComputeUsageHelper``."""
    usage = {"count/pods": 1}
    if not _charged(pod, now):
        return usage
    requests, limits = quota_requests(pod), quota_limits(pod)
    usage["pods"] = 1
    for res in NATIVE_RESOURCES:
        if res in requests:
            usage[res] = usage[f"requests.{res}"] = requests[res]
        if res in limits:
            usage[f"limits.{res}"] = limits[res]
    for res, amount in requests.items():
        if res.startswith("hugepages-"):
            usage[res] = usage[f"requests.{res}"] = amount
        elif not _is_native(res) and not res.startswith("requests."):
            usage[f"requests.{res}"] = amount
    return usage


def object_usage(body: dict[str, Any], keys: list[str], now: str) -> dict[str, int]:
    """What one object charges against the quota keys it is tracked under."""
    kind = body.get("kind", "")
    tracked = tracked_keys(kind, keys)
    if kind == "Pod":
        usage = pod_usage(body, now)
        return {k: usage[k] for k in tracked if k in usage}
    return {k: 1 for k in tracked}


def quota_used(view: View, quota: dict[str, Any]) -> dict[str, int]:
    ns = object_namespace("ResourceQuota", quota)
    keys = sorted(((quota.get("spec") or {}).get("hard") or {}))
    used = {k: 0 for k in all_tracked_keys(keys)}
    now = view.timestamp()
    for (kind, obj_ns, _), body in sorted(view.objects.items()):
        if obj_ns != ns or kind not in KINDS or not quota_matches(quota, body):
            continue
        for k, v in object_usage(body, keys, now).items():
            used[k] += v
    return used


# ---- admission ---------------------------------------------------------------------------------

def _resource_of(key: str) -> str:
    for prefix in ("requests.", "limits."):
        if key.startswith(prefix):
            return key[len(prefix):]
    return key


def format_amount_for_key(key: str, amount: int) -> str:
    return format_amount(_resource_of(key), amount)


def check_quota(view: View, body: dict[str, Any]) -> None:
    """``checkRequest`` for a create: constraints, then ``used + requested <= hard``."""
    kind = body.get("kind", "")
    info = KINDS.get(kind)
    if info is None or not info.namespaced or kind == "Event":
        return
    ns = object_namespace(kind, body)
    name = body["metadata"]["name"]
    plural = info.plural if not info.group else f"{info.plural}.{info.group}"
    now = view.timestamp()
    for quota in view.list("ResourceQuota", ns):
        if quota_matches(quota, body):
            _check_one_quota(view, quota, body, kind, plural, name, now)


def _check_one_quota(view: View, quota: dict[str, Any], body: dict[str, Any], kind: str, plural: str,
                     name: str, now: str) -> None:
    """One matching quota: a Pod's missing constraints, then ``used + requested <= hard`` for
    the keys the object uses."""
    qname = quota["metadata"]["name"]
    hard_raw = (quota.get("spec") or {}).get("hard") or {}
    keys = sorted(hard_raw)
    if kind == "Pod":
        missing = missing_constraints(body, tracked_keys("Pod", keys))
        if missing:
            raise ForbiddenError(plural, name, f"failed quota: {qname}: must specify {missing}")
    requested = object_usage(body, keys, now)
    if not requested:
        return
    used = quota_used(view, quota)
    exceeded = [k for k in keys if k in requested
                and used.get(k, 0) + requested[k] > canonical(_resource_of(k), hard_raw[k])]
    if exceeded:
        def pairs(values: dict[str, int]) -> str:
            return ",".join(f"{k}={format_amount_for_key(k, values.get(k, 0))}" for k in exceeded)
        hard = {k: canonical(_resource_of(k), hard_raw[k]) for k in exceeded}
        raise ForbiddenError(plural, name, f"exceeded quota: {qname}, requested: "
                             f"{pairs(requested)}, used: {pairs(used)}, limited: {pairs(hard)}")


def missing_constraints(pod: dict[str, Any], required: list[str]) -> str:
    """``Constraints``: the cpu/memory keys some container or init container does not declare,
    ``requests.cpu for: a,b; limits.memory for: a`` (keys and names sorted), or ''."""
    needed = [k for k in required if k in VALIDATION_SET]
    spec = pod.get("spec") or {}
    missing: dict[str, set[str]] = {}
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        requests, limits = container_resources(container)
        declared = set()
        for res in ("cpu", "memory"):
            if res in requests:
                declared |= {res, f"requests.{res}"}
            if res in limits:
                declared.add(f"limits.{res}")
        for key in needed:
            if key not in declared:
                missing.setdefault(key, set()).add(str(container.get("name", "")))
    return "; ".join(f"{k} for: {','.join(sorted(v))}" for k, v in sorted(missing.items()))


def refresh_quotas(view: View) -> None:
    """``syncResourceQuota``: ``status.hard`` = spec.hard, ``status.used`` = the tracked keys."""
    for quota in view.list("ResourceQuota"):
        hard_raw = (quota.get("spec") or {}).get("hard") or {}
        used = quota_used(view, quota)
        # the spec's Quantities copied, serialized as Quantity.String() keeps their format
        # (100G stays 100G, 1024Mi becomes 1Gi): resource_quota_controller.go syncResourceQuota
        status: dict[str, Any] = {"hard": {k: quantity_string(v) for k, v in sorted(hard_raw.items())}}
        if used:
            status["used"] = {k: format_amount_for_key(k, v) for k, v in sorted(used.items())}
        if quota.get("status") != status:
            new = copy.deepcopy(quota)
            new["status"] = status
            view.update(new)
