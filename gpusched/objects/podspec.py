"""Validation and defaulting of a PodSpec (pods and pod templates), with upstream wording.

``validate_pod_spec(spec, "spec", errors)`` checks and defaults one PodSpec in place: containers
(name, image, resources), init containers, restartPolicy, nodeSelector, affinity, tolerations,
topology spread, overhead, priority fields, volumes. Rules follow
``pkg/apis/core/validation/validation.go`` (see ``nvidia-gpu-stack.md`` 7.1):

- defaulting first: a resource given only as a limit gets the limit as its request (every
  resource); ``restartPolicy`` defaults to ``Always``, ``schedulerName`` to ``default-scheduler``;
- quantities must parse and be >= 0; extended resources (a name with ``/`` outside
  ``kubernetes.io/``, e.g. ``nvidia.com/gpu``) must be whole numbers, request == limit
  (``must be equal to nvidia.com/gpu limit of 1``), a request needs a limit (``Required value:
  Limit must be set for non overcommitable resources``); cpu/memory requests <= limits.

The request/limit comparisons of a Pod are deferred under ``admission_pending()``: upstream
validates a pod after mutating admission (a LimitRange default may supply the missing limit),
so ``cluster.admission`` checks them on the mutated pod.

Also ``validate_label_selector`` (metav1.LabelSelector), ``validate_labels`` and
``validate_pod_annotations`` (gpusched's own annotations), used by ``objects.validation``.

Neighbours: fieldcheck (Errors), names, duration, types; used by objects.validation.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterator

from gpusched.errors import UsageError
from gpusched.objects.duration import parse_duration
from gpusched.objects.fieldcheck import Errors, quantity_text
from gpusched.objects.names import dns1123_label_errors, label_value_errors, qualified_name_errors
from gpusched.objects.types import ANN_DURATION, ANN_GPU_MILLI, RESOURCE_GPU_MILLI

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
POD_RESTART_POLICIES = ("Always", "OnFailure", "Never")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_DEFER_REQUEST_LIMIT_RULES: ContextVar[bool] = ContextVar("defer_request_limit_rules", default=False)


@contextmanager
def admission_pending() -> Iterator[None]:
    """Skip the request-vs-limit rules (checked again after mutating admission)."""
    token = _DEFER_REQUEST_LIMIT_RULES.set(True)
    try:
        yield
    finally:
        _DEFER_REQUEST_LIMIT_RULES.reset(token)


def is_extended_resource(name: str) -> bool:
    """``nvidia.com/gpu`` yes; ``cpu``, ``kubernetes.io/x``, ``requests.x`` no (upstream helper)."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def _overcommit_allowed(name: str) -> bool:
    return ("/" not in name or "kubernetes.io/" in name) and not name.startswith("hugepages-")


def validate_labels(labels: dict[str, Any], path: str, e: Errors) -> None:
    """``ValidateLabels``: keys are qualified names, values label values (errors at ``path``)."""
    for key, value in labels.items():
        for msg in qualified_name_errors(key):
            e.invalid(path, key, msg)
        for msg in label_value_errors(value):
            e.invalid(path, value, msg)


def _string_values(raw: Any, path: str, e: Errors) -> list[str] | None:
    if raw is None:
        return []
    if not isinstance(raw, list):
        e.invalid(path, raw, "must be a list")
        return None
    out = []
    for i, value in enumerate(raw):
        if isinstance(value, str):
            out.append(value)
        else:
            e.invalid(f"{path}[{i}]", value, "must be a string")
    return out


def validate_label_selector(selector: Any, path: str, e: Errors) -> None:
    """metav1.LabelSelector: matchLabels and matchExpressions (In/NotIn/Exists/DoesNotExist)."""
    if selector is None:
        return
    if not isinstance(selector, dict):
        e.invalid(path, selector, "must be an object")
        return
    validate_labels(e.string_map(selector, "matchLabels", f"{path}.matchLabels"), f"{path}.matchLabels", e)
    for i, req in enumerate(e.items_of(selector, "matchExpressions", f"{path}.matchExpressions") or ()):
        p = f"{path}.matchExpressions[{i}]"
        if not isinstance(req, dict):
            e.invalid(p, req, "must be an object")
            continue
        op = e.string(req, "operator", f"{p}.operator")
        values = _string_values(req.get("values"), f"{p}.values", e)
        if op in ("In", "NotIn"):
            if values == []:
                e.required(f"{p}.values", "must be specified when `operator` is 'In' or 'NotIn'")
        elif op in ("Exists", "DoesNotExist"):
            if values:
                e.forbidden(f"{p}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
        else:
            e.invalid(f"{p}.operator", op or "", "not a valid selector operator")
        _label_key(req, p, e)


def _label_key(req: dict[str, Any], p: str, e: Errors) -> None:
    key = e.string(req, "key", f"{p}.key")
    for msg in qualified_name_errors(key or ""):
        e.invalid(f"{p}.key", key or "", msg)


# ----------------------------------------------------------------------------------------------
# Node affinity


def _node_selector_requirement(req: Any, p: str, e: Errors) -> None:
    if not isinstance(req, dict):
        e.invalid(p, req, "must be an object")
        return
    op = e.string(req, "operator", f"{p}.operator")
    values = _string_values(req.get("values"), f"{p}.values", e)
    if values is None:     # wrong type, already reported: check the operator only
        if op not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
            e.invalid(f"{p}.operator", op or "", "not a valid selector operator")
    elif op in ("In", "NotIn"):
        if not values:
            e.required(f"{p}.values", "must be specified when `operator` is 'In' or 'NotIn'")
    elif op in ("Exists", "DoesNotExist"):
        if values:
            e.forbidden(f"{p}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            e.required(f"{p}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'")
        else:
            try:
                int(values[0], 10)
            except ValueError:
                e.invalid(f"{p}.values[0]", values[0], "must be an integer")
    else:
        e.invalid(f"{p}.operator", op or "", "not a valid selector operator")
    _label_key(req, p, e)


def _node_field_requirement(req: Any, p: str, e: Errors) -> None:
    if not isinstance(req, dict):
        e.invalid(p, req, "must be an object")
        return
    op = req.get("operator")
    values = _string_values(req.get("values"), f"{p}.values", e)
    if op in ("In", "NotIn"):
        if values is not None and len(values) != 1:
            e.required(f"{p}.values", "must be only one value when `operator` is 'In' or 'NotIn' for node field selector")
    else:
        e.invalid(f"{p}.operator", op, "not a valid selector operator")
    if req.get("key") != "metadata.name":
        e.invalid(f"{p}.key", req.get("key"), "not a valid field selector key")


def _node_selector_term(term: Any, p: str, e: Errors) -> None:
    if not isinstance(term, dict):
        e.invalid(p, term, "must be an object")
        return
    for i, req in enumerate(e.items_of(term, "matchExpressions", f"{p}.matchExpressions") or ()):
        _node_selector_requirement(req, f"{p}.matchExpressions[{i}]", e)
    for i, req in enumerate(e.items_of(term, "matchFields", f"{p}.matchFields") or ()):
        _node_field_requirement(req, f"{p}.matchFields[{i}]", e)


def _weight(item: dict[str, Any], p: str, e: Errors) -> None:
    weight = item.get("weight")
    if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= 100:
        e.invalid(f"{p}.weight", weight, "must be in the range 1-100")


def _preferred(raw: dict[str, Any], p: str, e: Errors, field: str,
               check_term: Callable[[Any, str], None]) -> None:
    """``preferredDuringSchedulingIgnoredDuringExecution``: objects with a weight and a term under
    ``field`` (``preference`` or ``podAffinityTerm``), the term checked by ``check_term``."""
    pp = f"{p}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, item in enumerate(e.items_of(raw, "preferredDuringSchedulingIgnoredDuringExecution", pp) or ()):
        if not isinstance(item, dict):
            e.invalid(f"{pp}[{i}]", item, "must be an object")
            continue
        _weight(item, f"{pp}[{i}]", e)
        check_term(item.get(field), f"{pp}[{i}].{field}")


def _node_affinity(raw: dict[str, Any], p: str, e: Errors) -> None:
    required = e.mapping(raw, "requiredDuringSchedulingIgnoredDuringExecution",
                         f"{p}.requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        rp = f"{p}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        terms = e.items_of(required, "nodeSelectorTerms", rp)
        if required.get("nodeSelectorTerms") in (None, []):
            e.required(rp, "must have at least one node selector term")
        for i, term in enumerate(terms or ()):
            _node_selector_term(term, f"{rp}[{i}]", e)
    _preferred(raw, p, e, "preference",
               lambda term, path: _node_selector_term(term or {}, path, e))


def _pod_affinity_term(term: Any, p: str, e: Errors) -> None:
    if not isinstance(term, dict):
        e.invalid(p, term, "must be an object")
        return
    validate_label_selector(term.get("labelSelector"), f"{p}.labelSelector", e)
    for i, ns in enumerate(_string_values(term.get("namespaces"), f"{p}.namespaces", e) or ()):
        for msg in dns1123_label_errors(ns):
            e.invalid(f"{p}.namespaces[{i}]", ns, msg)
    key = e.string(term, "topologyKey", f"{p}.topologyKey")
    if not key:
        e.required(f"{p}.topologyKey", "can not be empty")
    else:
        for msg in qualified_name_errors(key):
            e.invalid(f"{p}.topologyKey", key, msg)


def _pod_affinity(raw: dict[str, Any], p: str, e: Errors) -> None:
    rp = f"{p}.requiredDuringSchedulingIgnoredDuringExecution"
    for i, term in enumerate(e.items_of(raw, "requiredDuringSchedulingIgnoredDuringExecution", rp) or ()):
        _pod_affinity_term(term, f"{rp}[{i}]", e)
    _preferred(raw, p, e, "podAffinityTerm", lambda term, path: _pod_affinity_term(term, path, e))


# ----------------------------------------------------------------------------------------------
# Tolerations and topology spread


def validate_tolerations(items: list[Any], path: str, e: Errors) -> None:
    for i, tol in enumerate(items):
        p = f"{path}[{i}]"
        if not isinstance(tol, dict):
            e.invalid(p, tol, "must be an object")
            continue
        key = e.string(tol, "key", f"{p}.key") or ""
        op = e.string(tol, "operator", f"{p}.operator") or ""
        value = e.string(tol, "value", f"{p}.value") or ""
        effect = e.string(tol, "effect", f"{p}.effect") or ""
        seconds = e.integer(tol, "tolerationSeconds", f"{p}.tolerationSeconds")
        for msg in qualified_name_errors(key) if key else ():
            e.invalid(f"{p}.key", key, msg)
        if not key and op != "Exists":
            e.invalid(f"{p}.operator", op,
                      'operator must be Exists when `key` is empty, which means "match all values and all keys"')
        if seconds is not None and effect != "NoExecute":
            e.invalid(f"{p}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set")
        if op in ("", "Equal"):
            for msg in label_value_errors(value):
                e.invalid(f"{p}.value", value, msg)
        elif op == "Exists":
            if value:
                e.invalid(f"{p}.operator", tol, "value must be empty when `operator` is 'Exists'")
        else:
            e.unsupported(f"{p}.operator", op, ("Equal", "Exists"))
        if effect and effect not in TAINT_EFFECTS:
            e.unsupported(f"{p}.effect", effect, TAINT_EFFECTS)


def _topology_spread(items: list[Any], path: str, e: Errors) -> None:
    for i, c in enumerate(items):
        p = f"{path}[{i}]"
        if not isinstance(c, dict):
            e.invalid(p, c, "must be an object")
            continue
        skew = c.get("maxSkew")
        if isinstance(skew, bool) or not isinstance(skew, int) or skew <= 0:
            e.invalid(f"{p}.maxSkew", skew, "must be greater than zero")
        key = e.string(c, "topologyKey", f"{p}.topologyKey")
        if not key:
            e.required(f"{p}.topologyKey", "can not be empty")
        when = c.get("whenUnsatisfiable")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            e.unsupported(f"{p}.whenUnsatisfiable", when if when is not None else "", ("DoNotSchedule", "ScheduleAnyway"))
        min_domains = e.integer(c, "minDomains", f"{p}.minDomains")
        if min_domains is not None:
            if min_domains <= 0:
                e.invalid(f"{p}.minDomains", min_domains, "must be greater than 0")
            elif when == "ScheduleAnyway":
                e.invalid(f"{p}.minDomains", min_domains,
                          "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway")
        validate_label_selector(c.get("labelSelector"), f"{p}.labelSelector", e)


# ----------------------------------------------------------------------------------------------
# Containers


def _resource_name_ok(name: str, path: str, e: Errors) -> bool:
    if "/" not in name:
        if name in _STANDARD_CONTAINER_RESOURCES or name.startswith("hugepages-"):
            return True
        e.invalid(path, name, "must be a standard resource for containers")
        return False
    errors = qualified_name_errors(name)
    for msg in errors:
        e.invalid(path, name, msg)
    return not errors


def _container_resources(container: dict[str, Any], path: str, e: Errors) -> None:
    resources = e.mapping(container, "resources", f"{path}.resources")
    if not resources:
        return
    rp, lp = f"{path}.resources.requests", f"{path}.resources.limits"
    requests = e.mapping(resources, "requests", rp)
    limits = e.mapping(resources, "limits", lp) or {}
    if limits and resources.get("requests") is not None and requests is None:
        return  # requests has the wrong type; already reported
    if limits:                                   # defaulting: a limit alone sets the request
        if requests is None:
            requests = resources["requests"] = {}
        for name, value in limits.items():
            requests.setdefault(name, value)
    parsed_limits = {}
    for name in sorted(limits):
        p = f"{lp}[{name}]"
        if _resource_name_ok(name, p, e):
            amount = e.quantity(limits[name], p, integer=is_extended_resource(name))
            if amount is not None:
                parsed_limits[name] = amount
                if name == RESOURCE_GPU_MILLI and not 1 <= amount <= 1000:
                    e.invalid(p, quantity_text(limits[name]), "must be an integer between 1 and 1000")
    requests = requests or {}
    for name in sorted(requests):
        p = f"{rp}[{name}]"
        if not _resource_name_ok(name, p, e):
            continue
        amount = e.quantity(requests[name], p, integer=is_extended_resource(name))
        if amount is None:
            continue
        text = quantity_text(requests[name])
        if _DEFER_REQUEST_LIMIT_RULES.get():
            continue
        if name in limits:
            if name not in parsed_limits:
                continue
            limit, limit_text = parsed_limits[name], quantity_text(limits[name])
            if amount != limit and not _overcommit_allowed(name):
                e.invalid(p, text, f"must be equal to {name} limit of {limit_text}")
            elif amount > limit:
                e.invalid(p, text, f"must be less than or equal to {name} limit of {limit_text}")
        elif not _overcommit_allowed(name):
            e.required(f"{lp}[{name}]", "Limit must be set for non overcommitable resources")


def _containers(items: list[Any], path: str, e: Errors, seen: set[str], init: bool) -> None:
    for i, c in enumerate(items):
        p = f"{path}[{i}]"
        if not isinstance(c, dict):
            e.invalid(p, c, "must be an object")
            continue
        name = e.string(c, "name", f"{p}.name")
        if not name:
            e.required(f"{p}.name")
        else:
            for msg in dns1123_label_errors(name):
                e.invalid(f"{p}.name", name, msg)
            if name in seen:
                e.duplicate(f"{p}.name", name)
            seen.add(name)
        image = e.string(c, "image", f"{p}.image")
        if not image and not isinstance(c.get("image"), (int, float, dict, list)):
            e.required(f"{p}.image")
        elif image and image != image.strip():
            e.invalid(f"{p}.image", image, "must not have leading or trailing whitespace")
        policy = e.string(c, "restartPolicy", f"{p}.restartPolicy")
        if init and policy is not None and policy != "Always":
            e.unsupported(f"{p}.restartPolicy", policy, ("Always",))
        _container_resources(c, p, e)
        for port in c.get("ports") or []:   # core/v1 defaults.go SetDefaults_ContainerPort
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")


# ----------------------------------------------------------------------------------------------
# PodSpec


def validate_pod_spec(spec: Any, path: str, e: Errors, restart_policies: tuple[str, ...] = POD_RESTART_POLICIES
                      ) -> None:
    """Validate and default a PodSpec in place (errors collected in ``e``)."""
    if not isinstance(spec, dict):
        if spec is None:
            e.required(path)
        else:
            e.invalid(path, spec, "must be an object")
        return
    seen: set[str] = set()
    init = e.items_of(spec, "initContainers", f"{path}.initContainers")
    _containers(init or [], f"{path}.initContainers", e, seen, init=True)
    containers = e.items_of(spec, "containers", f"{path}.containers")
    if spec.get("containers") in (None, []):
        e.required(f"{path}.containers")
    _containers(containers or [], f"{path}.containers", e, seen, init=False)

    if spec.get("restartPolicy") is None:
        spec["restartPolicy"] = "Always"
    policy = spec["restartPolicy"]
    if policy not in restart_policies:
        e.unsupported(f"{path}.restartPolicy", policy, restart_policies)
    spec.setdefault("schedulerName", "default-scheduler")
    e.string(spec, "schedulerName", f"{path}.schedulerName")
    e.string(spec, "nodeName", f"{path}.nodeName")
    e.string(spec, "priorityClassName", f"{path}.priorityClassName")
    e.integer(spec, "priority", f"{path}.priority")
    e.integer(spec, "terminationGracePeriodSeconds", f"{path}.terminationGracePeriodSeconds", minimum=0)
    preemption = spec.get("preemptionPolicy")
    if preemption is not None and preemption not in PREEMPTION_POLICIES:
        e.unsupported(f"{path}.preemptionPolicy", preemption, PREEMPTION_POLICIES)
    validate_labels(e.string_map(spec, "nodeSelector", f"{path}.nodeSelector"), f"{path}.nodeSelector", e)
    validate_tolerations(e.items_of(spec, "tolerations", f"{path}.tolerations") or [], f"{path}.tolerations", e)
    _topology_spread(e.items_of(spec, "topologySpreadConstraints", f"{path}.topologySpreadConstraints") or [],
                     f"{path}.topologySpreadConstraints", e)
    affinity = e.mapping(spec, "affinity", f"{path}.affinity") or {}
    for key, check in (("nodeAffinity", _node_affinity), ("podAffinity", _pod_affinity),
                       ("podAntiAffinity", _pod_affinity)):
        part = e.mapping(affinity, key, f"{path}.affinity.{key}")
        if part is not None:
            check(part, f"{path}.affinity.{key}", e)
    for name, value in sorted((e.mapping(spec, "overhead", f"{path}.overhead") or {}).items()):
        e.quantity(value, f"{path}.overhead[{name}]")
    for i, volume in enumerate(e.items_of(spec, "volumes", f"{path}.volumes") or ()):
        vp = f"{path}.volumes[{i}]"
        if not isinstance(volume, dict):
            e.invalid(vp, volume, "must be an object")
            continue
        if not e.string(volume, "name", f"{vp}.name"):
            e.required(f"{vp}.name")
        claim = e.mapping(volume, "persistentVolumeClaim", f"{vp}.persistentVolumeClaim")
        if claim is not None and not e.string(claim, "claimName", f"{vp}.persistentVolumeClaim.claimName"):
            e.required(f"{vp}.persistentVolumeClaim.claimName")


def validate_pod_annotations(annotations: dict[str, Any], path: str, e: Errors) -> None:
    """gpusched's annotations: ``gpu-milli`` an integer 1..1000, ``duration`` a Go duration."""
    milli = annotations.get(ANN_GPU_MILLI)
    if milli is not None:
        try:
            ok = 1 <= int(milli.strip()) <= 1000
        except ValueError:
            ok = False
        if not ok:
            e.invalid(f"{path}[{ANN_GPU_MILLI}]", milli, "must be an integer between 1 and 1000")
    duration = annotations.get(ANN_DURATION)
    if duration is not None:
        try:
            parse_duration(duration)
        except UsageError:
            e.invalid(f"{path}[{ANN_DURATION}]", duration, "must be a duration such as 30m, 1h30m or 2d")
