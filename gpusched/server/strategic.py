"""Strategic merge patch as kube-apiserver applies it, driven by the published OpenAPI.

Each field's behaviour comes from its schema in ``objects/schemas/kubernetes.json`` (v1.35's
``swagger.json``): ``x-kubernetes-patch-strategy`` (``merge``, ``replace``, ``retainKeys``, or
``merge,retainKeys``) and ``x-kubernetes-patch-merge-key``. A list without a ``merge`` strategy
(``x-kubernetes-list-type: atomic`` such as ``tolerations`` and node ``taints``, and every list
without a strategy) is replaced; ``finalizers`` (strategy ``merge``, scalars) is a union.
``x-kubernetes-list-type``/``x-kubernetes-list-map-keys`` are server-side apply's, not strategic
merge's: apimachinery's strategicpatch reads only the patch strategy and merge key (the Go struct
tags the OpenAPI extensions are generated from), so they are not consulted here.

The algorithm follows ``k8s.io/apimachinery/pkg/util/strategicpatch/patch.go`` with the options
``StrategicMergeMapPatch`` uses (``MergeParallelList``, ``IgnoreUnmatchedNulls``):

- ``mergeMap``: ``$patch: replace`` in a map gives the patch map, ``$patch: delete`` an empty
  map; ``$retainKeys`` drops the original's keys it does not list; ``$setElementOrder/<f>``
  orders the merged list ``f``; ``$deleteFromPrimitiveList/<f>`` removes scalars from ``f``;
  ``null`` deletes a key; a key absent from the original takes the patch value as sent.
- ``mergeSlice``: scalars are unioned; maps are matched by the merge key (``$patch: delete``
  removes every element with that key, ``$patch: replace`` makes the list the patch's other
  elements); the result is ordered as ``normalizeElementOrder`` does: patch items in patch order,
  server-only items in live order, interleaved by live order (so a new element lands first
  unless ``$setElementOrder`` says otherwise, exactly as upstream).

Errors are ``BadRequestError`` (400) with mergepatch's messages. Neighbours: ``server.patch``
(calls :func:`strategic_merge_patch`), ``objects.schema``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from gpusched.cluster.apiserver.api_ops import BadRequestError
from gpusched.objects import schema
from gpusched.objects.gotext import go_value

DIRECTIVE = "$patch"
RETAIN_KEYS = "$retainKeys"
SET_ORDER = "$setElementOrder/"
DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"


@dataclass(frozen=True, slots=True)
class FieldMeta:
    """A field's patch metadata (forkedjson.LookupPatchMetadata's answer)."""
    node: dict[str, Any] | None       # the resolved schema of the field's value (None: unknown)
    strategy: str           # "merge", "replace" or "" (retainKeys is split off)
    merge_key: str


def root_node(api_version: str, kind: str) -> dict[str, Any] | None:
    """The schema of a built-in kind; None for custom resources (no strategic merge there)."""
    info = schema.schema_for(api_version, kind)
    if info is None or info.custom:
        return None
    result: dict[str, Any] | None = schema.load().definitions[info.name]
    return result


def _field(node: dict[str, Any] | None, key: str) -> FieldMeta:
    if not node:
        return FieldMeta(None, "", "")
    props = node.get("properties") or {}
    field = props.get(key)
    if field is None and isinstance(node.get("additionalProperties"), dict):
        field = node["additionalProperties"]
    if field is None:
        return FieldMeta(None, "", "")
    strategies = [s for s in str(field.get("x-kubernetes-patch-strategy", "")).split(",") if s]
    other = [s for s in strategies if s != "retainKeys"]
    return FieldMeta(schema.resolve(field), other[0] if other else "",
                     str(field.get("x-kubernetes-patch-merge-key", "")))


def _items(node: dict[str, Any] | None) -> dict[str, Any] | None:
    if node and isinstance(node.get("items"), dict):
        return schema.resolve(node["items"])
    return None


def strategic_merge_patch(original: dict[str, Any], patch: dict[str, Any], node: dict[str, Any] | None) -> dict[str, Any]:
    """``StrategicMergeMapPatch``: ``original`` and ``patch`` are not changed."""
    return _merge_map(copy.deepcopy(original), copy.deepcopy(patch), node)


def _merge_map(original: Any, patch: dict[str, Any], node: dict[str, Any] | None) -> dict[str, Any]:
    if DIRECTIVE in patch:
        return _map_directive(patch)
    if not isinstance(original, dict):
        original = {}
    _retain_keys(original, patch)
    _set_element_orders(original, patch, node)
    for key, value in list(patch.items()):
        is_delete_list = key.startswith(DELETE_PRIMITIVE)
        if is_delete_list:
            key = _extract(key, DELETE_PRIMITIVE, "invalid patch format of primitive list")
        if value is None:
            original.pop(key, None)
            continue
        if key not in original:
            if not is_delete_list:
                original[key] = value
            continue
        current = original[key]
        if _go_kind(current) != _go_kind(value):
            original[key] = value
            continue
        meta = _field(node, key)
        if isinstance(current, dict):
            original[key] = value if meta.strategy == "replace" else _merge_map(current, value, meta.node)
        elif isinstance(current, list):
            original[key] = (_merge_slice(current, value, _items(meta.node), meta.merge_key, is_delete_list)
                             if meta.strategy == "merge" else value)
        else:
            original[key] = value
    result: dict[str, Any] = original
    return result


def _map_directive(patch: dict[str, Any]) -> dict[str, Any]:
    directive = patch[DIRECTIVE]
    if directive == "replace":
        del patch[DIRECTIVE]
        return patch
    if directive == "delete":
        return {}
    raise BadRequestError(f"unknown patch type: {directive} in map: {_go(patch)}")


def _retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    if RETAIN_KEYS not in patch:
        return
    keys = patch.pop(RETAIN_KEYS)
    if not isinstance(keys, list):
        raise BadRequestError("invalid patch format of retainKeys")
    keep = set(k for k in keys if isinstance(k, str))
    for key, value in patch.items():
        if value is None or key.startswith((DELETE_PRIMITIVE, SET_ORDER)):
            continue
        if key not in keep:
            raise BadRequestError("invalid patch format of retainKeys")
    for key in [k for k in original if k not in keep]:
        del original[key]


def _extract(key: str, prefix: str, message: str) -> str:
    rest = key[len(prefix):]
    if not rest:
        raise BadRequestError(message)
    return rest


def _set_element_orders(original: dict[str, Any], patch: dict[str, Any], node: dict[str, Any] | None) -> None:
    """``mergePatchIntoOriginal``: merge each list that has a ``$setElementOrder`` and order it."""
    for key in [k for k in patch if k.startswith(SET_ORDER)]:
        order = patch.pop(key)
        name = _extract(key, SET_ORDER, "invalid patch format of setElementOrder list")
        if not isinstance(order, list):
            raise BadRequestError("invalid patch format of setElementOrder list")
        meta = _field(node, name)
        live, sent = original.get(name), patch.get(name)
        for value in (live, sent):
            if value is not None and not isinstance(value, list):
                raise BadRequestError(f"expected a list, got {_go_kind(value)}")
        if isinstance(sent, list):
            _validate_order(sent, order, meta.merge_key)
        merged = _merged_list(live, sent, meta)
        if merged is None:
            continue
        mine, server_only = _partition(merged, order, meta.merge_key)
        original[name] = _normalize(mine, server_only, order, live or [], meta.merge_key)
        patch.pop(name, None)


def _merged_list(live: list[Any] | None, sent: list[Any] | None, meta: FieldMeta) -> list[Any] | None:
    """The live list merged with the patch's (``merge`` strategy) or replaced by it; None when
    neither has one."""
    if sent is None:
        return live
    if live is None:
        return sent
    if meta.strategy == "merge":
        return _merge_slice(live, sent, _items(meta.node), meta.merge_key, False)
    return sent


def _validate_order(sent: list[Any], order: list[Any], merge_key: str) -> None:
    """``validatePatchWithSetOrderList``: the patch's items appear in the order list, in order."""
    if not sent or not order:
        return
    kept = [i for i in sent if not (isinstance(i, dict) and i.get(DIRECTIVE) == "delete")] \
        if merge_key else sent
    p = o = 0
    while p < len(kept) and o < len(order):
        if isinstance(kept[p], dict) and DIRECTIVE in kept[p]:
            p += 1
            continue
        if _identity(kept[p], merge_key) == _identity(order[o], merge_key):
            p += 1
        o += 1
    if p < len(kept):
        raise BadRequestError(f"The order in patch list:\n{_go(sent)}\n doesn't match "
                              f"$setElementOrder list:\n{_go(order)}\n")


def _merge_slice(original: list[Any], patch: list[Any], elem: dict[str, Any] | None, merge_key: str,
                 is_delete_list: bool) -> list[Any]:
    if not original and not patch:
        return original
    kind = _element_kind(original + patch)
    if kind != "map":
        if is_delete_list:
            return [v for v in original if v not in patch]
        merged = _dedupe(original + patch)
    else:
        if not merge_key:
            raise BadRequestError("cannot merge lists without merge key for type map")
        original, patch = _special_elements(original, patch, merge_key)
        merged = _merge_maps_by_key(original, patch, elem, merge_key)
    mine, server_only = _partition(merged, patch, merge_key if kind == "map" else "")
    return _normalize(mine, server_only, patch, original, merge_key if kind == "map" else "")


def _special_elements(original: list[Any], patch: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """``mergeSliceWithSpecialElements``: ``$patch: delete`` and ``$patch: replace`` elements."""
    plain: list[Any] = []
    replace = False
    for item in patch:
        if DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[DIRECTIVE]
        if directive == "delete":
            if merge_key not in item:
                raise BadRequestError(f"map: {_go(item)} does not contain declared merge key: {merge_key}")
            original = [o for o in original if not (isinstance(o, dict) and merge_key in o
                                                    and o[merge_key] == item[merge_key])]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise BadRequestError("merging lists cannot yet be specified in the patch")
        else:
            raise BadRequestError(f"unknown patch type: {directive} in map: {_go(item)}")
    if replace:
        return plain, []
    return original, plain


def _merge_maps_by_key(original: list[Any], patch: list[Any], elem: dict[str, Any] | None, merge_key: str) -> list[Any]:
    out = list(original)
    for item in patch:
        if merge_key not in item:
            raise BadRequestError(f"map: {_go(item)} does not contain declared merge key: {merge_key}")
        index = next((i for i, o in enumerate(out) if isinstance(o, dict) and merge_key in o
                      and o[merge_key] == item[merge_key]), None)
        if index is None:
            out.append(item)
        else:
            out[index] = _merge_map(out[index], item, elem)
    return out


def _identity(item: Any, merge_key: str) -> Any:
    if merge_key:
        if not isinstance(item, dict) or merge_key not in item:
            raise BadRequestError(f"map: {_go(item)} does not contain declared merge key: {merge_key}")
        return _hashable(item[merge_key])
    return _hashable(item)


def _hashable(value: Any) -> Any:
    """Go's == on interface values: a JSON number equals a number, never a string or bool."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return _go_kind(value), value
    return _go_kind(value), repr(value)


def _index(items: list[Any], value: Any, merge_key: str) -> int:
    wanted = _identity(value, merge_key)
    for i, item in enumerate(items):
        if _identity(item, merge_key) == wanted:
            return i
    return -1


def _partition(merged: list[Any], by: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    present = {_identity(i, merge_key) for i in by
               if not (merge_key and isinstance(i, dict) and DIRECTIVE in i and merge_key not in i)}
    mine = [i for i in merged if _identity(i, merge_key) in present]
    return mine, [i for i in merged if _identity(i, merge_key) not in present]


def _sort_by(items: list[Any], order: list[Any], merge_key: str) -> list[Any]:
    """``normalizeSliceOrder``: stable sort by position in ``order`` ($patch: delete items last)."""
    deletes = [i for i in items if merge_key and isinstance(i, dict) and i.get(DIRECTIVE) == "delete"]
    rest = [i for i in items if not any(i is d for d in deletes)]
    positions = {id(i): _index(order, i, merge_key) for i in rest}
    known = sorted((i for i in rest if positions[id(i)] >= 0), key=lambda i: positions[id(i)])
    unknown = [i for i in rest if positions[id(i)] < 0]
    return known + unknown + deletes


def _normalize(mine: list[Any], server_only: list[Any], patch_order: list[Any], server_order: list[Any],
               merge_key: str) -> list[Any]:
    """``normalizeElementOrder`` then ``mergeSortedSlice``: server-only items are interleaved
    into the patch items by their live order; an item not in the live list goes first."""
    left = _sort_by(server_only, server_order, merge_key)
    right = _sort_by(mine, patch_order, merge_key)
    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j])
            j += 1
        elif j >= len(right):
            out.append(left[i])
            i += 1
        else:
            li, ri = _index(server_order, left[i], merge_key), _index(server_order, right[j], merge_key)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


def _go_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "slice"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "float64"
    if value is None:
        return "nil"
    return "string"


def _element_kind(items: list[Any]) -> str:
    """``sliceElementType``: every element of one type, and no lists of lists."""
    kinds = {_go_kind(i) for i in items}
    if "slice" in kinds:
        raise BadRequestError("lists of lists are not supported")
    if len(kinds) > 1:
        raise BadRequestError(f"list element types are not identical: {_go(items)}")
    return kinds.pop()


def _dedupe(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    seen: set[Any] = set()
    for item in items:
        key = _hashable(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _go(value: Any) -> str:
    """A value as Go's ``%v`` prints the decoded JSON (``map[image:x name:a]``, ``[a b]``),
    shortened past 200 characters.

    >>> _go({"name": "a", "image": "x", "ports": [1, 2.5], "x": None, "on": True})
    'map[image:x name:a on:true ports:[1 2.5] x:<nil>]'
    """
    text = go_value(value)
    return text if len(text) <= 200 else text[:197] + "..."
