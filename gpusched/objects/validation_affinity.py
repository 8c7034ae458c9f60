"""Validation of labels, label selectors (metav1.LabelSelector), node affinity and pod
(anti-)affinity, with upstream wording: ``pkg/apis/core/validation/validation.go``
(ValidateNodeSelectorRequirement, validateNodeFieldSelectorRequirement, ValidateNodeSelectorTerm,
validateNodeAffinity, validatePodAffinityTerm, validatePodAntiAffinity / validatePodAffinity)
and ``apimachinery/pkg/apis/meta/v1/validation`` (ValidateLabelSelector, ValidateLabels).

Neighbours: fieldcheck (Errors), names; used by objects.podspec (a PodSpec's nodeSelector and
affinity) and the other validators (selectors of workloads, PDBs, NetworkPolicies, labels).
"""

from __future__ import annotations

from typing import Any, Callable

from gpusched.objects.fieldcheck import Errors
from gpusched.objects.names import dns1123_label_errors, label_value_errors, qualified_name_errors


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


def node_selector_term(term: Any, p: str, e: Errors) -> None:
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


def node_affinity(raw: dict[str, Any], p: str, e: Errors) -> None:
    required = e.mapping(raw, "requiredDuringSchedulingIgnoredDuringExecution",
                         f"{p}.requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        rp = f"{p}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        terms = e.items_of(required, "nodeSelectorTerms", rp)
        if required.get("nodeSelectorTerms") in (None, []):
            e.required(rp, "must have at least one node selector term")
        for i, term in enumerate(terms or ()):
            node_selector_term(term, f"{rp}[{i}]", e)
    _preferred(raw, p, e, "preference",
               lambda term, path: node_selector_term(term or {}, path, e))


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


def pod_affinity(raw: dict[str, Any], p: str, e: Errors) -> None:
    rp = f"{p}.requiredDuringSchedulingIgnoredDuringExecution"
    for i, term in enumerate(e.items_of(raw, "requiredDuringSchedulingIgnoredDuringExecution", rp) or ()):
        _pod_affinity_term(term, f"{rp}[{i}]", e)
    _preferred(raw, p, e, "podAffinityTerm", lambda term, path: _pod_affinity_term(term, path, e))
