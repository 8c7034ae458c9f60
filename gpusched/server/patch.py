"""Applying PATCH bodies to stored objects: JSON merge, JSON patch, strategic merge, apply.

Pure functions from (stored object, patch) to the new object; the caller then stores it through
``apiserver.api_ops.replace`` (validation, admission, resourceVersion check).

- ``application/merge-patch+json`` (RFC 7386): objects merge, ``null`` deletes, lists replace.
- ``application/json-patch+json`` (RFC 6902, pointers per RFC 6901): add, remove, replace,
  move, copy, test; ``test`` compares JSON values (``true`` is not ``1``); array indices without
  leading zeros, ``-`` past the end for add only; all or nothing.
- ``application/strategic-merge-patch+json``: each field as its OpenAPI patch strategy and merge
  key say, with the ``$patch``, ``$retainKeys``, ``$setElementOrder`` and
  ``$deleteFromPrimitiveList`` directives (``server.strategic``); built-in kinds only.
- ``application/apply-patch+yaml`` (server-side apply, simplified): the applied configuration is
  strategic-merged into the stored object (fields it does not mention stay; field managers are
  not tracked, so fields a manager stops sending are not removed). A missing object is created.

Neighbours: ``server.resources`` calls :func:`apply_patch`; errors are those of apiserver
``handlers/patch.go``: a body that does not decode is 400 BadRequest, a JSON patch that does not
apply (missing path, failed ``test``, bad index) is 422 with the generic message of
``NewGenericServerResponse`` (:class:`JsonPatchError`), more than 10,000 operations 413.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml

from gpusched.cluster.apiserver.api_ops import BadRequestError
from gpusched.errors import GpuschedError
from gpusched.objects import limits
from gpusched.objects.manifest import yaml_load
from gpusched.objects.strict import mapping_from_pairs
from gpusched.server import strategic
from gpusched.objects.digits import is_digits

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
        return limits.json_loads(text, object_pairs_hook=mapping_from_pairs)
    except (ValueError, yaml.YAMLError, limits.LimitError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise BadRequestError(f"the body of the request could not be decoded: {first}") from None


def apply_patch(old: dict[str, Any], patch: Any, patch_type: str) -> dict[str, Any]:
    """The object ``old`` with ``patch`` applied (``old`` is not changed)."""
    if patch_type == JSON_PATCH:
        return json_patch(old, patch)
    if patch is None and patch_type == MERGE:
        raise BadRequestError("Invalid JSON Patch")          # json-patch ErrBadJSONPatch
    if patch is None:
        patch = {}
    if not isinstance(patch, dict):
        # handlers/patch.go: the body is unmarshalled into a map first
        error = (f"json: cannot unmarshal {_go_json_type(patch)} into Go value of type "
                 "map[string]interface {}")
        raise BadRequestError(f"error decoding patch: {error}" if patch_type == MERGE else error)
    if patch_type == MERGE:
        result: dict[str, Any] = merge_patch(old, patch)
        return result
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


def strategic_merge(old: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Strategic merge patch with the patch metadata of ``old``'s kind (``server.strategic``).

    >>> pod = {"apiVersion": "v1", "kind": "Pod", "spec": {"tolerations": [{"key": "a"}],
    ...        "containers": [{"name": "a", "image": "x"}, {"name": "b"}]}}
    >>> strategic_merge(pod, {"spec": {"tolerations": [{"key": "b"}],
    ...                                "containers": [{"name": "a", "image": "y"}]}})["spec"]
    {'tolerations': [{'key': 'b'}], 'containers': [{'name': 'a', 'image': 'y'}, {'name': 'b'}]}
    """
    node = strategic.root_node(str(old.get("apiVersion", "")), str(old.get("kind", "")))
    try:
        return strategic.strategic_merge_patch(old, patch, node)
    except BadRequestError as err:
        if err.message in STRATEGIC_BAD_REQUEST:
            raise
        if err.message in STRATEGIC_GENERIC_422:
            raise GenericInvalidError(err.message) from None
        raise UnknownPatchError(err.message) from None


def strategic_supported(api_version: str, kind: str) -> bool:
    """Strategic merge patch exists for built-in kinds only; kube-apiserver answers 415 for
    custom resources (apiextensions-apiserver's crdHandler offers JSON, merge and apply)."""
    return strategic.root_node(api_version, kind) is not None


# ---- RFC 6902 ---------------------------------------------------------------------------------

# the bounds live in objects.limits: maxJSONPatchOperations (handlers/patch.go) and
# JSONPatchMaxCopyBytes (json-patch's AccumulatedCopySizeLimit: copies may add this much)
MAX_JSON_PATCH_OPERATIONS = limits.MAX_PATCH_OPERATIONS
MAX_COPY_BYTES = limits.MAX_COPY_BYTES
APPLY_FAILED = "the server rejected our request due to an error in our request"


class EntityTooLargeError(GpuschedError):
    """413 RequestEntityTooLarge (apimachinery ``NewRequestEntityTooLargeError``)."""

    code = 413
    reason = "RequestEntityTooLarge"


class GenericInvalidError(GpuschedError):
    """``NewGenericServerResponse(422, ...)``: reason Invalid, a generic message and empty
    details; ``detail`` keeps what went wrong for logs and tests."""

    code = 422
    reason = "Invalid"

    def __init__(self, detail: str) -> None:
        super().__init__(APPLY_FAILED)
        self.detail = detail


class JsonPatchError(GenericInvalidError):
    """A JSON patch that does not apply (handlers/patch.go ``applyJSPatch``)."""


class UnknownPatchError(GpuschedError):
    """An error handlers/patch.go passes on as it is: ``ErrorToAPIStatus`` makes it a 500 with
    the error's text and an empty reason (kubectl: ``Error from server: <text>``)."""

    code = 500
    reason = ""


# handlers/patch.go interpretStrategicMergePatchError: these are 400, these 422, the rest 500
STRATEGIC_BAD_REQUEST = ("invalid JSON document", "invalid patch format of primitive list",
                         "invalid patch format of retainKeys",
                         "invalid patch format of setElementOrder list",
                         "strategic merge patch format is not supported")
STRATEGIC_GENERIC_422 = ("lists of lists are not supported",
                         "patch content doesn't match retainKeys list")


def _pointer(path: Any, field: str = "path") -> list[str]:
    """RFC 6901: "" is the whole document; else "/"-separated tokens, ``~1`` -> "/", ``~0`` -> "~"
    (in that order, so ``~01`` is "~1")."""
    if not isinstance(path, str):
        raise JsonPatchError(f'"{field}" must be a string')
    if path == "":
        return []
    if not path.startswith("/"):
        raise JsonPatchError(f'JSON pointer "{path}" must start with "/"')
    tokens = path[1:].split("/")
    for token in tokens:
        if "~" in token.replace("~0", "").replace("~1", ""):
            raise JsonPatchError(f'JSON pointer "{path}" has a "~" not followed by 0 or 1')
    return [t.replace("~1", "/").replace("~0", "~") for t in tokens]


def _index(token: str, length: int, path: str, adding: bool) -> int:
    """An array index: "0" or digits without a leading zero (RFC 6901 section 4), at most
    ``length`` when adding (``length - 1`` otherwise); "-" (past the end) only when adding."""
    if token == "-" and adding:
        return length
    if not (token == "0" or (token[:1] in "123456789" and is_digits(token))):
        raise JsonPatchError(f'"{token}" in "{path}" is not an array index')
    index = int(token)
    if index > length or (index == length and not adding):
        raise JsonPatchError(f'index {index} in "{path}" is out of range (array of {length})')
    return index


def _container(doc: Any, tokens: list[str], path: str) -> Any:
    """The value holding the last token of ``path`` (it must exist)."""
    current = doc
    for token in tokens[:-1]:
        if isinstance(current, dict) and token in current:
            current = current[token]
        elif isinstance(current, list):
            current = current[_index(token, len(current), path, adding=False)]
        else:
            raise JsonPatchError(f'"{path}": missing parent')
    return current


def _get(doc: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return doc
    parent, last = _container(doc, tokens, path), tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise JsonPatchError(f'"{path}" does not exist')
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(last, len(parent), path, adding=False)]
    raise JsonPatchError(f'"{path}" does not exist')


def _remove(doc: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        raise JsonPatchError("the whole document cannot be removed")
    parent, last = _container(doc, tokens, path), tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise JsonPatchError(f'"{path}" does not exist')
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(last, len(parent), path, adding=False))
    raise JsonPatchError(f'"{path}" does not exist')


def _add(doc: Any, path: str, value: Any) -> Any:
    """RFC 6902 4.1: a member is added or replaced; an array element inserted; returns the doc."""
    tokens = _pointer(path)
    if not tokens:
        return value
    parent, last = _container(doc, tokens, path), tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(last, len(parent), path, adding=True), value)
    else:
        raise JsonPatchError(f'"{path}": missing parent')
    return doc


def json_equal(a: Any, b: Any) -> bool:
    """RFC 6902 4.6 equality: same JSON type and value; numbers by value (1 == 1.0), never a
    boolean against a number (``True == 1`` is true in Python, not in JSON).

    >>> json_equal(True, 1), json_equal(1, 1.0), json_equal({"a": [1]}, {"a": [1.0]})
    (False, True, True)
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return _structure_equal(a, b)


def _structure_equal(a: Any, b: Any) -> bool:
    """Objects by keys and members, arrays by length and items, anything else by type and value."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _member(op: dict[str, Any], name: str, number: int) -> Any:
    if name not in op:
        raise JsonPatchError(f'operation {number} ({op.get("op")}) has no "{name}"')
    return op[name]


def _apply_one(doc: Any, op: dict[str, Any], number: int, copied: list[int]) -> Any:
    kind = op.get("op")
    path = _member(op, "path", number)
    if kind == "add":
        return _add(doc, path, copy.deepcopy(_member(op, "value", number)))
    if kind == "remove":
        _remove(doc, path)
        return doc
    if kind == "replace":
        value = copy.deepcopy(_member(op, "value", number))
        if not _pointer(path):
            return value
        _get(doc, path)                                    # the target must exist (4.3)
        _remove(doc, path)
        return _add(doc, path, value)
    if kind in ("move", "copy"):
        source = _member(op, "from", number)
        _pointer(source, "from")
        if kind == "move":
            if source == path:
                _get(doc, source)
                return doc
            if path.startswith(source + "/"):
                raise JsonPatchError(f'"{source}" cannot be moved into its own child "{path}"')
            return _add(doc, path, _remove(doc, source))
        value = _get(doc, source)
        copied[0] += len(json.dumps(value, separators=(",", ":")))
        if copied[0] > MAX_COPY_BYTES:
            raise JsonPatchError(f"Unable to complete the copy, the accumulated size increase of "
                                 f"copy is {copied[0]}, exceeding the limit {MAX_COPY_BYTES}")
        return _add(doc, path, copy.deepcopy(value))
    if kind == "test":
        if not json_equal(_get(doc, path), _member(op, "value", number)):
            raise JsonPatchError(f'test of "{path}" failed')
        return doc
    raise JsonPatchError(f'operation {number}: unknown op {json.dumps(kind)}')


def _go_json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    names: dict[type[Any], str] = {dict: "object", list: "array", str: "string"}
    result = names.get(type(value), "number")
    return result


def _decode_patch_error(operations: Any) -> str:
    """jsonpatch.DecodePatch's json.Unmarshal error for a body that is not an array of objects."""
    if not isinstance(operations, list):
        return f"json: cannot unmarshal {_go_json_type(operations)} into Go value of type jsonpatch.Patch"
    bad = next(op for op in operations if not isinstance(op, dict))
    return f"json: cannot unmarshal {_go_json_type(bad)} into Go value of type jsonpatch.Operation"


def json_patch(old: dict[str, Any], operations: Any) -> dict[str, Any]:
    """RFC 6902 over a copy of ``old``; any failing operation fails the whole patch.

    >>> json_patch({"a": [1]}, [{"op": "add", "path": "/a/-", "value": 2}])
    {'a': [1, 2]}
    """
    if operations is None:
        operations = []                    # json.Unmarshal of null into a slice: no operations
    operations = [{} if op is None else op for op in operations] \
        if isinstance(operations, list) else operations
    if not isinstance(operations, list) or not all(isinstance(op, dict) for op in operations):
        raise BadRequestError(_decode_patch_error(operations))
    if len(operations) > MAX_JSON_PATCH_OPERATIONS:
        raise EntityTooLargeError(f"Request entity too large: The allowed maximum operations in a "
                                  f"JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {len(operations)}")
    doc: Any = copy.deepcopy(old)
    copied = [0]
    for number, op in enumerate(operations):
        doc = _apply_one(doc, op, number, copied)
    if not isinstance(doc, dict):
        raise JsonPatchError("the patched document is not an object")
    return doc
