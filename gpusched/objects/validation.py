"""``validate(manifest) -> dict``: per-kind validation and defaulting with Kubernetes' wording.

Returns a deep copy of the manifest's object, defaulted (namespace ``default``, limit-only
resources copied into requests, restartPolicy, Job counts, PriorityClass preemptionPolicy,
LimitRange defaults ...), or raises ``InvalidError(kind, name, [FieldError...], where="<file>:
document <i>")``: ``x.yaml: document 0: The Pod "p" is invalid: spec.containers[0]...``.
Unknown fields are kept untouched. Cross-object rules (PriorityClass existence, one
globalDefault, quota, LimitRange application) are admission's, in ``cluster/admission.py``.

Per kind (PodSpec rules are in ``objects.podspec``):

- every kind: ``metadata.name`` a DNS-1123 subdomain (a DNS-1123 label for Namespaces), labels and
  annotation keys; namespaced kinds get ``metadata.namespace: default`` when absent; a namespace
  on a cluster-scoped kind is dropped, as kubectl does.
- Pod: the PodSpec, gpusched annotations (``gpusched.io/gpu-milli`` 1..1000,
  ``gpusched.io/duration`` a duration).
- Deployment / ReplicaSet / DaemonSet / Job: ``spec.selector`` required (optional for Job, whose
  controller generates one) and matching the template labels; ``replicas >= 0``; the template is
  validated as a pod at ``spec.template.spec...``; restartPolicy ``Always`` (workloads) or
  ``OnFailure``/``Never`` (Job); Job parallelism/completions/backoffLimit/activeDeadlineSeconds
  non-negative, defaulted to 1/1/6 as upstream.
- PriorityClass: ``value`` required, at most 1000000000 unless a known ``system-`` class;
  preemptionPolicy ``PreemptLowerPriority`` (default) or ``Never``.
- ResourceQuota: ``spec.hard`` quantities; ``spec.scopes``/``scopeSelector`` (supported, not
  conflicting, valid for the hard resources, operators). LimitRange: item types, quantities, object defaulting
  (``nvidia-gpu-stack.md`` 7.4) and the min <= defaultRequest <= default <= max order.
- PodDisruptionBudget: exactly one of minAvailable / maxUnavailable (an integer or a percent).
- ConfigMap: keys are config keys, ``data`` values strings.
- Node: taints, capacity/allocatable quantities.
- Service, Endpoints(Slice), ServiceAccount, Secret, StorageClass, PersistentVolume(Claim),
  NetworkPolicy, HorizontalPodAutoscaler, VerticalPodAutoscaler: ``objects.validation_kinds``.
- Lease (``coordination.k8s.io/v1``): holderIdentity a string, leaseDurationSeconds > 0,
  leaseTransitions >= 0, acquireTime/renewTime RFC 3339 (MicroTime).
- NodePool (``gpusched.io/v1alpha1``, cluster-scoped), gpusched's compact node definition::

      spec:
        count: 2                 # or names: [gpu-node-1, gpu-node-2] (exactly one of the two)
        gpu: {model: A100-40GB, count: 8}   # model checked against the catalog by devices, not here
        cpu: "64"                # quantities
        memory: 512Gi
        labels: {gpu-type: a100}
        taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
        migLayout: all-1g.5gb    # or migConfig (a string)

  Other fields are kept for the layers that read them.

Neighbours: manifest (Manifest), podspec, fieldcheck, names, kinds; used by cluster admission,
the CLI and the API server.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Callable

from gpusched.errors import FieldError, InvalidError, ManifestError
from gpusched.objects.fieldcheck import Errors, quantity_text
from gpusched.objects import limits
from gpusched.objects.kinds import ACCEPTED_API_VERSIONS, KINDS
from gpusched.objects.manifest import Manifest
from gpusched.objects.names import (
    config_map_key_errors, dns1123_label_errors, dns1123_subdomain_errors, label_value_errors,
    qualified_name_errors,
)
from gpusched.objects.podspec import (
    TAINT_EFFECTS, validate_label_selector, validate_labels, validate_pod_annotations, validate_pod_spec,
    validate_tolerations,
)
from gpusched.objects.selectors import matches, selector_from_dict
from gpusched.objects.validation_kinds import VALIDATORS as CORE_KIND_VALIDATORS

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASSES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}
_PERCENT = re.compile(r"^[0-9]+%$")
_QUOTA_STANDARD = frozenset({
    "pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
    "persistentvolumeclaims", "services.nodeports", "services.loadbalancers", "cpu", "memory", "storage",
    "ephemeral-storage", "requests.cpu", "requests.memory", "requests.storage", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage"})


def validate(manifest: Manifest) -> dict[str, Any]:
    """Validate and default one manifest's object; raise InvalidError naming file and document."""
    return validate_object(manifest.obj, where=manifest.where, source=manifest.source, index=manifest.index)

Validator = Callable[[dict[str, Any], Errors], Any]


def validate_object(obj: dict[str, Any], where: str = "", source: str = "", index: int | None = None) -> dict[str, Any]:
    """``validate`` for an object that did not come from a file (the API server)."""
    if not isinstance(obj, dict) or obj.get("kind") not in KINDS:
        found = obj.get("kind") if isinstance(obj, dict) else None
        raise ManifestError(source or "<object>", index, "kind", f'no matches for kind "{found}"')
    if obj.get("apiVersion") not in ACCEPTED_API_VERSIONS[obj["kind"]]:
        raise ManifestError(source or "<object>", index, "",
                            f'no matches for kind "{obj["kind"]}" in version "{obj.get("apiVersion")}"')
    limits.check_object(obj, where)        # depth, NaN, 1.5 MiB: before anything walks it
    obj = copy.deepcopy(obj)
    kind: str = obj["kind"]
    errors = Errors()
    _metadata(obj, kind, errors)
    validator: Validator = _VALIDATORS.get(kind, _nothing)
    validator(obj, errors)
    if errors:
        meta = obj.get("metadata")
        name = (meta.get("name") or meta.get("generateName") or "") if isinstance(meta, dict) else ""
        raise InvalidError(kind, str(name), errors.items, where=where)
    return obj


def _nothing(obj: dict[str, Any], e: Errors) -> None:
    return None


# ----------------------------------------------------------------------------------------------
# metadata


def _metadata(obj: dict[str, Any], kind: str, e: Errors) -> None:
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        e.invalid("metadata", meta, "must be an object")
        return
    name_errors = dns1123_label_errors if kind == "Namespace" else dns1123_subdomain_errors
    name = e.string(meta, "name", "metadata.name")
    generate = e.string(meta, "generateName", "metadata.generateName")
    if name:
        for msg in name_errors(name):
            e.invalid("metadata.name", name, msg)
    elif generate:
        for msg in name_errors(generate[:-1] + "a" if generate.endswith("-") else generate):
            e.invalid("metadata.generateName", generate, msg)
    elif "name" not in meta or name == "":
        e.required("metadata.name", "name or generateName is required")
    if KINDS[kind].namespaced:
        namespace = e.string(meta, "namespace", "metadata.namespace")
        if not namespace and not isinstance(meta.get("namespace"), (int, float, dict, list)):
            meta["namespace"] = "default"
        elif namespace:
            for msg in dns1123_label_errors(namespace):
                e.invalid("metadata.namespace", namespace, msg)
    else:
        meta.pop("namespace", None)
    validate_labels(e.string_map(meta, "labels", "metadata.labels"), "metadata.labels", e)
    annotations = e.string_map(meta, "annotations", "metadata.annotations")
    for key in annotations:
        for msg in qualified_name_errors(key):
            e.invalid("metadata.annotations", key, msg)
    if kind == "Pod":
        validate_pod_annotations(annotations, "metadata.annotations", e)


# ----------------------------------------------------------------------------------------------
# Pods and workloads


def _spec(obj: dict[str, Any], e: Errors) -> dict[str, Any]:
    spec = obj.get("spec")
    if spec is None:
        spec = obj["spec"] = {}
    if not isinstance(spec, dict):
        e.invalid("spec", spec, "must be an object")
        return {}
    return spec


def _pod(obj: dict[str, Any], e: Errors) -> None:
    if obj.get("spec") is None:
        e.required("spec.containers")
        return
    validate_pod_spec(obj.get("spec"), "spec", e)


def _template(spec: dict[str, Any], e: Errors, restart_policies: tuple[str, ...]) -> dict[str, Any]:
    """Validate ``spec.template``; return its labels."""
    template = e.mapping(spec, "template", "spec.template")
    if template is None:
        e.required("spec.template")
        return {}
    meta = e.mapping(template, "metadata", "spec.template.metadata") or {}
    labels = e.string_map(meta, "labels", "spec.template.metadata.labels")
    validate_labels(labels, "spec.template.metadata.labels", e)
    validate_pod_annotations(e.string_map(meta, "annotations", "spec.template.metadata.annotations"),
                             "spec.template.metadata.annotations", e)
    validate_pod_spec(template.get("spec"), "spec.template.spec", e, restart_policies)
    return labels


def _selector_and_template(obj: dict[str, Any], e: Errors, restart_policies: tuple[str, ...], selector_required: bool,
                           ) -> dict[str, Any]:
    spec = _spec(obj, e)
    labels = _template(spec, e, restart_policies)
    selector = spec.get("selector")
    if selector is None:
        if selector_required:
            e.required("spec.selector")
        return spec
    errors_before = len(e.items)
    validate_label_selector(selector, "spec.selector", e)
    if len(e.items) != errors_before or not isinstance(selector, dict):
        return spec
    parsed = selector_from_dict(selector)
    if parsed is not None and not parsed.match_labels and not parsed.match_expressions:
        e.invalid("spec.selector", selector, f"empty selector is invalid for {obj['kind'].lower()}")
    elif not matches(parsed, labels):
        e.invalid("spec.template.metadata.labels", labels, "`selector` does not match template `labels`")
    return spec


def _replicas(spec: dict[str, Any], e: Errors) -> None:
    if "replicas" not in spec or spec["replicas"] is None:
        spec["replicas"] = 1
    e.integer(spec, "replicas", "spec.replicas", minimum=0, maximum=limits.MAX_REPLICAS)


def _deployment(obj: dict[str, Any], e: Errors) -> None:
    spec = _selector_and_template(obj, e, ("Always",), selector_required=True)
    _replicas(spec, e)
    _strategy_defaults(spec, "strategy", {"maxUnavailable": "25%", "maxSurge": "25%"})
    spec.setdefault("progressDeadlineSeconds", 600)


def _daemonset(obj: dict[str, Any], e: Errors) -> None:
    spec = _selector_and_template(obj, e, ("Always",), selector_required=True)
    _strategy_defaults(spec, "updateStrategy", {"maxUnavailable": 1, "maxSurge": 0})


def _strategy_defaults(spec: dict[str, Any], field: str, rolling: dict[str, Any]) -> None:
    """apps/v1 defaults.go SetDefaults_Deployment / SetDefaults_DaemonSet: RollingUpdate with
    its limits, revisionHistoryLimit 10 (kubectl rollout status reads the strategy type)."""
    if not isinstance(spec, dict):
        return
    strategy = spec.setdefault(field, {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate" and isinstance(strategy.setdefault("rollingUpdate", {}), dict):
            for key, value in rolling.items():
                strategy["rollingUpdate"].setdefault(key, value)
    spec.setdefault("revisionHistoryLimit", 10)


def _job(obj: dict[str, Any], e: Errors) -> None:
    spec = _selector_and_template(obj, e, ("OnFailure", "Never"), selector_required=False)
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    bounds = {"completions": limits.MAX_JOB_COMPLETIONS, "parallelism": limits.MAX_JOB_PARALLELISM}
    for field in ("completions", "parallelism", "backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        e.integer(spec, field, f"spec.{field}", minimum=0, maximum=bounds.get(field))


# ----------------------------------------------------------------------------------------------
# Policy kinds


def _priority_class(obj: dict[str, Any], e: Errors) -> None:
    name = str(obj["metadata"].get("name") or "") if isinstance(obj.get("metadata"), dict) else ""
    value = obj.get("value")
    if value is None:
        e.required("value")
    value = e.integer(obj, "value", "value")
    global_default = e.boolean(obj, "globalDefault", "globalDefault")
    if name.startswith("system-"):
        wanted = SYSTEM_PRIORITY_CLASSES.get(name)
        if wanted is None:
            problem = f"{name} is not a known system priority class"
        elif value != wanted:
            problem = f"value of {name} PriorityClass must be {wanted}"
        elif global_default:
            problem = f"globalDefault of {name} PriorityClass must be false"
        else:
            problem = ""
        if problem:
            e.forbidden("metadata.name", "priority class names with 'system-' prefix are reserved for system use "
                        f"only. error: {problem}")
    elif value is not None and value > HIGHEST_USER_DEFINABLE_PRIORITY:
        e.forbidden("value", f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}")
    if obj.get("preemptionPolicy") is None:
        obj["preemptionPolicy"] = "PreemptLowerPriority"
    if obj["preemptionPolicy"] not in ("PreemptLowerPriority", "Never"):
        e.unsupported("preemptionPolicy", obj["preemptionPolicy"], ("PreemptLowerPriority", "Never"))


def _resource_quota(obj: dict[str, Any], e: Errors) -> None:
    spec = _spec(obj, e)
    for name, value in sorted((e.mapping(spec, "hard", "spec.hard") or {}).items()):
        path = f"spec.hard[{name}]"
        if "/" not in name and name not in _QUOTA_STANDARD and not name.startswith(("hugepages-", "requests.hugepages-")):
            e.invalid(path, name, "must be a standard resource for quota")
            continue
        e.quantity(value, path)
    _quota_scopes(spec, e)


# ResourceQuota scopes, pkg/apis/core/validation/validation.go validateResourceQuotaScopes and
# validateScopedResourceSelectorRequirement; values render as Go's %#v of the internal types.
_QUOTA_SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
                 "CrossNamespacePodAffinity", "VolumeAttributesClass")
_POD_COMPUTE_QUOTA = frozenset({"cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu",
                                "requests.memory"})
_EXISTS_ONLY = ("BestEffort", "NotBestEffort", "Terminating", "NotTerminating", "CrossNamespacePodAffinity")
_CONFLICTING = (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating"))


def _scope_valid_for(scope: str, resource: str) -> bool:
    """``IsResourceQuotaScopeValidForResource``."""
    if scope in ("Terminating", "NotTerminating", "NotBestEffort", "PriorityClass",
                 "CrossNamespacePodAffinity"):
        return resource == "pods" or resource in _POD_COMPUTE_QUOTA
    if scope == "BestEffort":
        return resource == "pods"
    return True


def _go_strings(type_name: str, values: list[Any] | None) -> str:
    if values is None:
        return f"[]{type_name}(nil)"
    return f"[]{type_name}{{" + ", ".join(f'"{v}"' for v in values) + "}"


def _go_selector(selector: dict[str, Any]) -> str:
    reqs = ", ".join(
        f'core.ScopedResourceSelectorRequirement{{ScopeName:"{r.get("scopeName", "")}", '
        f'Operator:"{r.get("operator", "")}", Values:{_go_strings("string", r.get("values"))}}}'
        for r in selector.get("matchExpressions") or [] if isinstance(r, dict))
    return f"&core.ScopeSelector{{MatchExpressions:[]core.ScopedResourceSelectorRequirement{{{reqs}}}}}"


def _invalid_go(e: Errors, path: str, go_value: str, detail: str) -> None:
    e.items.append(FieldError(path, "Invalid value", go_value, detail, False))


def _quota_scopes(spec: dict[str, Any], e: Errors) -> None:
    quantities = spec.get("hard")
    hard = sorted(k for k in quantities if isinstance(k, str)) if isinstance(quantities, dict) else []
    standard = [k for k in hard if "/" not in k and (k in _QUOTA_STANDARD or k.startswith(("hugepages-", "requests.hugepages-")))]
    scopes = e.items_of(spec, "scopes", "spec.scopes")
    rendered = _go_strings("core.ResourceQuotaScope", scopes)
    for scope in scopes or []:
        if scope not in _QUOTA_SCOPES:
            _invalid_go(e, "spec.scopes", rendered, "unsupported scope")
        for key in standard:
            if not _scope_valid_for(str(scope), key):
                _invalid_go(e, "spec.scopes", rendered, "unsupported scope applied to resource")
    for pair in _CONFLICTING:
        if all(p in (scopes or []) for p in pair):
            _invalid_go(e, "spec.scopes", rendered, "conflicting scopes")
    selector = e.mapping(spec, "scopeSelector", "spec.scopeSelector")
    if selector is None:
        return
    path = "spec.scopeSelector.matchExpressions"
    names = []
    for req in e.items_of(selector, "matchExpressions", path) or []:
        if not isinstance(req, dict):
            continue
        name, operator, values = req.get("scopeName"), req.get("operator"), req.get("values") or []
        names.append(name)
        if name not in _QUOTA_SCOPES:
            e.invalid(f"{path}.scopeName", name, "unsupported scope")
        for key in standard:
            if not _scope_valid_for(str(name), key):
                _invalid_go(e, path, _go_selector(selector), "unsupported scope applied to resource")
        if name in _EXISTS_ONLY and operator != "Exists":
            e.invalid(f"{path}.operator", operator, "must be 'Exist' when scope is any of "
                      "ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, "
                      "ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or "
                      "ResourceQuotaScopeCrossNamespacePodAffinity")
        if operator in ("In", "NotIn"):
            if not values:
                e.required(f"{path}.values", "must be at least one value when `operator` is 'In' "
                           "or 'NotIn' for scope selector")
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                _invalid_go(e, f"{path}.values", _go_strings("string", values), "must be no value when "
                          "`operator` is 'Exist' or 'DoesNotExist' for scope selector")
        else:
            e.invalid(f"{path}.operator", operator, "not a valid selector operator")
    for pair in _CONFLICTING:
        if all(p in names for p in pair):
            _invalid_go(e, path, rendered, "conflicting scopes")


_LIMIT_TYPES = ("Pod", "Container", "PersistentVolumeClaim")
_LIMIT_FIELDS = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")


def _limit_range(obj: dict[str, Any], e: Errors) -> None:
    spec = _spec(obj, e)
    items = e.items_of(spec, "limits", "spec.limits")
    if items is None:
        e.required("spec.limits")
    for i, item in enumerate(items or ()):
        p = f"spec.limits[{i}]"
        if not isinstance(item, dict):
            e.invalid(p, item, "must be an object")
            continue
        kind = item.get("type")
        if kind not in _LIMIT_TYPES:
            e.unsupported(f"{p}.type", kind if kind is not None else "", _LIMIT_TYPES)
        parsed: dict[str, dict[str, Any]] = {}
        for field in _LIMIT_FIELDS:
            values = e.mapping(item, field, f"{p}.{field}") or {}
            parsed[field] = {}
            for name, value in sorted(values.items()):
                amount = e.quantity(value, f"{p}.{field}[{name}]")
                if amount is not None:
                    parsed[field][name] = (amount, quantity_text(value))
        if kind == "Pod":
            for field in ("default", "defaultRequest"):
                if item.get(field):
                    e.forbidden(f"{p}.{field}", "may not be specified when `type` is 'Pod'")
        if kind == "Container":
            _default_limit_range_item(item, parsed)
        _limit_order(parsed, p, e)


def _default_limit_range_item(item: dict[str, Any], parsed: dict[str, dict[str, Any]]) -> None:
    """v1 defaulting (type Container): default=max, defaultRequest=default, else defaultRequest=min."""
    for source, target in (("max", "default"), ("default", "defaultRequest"), ("min", "defaultRequest")):
        for name in sorted(parsed[source]):
            if name not in parsed[target]:
                raw = item[source][name]
                if not isinstance(item.get(target), dict):
                    item[target] = {}
                item[target][name] = raw
                parsed[target][name] = parsed[source][name]


def _limit_order(parsed: dict[str, dict[str, Any]], p: str, e: Errors) -> None:
    low_high = (("min", "max", "min[{}]", "min value {} is greater than max value {}"),
                ("min", "defaultRequest", "defaultRequest[{}]", "min value {} is greater than default request value {}"),
                ("defaultRequest", "default", "defaultRequest[{}]",
                 "default request value {} is greater than default limit value {}"),
                ("default", "max", "default[{}]", "default value {} is greater than max value {}"),
                ("defaultRequest", "max", "defaultRequest[{}]", "default request value {} is greater than max value {}"))
    for low, high, path, message in low_high:
        for name in sorted(set(parsed[low]) & set(parsed[high])):
            (low_amount, low_text), (high_amount, high_text) = parsed[low][name], parsed[high][name]
            if low_amount > high_amount:
                value = low_text if path.startswith(low) else high_text
                e.invalid(f"{p}.{path.format(name)}", value, message.format(low_text, high_text))


def _int_or_percent(spec: dict[str, Any], field: str, e: Errors) -> None:
    value, path = spec.get(field), f"spec.{field}"
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        e.invalid(path, value, "must be an integer or a percentage (e.g. '5%')")
    elif isinstance(value, int):
        if value < 0:
            e.invalid(path, value, "must be greater than or equal to 0")
    elif not _PERCENT.match(value):
        e.invalid(path, value, "a valid percent string must be a numeric string followed by an ending '%' "
                  "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")
    elif int(value[:-1]) > 100:
        e.invalid(path, value, "must not be greater than 100%")


def _pdb(obj: dict[str, Any], e: Errors) -> None:
    spec = _spec(obj, e)
    given = [f for f in ("minAvailable", "maxUnavailable") if spec.get(f) is not None]
    if len(given) == 2:
        e.invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set")
    elif not given:
        e.required("spec", "one of minAvailable or maxUnavailable must be set")
    for field in given:
        _int_or_percent(spec, field, e)
    validate_label_selector(spec.get("selector"), "spec.selector", e)


def _config_map(obj: dict[str, Any], e: Errors) -> None:
    data = e.mapping(obj, "data", "data") or {}
    for key, value in data.items():
        for msg in config_map_key_errors(key):
            e.invalid(f"data[{key}]", key, msg)
        if not isinstance(value, str):
            e.invalid(f"data[{key}]", value, "must be a string")
    for key in e.mapping(obj, "binaryData", "binaryData") or {}:
        if key in data:
            e.invalid(f"data[{key}]", key, "duplicate of key present in binaryData")


# ----------------------------------------------------------------------------------------------
# Nodes


def _taints(items: list[Any], path: str, e: Errors) -> None:
    seen = set()
    for i, taint in enumerate(items):
        p = f"{path}[{i}]"
        if not isinstance(taint, dict):
            e.invalid(p, taint, "must be an object")
            continue
        key = e.string(taint, "key", f"{p}.key") or ""
        for msg in qualified_name_errors(key):
            e.invalid(f"{p}.key", key, msg)
        value = e.string(taint, "value", f"{p}.value") or ""
        for msg in label_value_errors(value):
            e.invalid(f"{p}.value", value, msg)
        effect = taint.get("effect")
        if effect is None or effect == "":
            e.required(f"{p}.effect")
        elif effect not in TAINT_EFFECTS:
            e.unsupported(f"{p}.effect", effect, TAINT_EFFECTS)
        if (key, effect) in seen and isinstance(effect, str):
            e.duplicate(p, taint)
        seen.add((key, effect) if isinstance(effect, str) else (key, None))


def _node(obj: dict[str, Any], e: Errors) -> None:
    spec = _spec(obj, e)
    _taints(e.items_of(spec, "taints", "spec.taints") or [], "spec.taints", e)
    e.boolean(spec, "unschedulable", "spec.unschedulable")
    status = e.mapping(obj, "status", "status") or {}
    for field in ("capacity", "allocatable"):
        for name, value in sorted((e.mapping(status, field, f"status.{field}") or {}).items()):
            e.quantity(value, f"status.{field}[{name}]")


def _node_pool(obj: dict[str, Any], e: Errors) -> None:
    spec = _spec(obj, e)
    has_count, has_names = spec.get("count") is not None, spec.get("names") is not None
    if _node_pool_autoscaling(spec, e):
        if has_names:
            e.forbidden("spec.names", "an autoscaled pool (spec.minNodes/maxNodes) names its "
                                      "nodes <namePrefix>-N; give spec.count (the initial size)")
    elif has_count == has_names:
        e.required("spec.count", "exactly one of spec.count or spec.names must be set") if not has_count else \
            e.invalid("spec.names", spec["names"], "may not be set together with spec.count")
    e.integer(spec, "count", "spec.count", minimum=0, maximum=limits.MAX_NODES_PER_POOL)
    names = spec.get("names")
    if isinstance(names, list) and len(names) > limits.MAX_NODES_PER_POOL:
        e.too_many("spec.names", len(names), limits.MAX_NODES_PER_POOL)
        names = []
    seen: set[str] = set()
    for i, name in enumerate((e.items_of(spec, "names", "spec.names") or []) if names else []):
        if not isinstance(name, str):
            e.invalid(f"spec.names[{i}]", name, "must be a string")
            continue
        for msg in dns1123_subdomain_errors(name):
            e.invalid(f"spec.names[{i}]", name, msg)
        if name in seen:
            e.duplicate(f"spec.names[{i}]", name)
        seen.add(name)
    gpu = e.mapping(spec, "gpu", "spec.gpu")
    if gpu is not None:
        model = e.string(gpu, "model", "spec.gpu.model")
        count = e.integer(gpu, "count", "spec.gpu.count", minimum=0, maximum=limits.MAX_GPUS_PER_NODE)
        defined = e.mapping(gpu, "define", "spec.gpu.define")
        if not model and (count or 0) > 0 and "model" not in gpu and defined is None:
            e.required("spec.gpu.model")
    for field in ("cpu", "memory", "pods", "ephemeral-storage"):
        if spec.get(field) is not None:
            e.quantity(spec[field], f"spec.{field}")
    validate_labels(e.string_map(spec, "labels", "spec.labels"), "spec.labels", e)
    _taints(e.items_of(spec, "taints", "spec.taints") or [], "spec.taints", e)
    for field in ("migLayout", "migConfig"):
        e.string(spec, field, f"spec.{field}")


MAX_POOL_NODES = 1000     # devices.nodepool.MAX_POOL_NODES: the bound of maxNodes


def _node_pool_autoscaling(spec: dict[str, Any], e: Errors) -> bool:
    """minNodes/maxNodes (Cluster Autoscaler's node group min/max size): both or neither,
    0 <= minNodes <= maxNodes <= MAX_POOL_NODES, count (initial size) within them, a
    provisioningDelay that parses. True when the pool is autoscaled."""
    if spec.get("minNodes") is None and spec.get("maxNodes") is None:
        return False
    values = {}
    for field in ("minNodes", "maxNodes"):
        if spec.get(field) is None:
            e.required(f"spec.{field}", "spec.minNodes and spec.maxNodes are set together")
            continue
        value = e.integer(spec, field, f"spec.{field}", minimum=0)
        if value is not None and value > MAX_POOL_NODES:
            e.invalid(f"spec.{field}", value, f"must be less than or equal to {MAX_POOL_NODES}")
        values[field] = value
    low, high = values.get("minNodes"), values.get("maxNodes")
    if isinstance(low, int) and isinstance(high, int) and 0 <= low and low > high:
        e.invalid("spec.minNodes", low, f"must be less than or equal to spec.maxNodes ({high})")
        return True
    count = spec.get("count")
    if (isinstance(count, int) and not isinstance(count, bool) and isinstance(low, int)
            and isinstance(high, int) and not low <= count <= high):
        e.invalid("spec.count", count, f"the initial size must be between spec.minNodes ({low}) "
                                       f"and spec.maxNodes ({high})")
    delay = spec.get("provisioningDelay")
    if delay is not None:
        from gpusched.errors import GpuschedError
        from gpusched.objects.duration import parse_duration
        try:
            if parse_duration(delay) > 86400:
                e.invalid("spec.provisioningDelay", delay, "must be at most 24h")
        except GpuschedError:
            e.invalid("spec.provisioningDelay", delay, 'must be a duration such as "3m" or "90s"')
    return True


# ----------------------------------------------------------------------------------------------
# ClusterPolicy (nvidia.com/v1, the GPU Operator's CRD; NVIDIA/gpu-operator
# api/nvidia/v1/clusterpolicy_types.go): the fields gpusched acts on, with the CRD's enums.

_POLICY_SECTIONS = ("driver", "toolkit", "devicePlugin", "dcgmExporter", "dcgm", "gfd",
                    "migManager", "validator", "nodeStatusExporter")


def _cluster_policy(obj: dict[str, Any], e: Errors) -> None:
    spec = _spec(obj, e)
    for section in _POLICY_SECTIONS:
        body = e.mapping(spec, section, f"spec.{section}")
        if body is not None:
            e.boolean(body, "enabled", f"spec.{section}.enabled")
            for field in ("repository", "image", "version"):
                e.string(body, field, f"spec.{section}.{field}")
    mig = e.mapping(spec, "mig", "spec.mig")
    if mig is not None:
        strategy = e.string(mig, "strategy", "spec.mig.strategy")
        if strategy is not None and strategy not in ("none", "single", "mixed"):
            e.unsupported("spec.mig.strategy", strategy, ["none", "single", "mixed"])
    for section in ("devicePlugin", "migManager"):
        config = e.mapping(spec.get(section) or {}, "config", f"spec.{section}.config") \
            if isinstance(spec.get(section), dict) else None
        if config is not None:
            e.string(config, "name", f"spec.{section}.config.name")
            e.string(config, "default", f"spec.{section}.config.default")


# ----------------------------------------------------------------------------------------------
# Leases (coordination.k8s.io/v1): leader election records, validated as lightly as upstream

_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$")


def _lease(obj: dict[str, Any], e: Errors) -> None:
    """``spec.holderIdentity`` a string, ``leaseDurationSeconds`` > 0, ``leaseTransitions`` >= 0,
    ``acquireTime``/``renewTime`` RFC 3339 (MicroTime: ``2024-01-01T00:00:00.000000Z``)."""
    spec = _spec(obj, e)
    e.string(spec, "holderIdentity", "spec.holderIdentity")
    duration = e.integer(spec, "leaseDurationSeconds", "spec.leaseDurationSeconds")
    if duration is not None and duration <= 0:
        e.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0")
    e.integer(spec, "leaseTransitions", "spec.leaseTransitions", minimum=0)
    for field in ("acquireTime", "renewTime"):
        value = spec.get(field)
        if value is not None and not (isinstance(value, str) and _RFC3339.match(value)):
            e.invalid(f"spec.{field}", value,
                      "must be an RFC 3339 time with microseconds (2006-01-02T15:04:05.000000Z)")


# ----------------------------------------------------------------------------------------------
# RuntimeClass (node.k8s.io/v1), pkg/apis/node/validation/validation.go ValidateRuntimeClass


def _runtime_class(obj: dict[str, Any], e: Errors) -> None:
    """``handler`` a DNS-1123 label; ``overhead.podFixed`` quantities; ``scheduling.nodeSelector``
    labels and ``scheduling.tolerations`` as a pod's."""
    handler = obj.get("handler")
    if not isinstance(handler, str):
        e.invalid("handler", handler if handler is not None else "", "must be a string") \
            if handler is not None else e.required("handler")
    else:
        for msg in dns1123_label_errors(handler):
            e.invalid("handler", handler, msg)
    overhead = e.mapping(obj, "overhead", "overhead") or {}
    for name, value in sorted((e.mapping(overhead, "podFixed", "overhead.podFixed") or {}).items()):
        e.quantity(value, f"overhead.podFixed[{name}]")
    scheduling = e.mapping(obj, "scheduling", "scheduling") or {}
    validate_labels(e.string_map(scheduling, "nodeSelector", "scheduling.nodeSelector"),
                    "scheduling.nodeSelector", e)
    validate_tolerations(e.items_of(scheduling, "tolerations", "scheduling.tolerations") or [],
                         "scheduling.tolerations", e)


_VALIDATORS: dict[str, Validator] = {
    "RuntimeClass": _runtime_class,
    "Pod": _pod,
    "Deployment": _deployment,
    "ReplicaSet": _deployment,
    "DaemonSet": _daemonset,
    "Job": _job,
    "PriorityClass": _priority_class,
    "ResourceQuota": _resource_quota,
    "LimitRange": _limit_range,
    "PodDisruptionBudget": _pdb,
    "ConfigMap": _config_map,
    "Node": _node,
    "NodePool": _node_pool,
    "Lease": _lease,
    **CORE_KIND_VALIDATORS,       # Service, storage, Secret, NetworkPolicy, HPA/VPA ...
    "ClusterPolicy": _cluster_policy,
}
