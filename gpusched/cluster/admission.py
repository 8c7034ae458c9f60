"""Admission: what the API server's admission chain does before an object reaches the store.

Order for a create or update (each step may mutate the object or reject it, with Kubernetes'
wording; see nvidia-gpu-stack.md 7.3-7.5):

1. NamespaceLifecycle: a namespaced object needs its Namespace (``namespaces "x" not found``);
   ``default`` exists implicitly and is created on first use.
2. PriorityClass: one ``globalDefault``; ``value`` and ``preemptionPolicy`` immutable.
3. Pod priority: ``spec.priorityClassName`` resolved to ``spec.priority`` and
   ``spec.preemptionPolicy`` (the default class's name and value written when none is given).
4. LimitRanger: LimitRange objects defaulted when written; pods get defaults, then min / max /
   maxLimitRequestRatio checks for Container and Pod.
5. ResourceQuota (last): charged at creation; ``status.used`` is recomputed by
   :func:`refresh_quotas` after every change.

A rejection raises a :mod:`gpusched.errors` type; the caller's transaction rolls back, so a
rejected apply changes nothing.

Neighbours: called by ``cluster.cluster`` (apply) and the controllers that create pods.
"""

from __future__ import annotations

import copy

from gpusched.cluster.resources import (container_resources, format_amount, pod_limits,
                                        pod_requests)
from gpusched.cluster.kinds_admission import (admit_service, default_storage_class,
                                              default_toleration_seconds, label_namespace)
from gpusched.cluster.view import View, object_namespace
from gpusched.errors import FieldError, ForbiddenError, InvalidError, NotFoundError
from gpusched.objects.kinds import KINDS
from gpusched.objects.quantity import canonical

SYSTEM_PRIORITY_CLASSES = {"system-cluster-critical": 2000000000,
                           "system-node-critical": 2000001000}
QUOTA_CPU_MEMORY = ("cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu",
                    "limits.memory")


def admit(view: View, body: dict, old: dict | None) -> dict:
    """Run the admission chain on ``body`` (``old`` = the stored object on update)."""
    kind = body.get("kind", "")
    body = copy.deepcopy(body)
    ensure_namespace(view, kind, body)
    if kind == "Pod":
        default_toleration_seconds(body)            # DefaultTolerationSeconds (create, update)
    elif kind == "PersistentVolumeClaim" and old is None:
        default_storage_class(view, body)           # DefaultStorageClass
    elif kind == "Service":
        admit_service(view, body, old)              # ClusterIP / NodePort allocation
    elif kind == "Namespace":
        label_namespace(body)
    if kind == "PriorityClass":
        admit_priority_class(view, body, old)
    elif kind == "LimitRange":
        default_limit_range(body)
    elif kind == "Pod" and old is None:
        resolve_priority(view, body)
        apply_limit_ranges(view, body)
    if old is None:
        check_quota(view, body)
    return body


# ---- 1. namespaces -----------------------------------------------------------------------------

def ensure_namespace(view: View, kind: str, body: dict) -> None:
    info = KINDS.get(kind)
    if info is None or not info.namespaced:
        return
    ns = object_namespace(kind, body)
    if view.get("Namespace", ns) is not None:
        return
    if ns == "default":
        view.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"},
                     "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
        return
    raise NotFoundError("namespaces", ns)


# ---- 2./3. priority ----------------------------------------------------------------------------

def admit_priority_class(view: View, body: dict, old: dict | None) -> None:
    name = body["metadata"]["name"]
    if old is not None:
        errors = []
        if old.get("value") != body.get("value"):
            errors.append(FieldError("value", "Forbidden", None, "may not be changed in an update."))
        old_policy = old.get("preemptionPolicy", "PreemptLowerPriority")
        new_policy = body.get("preemptionPolicy", "PreemptLowerPriority")
        if old_policy != new_policy:
            errors.append(FieldError("preemptionPolicy", "Invalid value", new_policy,
                                     "field is immutable"))
        if errors:
            raise InvalidError("PriorityClass", name, errors)
    body.setdefault("preemptionPolicy", "PreemptLowerPriority")
    if body.get("globalDefault"):
        for other in view.list("PriorityClass"):
            if other.get("globalDefault") and other["metadata"]["name"] != name:
                raise ForbiddenError(
                    "priorityclasses.scheduling.k8s.io", name,
                    f"PriorityClass {other['metadata']['name']} is already marked as default. "
                    "Only one default can exist")


def default_priority_class(view: View) -> dict | None:
    """The globalDefault class; with several (a race upstream), the lowest value wins."""
    defaults = [pc for pc in view.list("PriorityClass") if pc.get("globalDefault")]
    defaults.sort(key=lambda pc: (int(pc.get("value", 0)), pc["metadata"]["name"]))
    return defaults[0] if defaults else None


def resolve_priority(view: View, pod: dict) -> None:
    """Write spec.priority / priorityClassName / preemptionPolicy as the Priority plugin does."""
    spec = pod.setdefault("spec", {})
    name = pod["metadata"]["name"]
    class_name = spec.get("priorityClassName") or ""
    policy = "PreemptLowerPriority"
    if class_name in SYSTEM_PRIORITY_CLASSES:
        value = SYSTEM_PRIORITY_CLASSES[class_name]
    elif class_name:
        pc = view.get("PriorityClass", class_name)
        if pc is None:
            raise ForbiddenError("pods", name, f"no PriorityClass with name {class_name} was found")
        value = int(pc.get("value", 0))
        policy = pc.get("preemptionPolicy") or policy
    else:
        pc = default_priority_class(view)
        value = int(pc.get("value", 0)) if pc else 0
        if pc is not None:
            spec["priorityClassName"] = pc["metadata"]["name"]
            policy = pc.get("preemptionPolicy") or policy
    if "priority" in spec and spec["priority"] is not None and int(spec["priority"]) != value:
        raise ForbiddenError(
            "pods", name, f"the integer value of priority ({spec['priority']}) must not be "
            f"provided in pod spec; priority admission controller computed {value} from the "
            "given PriorityClass name")
    if spec.get("preemptionPolicy") and spec["preemptionPolicy"] != policy:
        raise ForbiddenError(
            "pods", name, f"the string value of PreemptionPolicy ({spec['preemptionPolicy']}) "
            "must not be provided in pod spec; priority admission controller computed "
            f"{policy} from the given PriorityClass name")
    spec["priority"] = value
    spec["preemptionPolicy"] = policy


# ---- 4. LimitRange -----------------------------------------------------------------------------

def default_limit_range(body: dict) -> None:
    """SetDefaults_LimitRangeItem for type Container: default <- max, defaultRequest <- default|min."""
    for item in (body.get("spec") or {}).get("limits") or []:
        if item.get("type") != "Container":
            continue
        default = item.setdefault("default", {})
        for res, value in (item.get("max") or {}).items():
            default.setdefault(res, value)
        request = item.setdefault("defaultRequest", {})
        for res, value in default.items():
            request.setdefault(res, value)
        for res, value in (item.get("min") or {}).items():
            request.setdefault(res, value)
        if not default:
            del item["default"]
        if not request:
            del item["defaultRequest"]


def apply_limit_ranges(view: View, pod: dict) -> None:
    ns = object_namespace("Pod", pod)
    ranges = view.list("LimitRange", ns)
    if not ranges:
        return
    spec = pod.setdefault("spec", {})
    for lr in ranges:
        for item in (lr.get("spec") or {}).get("limits") or []:
            if item.get("type") != "Container":
                continue
            for container in [*spec.get("containers", []), *spec.get("initContainers", [])]:
                resources = container.setdefault("resources", {})
                for res, value in (resources.get("limits") or {}).items():   # API defaulting
                    resources.setdefault("requests", {}).setdefault(res, value)
                for field_name, defaults in (("limits", item.get("default")),
                                             ("requests", item.get("defaultRequest"))):
                    for res, value in (defaults or {}).items():
                        resources.setdefault(field_name, {}).setdefault(res, value)
    errors: list[str] = []
    for lr in ranges:
        for item in (lr.get("spec") or {}).get("limits") or []:
            kind = item.get("type")
            if kind == "Container":
                for container in [*spec.get("containers", []), *spec.get("initContainers", [])]:
                    req, lim = container_resources(container)
                    errors += _limit_errors(item, "Container", req, lim)
            elif kind == "Pod":
                errors += _limit_errors(item, "Pod", pod_requests(pod), pod_limits(pod))
    if errors:
        detail = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        raise ForbiddenError("pods", pod["metadata"]["name"], detail)


def _limit_errors(item: dict, scope: str, req: dict[str, int], lim: dict[str, int]) -> list[str]:
    """min, then max, then maxLimitRequestRatio, resources in name order; at most one error
    per resource and constraint, as ``minConstraint``/``maxConstraint`` in limitranger.go."""
    out: list[str] = []
    for res, value in sorted((item.get("min") or {}).items()):
        bound, text = canonical(res, value), format_amount(res, canonical(res, value))
        if res not in req:
            out.append(f"minimum {res} usage per {scope} is {text}.  No request is specified")
        elif req[res] < bound:
            out.append(f"minimum {res} usage per {scope} is {text}, but request is "
                       f"{format_amount(res, req[res])}")
        elif res in lim and lim[res] < bound:
            out.append(f"minimum {res} usage per {scope} is {text}, but limit is "
                       f"{format_amount(res, lim[res])}")
    for res, value in sorted((item.get("max") or {}).items()):
        bound, text = canonical(res, value), format_amount(res, canonical(res, value))
        if res not in lim:
            out.append(f"maximum {res} usage per {scope} is {text}.  No limit is specified")
        elif lim[res] > bound:
            out.append(f"maximum {res} usage per {scope} is {text}, but limit is "
                       f"{format_amount(res, lim[res])}")
        elif res in req and req[res] > bound:
            out.append(f"maximum {res} usage per {scope} is {text}, but request is "
                       f"{format_amount(res, req[res])}")
    for res, value in sorted((item.get("maxLimitRequestRatio") or {}).items()):
        ratio_text = format_amount("", canonical("", value))
        head = f"{res} max limit to request ratio per {scope} is {ratio_text}"
        if not req.get(res):
            out.append(f"{head}, but no request is specified or request is 0")
        elif not lim.get(res):
            out.append(f"{head}, but no limit is specified or limit is 0")
        elif lim[res] / req[res] > float(canonical("", value)):
            out.append(f"{head}, but provided ratio is {lim[res] / req[res]:f}")
    return out


# ---- 5. ResourceQuota --------------------------------------------------------------------------

# Object counts upstream tracks under a bare name besides ``count/<resource>``.
BARE_COUNT_KEYS = {"Pod": "pods", "ConfigMap": "configmaps",
                   "PersistentVolumeClaim": "persistentvolumeclaims"}


def object_usage(body: dict, keys: list[str]) -> dict[str, int]:
    """What one object charges against the quota keys ``keys`` (keys it does not touch omitted)."""
    kind = body.get("kind", "")
    info = KINDS.get(kind)
    count_key = ""
    if info is not None:
        count_key = f"count/{info.plural}" + (f".{info.group}" if info.group else "")
    usage: dict[str, int] = {}
    for key in keys:
        if kind == "Pod":
            amount = _pod_usage(body, key) if _pod_counts(body) else 0
        else:
            amount = 1 if key in (count_key, BARE_COUNT_KEYS.get(kind)) else 0
        if amount:
            usage[key] = amount
    return usage


def _pod_counts(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def _pod_usage(pod: dict, key: str) -> int:
    if key in ("pods", "count/pods"):
        return 1
    if key in ("cpu", "memory"):
        return pod_requests(pod).get(key, 0)
    scope, _, res = key.partition(".")
    if scope == "requests":
        return pod_requests(pod).get(res, 0)
    if scope == "limits" and res in ("cpu", "memory", "ephemeral-storage"):
        return pod_limits(pod).get(res, 0)     # limits.<extended> is accepted, never enforced
    return 0


def quota_used(view: View, quota: dict) -> dict[str, int]:
    ns = object_namespace("ResourceQuota", quota)
    keys = sorted(((quota.get("spec") or {}).get("hard") or {}).keys())
    used = {k: 0 for k in keys}
    for (kind, obj_ns, _), body in sorted(view.objects.items()):
        if obj_ns != ns:
            continue
        for k, v in object_usage(body, keys).items():
            used[k] += v
    return used


def _resource_of(key: str) -> str:
    for prefix in ("requests.", "limits."):
        if key.startswith(prefix):
            return key[len(prefix):]
    return key


def format_amount_for_key(key: str, amount: int) -> str:
    return format_amount(_resource_of(key), amount)


def check_quota(view: View, body: dict) -> None:
    """Reject a create that would exceed a quota of its namespace (``used + requested <= hard``)."""
    kind = body.get("kind", "")
    info = KINDS.get(kind)
    if info is None or not info.namespaced or kind == "Event":
        return
    ns = object_namespace(kind, body)
    name = body["metadata"]["name"]
    plural = info.plural if not info.group else f"{info.plural}.{info.group}"
    for quota in view.list("ResourceQuota", ns):
        qname = quota["metadata"]["name"]
        hard_raw = (quota.get("spec") or {}).get("hard") or {}
        keys = sorted(hard_raw)
        if kind == "Pod":
            missing = _missing_cpu_memory(body, keys)
            if missing:
                raise ForbiddenError(plural, name,
                                     f"failed quota: {qname}: must specify {','.join(missing)}")
        requested = object_usage(body, keys)
        if not requested:
            continue
        used = quota_used(view, quota)
        exceeded = [k for k in keys if k in requested
                    and used[k] + requested[k] > canonical(_resource_of(k), hard_raw[k])]
        if exceeded:
            def pairs(values: dict[str, int]) -> str:
                return ",".join(f"{k}={format_amount_for_key(k, values[k])}" for k in exceeded)
            hard = {k: canonical(_resource_of(k), hard_raw[k]) for k in exceeded}
            raise ForbiddenError(plural, name, f"exceeded quota: {qname}, requested: "
                                 f"{pairs(requested)}, used: {pairs(used)}, limited: {pairs(hard)}")


def _missing_cpu_memory(pod: dict, keys: list[str]) -> list[str]:
    """Quota keys on cpu/memory that some container of the pod does not declare."""
    missing = []
    containers = (pod.get("spec") or {}).get("containers") or []
    for key in keys:
        if key not in QUOTA_CPU_MEMORY:
            continue
        field_name = "limits" if key.startswith("limits.") else "requests"
        res = _resource_of(key)
        for container in containers:
            req, lim = container_resources(container)
            if res not in (lim if field_name == "limits" else req):
                missing.append(key)
                break
    return sorted(missing)


def refresh_quotas(view: View) -> None:
    """Keep every ResourceQuota's ``status.hard`` and ``status.used`` current."""
    for quota in view.list("ResourceQuota"):
        hard_raw = (quota.get("spec") or {}).get("hard") or {}
        used = quota_used(view, quota)
        status = {"hard": {k: format_amount_for_key(k, canonical(_resource_of(k), v))
                           for k, v in sorted(hard_raw.items())},
                  "used": {k: format_amount_for_key(k, v) for k, v in sorted(used.items())}}
        if quota.get("status") != status:
            new = copy.deepcopy(quota)
            new["status"] = status
            view.update(new)
