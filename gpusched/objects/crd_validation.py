"""A custom resource's defaulting and schema validation, as apiextensions-apiserver does them.

For a kind whose schema is a CRD's (``objects.schema``, ``custom``), after strict decoding:

1. :func:`apply_defaults`: structural defaulting (apiextensions ``structuraldefaulting.Default``):
   an absent property with a ``default`` gets it, in every object that is present, the defaults
   themselves defaulted in turn (Kueue's ``queueingStrategy: BestEffortFIFO``,
   ``flavorFungibility: {}`` then ``whenCanBorrow: MayStopSearch``...).
2. :func:`validate_custom`: the OpenAPI constraints, reported as
   ``kubeOpenAPIResultToFieldErrors`` (apiextensions ``pkg/apiserver/validation/validation.go``)
   turns kube-openapi's results into ``field.Error``\\ s::

       required    spec.levels: Required value
       enum        spec.queueingStrategy: Unsupported value: "Fifo": supported values: "StrictFIFO", "BestEffortFIFO"
       maxItems    spec.resourceGroups: Too many: 17: must have at most 16 items
       maxLength   spec.cohortName: Too long: may not be longer than 253
       minItems    spec.levels: Invalid value: 0: spec.levels in body should have at least 1 items
       minLength, pattern, minimum, maximum: ``Invalid value`` with kube-openapi's sentence

   then the CEL rules (``x-kubernetes-validations``, ``objects.crd_cel``), each false one as ``<path>: Invalid value: "<type>": <message>`` (the
   root's path printed ``<nil>``, as apimachinery prints a nil ``field.Path``). As
   apiextensions' ``hasBlockingErr``, an enum, required, too-long or too-many error keeps the
   rules from running and adds ``<nil>: Invalid value: "null": some validation rules were not
   checked because the object was invalid; correct the existing errors to complete validation``.
3. :func:`validate_custom_update`: the transition rules (those reading ``oldSelf``), on an
   update, where the old object has a value at the rule's place.

Only the kind's own schema is walked: a ``$ref`` to a Kubernetes type (a Workload's pod
template) is left to the kind's webhook, as the CRD's embedded copy carries no constraints
Kueue relies on.

Neighbours: ``objects.schema`` (the schemas), ``objects.crd_cel`` (the rules),
``objects.validation`` (runs 1 and 2 for every custom kind), ``cluster.apiserver.strategy``
(runs 3).
"""

from __future__ import annotations

from typing import Any, Iterator

import copy
import re

from gpusched.errors import FieldError
from gpusched.objects.crd_cel import RULES, TRANSITION
from gpusched.objects.fieldcheck import Errors, render
from gpusched.objects.schema import load, schema_for

NodeAt = tuple[str, dict[str, Any], Any]      # (path, schema node, value)
# apiextensions' hasBlockingErr: these schema errors keep the CEL rules from running.
BLOCKING = frozenset({"Unsupported value", "Required value", "Too long", "Too many"})
RULES_NOT_CHECKED = ("some validation rules were not checked because the object was invalid; "
                     "correct the existing errors to complete validation")


def _root(obj: dict[str, Any]) -> dict[str, Any] | None:
    info = schema_for(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    if info is None or not info.custom:
        return None
    node: dict[str, Any] = load().definitions[info.name]
    return node


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def walk(node: dict[str, Any], value: Any, path: str = "") -> Iterator[NodeAt]:
    """Every (path, schema node, value) of the kind's own schema, parents first."""
    if "$ref" in node or value is None:
        return
    yield path, node, value
    if isinstance(value, dict):
        properties = node.get("properties") or {}
        extra = node.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key) or (extra if isinstance(extra, dict) else None)
            if sub is not None:
                yield from walk(sub, item, _child(path, key) if key in properties else f"{path}[{key}]")
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for i, item in enumerate(value):
            yield from walk(node["items"], item, f"{path}[{i}]")


def apply_defaults(obj: dict[str, Any]) -> None:
    """Structural defaulting of a custom resource, in place (see the module doc)."""
    root = _root(obj)
    if root is not None:
        _default(root, obj)


def _default(node: dict[str, Any], value: Any) -> None:
    if "$ref" in node:
        return
    if isinstance(value, dict):
        properties = node.get("properties") or {}
        for key, sub in properties.items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
        for key, item in value.items():
            sub = properties.get(key) or node.get("additionalProperties")
            if isinstance(sub, dict):
                _default(sub, item)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for item in value:
            _default(node["items"], item)


def validate_custom(obj: dict[str, Any], e: Errors) -> None:
    """The schema's constraints, then (when they hold) its CEL rules; see the module doc."""
    root = _root(obj)
    if root is None:
        return
    found = Errors()
    for path, node, value in walk(root, obj):
        _constraints(path, node, value, found)
    if any(error.type in BLOCKING for error in found.items):
        found.items.append(FieldError("<nil>", "Invalid value", "null", RULES_NOT_CHECKED))
    else:
        for path, node, value in walk(root, obj):
            _rules(path, node, value, None, found)
    e.items.extend(found.items)


def validate_custom_update(obj: dict[str, Any], old: dict[str, Any], e: Errors) -> None:
    """The transition rules of an update (``oldSelf``), where the old object has a value."""
    root = _root(obj)
    if root is None:
        return
    for path, node, value in walk(root, obj):
        rules = [r for r in node.get("x-kubernetes-validations") or () if r.get("rule") in TRANSITION]
        if rules:
            previous = _value_at(old, path)
            if previous is not None:
                _rules(path, {"x-kubernetes-validations": rules, "type": node.get("type")}, value,
                       previous, e)


def _value_at(obj: Any, path: str) -> Any:
    for part in re.findall(r"[^.\[\]]+|\[[^\]]*\]", path):
        if part.startswith("["):
            key = part[1:-1]
            obj = (obj[int(key)] if isinstance(obj, list) and key.isdigit() and int(key) < len(obj)
                   else obj.get(key) if isinstance(obj, dict) else None)
        else:
            obj = obj.get(part) if isinstance(obj, dict) else None
        if obj is None:
            return None
    return obj


def _rules(path: str, node: dict[str, Any], value: Any, old: Any, e: Errors) -> None:
    for rule in node.get("x-kubernetes-validations") or ():
        text = rule.get("rule", "")
        check = RULES.get(text)
        if check is None or ((text in TRANSITION) != (old is not None)):
            continue
        if not check(value, old):
            e.items.append(FieldError(path or "<nil>", "Invalid value", str(node.get("type", "object")),
                                      str(rule.get("message") or f"failed rule: {text}")))


def _constraints(path: str, node: dict[str, Any], value: Any, e: Errors) -> None:
    where = path or "body"
    if isinstance(value, dict):
        _object_constraints(path, node, value, e)
    elif isinstance(value, list):
        _list_constraints(path, node, value, e)
    elif isinstance(value, str):
        _string_constraints(path, where, node, value, e)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _number_constraints(path, where, node, value, e)
    if "enum" in node and value not in node["enum"]:
        e.unsupported(path, value, [v if isinstance(v, str) else render(v)[0] for v in node["enum"]])


def _object_constraints(path: str, node: dict[str, Any], value: dict[str, Any], e: Errors) -> None:
    for key in node.get("required") or ():
        if key not in value:
            e.required(_child(path, key))
    most = node.get("maxProperties")
    if most is not None and len(value) > most:
        e.too_many(path, len(value), most)


def _number_constraints(path: str, where: str, node: dict[str, Any], value: float, e: Errors) -> None:
    if "minimum" in node and value < node["minimum"]:
        e.invalid(path, value, f"{where} in body should be greater than or equal to {node['minimum']}")
    if "maximum" in node and value > node["maximum"]:
        e.invalid(path, value, f"{where} in body should be less than or equal to {node['maximum']}")


def _list_constraints(path: str, node: dict[str, Any], value: list[Any], e: Errors) -> None:
    most, least = node.get("maxItems"), node.get("minItems")
    if most is not None and len(value) > most:
        e.too_many(path, len(value), most)
    if least is not None and len(value) < least:
        e.invalid(path, len(value), f"{path} in body should have at least {least} items")


def _string_constraints(path: str, where: str, node: dict[str, Any], value: str, e: Errors) -> None:
    most, least = node.get("maxLength"), node.get("minLength")
    if most is not None and len(value) > most:
        e.items.append(FieldError(path, "Too long", None, f"may not be longer than {most}"))
    if least is not None and len(value) < least:
        e.invalid(path, value, f"{where} in body should be at least {least} chars long")
    pattern = node.get("pattern")
    if pattern is not None and not _matches(pattern, value):
        e.invalid(path, value, f"{where} in body should match '{pattern}'")


def _matches(pattern: str, value: str) -> bool:
    try:
        return re.search(pattern, value) is not None
    except re.error:           # an RE2 construct Python lacks: the schema's, not the user's fault
        return True
