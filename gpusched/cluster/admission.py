"""Admission: what the API server's admission chain does before an object reaches the store.

Upstream order for a create (kube-apiserver: decode and defaulting, mutating admission, then
validation of the *mutated* object, then validating admission; plugin order as
``pkg/kubeapiserver/options/plugins.go`` ``AllOrderedPlugins``):

1. mutating admission
   - NamespaceLifecycle: a namespaced object needs its Namespace (``namespaces "x" not found``);
     ``default`` exists implicitly and is created on first use;
   - LimitRanger ``Admit`` (``plugin/pkg/admission/limitranger``): Container defaults
     (``default``/``defaultRequest``) into containers that lack them, noted in the annotation
     ``kubernetes.io/limit-ranger``;
   - Priority (``plugin/pkg/admission/priority``): ``spec.priorityClassName`` resolved to
     ``spec.priority``/``spec.preemptionPolicy`` (the globalDefault class written when none);
     PriorityClass objects: one ``globalDefault``, ``value``/``preemptionPolicy`` immutable;
   - RuntimeClass ``Admit`` (``plugin/pkg/admission/runtimeclass``): ``spec.overhead`` from
     ``overhead.podFixed``, ``scheduling.nodeSelector`` merged (a conflicting key is refused) and
     ``scheduling.tolerations`` merged (``MergeTolerations``);
   - gpusched: a new pod's ``gpusched.io/assigned-*`` annotations are dropped and an update
     keeps the stored ones: device holdings are the cluster's own state (``kubelet.admission``).
2. validation of the mutated pod (``objects.validation``), so a LimitRange default that leaves
   an extended resource's request unequal to its limit fails as upstream's validation does;
3. validating admission: LimitRanger ``Validate`` (min, max, maxLimitRequestRatio for
   Container and Pod), RuntimeClass ``Validate`` (overhead must come from the RuntimeClass),
   ResourceQuota last (``cluster.quota``: scopes, scopeSelector, what upstream tracks).

A rejection raises a :mod:`gpusched.errors` type; the caller's transaction rolls back, so a
rejected apply changes nothing.

Neighbours: called by ``apiserver.apply``, ``apiserver.api_ops`` and the controllers that create
pods; ``cluster.quota`` (ResourceQuota), ``apiserver.resources`` (pod totals).
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.config_admission import admit_config_map
from gpusched.cluster.kinds_admission import (admit_claim_update, admit_service,
                                              admit_volume_update, default_storage_class,
                                              default_toleration_seconds, label_namespace)
from gpusched.cluster.quota import check_quota, pod_qos, refresh_quotas
from gpusched.cluster.apiserver.resources import (container_resources, format_amount,
                                        limit_range_pod_limits, limit_range_pod_requests)
from gpusched.cluster.apiserver.view import View, copy_tree, object_namespace
from gpusched.cluster.clock.load import check_load
from gpusched.errors import FieldError, ForbiddenError, InvalidError, NotFoundError
from gpusched.objects.kinds import KINDS
from gpusched.objects.quantity import canonical
from gpusched.objects.types import ANN_ASSIGNED_DEVICES, ANN_ASSIGNED_GPUS, ANN_START_TIME

__all__ = ["admit", "check_quota", "refresh_quotas"]
SYSTEM_PRIORITY_CLASSES = {"system-cluster-critical": 2000000000,
                           "system-node-critical": 2000001000}
CLUSTER_ANNOTATIONS = (ANN_ASSIGNED_GPUS, ANN_ASSIGNED_DEVICES, ANN_START_TIME)
LIMIT_RANGER_ANNOTATION = "kubernetes.io/limit-ranger"


def admit(view: View, body: dict[str, Any], old: dict[str, Any] | None,
          owned: bool = False) -> dict[str, Any]:
    """Run the admission chain on ``body`` (``old`` = the stored object on update); ``owned``:
    the caller hands ``body`` over (its own copy), changed in place instead of copied."""
    kind = body.get("kind", "")
    if not owned:
        body = copy_tree(body)
    ensure_namespace(view, kind, body)
    _default_or_allocate(view, kind, body, old)
    _admit_policy_and_pod(view, kind, body, old)
    if old is None:
        check_quota(view, body)
    return body


def _default_or_allocate(view: View, kind: str, body: dict[str, Any], old: dict[str, Any] | None) -> None:
    """The kind's first admission step: defaults, update rules, allocations."""
    if kind == "Pod":
        default_toleration_seconds(body)            # DefaultTolerationSeconds (create, update)
    elif kind == "PersistentVolumeClaim" and old is None:
        default_storage_class(view, body)           # DefaultStorageClass
    elif kind == "PersistentVolumeClaim" and old is not None:
        admit_claim_update(body, old)
    elif kind == "PersistentVolume" and old is not None:
        admit_volume_update(body, old)
    elif kind == "Service":
        admit_service(view, body, old)              # ClusterIP / NodePort allocation
    elif kind == "Namespace":
        label_namespace(body)
    elif kind == "Deployment":
        check_load(body)                            # gpusched.io/load (cluster.clock.load)
    elif kind == "ConfigMap":
        admit_config_map(view, body)                # bounds of the configs gpusched reads


def _admit_policy_and_pod(view: View, kind: str, body: dict[str, Any], old: dict[str, Any] | None) -> None:
    """The second step: PriorityClass rules, LimitRange defaults, a Pod's create or update."""
    if kind == "PriorityClass":
        admit_priority_class(view, body, old)
    elif kind == "LimitRange":
        default_limit_range(body)
    elif kind == "Pod":
        if old is None:
            _admit_new_pod(view, body)
        else:
            keep_cluster_annotations(old, body)


SCHEDULING_GATED = "Scheduling is blocked due to non-empty scheduling gates"


def _admit_new_pod(view: View, pod: dict[str, Any]) -> None:
    from gpusched.objects.validation import validate_object
    drop_cluster_annotations(pod)
    pod.pop("status", None)                   # PodStrategy.PrepareForCreate: status is the cluster's
    default_limit_ranges(view, pod)
    resolve_priority(view, pod)
    runtime_class = lookup_runtime_class(view, pod)
    set_runtime_class(pod, runtime_class)
    validate_object(pod, owned=True)          # the mutated object, as upstream validates it
    validate_limit_ranges(view, pod)
    validate_overhead(pod, runtime_class)
    pod["status"] = {"phase": "Pending", "qosClass": pod_qos(pod)}
    if (pod.get("spec") or {}).get("schedulingGates"):   # strategy.go applySchedulingGatedCondition
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False",
                                        "reason": "SchedulingGated", "message": SCHEDULING_GATED,
                                        "lastProbeTime": None, "lastTransitionTime": view.timestamp()}]


# ---- cluster-owned annotations ------------------------------------------------------------------

def drop_cluster_annotations(pod: dict[str, Any]) -> None:
    """A user's ``gpusched.io/assigned-*``/``start-time`` never become device holdings."""
    annotations = (pod.get("metadata") or {}).get("annotations")
    if not annotations:
        return
    for key in CLUSTER_ANNOTATIONS:
        annotations.pop(key, None)


def keep_cluster_annotations(old: dict[str, Any], new: dict[str, Any]) -> None:
    """On update the stored holdings win over whatever the request carried."""
    old_annotations = (old.get("metadata") or {}).get("annotations") or {}
    annotations = new.setdefault("metadata", {}).setdefault("annotations", {})
    for key in CLUSTER_ANNOTATIONS:
        if key in old_annotations:
            annotations[key] = old_annotations[key]
        else:
            annotations.pop(key, None)
    if not annotations:
        new["metadata"].pop("annotations")


# ---- 1. namespaces -----------------------------------------------------------------------------

def ensure_namespace(view: View, kind: str, body: dict[str, Any]) -> None:
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

def admit_priority_class(view: View, body: dict[str, Any], old: dict[str, Any] | None) -> None:
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


def default_priority_class(view: View) -> dict[str, Any] | None:
    """The globalDefault class; with several (a race upstream), the lowest value wins."""
    defaults = [pc for pc in view.list("PriorityClass") if pc.get("globalDefault")]
    defaults.sort(key=lambda pc: (int(pc.get("value", 0)), pc["metadata"]["name"]))
    return defaults[0] if defaults else None


def resolve_priority(view: View, pod: dict[str, Any]) -> None:
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


# ---- LimitRanger --------------------------------------------------------------------------------

def default_limit_range(body: dict[str, Any]) -> None:
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


def _containers(spec: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return ([("container", c) for c in spec.get("containers") or []]
            + [("init container", c) for c in spec.get("initContainers") or []])


def default_limit_ranges(view: View, pod: dict[str, Any]) -> None:
    """``PodMutateLimitFunc``/``mergeContainerResources``: per LimitRange, its Container
    defaults fill the limits and requests a container lacks; the annotation lists what was set
    (``LimitRanger plugin set: cpu, memory request for container c; cpu limit for container c``)."""
    spec = pod.setdefault("spec", {})
    notes: list[str] = []
    for lr in view.list("LimitRange", object_namespace("Pod", pod)):
        limits: dict[str, Any] = {}
        requests: dict[str, Any] = {}
        for item in (lr.get("spec") or {}).get("limits") or []:
            if item.get("type") == "Container":
                requests.update(item.get("defaultRequest") or {})
                limits.update(item.get("default") or {})
        if not limits and not requests:
            continue
        for prefix, container in _containers(spec):
            notes += _merge_defaults(container, prefix, limits, requests)
    if notes:
        annotations = pod.setdefault("metadata", {}).setdefault("annotations", {})
        annotations[LIMIT_RANGER_ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)


def _merge_defaults(container: dict[str, Any], prefix: str, limits: dict[str, Any], requests: dict[str, Any]) -> list[str]:
    resources = container.setdefault("resources", {})
    current_limits = resources.setdefault("limits", {})
    current_requests = resources.setdefault("requests", {})
    for res, value in current_limits.items():          # API defaulting ran before admission
        current_requests.setdefault(res, value)
    set_limits = sorted(r for r in limits if r not in current_limits)
    set_requests = sorted(r for r in requests if r not in current_requests)
    for res in set_limits:
        current_limits[res] = limits[res]
    for res in set_requests:
        current_requests[res] = requests[res]
    for field_name in ("limits", "requests"):
        if not resources[field_name]:
            del resources[field_name]
    notes = []
    name = container.get("name", "")
    if set_requests:
        notes.append(f"{', '.join(set_requests)} request for {prefix} {name}")
    if set_limits:
        notes.append(f"{', '.join(set_limits)} limit for {prefix} {name}")
    return notes


def validate_limit_ranges(view: View, pod: dict[str, Any]) -> None:
    """``PodValidateLimitFunc``: Container items against every container and init container,
    Pod items against ``podRequests``/``podLimits`` (no overhead); errors aggregated."""
    spec = pod.get("spec") or {}
    errors: list[str] = []
    for lr in view.list("LimitRange", object_namespace("Pod", pod)):
        for item in (lr.get("spec") or {}).get("limits") or []:
            kind = item.get("type")
            if kind == "Container":
                for _, container in _containers(spec):
                    req, lim = container_resources(container)
                    errors += _limit_errors(item, "Container", req, lim)
            elif kind == "Pod":
                errors += _limit_errors(item, "Pod", limit_range_pod_requests(pod),
                                        limit_range_pod_limits(pod))
    if errors:
        detail = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        raise ForbiddenError("pods", pod["metadata"]["name"], detail)


def _limit_errors(item: dict[str, Any], scope: str, req: dict[str, int], lim: dict[str, int]) -> list[str]:
    """min, then max, then maxLimitRequestRatio, resources in name order; at most one error
    per resource and constraint, as ``minConstraint``/``maxConstraint``/
    ``limitRequestRatioConstraint`` in limitranger.go."""
    return (_min_errors(item, scope, req, lim) + _max_errors(item, scope, req, lim)
            + _ratio_errors(item, scope, req, lim))


def _min_errors(item: dict[str, Any], scope: str, req: dict[str, int], lim: dict[str, int]) -> list[str]:
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
    return out


def _max_errors(item: dict[str, Any], scope: str, req: dict[str, int], lim: dict[str, int]) -> list[str]:
    out: list[str] = []
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
    return out


def _ratio_errors(item: dict[str, Any], scope: str, req: dict[str, int], lim: dict[str, int]) -> list[str]:
    out: list[str] = []
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


# ---- RuntimeClass -------------------------------------------------------------------------------

def lookup_runtime_class(view: View, pod: dict[str, Any]) -> dict[str, Any] | None:
    """``prepareObjects``: the pod's RuntimeClass (``pod rejected: RuntimeClass "x" not found``)."""
    name = (pod.get("spec") or {}).get("runtimeClassName")
    if not name:
        return None
    found = view.get("RuntimeClass", name)
    if found is None:
        raise ForbiddenError("pods", pod["metadata"]["name"],
                             f'pod rejected: RuntimeClass "{name}" not found')
    return found


def _overhead_of(runtime_class: dict[str, Any] | None) -> dict[str, int] | None:
    fixed = ((runtime_class or {}).get("overhead") or {}).get("podFixed")
    if fixed is None:
        return None
    return {str(k): canonical(str(k), v) for k, v in fixed.items()}


def _pod_overhead(pod: dict[str, Any]) -> dict[str, int] | None:
    overhead = (pod.get("spec") or {}).get("overhead")
    if overhead is None:
        return None
    return {str(k): canonical(str(k), v) for k, v in overhead.items()}


OVERHEAD_MISMATCH = "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"


def set_runtime_class(pod: dict[str, Any], runtime_class: dict[str, Any] | None) -> None:
    """``setOverhead`` then ``setScheduling`` (plugin/pkg/admission/runtimeclass/admission.go)."""
    if runtime_class is None:
        return
    spec = pod.setdefault("spec", {})
    name = pod["metadata"]["name"]
    fixed = _overhead_of(runtime_class)
    if fixed is not None:
        current = _pod_overhead(pod)
        if current is not None and current != fixed:
            raise ForbiddenError("pods", name, OVERHEAD_MISMATCH)
        spec["overhead"] = copy_tree(runtime_class["overhead"]["podFixed"])
    scheduling = runtime_class.get("scheduling")
    if not scheduling:
        return
    selector = dict(spec.get("nodeSelector") or {})
    for key, value in (scheduling.get("nodeSelector") or {}).items():
        if key in selector and selector[key] != value:
            raise ForbiddenError("pods", name, f"conflict: runtimeClass.scheduling.nodeSelector"
                                 f"[{key}] = {value}; pod.spec.nodeSelector[{key}] = {selector[key]}")
        selector[key] = value
    if selector:
        spec["nodeSelector"] = selector
    merged = merge_tolerations(list(spec.get("tolerations") or []),
                               list(scheduling.get("tolerations") or []))
    if merged:
        spec["tolerations"] = merged


def validate_overhead(pod: dict[str, Any], runtime_class: dict[str, Any] | None) -> None:
    """``validateOverhead``: a pod's overhead must be its RuntimeClass's."""
    fixed = _overhead_of(runtime_class)
    current = _pod_overhead(pod)
    name = pod["metadata"]["name"]
    if fixed is not None:
        if current != fixed:
            raise ForbiddenError("pods", name, OVERHEAD_MISMATCH)
    elif current is not None:
        raise ForbiddenError("pods", name, "pod rejected: Pod Overhead set without corresponding "
                             "RuntimeClass defined Overhead")


def _is_superset(big: dict[str, Any], small: dict[str, Any]) -> bool:
    """``isSuperset`` (pkg/util/tolerations/tolerations.go): ``big`` tolerates all ``small`` does."""
    if big.get("effect") and big.get("effect") != small.get("effect"):
        return False
    if big.get("key") != small.get("key") and not (
            not big.get("key") and big.get("operator") == "Exists"):
        return False
    if (big.get("operator") or "Equal") == "Equal":
        if (small.get("operator") or "Equal") != "Equal" or big.get("value") != small.get("value"):
            return False
    if big.get("effect") == "NoExecute":
        big_s, small_s = big.get("tolerationSeconds"), small.get("tolerationSeconds")
        if big_s is not None and (small_s is None or small_s > big_s):
            return False
    return True


def merge_tolerations(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``MergeTolerations``: both lists, a toleration dropped when another covers it."""
    every = first + second
    merged: list[dict[str, Any]] = []
    for i, toleration in enumerate(every):
        if any(_is_superset(kept, toleration) for kept in merged):
            continue
        if any(other != toleration and _is_superset(other, toleration) for other in every[i + 1:]):
            continue
        merged.append(toleration)
    return merged
