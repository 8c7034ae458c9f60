"""Bounds on what a manifest, a request body or a stored object may hold (hostile input).

The same checks run for ``gpusched apply`` (``objects.manifest``, ``objects.validation``) and
for every write through ``gpusched serve`` (``server.decoding``, ``server.patch``), so a few bytes
cannot expand into something that stalls the cluster worker or poisons the store:

- **Nesting depth** (:data:`MAX_DEPTH` levels of objects/arrays), checked on the text before it
  is parsed (JSON: a linear scan; YAML: libyaml's event stream, or its own 1,000-level stop in
  libyaml 0.2.6+), so a 100,000-level document is one error instead of a recursion crash. Go's decoders stop at 10,000 (encoding/json
  ``maxNestingDepth``, go-yaml ``max depth``); gpusched's walkers are recursive Python, hence the
  lower bound, which is far above any Kubernetes object (a PodSpec is about 15 levels).
- **YAML alias expansion**: the expanded node count and the alias-driven share are counted from
  the event stream, without building anything, and refused as go-yaml refuses them
  (``yaml: document contains excessive aliasing``, decode.go ``allowedAliasRatio``: more than 99%
  of 400,000+ decoded nodes coming from aliases, sliding to 10% at 4,000,000). Each document
  also stays under :data:`MAX_YAML_NODES` expanded nodes.
- **NaN and Infinity**: JSON has neither; Go's decoder fails on the literal (``invalid character
  'N' looking for beginning of value``) and sigs.k8s.io/yaml fails converting ``.nan``/``.inf``
  (``json: unsupported value: NaN``).
- **Stored object size**: :data:`MAX_OBJECT_BYTES`, etcd's default ``--max-request-bytes``
  (1.5 MiB); kube-apiserver passes etcd's refusal on as a 500 whose message is
  ``etcdserver: request is too large`` (responsewriters ``ErrorToAPIStatus`` of a non-API error).
- **Workload sizes** the simulator can run on one worker: :data:`MAX_REPLICAS`,
  :data:`MAX_NODES_PER_POOL`, :data:`MAX_GPUS_PER_NODE`, :data:`MAX_JOB_PARALLELISM`,
  :data:`MAX_JOB_COMPLETIONS` (upstream's Indexed-Job bound, batch validation
  ``completionsSoftLimit``/``maxParallelismForIndexedJob`` = 100,000). Checked by
  ``objects.validation`` (422 ``must be less than or equal to ...``).
- **Config documents inside ConfigMaps** (device-plugin, mig-parted, scheduler, GPU models,
  autoscaler) and config files are read by :func:`safe_load`, with the manifest bounds above,
  and their counts are bounded where they are parsed: :data:`MAX_SHARING_REPLICAS` replicas of
  one GPU (upstream's device plugin sets no maximum and builds one device per replica; a node
  runs at most its ``pods`` capacity, 110 by default, so no replica past that is ever used)
  and :data:`MAX_MIG_DEVICES_PER_GPU` MIG devices in one mig-parted entry (the most any GPU
  holds: 7 on A100/H100/H200/B200). ``admission.config_bounds`` refuses a ConfigMap gpusched
  reads that breaks one, naming the ConfigMap and key.

Request bodies are bounded before any of this by the server (3 MiB, apiserver
handlers/rest.go ``limitedReadBody``: ``Request entity too large: limit is 3145728``), JSON
patches by :data:`MAX_PATCH_OPERATIONS` and :data:`MAX_COPY_BYTES` (``server.patch``).

Neighbours: objects.manifest, objects.validation, server.decoding, server.patch.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from gpusched.errors import GpuschedError
from gpusched.objects.digits import is_digits

MAX_DEPTH = 100
MAX_YAML_NODES = 4_000_000
MAX_OBJECT_BYTES = 1572864              # etcd --max-request-bytes default: 1.5 MiB
MAX_BODY_BYTES = 3 * 1024 * 1024        # kube-apiserver MaxRequestBodyBytes
MAX_PATCH_OPERATIONS = 10000            # apiserver handlers/patch.go maxJSONPatchOperations
MAX_COPY_BYTES = 3 * 1024 * 1024        # apiserver config JSONPatchMaxCopyBytes
MAX_REPLICAS = 5000                     # Deployment/ReplicaSet/StatefulSet spec.replicas
MAX_NODES_PER_POOL = 5000               # NodePool spec.count / len(spec.names)
MAX_GPUS_PER_NODE = 64                  # NodePool spec.gpu.count
MAX_JOB_PARALLELISM = 5000              # Job spec.parallelism (pods at once)
MAX_JOB_COMPLETIONS = 100_000           # Job spec.completions
MAX_SHARING_REPLICAS = 256              # device-plugin sharing.{timeSlicing,mps}.resources[].replicas
MAX_MIG_DEVICES_PER_GPU = 7             # mig-parted mig-devices: the counts of one entry, summed
TOO_LARGE = "etcdserver: request is too large"
EXCESSIVE_ALIASING = "yaml: document contains excessive aliasing"
_ALIAS_LOW, _ALIAS_HIGH = 400_000, 4_000_000
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class LimitError(GpuschedError):
    """A bound in this module was exceeded (400 BadRequest unless the bound says otherwise)."""


class ObjectTooLargeError(GpuschedError):
    """An object over :data:`MAX_OBJECT_BYTES`: what etcd answers, passed on as a 500."""

    code = 500
    reason = "InternalError"

    def __init__(self, where: str = "") -> None:
        super().__init__(f"{where}: {TOO_LARGE}" if where else TOO_LARGE)


def depth_error() -> str:
    return f"exceeded max depth of {MAX_DEPTH}"


# ---- JSON text --------------------------------------------------------------------------------

def json_depth_ok(text: str) -> bool:
    """True when no object/array in ``text`` nests deeper than :data:`MAX_DEPTH` (strings skipped).

    >>> json_depth_ok('{"a": [1, {"b": "[[[["}]}'), json_depth_ok("[" * 101 + "]" * 101)
    (True, False)
    """
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return True
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def _no_constant(name: str) -> Any:
    """Go's scanner error for the first character of ``NaN``/``Infinity``/``-Infinity``."""
    if name.startswith("-"):
        raise ValueError(f"invalid character '{name[1]}' in numeric literal")
    raise ValueError(f"invalid character '{name[0]}' looking for beginning of value")


def json_loads(text: str, object_pairs_hook: Any = None) -> Any:
    """``json.loads`` within the bounds: depth, no NaN/Infinity (ValueError, as json's own);
    lone surrogate escapes read as U+FFFD (:func:`json_surrogates_replaced`)."""
    if not json_depth_ok(text):
        raise ValueError(depth_error())
    value = json.loads(text, object_pairs_hook=object_pairs_hook, parse_constant=_no_constant)
    return json_surrogates_replaced(value, text)


# ---- surrogate escapes ----------------------------------------------------------------------
# JSON text may write a UTF-16 surrogate as an escape (``"\ud800"``). Python's decoder joins a
# valid pair into one character and keeps a lone one as a surrogate code point, which no UTF-8
# encoder accepts (stored objects are UTF-8). Go's decoder (encoding/json decode.go ``unquote``,
# the same in sigs.k8s.io/json) reads a lone one as U+FFFD, the replacement character. (YAML
# needs nothing here: libyaml's scanner refuses a surrogate escape in a quoted scalar, as
# go-yaml's does: ``found invalid Unicode character escape code``.)

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def json_surrogates_replaced(value: Any, text: str) -> Any:
    """``value`` (decoded from the JSON ``text``) with each lone surrogate read as U+FFFD, as
    Go's JSON decoder reads it; ``value`` itself when ``text`` has no surrogate escape."""
    if _SURROGATE_ESCAPE.search(text) is None:
        return value
    return _replace_surrogates(value)


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replace_surrogates(item) for item in value]
    if isinstance(value, dict):
        out = type(value)()
        if hasattr(value, "__dict__"):      # objects.strict.DuplicateKeys: the repeats found
            out.__dict__.update(value.__dict__)
        for key, item in value.items():
            out[_replace_surrogates(key)] = _replace_surrogates(item)
        return out
    return value


def json_decoder(object_pairs_hook: Any = None) -> json.JSONDecoder:
    """A decoder for concatenated documents with the same NaN/Infinity refusal (depth: the caller)."""
    return json.JSONDecoder(object_pairs_hook=object_pairs_hook, parse_constant=_no_constant)


# ---- YAML text --------------------------------------------------------------------------------

def allowed_alias_ratio(decoded: int) -> float:
    """go-yaml decode.go ``allowedAliasRatio``: 99% below 400,000 nodes, 10% from 4,000,000."""
    if decoded <= _ALIAS_LOW:
        return 0.99
    if decoded >= _ALIAS_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _ALIAS_LOW) / (_ALIAS_HIGH - _ALIAS_LOW)


def safe_load(text: str | bytes) -> Any:
    """``yaml.safe_load`` within the manifest bounds, for every YAML document a user hands
    gpusched inside a manifest (a ConfigMap's device-plugin, mig-parted, scheduler or model config)
    or as a file: :class:`LimitError` for a document too deep or an alias bomb, ``yaml.YAMLError``
    for bad syntax (callers name the ConfigMap and key, or the file).

    >>> safe_load("a: [1, 2]")
    {'a': [1, 2]}
    >>> safe_load("a: " + "[" * 101 + "]" * 101)
    Traceback (most recent call last):
    ...
    gpusched.objects.limits.LimitError: yaml: exceeded max depth of 100
    """
    check_yaml_text(text, _SAFE_LOADER)
    return yaml.load(text, Loader=_SAFE_LOADER)


def check_yaml_text(text: str | bytes, loader: Any) -> None:
    """Raise :class:`LimitError` when a document of ``text`` nests too deeply or its aliases
    expand too much; syntax errors are left to the loader (they carry a line)."""
    budget = _YamlBudget()
    try:
        for event in yaml.parse(text, Loader=loader):
            budget.add(event)
    except yaml.YAMLError as err:
        # libyaml 0.2.6+ (bundled since PyYAML 6.0.4) stops at 1,000 levels in its scanner, which
        # reads a flow collection's brackets ahead of the events above: past MAX_DEPTH either way.
        if "exceeded maximum nesting depth" in str(getattr(err, "problem", "")):
            raise LimitError(f"yaml: {depth_error()}") from None
        return


@dataclass
class _YamlBudget:
    """``check_yaml_text``'s count over the parse events: open collections (anchor, nodes inside),
    each anchor's expanded size, and the nodes decoded / expanded from aliases in this document."""

    sizes: dict[str, int] = field(default_factory=dict)
    stack: list[list[Any]] = field(default_factory=list)
    decoded: int = 0
    aliased: int = 0

    def add(self, event: Any) -> None:
        if isinstance(event, yaml.DocumentStartEvent):
            self.sizes, self.decoded, self.aliased = {}, 0, 0
        elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            self.stack.append([event.anchor, 1])
            if len(self.stack) > MAX_DEPTH:
                raise LimitError(f"yaml: {depth_error()}")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            anchor, size = self.stack.pop()
            if anchor:
                self.sizes[anchor] = size
            self.decoded += 1
            if self.stack:
                self.stack[-1][1] += size
        elif isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
            self._leaf(event)

    def _leaf(self, event: Any) -> None:
        """A scalar (one node) or an alias (one plus its anchor's expanded size)."""
        size = 1 if isinstance(event, yaml.ScalarEvent) else 1 + self.sizes.get(event.anchor or "", 0)
        if isinstance(event, yaml.ScalarEvent) and event.anchor:
            self.sizes[event.anchor] = 1
        if isinstance(event, yaml.AliasEvent):
            self.aliased += size - 1           # the nodes it expands to, as go-yaml counts
        self.decoded += size
        if self.stack:
            self.stack[-1][1] += size
        _check_aliases(self.decoded, self.aliased)


def _check_aliases(decoded: int, aliased: int) -> None:
    if aliased > 100 and decoded > 1000 and aliased / decoded > allowed_alias_ratio(decoded):
        raise LimitError(EXCESSIVE_ALIASING)
    if decoded > MAX_YAML_NODES:
        raise LimitError(EXCESSIVE_ALIASING)


# ---- numbers in text ----------------------------------------------------------------------------

def small_int(text: Any, max_digits: int = 18) -> int | None:
    """A non-negative integer written in at most ``max_digits`` ASCII digits, else None.

    For numbers read from annotations and other free text: ``str.isdigit`` also takes "١٢" and
    "²", and ``int`` raises past 4,300 digits (Python's limit), an internal error where a
    one-line answer or a default belongs.

    >>> small_int("42"), small_int("\u0663"), small_int("9" * 5000), small_int(" 1"), small_int(7)
    (42, None, None, None, 7)
    """
    text = str(text)
    if is_digits(text) and len(text) <= max_digits:
        return int(text)
    return None


# ---- parsed objects ---------------------------------------------------------------------------

def check_tree(value: Any) -> str | None:
    """The first bound a parsed value breaks (depth, a non-finite number), or None.

    Iterative, so it is safe on any depth.

    >>> check_tree({"a": [1.5, {"b": float("nan")}]})
    'json: unsupported value: NaN'
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            if isinstance(item, float) and not math.isfinite(item):
                return f"json: unsupported value: {_go_float(item)}"
            continue
        if depth > MAX_DEPTH:
            return depth_error()
        stack.extend((child, depth + 1) for child in children)
    return None


def _go_float(value: float) -> str:
    return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")


def encoded_size(obj: Any) -> int:
    """Bytes of ``obj`` as stored (compact JSON)."""
    return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode())


def check_object(obj: dict[str, Any], where: str = "") -> None:
    """Refuse an object no store should keep: too deep, a non-finite number, over 1.5 MiB."""
    problem = check_tree(obj)
    if problem is not None:
        raise LimitError(f"{where}: {problem}" if where else problem)
    if encoded_size(obj) > MAX_OBJECT_BYTES:
        raise ObjectTooLargeError(where)
