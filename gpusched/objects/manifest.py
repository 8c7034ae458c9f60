"""Manifest loading: files, directories and stdin -> ``Manifest(source, index, obj)`` documents.

``load_manifests(["cluster.yaml", "jobs/", "-"], stdin_text=...)``:

- a file is read as YAML (multi-document) or JSON (``.json``, or text starting with ``{``; a
  stream of concatenated JSON objects is accepted as kubectl does);
- a directory contributes its ``*.yaml``, ``*.yml`` and ``*.json`` files, sorted by name, not
  recursing into sub-directories;
- ``-`` is standard input (``stdin_text`` when given, else ``sys.stdin``), named ``STDIN``.

``Manifest.index`` is the 0-based position of the document in its file, counting empty documents
(which are skipped), so an error names the document a person sees. A ``kind: List`` (or
``*List``) document is expanded into its ``items``; their index is the position in ``items`` and
their source ``<file>[items]``.

Each document must be a mapping with ``apiVersion`` and ``kind`` (a kind from ``objects.kinds``
with an accepted apiVersion) and ``metadata.name`` (``metadata.generateName`` is accepted for
Pods and Jobs). YAML is read with ``yaml.CSafeLoader`` when available, without YAML 1.1
timestamps (``2024-01-01`` stays a string, as the API server sees it after JSON conversion);
non-string keys become strings as sigs.k8s.io/yaml makes them. ``objects.limits`` bounds the text
before it is built (nesting depth, YAML alias expansion, no NaN/Infinity). Everything wrong raises
``ManifestError`` naming the file and document; semantic checks are ``objects.validation``.

Neighbours: kinds (known kinds), errors; used by objects.validation (Manifest), the CLI
(``apply -f``, ``delete -f``) and the API server.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import sys
from dataclasses import dataclass
from typing import Any, Iterator, cast

import yaml

from gpusched.errors import GpuschedError, ManifestError
from gpusched.objects import limits
from gpusched.objects.kinds import ACCEPTED_API_VERSIONS
from gpusched.objects.strict import DuplicateKeys, mapping_from_pairs

MANIFEST_EXTENSIONS = (".yaml", ".yml", ".json")
STDIN = "STDIN"
GENERATE_NAME_KINDS = frozenset({"Pod", "Job"})

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc,valid-type]
    """SafeLoader without the YAML 1.1 timestamp resolver (dates stay strings)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}
MERGE_TAG = "tag:yaml.org,2002:merge"


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> Iterator[DuplicateKeys]:
    """A YAML mapping as a dict, a ``DuplicateKeys`` when the text repeats a key (not via ``<<``)."""
    data = DuplicateKeys()      # plain again in _jsonable when no key repeats
    yield data
    keys = [loader.construct_object(k, deep=True) for k, _ in node.value if k.tag != MERGE_TAG]
    marked = mapping_from_pairs((k, None) for k in keys if _hashable(k))
    data.update(loader.construct_mapping(node, deep=True))
    data.duplicates = getattr(marked, "duplicates", ())


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)


class PathNotFoundError(ManifestError):
    """kubectl's ``the path "x.yaml" does not exist``."""

    def __init__(self, path: str) -> None:
        self.source, self.index, self.path = path, None, ""
        self.detail = f'the path "{path}" does not exist'
        GpuschedError.__init__(self, self.detail)


@dataclass(frozen=True, slots=True)
class Manifest:
    """One object document: where it came from and the raw (unvalidated) dict."""

    source: str
    index: int
    obj: dict[str, Any]

    @property
    def where(self) -> str:
        """``"<source>: document <index>"``, the prefix of every error about this document."""
        return f"{self.source}: document {self.index}"

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))

    @property
    def name(self) -> str:
        meta = self.obj.get("metadata")
        return str(meta.get("name") or meta.get("generateName") or "") if isinstance(meta, dict) else ""


# ----------------------------------------------------------------------------------------------
# Parsing text into documents


def _jsonable(value: Any, source: str, index: int) -> Any:
    """Deep copy into JSON types: string keys, lists, ISO dates; refuse what JSON cannot hold."""
    if isinstance(value, dict):
        out = _empty_map(value)
        for key, item in value.items():
            out[_json_key(key, source, index)] = _jsonable(item, source, index)
        return out
    if isinstance(value, (list, tuple)):
        return [_jsonable(item, source, index) for item in value]
    return _json_scalar(value, source, index)


def _empty_map(value: dict[Any, Any]) -> dict[str, Any]:
    """The copy's empty mapping, still carrying the loader's duplicate-key marks."""
    if not (isinstance(value, DuplicateKeys) and value.duplicates):
        return {}
    out = DuplicateKeys()
    out.duplicates = tuple((pos, _key_text(key)) for pos, key in value.duplicates)
    return out


def _json_key(key: Any, source: str, index: int) -> str:
    """A map key as JSON has it: booleans, null and numbers as their text; others refused."""
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, (int, float)):
        return str(key)
    if not isinstance(key, str):
        raise ManifestError(source, index, "", "error converting YAML to JSON: "
                            f"unsupported map key of type {type(key).__name__}")
    return key


def _json_scalar(value: Any, source: str, index: int) -> Any:
    """A scalar as JSON holds it: dates as ISO text; NaN, infinities and other types refused."""
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):      # YAML .nan / .inf
        raise ManifestError(source, index, "", "error converting YAML to JSON: "
                            f"{limits.check_tree(value)}")
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise ManifestError(source, index, "", f"error converting YAML to JSON: unsupported value of type "
                        f"{type(value).__name__}")


def yaml_load(text: str) -> Any:
    """One YAML document as the manifest loader reads it (duplicate keys marked), for API bodies;
    ``objects.limits`` bounds (depth, aliases, NaN) raise ``LimitError``."""
    limits.check_yaml_text(text, _Loader)
    value = yaml.load(text, Loader=_Loader)
    problem = limits.check_tree(value)
    if problem is not None:
        raise limits.LimitError(f"error converting YAML to JSON: {problem}")
    return value


def _key_text(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return "null" if key is None else str(key)


# ---- the plain fast path --------------------------------------------------------------------
# Most manifests use no anchors, no tags beyond YAML's core ones and no merge keys. For those the
# documents are composed by libyaml (CParser) and turned into JSON types in one walk here, where
# PyYAML's Python constructor (a generator per node) and the limits' second pass over the events
# cost about as much again as composing. Anything else - an anchor or alias character anywhere in
# the text, another tag, a merge key, a non-scalar key, NaN or an infinity, a syntax error, depth
# past limits.MAX_DEPTH - gives up (_NotPlain) and the text is read the general way, so the
# documents and every error stay exactly those of the general way.

_STR, _INT, _FLOAT = "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_BOOL, _NULL = "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"
_MAP, _SEQ = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


class _NotPlain(Exception):
    """The text needs the general reader (see above)."""


def _plain_documents(text: str) -> list[Any] | None:
    """The documents of ``text`` in JSON types, as ``_jsonable(yaml.load_all(...))`` gives them,
    or None when the text is not plain (see above)."""
    if "&" in text or "*" in text:
        return None
    loader = _Loader(text)
    try:
        out = []
        while loader.check_node():
            out.append(_Plain(loader).value(loader.get_node(), 0))
        return out
    except (_NotPlain, yaml.YAMLError, RecursionError):
        return None
    finally:
        loader.dispose()


@dataclass
class _Plain:
    """One document's walk: the loader (its scalar constructors) and the nodes seen."""

    loader: Any
    nodes: int = 0

    def value(self, node: yaml.Node, depth: int) -> Any:
        self.nodes += 1
        tag = node.tag
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node, tag)
        if depth >= limits.MAX_DEPTH or self.nodes > limits.MAX_YAML_NODES:
            raise _NotPlain
        if tag == _MAP and isinstance(node, yaml.MappingNode):
            return self.mapping(node, depth + 1)
        if tag == _SEQ and isinstance(node, yaml.SequenceNode):
            return [self.value(item, depth + 1) for item in node.value]
        raise _NotPlain

    def scalar(self, node: yaml.Node, tag: str) -> Any:
        if tag == _STR:
            return node.value
        if tag == _INT:
            return self.loader.construct_yaml_int(node)
        if tag == _NULL:
            return None
        if tag == _BOOL:
            return self.loader.construct_yaml_bool(node)
        if tag == _FLOAT:
            number = self.loader.construct_yaml_float(node)
            if math.isfinite(number):
                return number
        raise _NotPlain

    def mapping(self, node: yaml.MappingNode, depth: int) -> dict[str, Any]:
        """As ``_construct_map`` then ``_jsonable``: the last value of a repeated key, the
        repeats marked on a ``DuplicateKeys``, keys as JSON text."""
        raw: dict[Any, Any] = {}
        repeated: list[tuple[int, Any]] = []
        text_keys = True
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == MERGE_TAG:
                raise _NotPlain
            key = self.scalar(key_node, key_node.tag)
            if key in raw:
                repeated.append((len(raw), key))
            text_keys = text_keys and type(key) is str
            raw[key] = self.value(value_node, depth)
        if text_keys and not repeated:
            return raw
        out: dict[str, Any] = DuplicateKeys() if repeated else {}
        if repeated:
            cast(DuplicateKeys, out).duplicates = tuple((pos, _key_text(key)) for pos, key in repeated)
        for key, item in raw.items():
            out[_json_key(key, "", 0)] = item
        return out


def _yaml_documents(text: str, source: str) -> Iterator[tuple[int, Any]]:
    """The documents of ``text`` in JSON types (``_jsonable``), each with its index."""
    plain = _plain_documents(text)
    if plain is not None:
        yield from enumerate(plain)
        return
    index = 0
    try:
        limits.check_yaml_text(text, _Loader)
    except limits.LimitError as err:
        raise ManifestError(source, None, "", f"error converting YAML to JSON: {err}") from None
    try:
        for index, doc in enumerate(yaml.load_all(text, Loader=_Loader)):
            yield index, (None if doc is None else _jsonable(doc, source, index))
            index += 1
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc).splitlines()[0]
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise ManifestError(source, index, "", f"error converting YAML to JSON: yaml: {where}{problem}") from None


def _json_documents(text: str, source: str) -> Iterator[tuple[int, Any]]:
    if not limits.json_depth_ok(text):
        raise ManifestError(source, None, "", f"error parsing JSON: {limits.depth_error()}")
    decoder = limits.json_decoder(object_pairs_hook=mapping_from_pairs)
    pos, index = 0, 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise ManifestError(source, index, "", f"error parsing JSON: {exc.msg} (line {exc.lineno}, "
                                f"column {exc.colno})") from None
        except ValueError as exc:           # NaN / Infinity (objects.limits)
            raise ManifestError(source, index, "", f"error parsing JSON: {exc}") from None
        yield index, limits.json_surrogates_replaced(_jsonable(doc, source, index), text)
        index += 1


def _check_document(doc: Any, source: str, index: int) -> list["Manifest"]:
    """The manifests of one document: itself, or a List's items (each checked the same way)."""
    api_version, kind = _type_of(doc, source, index)
    if kind == "List" or (kind.endswith("List") and kind not in ACCEPTED_API_VERSIONS):
        items = doc.get("items")
        if items is None:
            return []
        if not isinstance(items, list):
            raise ManifestError(source, index, "items", "must be a list")
        out: list[Manifest] = []
        for item_index, item in enumerate(items):
            out.extend(_check_document(item, f"{source}[items]", item_index))
        return out
    if api_version not in ACCEPTED_API_VERSIONS.get(kind, ()):
        raise ManifestError(source, index, "", f'no matches for kind "{kind}" in version "{api_version}"')
    _check_name(doc, kind, source, index)
    return [Manifest(source, index, doc)]


def _type_of(doc: Any, source: str, index: int) -> tuple[str, str]:
    """apiVersion and kind of an object document (both set, both strings)."""
    if not isinstance(doc, dict):
        kind = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean"}.get(
            type(doc), type(doc).__name__)
        raise ManifestError(source, index, "", f"expected an object with apiVersion and kind, got {kind}")
    missing = [f"{field} not set" for field in ("apiVersion", "kind") if not doc.get(field)]
    if missing:
        text = missing[0] if len(missing) == 1 else f"[{', '.join(missing)}]"
        raise ManifestError(source, index, "", f"error validating data: {text}")
    api_version, kind = doc["apiVersion"], doc["kind"]
    if not isinstance(api_version, str) or not isinstance(kind, str):
        raise ManifestError(source, index, "", "error validating data: apiVersion and kind must be strings")
    return api_version, kind


def _check_name(doc: dict[str, Any], kind: str, source: str, index: int) -> None:
    """metadata is an object with a string name (or generateName, for the kinds that allow it)."""
    meta = doc.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise ManifestError(source, index, "metadata", "must be an object")
    name = (meta or {}).get("name")
    generate = (meta or {}).get("generateName")
    if name is not None and not isinstance(name, str):
        raise ManifestError(source, index, "metadata.name", f"Invalid value: {json.dumps(name)}: must be a string")
    if name or (kind in GENERATE_NAME_KINDS and isinstance(generate, str) and generate):
        return
    detail = "name or generateName is required" if kind in GENERATE_NAME_KINDS else "name is required"
    raise ManifestError(source, index, "metadata.name", f"Required value: {detail}")


def load_text(text: str, source: str, json_hint: bool = False) -> list[Manifest]:
    """Parse one file's text (YAML or JSON) into checked manifests."""
    is_json = json_hint or text.lstrip().startswith("{")
    documents = _json_documents(text, source) if is_json else _yaml_documents(text, source)
    out: list[Manifest] = []
    try:
        for index, doc in documents:
            if doc is None:
                continue
            out.extend(_check_document(doc, source, index))
    except RecursionError:
        raise ManifestError(source, None, "", "document nested too deeply") from None
    return out


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except UnicodeDecodeError:
        raise ManifestError(path, None, "", "not UTF-8 text") from None
    except OSError as exc:
        raise ManifestError(path, None, "", f"cannot read: {exc.strerror or exc}") from None


def _files(path: str) -> list[str]:
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path) if n.endswith(MANIFEST_EXTENSIONS))
        return [os.path.join(path, n) for n in names if os.path.isfile(os.path.join(path, n))]
    if os.path.exists(path):
        return [path]
    raise PathNotFoundError(path)


def load_manifests(paths: list[str], stdin_text: str | None = None) -> list[Manifest]:
    """Load every document from ``paths`` (files, directories, ``-``) in order; see the module doc."""
    out: list[Manifest] = []
    for path in paths:
        if path == "-":
            text = stdin_text if stdin_text is not None else sys.stdin.read()
            out.extend(load_text(text, STDIN))
            continue
        for file in _files(path):
            out.extend(load_text(_read(file), file, json_hint=file.endswith(".json")))
    return out
