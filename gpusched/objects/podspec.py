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

Also ``validate_tolerations`` and ``validate_pod_annotations`` (gpusched's own annotations), used
by ``objects.validation``.

Ports, environment variable names, ``nodeName``, ``activeDeadlineSeconds`` and ``dnsPolicy`` are
``objects.podspec_fields``'.

Neighbours: fieldcheck (Errors), names, duration, types, podspec_fields, validation_affinity (labels, selectors,
node and pod affinity); used by objects.validation.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator

from gpusched.errors import UsageError
from gpusched.objects.duration import parse_duration
from gpusched.objects.fieldcheck import Errors, quantity_text
from gpusched.objects.names import dns1123_label_errors, label_value_errors, qualified_name_errors
from gpusched.objects.podspec_claims import validate_container_claims, validate_pod_claims
from gpusched.objects.podspec_fields import validate_container_fields, validate_pod_fields
from gpusched.objects.validation_affinity import (node_affinity, pod_affinity, validate_label_selector,
                                                  validate_labels)
from gpusched.objects.types import ANN_DURATION, ANN_GPU_MILLI, RESOURCE_GPU_MILLI
from gpusched.objects.digits import is_digits

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


# ----------------------------------------------------------------------------------------------
# Tolerations and topology spread


def validate_tolerations(items: list[Any], path: str, e: Errors) -> None:
    """``ValidateTolerations``: each toleration's key, operator/value and effect."""
    for p, tol in e.objects(items, path):
        _toleration(tol, p, e)


def _toleration(tol: dict[str, Any], p: str, e: Errors) -> None:
    """The body of ``ValidateTolerations``' loop for one toleration."""
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
    _toleration_operator(tol, op, value, p, e)
    if effect and effect not in TAINT_EFFECTS:
        e.unsupported(f"{p}.effect", effect, TAINT_EFFECTS)


def _toleration_operator(tol: dict[str, Any], op: str, value: str, p: str, e: Errors) -> None:
    """``ValidateTolerations``' switch on the operator: Equal (or empty) checks the value as a label
    value, Exists wants none, anything else is unsupported."""
    if op in ("", "Equal"):
        for msg in label_value_errors(value):
            e.invalid(f"{p}.value", value, msg)
    elif op == "Exists":
        if value:
            e.invalid(f"{p}.operator", tol, "value must be empty when `operator` is 'Exists'")
    else:
        e.unsupported(f"{p}.operator", op, ("Equal", "Exists"))


def _topology_spread(items: list[Any], path: str, e: Errors) -> None:
    for p, c in e.objects(items, path):
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


def _container_resources(container: dict[str, Any], path: str, e: Errors, pod_claims: set[str]) -> None:
    """``ValidateResourceRequirements`` after v1 defaulting (a limit alone sets the request)."""
    resources = e.mapping(container, "resources", f"{path}.resources")
    if not resources:
        return
    validate_container_claims(resources, f"{path}.resources.claims", pod_claims, e)
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
    parsed_limits = _limits(limits, lp, e)
    requests = requests or {}
    for name in sorted(requests):
        p = f"{rp}[{name}]"
        if not _resource_name_ok(name, p, e):
            continue
        amount = e.quantity(requests[name], p, integer=is_extended_resource(name))
        if amount is None or _DEFER_REQUEST_LIMIT_RULES.get():
            continue
        _request_vs_limit(name, amount, quantity_text(requests[name]), limits, parsed_limits, p, lp, e)


def _limits(limits: dict[str, Any], lp: str, e: Errors) -> dict[str, Any]:
    """The limits that parse (name -> amount); ``gpusched.io/gpu-milli`` must be 1..1000."""
    parsed_limits = {}
    for name in sorted(limits):
        p = f"{lp}[{name}]"
        if _resource_name_ok(name, p, e):
            amount = e.quantity(limits[name], p, integer=is_extended_resource(name))
            if amount is not None:
                parsed_limits[name] = amount
                if name == RESOURCE_GPU_MILLI and not 1 <= amount <= 1000:
                    e.invalid(p, quantity_text(limits[name]), "must be an integer between 1 and 1000")
    return parsed_limits


def _request_vs_limit(name: str, amount: Any, text: str, limits: dict[str, Any],
                      parsed_limits: dict[str, Any], p: str, lp: str, e: Errors) -> None:
    """One request against its limit: equal for a resource that cannot be overcommitted, else at
    most the limit; no limit at all only for an overcommittable one."""
    if name in limits:
        if name not in parsed_limits:
            return
        limit, limit_text = parsed_limits[name], quantity_text(limits[name])
        if amount != limit and not _overcommit_allowed(name):
            e.invalid(p, text, f"must be equal to {name} limit of {limit_text}")
        elif amount > limit:
            e.invalid(p, text, f"must be less than or equal to {name} limit of {limit_text}")
    elif not _overcommit_allowed(name):
        e.required(f"{lp}[{name}]", "Limit must be set for non overcommitable resources")


def _containers(items: list[Any], path: str, e: Errors, seen: set[str], init: bool,
                pod_claims: set[str]) -> None:
    """``validateContainers`` / ``validateInitContainers``: each container in order."""
    for p, c in e.objects(items, path):
        _container_name(c, p, e, seen)
        image = e.string(c, "image", f"{p}.image")
        if not image and not isinstance(c.get("image"), (int, float, dict, list)):
            e.required(f"{p}.image")
        elif image and image != image.strip():
            e.invalid(f"{p}.image", image, "must not have leading or trailing whitespace")
        policy = e.string(c, "restartPolicy", f"{p}.restartPolicy")
        if init and policy is not None and policy != "Always":
            e.unsupported(f"{p}.restartPolicy", policy, ("Always",))
        _container_resources(c, p, e, pod_claims)
        for port in c.get("ports") or []:   # core/v1 defaults.go SetDefaults_ContainerPort
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")
        validate_container_fields(c, p, e)


def _container_name(c: dict[str, Any], p: str, e: Errors, seen: set[str]) -> None:
    """A container's name: required, a DNS-1123 label, unique among all the pod's containers."""
    name = e.string(c, "name", f"{p}.name")
    if not name:
        e.required(f"{p}.name")
        return
    e.distinct_name(f"{p}.name", name, seen, dns1123_label_errors)


# ----------------------------------------------------------------------------------------------
# PodSpec


def validate_pod_spec(spec: Any, path: str, e: Errors, restart_policies: tuple[str, ...] = POD_RESTART_POLICIES,
                      pod_name: str | None = None) -> None:
    """Validate and default a PodSpec in place (errors collected in ``e``); ``pod_name`` for a
    Pod's own spec (its template-generated claim names are checked), None in a template."""
    if not isinstance(spec, dict):
        if spec is None:
            e.required(path)
        else:
            e.invalid(path, spec, "must be an object")
        return
    seen: set[str] = set()
    pod_claims = validate_pod_claims(spec, path, e, pod_name)
    init = e.items_of(spec, "initContainers", f"{path}.initContainers")
    _containers(init or [], f"{path}.initContainers", e, seen, init=True, pod_claims=pod_claims)
    containers = e.items_of(spec, "containers", f"{path}.containers")
    if spec.get("containers") in (None, []):
        e.required(f"{path}.containers")
    _containers(containers or [], f"{path}.containers", e, seen, init=False, pod_claims=pod_claims)
    _pod_fields(spec, path, e, restart_policies)
    validate_labels(e.string_map(spec, "nodeSelector", f"{path}.nodeSelector"), f"{path}.nodeSelector", e)
    validate_tolerations(e.items_of(spec, "tolerations", f"{path}.tolerations") or [], f"{path}.tolerations", e)
    _topology_spread(e.items_of(spec, "topologySpreadConstraints", f"{path}.topologySpreadConstraints") or [],
                     f"{path}.topologySpreadConstraints", e)
    affinity = e.mapping(spec, "affinity", f"{path}.affinity") or {}
    for key, check in (("nodeAffinity", node_affinity), ("podAffinity", pod_affinity),
                       ("podAntiAffinity", pod_affinity)):
        part = e.mapping(affinity, key, f"{path}.affinity.{key}")
        if part is not None:
            check(part, f"{path}.affinity.{key}", e)
    for name, value in sorted((e.mapping(spec, "overhead", f"{path}.overhead") or {}).items()):
        e.quantity(value, f"{path}.overhead[{name}]")
    _volumes(spec, path, e)


def _pod_fields(spec: dict[str, Any], path: str, e: Errors, restart_policies: tuple[str, ...]) -> None:
    """restartPolicy and schedulerName (defaulted), node name, priority fields, grace period."""
    if spec.get("restartPolicy") is None:
        spec["restartPolicy"] = "Always"
    policy = spec["restartPolicy"]
    if policy not in restart_policies:
        e.unsupported(f"{path}.restartPolicy", policy, restart_policies)
    spec.setdefault("schedulerName", "default-scheduler")
    e.string(spec, "schedulerName", f"{path}.schedulerName")
    validate_pod_fields(spec, path, e)
    e.string(spec, "priorityClassName", f"{path}.priorityClassName")
    e.integer(spec, "priority", f"{path}.priority")
    e.integer(spec, "terminationGracePeriodSeconds", f"{path}.terminationGracePeriodSeconds", minimum=0)
    preemption = spec.get("preemptionPolicy")
    if preemption is not None and preemption not in PREEMPTION_POLICIES:
        e.unsupported(f"{path}.preemptionPolicy", preemption, PREEMPTION_POLICIES)


def _volumes(spec: dict[str, Any], path: str, e: Errors) -> None:
    """``validateVolumes`` as far as gpusched reads volumes: a name, a PVC's claimName."""
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
        # ASCII digits only, as the device assignment reads it back (Python's int() also takes
        # "５００", "+500" and "5_00", which the assignment then refused on every later read)
        if not (is_digits(milli) and 1 <= int(milli) <= 1000):
            e.invalid(f"{path}[{ANN_GPU_MILLI}]", milli, "must be an integer between 1 and 1000")
    duration = annotations.get(ANN_DURATION)
    if duration is not None:
        try:
            parse_duration(duration)
        except UsageError:
            e.invalid(f"{path}[{ANN_DURATION}]", duration, "must be a duration such as 30m, 1h30m or 2d")
