"""Applying PATCH bodies to stored objects: JSON merge, JSON patch, strategic merge, apply.

Pure functions from (stored object, patch) to the new object; the caller then stores it through
``cluster.api_ops.replace`` (validation, admission, resourceVersion check).

- ``application/merge-patch+json`` (RFC 7386): objects merge, ``null`` deletes, lists replace.
- ``application/json-patch+json`` (RFC 6902): add, remove, replace, move, copy, test.
- ``application/strategic-merge-patch+json``: each field as its OpenAPI patch strategy and merge
  key say, with the ``$patch``, ``$retainKeys``, ``$setElementOrder`` and
  ``$deleteFromPrimitiveList`` directives (``server.strategic``); built-in kinds only.
- ``application/apply-patch+yaml`` (server-side apply, simplified): the applied configuration is
  strategic-merged into the stored object (fields it does not mention stay; field managers are
  not tracked, so fields a manager stops sending are not removed). A missing object is created.

Neighbours: ``server.resources`` calls :func:`apply_patch`; errors are ``BadRequestError`` (400)
or ``InvalidError`` (422, a failed JSON patch ``test``).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml

from gpusched.cluster.api_ops import BadRequestError
from gpusched.errors import FieldError, InvalidError
from gpusched.objects.manifest import yaml_load
from gpusched.objects.strict import mapping_from_pairs
from gpusched.server import strategic

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
PATCH_TYPES = (MERGE, JSON_PATCH, STRATEGIC, APPLY)



def parse_body(raw: bytes, content_type: str) -> Any:
    """JSON, or YAML for apply patches; a malformed body is 400 BadRequest. Repeated keys are
    marked (``objects.strict.DuplicateKeys``) for field validation."""
    text = raw.decode("utf-8", errors="replace")
    try:
        if content_type == APPLY or content_type.endswith("yaml"):
            return yaml_load(text)
        return json.loads(text, object_pairs_hook=mapping_from_pairs)
    except (ValueError, yaml.YAMLError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise BadRequestError(f"the body of the request could not be decoded: {first}") from None


def apply_patch(old: dict, patch: Any, patch_type: str) -> dict:
    """The object ``old`` with ``patch`` applied (``old`` is not changed)."""
    if patch_type == JSON_PATCH:
        return json_patch(old, patch)
    if not isinstance(patch, dict):
        raise BadRequestError(f"a {patch_type} body must be an object")
    if patch_type == MERGE:
        return merge_patch(old, patch)
    return strategic_merge(old, patch)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386.

    >>> merge_patch({"a": 1, "b": {"c": 2}}, {"a": None, "b": {"d": 3}})
    {'b': {'c': 2, 'd': 3}}
    """
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def strategic_merge(old: dict, patch: dict) -> dict:
    """Strategic merge patch with the patch metadata of ``old``'s kind (``server.strategic``).

    >>> pod = {"apiVersion": "v1", "kind": "Pod", "spec": {"tolerations": [{"key": "a"}],
    ...        "containers": [{"name": "a", "image": "x"}, {"name": "b"}]}}
    >>> strategic_merge(pod, {"spec": {"tolerations": [{"key": "b"}],
    ...                                "containers": [{"name": "a", "image": "y"}]}})["spec"]
    {'tolerations': [{'key': 'b'}], 'containers': [{'name': 'a', 'image': 'y'}, {'name': 'b'}]}
    """
    node = strategic.root_node(str(old.get("apiVersion", "")), str(old.get("kind", "")))
    return strategic.strategic_merge_patch(old, patch, node)


def strategic_supported(api_version: str, kind: str) -> bool:
    """Strategic merge patch exists for built-in kinds only; kube-apiserver answers 415 for
    custom resources (apiextensions-apiserver's crdHandler offers JSON, merge and apply)."""
    return strategic.root_node(api_version, kind) is not None


# ---- RFC 6902 ---------------------------------------------------------------------------------

def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise BadRequestError(f'invalid JSON patch path "{path}": must start with "/"')
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str], path: str) -> Any:
    current = doc
    for part in parts[:-1]:
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            raise InvalidError("patch", path, [FieldError(path, "Not found", None,
                                                          "the path does not exist")])
    return current


def _get(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return doc
    parent = _parent(doc, parts, path)
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent[int(last)]
    raise InvalidError("patch", path, [FieldError(path, "Not found", None, "the path does not exist")])


def _remove(doc: Any, path: str) -> Any:
    value = _get(doc, path)
    parts = _pointer(path)
    parent = _parent(doc, parts, path)
    if isinstance(parent, dict):
        del parent[parts[-1]]
    else:
        del parent[int(parts[-1])]
    return value


def _add(doc: Any, path: str, value: Any, replace: bool = False) -> Any:
    parts = _pointer(path)
    if not parts:
        return copy.deepcopy(value)
    parent = _parent(doc, parts, path)
    last = parts[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise InvalidError("patch", path, [FieldError(path, "Not found", None,
                                                          "the path does not exist")])
        parent[last] = copy.deepcopy(value)
    elif isinstance(parent, list):
        if last == "-" and not replace:
            parent.append(copy.deepcopy(value))
        elif last.isdigit() and int(last) <= len(parent) - (1 if replace else 0):
            if replace:
                parent[int(last)] = copy.deepcopy(value)
            else:
                parent.insert(int(last), copy.deepcopy(value))
        else:
            raise BadRequestError(f'invalid JSON patch index in "{path}"')
    else:
        raise BadRequestError(f'invalid JSON patch path "{path}"')
    return doc


def json_patch(old: dict, operations: Any) -> dict:
    """RFC 6902 over a copy of ``old``.

    >>> json_patch({"a": [1]}, [{"op": "add", "path": "/a/-", "value": 2}])
    {'a': [1, 2]}
    """
    if not isinstance(operations, list):
        raise BadRequestError("a JSON patch must be a list of operations")
    doc: Any = copy.deepcopy(old)
    for number, op in enumerate(operations):
        if not isinstance(op, dict) or not isinstance(op.get("path"), str):
            raise BadRequestError(f"JSON patch operation {number} needs an op and a path")
        kind, path = op.get("op"), op["path"]
        if kind in ("add", "replace"):
            if "value" not in op:
                raise BadRequestError(f'JSON patch operation {number} ({kind}) needs a value')
            doc = _add(doc, path, op["value"], replace=(kind == "replace"))
        elif kind == "remove":
            _remove(doc, path)
        elif kind in ("move", "copy"):
            source = op.get("from")
            if not isinstance(source, str):
                raise BadRequestError(f'JSON patch operation {number} ({kind}) needs "from"')
            value = _remove(doc, source) if kind == "move" else copy.deepcopy(_get(doc, source))
            doc = _add(doc, path, value)
        elif kind == "test":
            if _get(doc, path) != op.get("value"):
                raise InvalidError("patch", path, [FieldError(path, "Invalid value", None,
                                                              "test operation failed")])
        else:
            raise BadRequestError(f'unknown JSON patch operation "{kind}"')
    if not isinstance(doc, dict):
        raise BadRequestError("a JSON patch must leave an object")
    return doc
