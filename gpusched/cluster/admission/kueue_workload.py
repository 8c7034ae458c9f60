"""Kueue's Workload webhook: ``vworkload.kb.io`` (kubernetes-sigs/kueue
``pkg/webhooks/workload_webhook.go`` ``ValidateWorkload`` / ``ValidateWorkloadUpdate``).

On create and update, with the webhook's field paths and messages:

- every container's (and init container's) ``resources.requests``/``limits`` and the pod-level
  ``resources`` of a pod set may not name ``pods`` (``...requests[pods]: Invalid value: "pods":
  the key is reserved for internal kueue use``);
- at most one pod set uses ``minCount`` (``spec.podSets: Invalid value: 2: at most one podSet
  can use minCount``);
- while the ``QuotaReserved`` condition is true, ``status.admission`` is set (``Required value:
  must be set while the QuotaReserved condition is true``), each assignment names a pod set
  (``Not found``) and its resource usage is a multiple of its count (``is not a multiple of 4``);
- ``status.reclaimablePods``: a known pod set, a count at most the pod set's;
- ``status.admissionChecks[i].podSetUpdates[j]``: a known pod set, toleration keys.

On update, besides: the pod sets are immutable while the old object reserves quota, and
``status.admission`` may be set or cleared but not changed (``field is immutable``), topology
assignments aside.

Neighbours: ``admission.registry``, ``kueue_rules``, ``webhook``; ``objects.quantity``.
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.admission.attributes import Attributes
from gpusched.cluster.admission.kueue_rules import validate_tolerations
from gpusched.cluster.admission.plugin import CREATE, UPDATE, Plugin
from gpusched.cluster.admission.webhook import deny
from gpusched.errors import FieldError
from gpusched.objects.fieldcheck import Errors
from gpusched.objects.quantity import QuantityError, canonical

NAME = "vworkload.kb.io"
IMMUTABLE = "field is immutable"


def _list(value: Any) -> list[Any]:
    return [v if isinstance(v, dict) else {} for v in value] if isinstance(value, list) else []


def _map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def quota_reserved(wl: dict[str, Any] | None) -> bool:
    """``workload.HasQuotaReservation``: the QuotaReserved condition is True."""
    return any(c.get("type") == "QuotaReserved" and c.get("status") == "True"
               for c in _list(_map(_map(wl).get("status")).get("conditions")))


def validate_workload(wl: dict[str, Any], old: dict[str, Any] | None = None) -> list[FieldError]:
    """``ValidateWorkload``: the webhook's errors, in its order."""
    spec, status = _map(wl.get("spec")), _map(wl.get("status"))
    e = Errors()
    pod_sets = _list(spec.get("podSets"))
    for i, pod_set in enumerate(pod_sets):
        _pod_set(pod_set, f"spec.podSets[{i}]", e)
    variable = sum(1 for ps in pod_sets if ps.get("minCount") is not None)
    if variable > 1:
        e.invalid("spec.podSets", variable, "at most one podSet can use minCount")
    if quota_reserved(wl):
        _admission(wl, old, e)
    _reclaimable(pod_sets, status, e)
    names = sorted(str(ps.get("name", "")) for ps in pod_sets)
    for i, check in enumerate(_list(status.get("admissionChecks"))):
        for j, update in enumerate(_list(check.get("podSetUpdates"))):
            at = f"status.admissionChecks[{i}].podSetUpdates[{j}]"
            if update.get("name") not in names:
                e.unsupported(f"{at}.name", update.get("name", ""), names)
            validate_tolerations(update.get("tolerations"), f"{at}.tolerations", e)
    return e.items


def _pod_set(pod_set: dict[str, Any], path: str, e: Errors) -> None:
    pod_spec = _map(_map(pod_set.get("template")).get("spec"))
    for field in ("initContainers", "containers"):
        for i, container in enumerate(_list(pod_spec.get(field))):
            resources = _map(container.get("resources"))
            for kind in ("requests", "limits"):
                _resource_list(resources.get(kind), f"{path}.template.spec.{field}[{i}].resources.{kind}", e)
    if isinstance(pod_spec.get("resources"), dict):
        for kind in ("requests", "limits"):
            _resource_list(pod_spec["resources"].get(kind), f"{path}.template.spec.resources.{kind}", e)


def _resource_list(resources: Any, path: str, e: Errors) -> None:
    if isinstance(resources, dict) and "pods" in resources:
        e.invalid(f"{path}[pods]", "pods", "the key is reserved for internal kueue use")


def _admission(wl: dict[str, Any], old: dict[str, Any] | None, e: Errors) -> None:
    admission = _map(wl.get("status")).get("admission")
    if not isinstance(admission, dict):
        if not (old is not None and quota_reserved(old) and _map(old.get("status")).get("admission") is None):
            e.required("status.admission", "must be set while the QuotaReserved condition is true")
        return
    names = {str(ps.get("name", "")) for ps in _list(_map(wl.get("spec")).get("podSets"))}
    for i, assignment in enumerate(_list(admission.get("podSetAssignments"))):
        at = f"status.admission.podSetAssignments[{i}]"
        if assignment.get("name") not in names:
            e.items.append(FieldError(f"{at}.name", "Not found", str(assignment.get("name", ""))))
        count = assignment.get("count") or 0
        if isinstance(count, int) and count > 0:
            for resource, value in sorted(_map(assignment.get("resourceUsage")).items()):
                try:
                    amount = canonical(str(resource), value)
                except QuantityError:
                    continue
                if amount % count:
                    e.invalid(f"{at}.resourceUsage[{resource}]", str(value), f"is not a multiple of {count}")


def _reclaimable(pod_sets: list[dict[str, Any]], status: dict[str, Any], e: Errors) -> None:
    counts = {str(ps.get("name", "")): ps.get("count", 1) for ps in pod_sets}
    for i, item in enumerate(_list(status.get("reclaimablePods"))):
        at = f"status.reclaimablePods[{i}]"
        name = str(item.get("name", ""))
        if name not in counts:
            e.unsupported(f"{at}.name", name, sorted(counts))
        elif isinstance(item.get("count"), int) and item["count"] > counts[name]:
            e.invalid(f"{at}.count", item["count"], f"should be less or equal to {counts[name]}")


def validate_workload_update(wl: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """``ValidateWorkloadUpdate``: the create rules, then what may not change."""
    errors = validate_workload(wl, old)
    e = Errors()
    new_spec, old_spec = _map(wl.get("spec")), _map(old.get("spec"))
    if quota_reserved(old) and new_spec.get("podSets") != old_spec.get("podSets"):
        e.invalid("spec.podSets", new_spec.get("podSets"), IMMUTABLE)
    new_adm, old_adm = _map(wl.get("status")).get("admission"), _map(old.get("status")).get("admission")
    if isinstance(new_adm, dict) and isinstance(old_adm, dict) and _without_topology(new_adm) != _without_topology(old_adm):
        e.invalid("status.admission", new_adm, IMMUTABLE)
    return errors + e.items


def _without_topology(admission: dict[str, Any]) -> dict[str, Any]:
    """An admission with its assignments' topology fields dropped (those may be set later)."""
    out = dict(admission)
    out["podSetAssignments"] = [{k: v for k, v in a.items()
                                 if k not in ("topologyAssignment", "delayedTopologyRequest")}
                                for a in _list(admission.get("podSetAssignments"))]
    return out


def _validate(attrs: Attributes) -> None:
    if attrs.operation == UPDATE and attrs.old is not None:
        deny(NAME, validate_workload_update(attrs.obj, attrs.old))
    else:
        deny(NAME, validate_workload(attrs.obj))


PLUGIN = Plugin(NAME, frozenset({CREATE, UPDATE}), frozenset({"Workload"}), validate=_validate,
                subresources=frozenset({"", "status"}))
