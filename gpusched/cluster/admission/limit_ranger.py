"""LimitRanger (``plugin/pkg/admission/limitranger/limitranger.go``).

- ``Admit`` on a Pod create (``PodMutateLimitFunc``/``mergeContainerResources``): per
  LimitRange of the namespace, its Container defaults (``default``/``defaultRequest``) fill the
  limits and requests a container or init container lacks; the annotation
  ``kubernetes.io/limit-ranger`` lists what was set (``LimitRanger plugin set: cpu, memory
  request for container c; cpu limit for container c``).
- ``Validate`` on a Pod create (``PodValidateLimitFunc``): Container items against every
  container and init container, Pod items against ``podRequests``/``podLimits`` (no overhead);
  min, then max, then maxLimitRequestRatio, resources in name order, errors aggregated
  (403 ``[a, b]``).
- A LimitRange object gets its Container items' defaults (``SetDefaults_LimitRangeItem``:
  default <- max, defaultRequest <- default | min), API defaulting upstream, done here where
  gpusched keeps LimitRange knowledge.

Neighbours: ``admission.registry``; ``admission.attributes`` (quantities parsed once).
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.admission.attributes import Attributes
from gpusched.cluster.admission.plugin import CREATE, UPDATE, Plugin
from gpusched.cluster.apiserver.resources import format_amount
from gpusched.errors import ForbiddenError
from gpusched.objects.quantity import canonical

NAME = "LimitRanger"
LIMIT_RANGER_ANNOTATION = "kubernetes.io/limit-ranger"


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


def _admit(attrs: Attributes) -> None:
    if attrs.kind == "LimitRange":
        default_limit_range(attrs.obj)
        return
    if attrs.operation != CREATE:
        return
    pod = attrs.obj
    spec = pod.setdefault("spec", {})
    notes: list[str] = []
    for lr in attrs.view.list("LimitRange", attrs.namespace):
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
        attrs.resources_changed()
    if notes:
        annotations = pod.setdefault("metadata", {}).setdefault("annotations", {})
        annotations[LIMIT_RANGER_ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)


def _merge_defaults(container: dict[str, Any], prefix: str, limits: dict[str, Any],
                    requests: dict[str, Any]) -> list[str]:
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


def _validate(attrs: Attributes) -> None:
    errors: list[str] = []
    for lr in attrs.view.list("LimitRange", attrs.namespace):
        for item in (lr.get("spec") or {}).get("limits") or []:
            kind = item.get("type")
            if kind == "Container":
                for _, _, req, lim in attrs.pod.containers:
                    errors += _limit_errors(item, "Container", req, lim)
            elif kind == "Pod":
                errors += _limit_errors(item, "Pod", attrs.pod.limit_range_requests,
                                        attrs.pod.limit_range_limits)
    if errors:
        detail = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        raise ForbiddenError("pods", attrs.name, detail)


def _limit_errors(item: dict[str, Any], scope: str, req: dict[str, int],
                  lim: dict[str, int]) -> list[str]:
    """At most one error per resource and constraint, as ``minConstraint``/``maxConstraint``/
    ``limitRequestRatioConstraint`` in limitranger.go."""
    return (_min_errors(item, scope, req, lim) + _max_errors(item, scope, req, lim)
            + _ratio_errors(item, scope, req, lim))


def _min_errors(item: dict[str, Any], scope: str, req: dict[str, int],
                lim: dict[str, int]) -> list[str]:
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


def _max_errors(item: dict[str, Any], scope: str, req: dict[str, int],
                lim: dict[str, int]) -> list[str]:
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


def _ratio_errors(item: dict[str, Any], scope: str, req: dict[str, int],
                  lim: dict[str, int]) -> list[str]:
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


def _validate_pod_create(attrs: Attributes) -> None:
    if attrs.kind == "Pod" and attrs.operation == CREATE:
        _validate(attrs)


PLUGIN = Plugin(NAME, frozenset({CREATE, UPDATE}), frozenset({"Pod", "LimitRange"}),
                mutate=_admit, validate=_validate_pod_create)
