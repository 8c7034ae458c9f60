"""managedFields' ``fieldsV1`` encoding (structured-merge-diff ``fieldpath``): a set of field
paths as a FieldsV1 tree and back, and a path as ``fieldpath.Path.String`` prints it.

A path is a tuple of elements: ``f:<field>``, ``k:<key fields as JSON>`` (an item of a keyed
list), ``v:<value as JSON>`` (an item of a set).

Neighbours: used by ``server.ssa``.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

Path = tuple[str, ...]


def compact(value: Any) -> str:
    """JSON as fieldpath writes it in keys: no spaces, sorted keys, UTF-8 kept."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def to_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    """The FieldsV1 tree of a set of paths; a path that is also a parent gets ``.``.

    >>> to_fields_v1([("f:spec", "f:replicas"), ("f:spec", "f:c", 'k:{"name":"a"}'),
    ...               ("f:spec", "f:c", 'k:{"name":"a"}', "f:image")])
    {'f:spec': {'f:c': {'k:{"name":"a"}': {'.': {}, 'f:image': {}}}, 'f:replicas': {}}}
    """
    tree: dict[str, Any] = {}
    ends: set[Path] = set()
    for path in paths:
        node = tree
        for element in path:
            node = node.setdefault(element, {})
        ends.add(path)
    return _render(tree, (), ends)


def _render(tree: dict[str, Any], path: Path, ends: set[Path]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if path in ends and tree and path:
        out["."] = {}
    for element in sorted(tree):
        out[element] = _render(tree[element], path + (element,), ends)
    return out


def from_fields_v1(tree: Any, prefix: Path = ()) -> set[Path]:
    """The paths of a FieldsV1 tree (a node that is ``{}`` or has ``.`` is owned)."""
    out: set[Path] = set()
    if not isinstance(tree, dict):
        return out
    if prefix and (not tree or "." in tree):
        out.add(prefix)
    for element, child in tree.items():
        if element != ".":
            out |= from_fields_v1(child, prefix + (element,))
    return out


def path_string(path: Path) -> str:
    """fieldpath.Path.String: ``.spec.containers[name="a"].image``, ``[="x"]`` for set items."""
    parts = []
    for element in path:
        kind, _, rest = element.partition(":")
        if kind == "f":
            parts.append("." + rest)
        elif kind == "k":
            fields = json.loads(rest)
            parts.append("[" + ",".join(f"{k}={compact(v)}" for k, v in fields.items()) + "]")
        elif kind == "v":
            parts.append(f"[={rest}]")
        else:
            parts.append(f"[{rest}]")
    return "".join(parts)
