"""Decoding a manifest against its kind's schema, as kube-apiserver decodes a request body.

``decode(obj, mode)`` walks the object along ``objects.schema`` and returns a :class:`Decoded`:
the object as the API server would keep it (unknown fields dropped, the last of duplicate keys
kept, a ``null`` field omitted as Go decodes it to its zero value and apiextensions prunes it:
``metadata.annotations: null`` is no annotations) and the strict findings, in the order the decoder meets them:

- ``unknown field "spec.containers[0].resource"``: a key the schema does not have (every one is
  reported, with its full path: ``.`` between field names and map keys, ``[i]`` for list items);
- ``duplicate field "spec.replicas"``: a key given twice in one YAML/JSON object (the loaders
  mark such mappings with :class:`DuplicateKeys`).

What happens next is the ``fieldValidation`` mode (kubectl's ``--validate``):

- ``Strict``: any finding fails the request (400 BadRequest)::

      Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.x"

  as ``runtime.NewStrictDecodingError`` (apimachinery ``pkg/runtime/error.go``) wrapped by the API
  server's ``transformDecodeError`` (apiserver ``pkg/endpoints/handlers/rest.go``); at most 100
  findings, each once (sigs.k8s.io/json ``saveStrictError``).
- ``Warn``: the findings become warnings (the API server's ``Warning: 299`` headers, which kubectl
  prints as ``Warning: unknown field "spec.x"``) and the cleaned object is stored.
- ``Ignore``: the cleaned object is stored silently.

A value of the wrong JSON type fails in every mode, as the Go decoder does: for built-in kinds
``json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32``
(encoding/json ``UnmarshalTypeError``: the struct holding the field, the field names from the
root, the Go type), a bad quantity with ``resource.Quantity``'s ``quantities must match the
regular expression ...``; for custom kinds (gpusched's own, CRDs) a 422 ``Invalid value`` per field
as apiextensions' schema validation says it (``spec.count in body must be of type integer``).
Custom kinds report unknown fields sorted by path, as CRD pruning finds them.

Neighbours: objects.schema (the schemas), objects.manifest (marks duplicate keys), used by
cluster.apply (the CLI's apply), the API server's writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from gpusched.errors import FieldError, GpuschedError, InvalidError
from gpusched.objects.kueue_conversion import to_storage_version
from gpusched.objects.quantity import QuantityError, parse_quantity
from gpusched.objects.schema import KindSchema, ref_name, resolve, schema_for

IGNORE, WARN, STRICT = "Ignore", "Warn", "Strict"
MODES = (IGNORE, WARN, STRICT)
MAX_FINDINGS = 100
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY_ERROR = ("quantities must match the regular expression "
                  "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
INT_RANGES = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}


class DuplicateKeys(dict[str, Any]):
    """A mapping whose source text gave some keys more than once (the last value is kept).

    ``duplicates`` holds ``(position, key)``: ``position`` is how many distinct keys came before
    the repeated one, so the decoder reports it where it met it.
    """

    duplicates: tuple[tuple[int, str], ...] = ()


def mapping_from_pairs(pairs: Iterable[tuple[Any, Any]]) -> dict[str, Any]:
    """A dict from (key, value) pairs in order, a :class:`DuplicateKeys` if a key repeats.

    >>> m = mapping_from_pairs([("a", 1), ("b", 2), ("a", 3)])
    >>> m, m.duplicates
    ({'a': 3, 'b': 2}, ((2, 'a'),))
    """
    out: dict[str, Any] = {}
    duplicates = []
    for key, value in pairs:
        if key in out:
            duplicates.append((len(out), key))
        out[key] = value
    if not duplicates:
        return out
    marked = DuplicateKeys(out)
    marked.duplicates = tuple(duplicates)
    return marked


def normalise_mode(value: str | None, default: str = STRICT) -> str:
    """kubectl's ``--validate`` values and the API's ``fieldValidation`` values -> a mode.

    >>> [normalise_mode(v) for v in ("true", "false", "warn", "Strict", "ignore", None)]
    ['Strict', 'Ignore', 'Warn', 'Strict', 'Ignore', 'Strict']
    """
    if value is None or value == "":
        return default
    mode = {"true": STRICT, "false": IGNORE}.get(value.lower(), value.lower().capitalize())
    if mode not in MODES:
        raise GpuschedError(f'invalid fieldValidation value "{value}": must be one of Ignore, Warn or Strict')
    return mode


class StrictDecodingError(GpuschedError):
    """400 BadRequest: the body does not decode into its kind (strict findings or a type error)."""

    code = 400
    reason = "BadRequest"

    def __init__(self, kind: str, api_version: str, detail: str, where: str = "") -> None:
        self.kind, self.detail = kind, detail
        version = api_version.rpartition("/")[2]
        body = f'{kind} in version "{version}" cannot be handled as a {kind}: {detail}'
        super().__init__(f"{where}: {body}" if where else body)


@dataclass(frozen=True)
class Decoded:
    obj: dict[str, Any]
    findings: tuple[str, ...] = ()          # 'unknown field "x"', 'duplicate field "y"'


@dataclass
class _Walk:
    custom: bool
    findings: list[str] = field(default_factory=list)
    unknown_custom: list[str] = field(default_factory=list)
    type_error: str | None = None
    invalid: list[FieldError] = field(default_factory=list)

    def finding(self, text: str) -> None:
        if len(self.findings) < MAX_FINDINGS and text not in self.findings:
            self.findings.append(text)

    def unknown(self, path: str) -> None:
        if self.custom:
            self.unknown_custom.append(path)
        else:
            self.finding(f'unknown field "{path}"')

    def wrong_type(self, node: dict[str, Any], value: Any, path: str, struct: str, fields: tuple[str, ...]) -> None:
        if self.custom:
            want = resolve(node).get("type", "object")
            got = json_type(value)
            self.invalid.append(FieldError(path, "Invalid value", got,
                                           f'{path} in body must be of type {want}: "{got}"'))
        elif self.type_error is None:
            self.type_error = (f"json: cannot unmarshal {json_type(value, node)} into Go struct field "
                               f"{struct}.{'.'.join(fields)} of type {go_type(node)}")

    # ---- the walk: returns the decoded value ---------------------------------------------------

    def value(self, node: dict[str, Any], value: Any, path: str, struct: str, fields: tuple[str, ...]) -> Any:
        if value is None:
            return None
        name = ref_name(node)
        if name == QUANTITY:
            return self.quantity(value, path)
        resolved = resolve(node)
        if name == INT_OR_STRING or resolved.get("x-kubernetes-int-or-string"):
            return self.int_or_string(value, path, struct, fields)
        kind = resolved.get("type")
        if kind == "object" or "properties" in resolved:
            return self.object(resolved, name, value, path, struct, fields)
        if kind == "array":
            if not isinstance(value, list):
                self.wrong_type(node, value, path, struct, fields)
                return None
            items = resolved.get("items") or {}
            return [self.value(items, item, f"{path}[{i}]", struct, fields) for i, item in enumerate(value)]
        if kind is None:
            return self.free(value, path)
        return self.scalar(node, resolved, value, path, struct, fields)

    def scalar(self, node: dict[str, Any], resolved: dict[str, Any], value: Any, path: str, struct: str,
               fields: tuple[str, ...]) -> Any:
        """A string, number or boolean; a ``[]byte`` field (``format: byte``) must be base64, as
        encoding/json decodes it."""
        if not scalar_fits(resolved, value):
            self.wrong_type(node, value, path, struct, fields)
            return None
        if resolved.get("format") == "byte" and not self.custom and self.type_error is None:
            at = base64_error(value)
            if at is not None:
                self.type_error = f"illegal base64 data at input byte {at}"
        return value

    def int_or_string(self, value: Any, path: str, struct: str, fields: tuple[str, ...]) -> Any:
        """An IntOrString: a string or an int32, else Go's int32 unmarshal error (``maxSurge:
        9223372036854775808`` does not fit ``IntOrString.IntVal``)."""
        low, high = INT_RANGES["int32"]
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool) and low <= value <= high):
            return value
        if isinstance(value, int) and not isinstance(value, bool) and not self.custom:
            # IntOrString.UnmarshalJSON decodes with encoding/json, whose UnmarshalTypeError is not
            # the API server decoder's own type: it gets no struct or field context
            self.type_error = self.type_error or f"json: cannot unmarshal number {value} into Go value of type int32"
            return None
        self.wrong_type({"type": "integer", "format": "int32"}, value, path, struct, fields)
        return None

    def object(self, node: dict[str, Any], name: str, value: Any, path: str, struct: str, fields: tuple[str, ...]) -> Any:
        if not isinstance(value, dict):
            self.wrong_type(node if not name else {"$ref": f"#/definitions/{name}"}, value, path, struct, fields)
            return None
        properties = node.get("properties")
        extra = node.get("additionalProperties")
        preserve = bool(node.get("x-kubernetes-preserve-unknown-fields"))
        if properties is None and not isinstance(extra, dict):
            return self.free(value, path)
        inner = name.rpartition(".")[2] if name else struct
        duplicates = list(getattr(value, "duplicates", ()))
        out = {}
        for position, (key, item) in enumerate(value.items()):
            child = f"{path}.{key}" if path else str(key)
            if properties is not None and key in properties:
                if item is not None:    # null: the field's zero value, omitted (Go; CRD pruning)
                    out[key] = self.value(properties[key], item, child, inner, (*fields, key))
            elif isinstance(extra, dict):
                out[key] = self.value(extra, item, child, struct, fields)
            elif preserve:
                out[key] = self.free(item, child)
            else:
                self.unknown(child)
                self.free(item, child)
            while duplicates and duplicates[0][0] == position + 1:
                self.finding(f'duplicate field "{_join(path, duplicates.pop(0)[1])}"')
        return out

    def free(self, value: Any, path: str) -> Any:
        """A value the schema leaves open: copied, duplicate keys still reported."""
        if isinstance(value, dict):
            duplicates = list(getattr(value, "duplicates", ()))
            out = {}
            for position, (key, item) in enumerate(value.items()):
                out[key] = self.free(item, _join(path, key))
                while duplicates and duplicates[0][0] == position + 1:
                    self.finding(f'duplicate field "{_join(path, duplicates.pop(0)[1])}"')
            return out
        if isinstance(value, list):
            return [self.free(item, f"{path}[{i}]") for i, item in enumerate(value)]
        return value

    def quantity(self, value: Any, path: str) -> Any:
        ok = isinstance(value, (str, int, float)) and not isinstance(value, bool)
        if ok:
            try:
                parse_quantity(value)
            except QuantityError:
                ok = False
        if ok:
            return value
        if self.custom:
            self.invalid.append(FieldError(path, "Invalid value", json_type(value), QUANTITY_ERROR))
        elif self.type_error is None:
            self.type_error = QUANTITY_ERROR
        return None


_BASE64_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_NEWLINES = frozenset(b"\r\n")


def base64_error(text: str) -> int | None:
    """Where Go's ``base64.StdEncoding.Decode`` gives up on ``text`` (the byte offset its
    ``CorruptInputError`` names: ``illegal base64 data at input byte 4``), None when it decodes.
    Padding is required, ``\\r``/``\\n`` are skipped, trailing bits need not be zero.

    >>> base64_error("aGk="), base64_error("aGk"), base64_error("not base64!"), base64_error("aGk=x")
    (None, 0, 3, 4)
    """
    src, at = text.encode("utf-8", "surrogatepass"), 0
    while True:
        got = 0                                    # data characters of this 4-character quantum
        while got < 4:
            if at == len(src):
                return None if got == 0 else at - got
            char, at = src[at], at + 1
            if char in _BASE64_ALPHABET:
                got += 1
            elif char not in _NEWLINES:
                return at - 1 if char != ord("=") or got < 2 else _after_padding(src, at, got)
        if at == len(src):
            return None


def _after_padding(src: bytes, at: int, got: int) -> int | None:
    """The rest of a quantum that met ``=`` after ``got`` (2 or 3) data characters: ``==`` after
    two, then only newlines to the end."""
    if got == 2:
        while at < len(src) and src[at] in _NEWLINES:
            at += 1
        if at == len(src):
            return at
        if src[at] != ord("="):
            return at - 1
        at += 1
    while at < len(src) and src[at] in _NEWLINES:
        at += 1
    return at if at < len(src) else None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else str(key)


def json_type(value: Any, node: dict[str, Any] | None = None) -> str:
    """How encoding/json names a JSON value in a type error (``number 1.5`` for a bad integer)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        if node is not None and resolve(node).get("type") == "integer":
            return f"number {value}"
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def scalar_fits(node: dict[str, Any], value: Any) -> bool:
    kind = node.get("type")
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if kind == "integer":
        if isinstance(value, float) and not value.is_integer():
            return False
        low, high = INT_RANGES.get(node.get("format", "int64"), INT_RANGES["int64"])
        return low <= value <= high
    return True


def go_type(node: dict[str, Any]) -> str:
    """The Go type a schema node stands for, as ``reflect.Type.String()`` prints it."""
    name = ref_name(node)
    if name == QUANTITY:
        return "resource.Quantity"
    if name == INT_OR_STRING:
        return "intstr.IntOrString"
    if name:
        package, _, type_name = name.rpartition(".")
        return f"{package.rpartition('.')[2]}.{type_name}"
    kind, fmt = node.get("type"), node.get("format", "")
    if kind == "string":
        return "[]uint8" if fmt == "byte" else "string"
    if kind == "integer":
        return fmt if fmt in INT_RANGES else "int64"
    if kind == "number":
        return "float64"
    if kind == "boolean":
        return "bool"
    if kind == "array":
        return "[]" + go_type(node.get("items") or {})
    if isinstance(node.get("additionalProperties"), dict):
        return "map[string]" + go_type(node["additionalProperties"])
    return "map[string]interface {}"


def decode(obj: dict[str, Any], where: str = "") -> Decoded:
    """Decode ``obj`` against its kind's schema; raise on a type error (see the module doc).

    A kind without a schema decodes as it is.
    """
    api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    info = schema_for(api_version, kind)
    if info is None:
        return Decoded(_plain(obj))
    walk = _Walk(custom=info.custom)
    out = walk.value({"$ref": f"#/definitions/{info.name}"}, obj, "", kind, ())
    _raise_type_errors(info, walk, out if isinstance(out, dict) else obj, where)
    findings = walk.findings
    if info.custom:
        findings = [f'unknown field "{p}"' for p in sorted(set(walk.unknown_custom))][:MAX_FINDINGS] + findings
    return Decoded(out, tuple(findings))


def _raise_type_errors(info: KindSchema, walk: _Walk, obj: dict[str, Any], where: str) -> None:
    if walk.type_error is not None:
        raise StrictDecodingError(info.kind, info.api_version, walk.type_error, where)
    if walk.invalid:
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        name = str(meta.get("name") or meta.get("generateName") or "")
        raise InvalidError(info.kind, name, walk.invalid, where=where)


def decode_with_mode(obj: dict[str, Any], mode: str, where: str = "") -> tuple[dict[str, Any], list[str]]:
    """(decoded object, warnings) under a fieldValidation mode; Strict raises on any finding.
    A deprecated version is converted first (``objects.kueue_conversion``), its warning first."""
    api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    obj, notices = to_storage_version(obj)
    decoded = decode(obj, where)
    if not decoded.findings or mode == IGNORE:
        return decoded.obj, notices
    if mode == STRICT:
        raise StrictDecodingError(kind, api_version, "strict decoding error: " + ", ".join(decoded.findings),
                                  where)
    return decoded.obj, notices + list(decoded.findings)


def duplicate_findings(value: Any) -> list[str]:
    """``duplicate field "..."`` for every repeated key of a parsed body (a patch, say).

    >>> duplicate_findings(mapping_from_pairs([("spec", mapping_from_pairs([("a", 1), ("a", 2)]))]))
    ['duplicate field "spec.a"']
    """
    walk = _Walk(custom=False)
    walk.free(value, "")
    return walk.findings


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
