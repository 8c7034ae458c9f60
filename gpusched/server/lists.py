"""List options as kube-apiserver reads them: ``limit``, ``continue``, ``resourceVersion``,
``resourceVersionMatch``; pages and continue tokens as its etcd3 storage cuts them.

- Items are ordered by their storage key (``<namespace>/<name>``, or ``<name>`` for
  cluster-scoped kinds and single-namespace lists), as etcd returns a prefix range.
- A page of ``limit`` items that leaves more behind carries ``metadata.continue``: base64url
  (unpadded) JSON ``{"v": "meta.k8s.io/v1", "rv": R, "start": "<last key>\\x00"}``, the token of
  apiserver ``pkg/storage/continue.go`` ``EncodeContinue``; R is the first page's
  resourceVersion, so every page shows the same snapshot. ``remainingItemCount`` is set when no
  selector filtered the page (etcd3 ``store.GetList``: "Only set remainingItemCount if the
  predicate is empty").
- A later page is read at R from the change feed's history (``server.feed``: each change keeps
  the state before it, so the state at R is the current one with later changes undone). R older
  than the feed's floor is etcd's compaction: 410 Expired with the message and the fresh
  ``rv: -1`` token of etcd3 ``handleCompactedErrorForPaging``; ``rv: -1`` continues at the
  current state.
- ``resourceVersionMatch`` is validated as apimachinery ``ValidateListOptions`` does (422 on
  ``ListOptions.meta.k8s.io ""``); ``Exact`` reads at R, ``NotOlderThan`` (or a bare
  ``resourceVersion``) reads the current state, which is never older. R beyond the current
  resourceVersion is the 504 "Too large resource version" of storage ``NewTooLargeResourceVersionError``.

Pure functions; ``server.resources`` reads the store and calls them.
"""

from __future__ import annotations

import base64
import json
import posixpath
from dataclasses import dataclass
from typing import Any, Iterable

from gpusched.cluster.apiserver.api_ops import BadRequestError
from gpusched.errors import FieldError, GpuschedError, InvalidError
from gpusched.objects.digits import is_digits

TOKEN_VERSION = "meta.k8s.io/v1"
MATCH_EXACT, MATCH_NOT_OLDER = "Exact", "NotOlderThan"
MAX_TOKEN_CHARS = 4096

# apiserver pkg/storage/continue.go
ERR_GENERIC = "continue key is not valid"
ERR_START_RV = "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
ERR_EMPTY_KEY = "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"
ERR_VERSION = "continue key is not valid: server does not recognize this encoded version"
# apiserver pkg/storage/etcd3/errors.go
LIST_EXPIRED = "The resourceVersion for the provided list is too old."
INCONSISTENT_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this response "
    "to retrieve the remainder of the results. Continuing with the provided token results in an "
    "inconsistent list - objects that were created, modified, or deleted between the time the "
    "first chunk was returned and now may show up in the list.")


class ExpiredError(GpuschedError):
    """410 Expired; ``continue_token`` goes in the Status's ``metadata.continue`` when set."""

    code = 410
    reason = "Expired"

    def __init__(self, message: str, continue_token: str = "") -> None:
        super().__init__(message)
        self.continue_token = continue_token


class TooLargeResourceVersionError(GpuschedError):
    """504 Timeout: the resourceVersion asked for is newer than the store's (storage
    ``NewTooLargeResourceVersionError``, converted by ``storage.InterpretListError``)."""

    code = 504
    reason = "Timeout"

    def __init__(self, wanted: int, current: int) -> None:
        super().__init__(f"Too large resource version: {wanted}, current: {current}")


@dataclass(frozen=True, slots=True)
class ListOptions:
    limit: int = 0                  # 0: every item
    token: str = ""                 # the continue parameter as sent
    resource_version: str = ""
    match: str = ""


@dataclass(frozen=True, slots=True)
class ReadPlan:
    """Where a list page comes from: ``at_rv`` None = the current state, else the state at that
    resourceVersion; items with keys below ``start_key`` are skipped."""

    at_rv: int | None
    start_key: str = ""
    continuing: bool = False


def parse_options(query: dict[str, str]) -> ListOptions:
    """The list parameters of a query, validated as ``ValidateListOptions`` (apimachinery
    ``pkg/apis/meta/internalversion/validation``) and etcd3 ``GetList`` do."""
    options = ListOptions(_limit(query.get("limit", "")), query.get("continue", ""),
                          query.get("resourceVersion", ""), query.get("resourceVersionMatch", ""))
    errors = _match_errors(options)
    if query.get("sendInitialEvents"):
        errors.append(FieldError("sendInitialEvents", "Forbidden", None,
                                 "sendInitialEvents is forbidden for list"))
    if errors:
        raise InvalidError("ListOptions.meta.k8s.io", "", errors)
    if options.resource_version and options.resource_version != "0":
        parse_resource_version(options.resource_version)
    if options.token and options.resource_version not in ("", "0"):
        raise BadRequestError("specifying resource version is not allowed when using continue")
    return options


def _limit(text: str) -> int:
    if text == "":
        return 0
    try:
        return max(0, int(text))
    except ValueError:
        raise BadRequestError(f'invalid limit "{text}": must be an integer') from None


def _match_errors(options: ListOptions) -> list[FieldError]:
    match = options.match
    if not match:
        return []
    errors = []
    if not options.resource_version:
        errors.append(FieldError("resourceVersionMatch", "Forbidden", None,
                                 "resourceVersionMatch is forbidden unless resourceVersion is provided"))
    if options.token:
        errors.append(FieldError("resourceVersionMatch", "Forbidden", None,
                                 "resourceVersionMatch is forbidden when continue is provided"))
    if match not in (MATCH_EXACT, MATCH_NOT_OLDER):
        errors.append(FieldError("resourceVersionMatch", "Unsupported value", match,
                                 'supported values: "Exact", "NotOlderThan", ""'))
    if match == MATCH_EXACT and options.resource_version == "0":
        errors.append(FieldError("resourceVersionMatch", "Forbidden", None,
                                 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    return errors


def parse_resource_version(text: str) -> int:
    """A resourceVersion parameter as the etcd3 versioner parses it (``ParseResourceVersion``).

    >>> parse_resource_version("12")
    12
    """
    if is_digits(text) and len(text) <= 19:
        return int(text)
    raise BadRequestError(f'invalid resource version: resourceVersion: Invalid value: "{text}": '
                          f'strconv.ParseUint: parsing "{text}": invalid syntax')


def plan(options: ListOptions, current_rv: int) -> ReadPlan:
    """Which state a list reads: continue token, Exact resourceVersion, or the current state."""
    if options.token:
        start, rv = decode_continue(options.token)
        return ReadPlan(None if rv < 0 else rv, start, continuing=True)
    if options.match == MATCH_EXACT:
        rv = parse_resource_version(options.resource_version)
        if rv > current_rv:
            raise TooLargeResourceVersionError(rv, current_rv)
        return ReadPlan(rv)
    if options.resource_version not in ("", "0"):
        rv = parse_resource_version(options.resource_version)
        if rv > current_rv:
            raise TooLargeResourceVersionError(rv, current_rv)
    return ReadPlan(None)


def encode_continue(start_key: str, rv: int) -> str:
    r"""The continue token of ``EncodeContinue`` (key relative to the list's prefix).

    >>> encode_continue("default/p2\x00", 7)
    'eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6Nywic3RhcnQiOiJkZWZhdWx0L3AyXHUwMDAwIn0'
    """
    raw = json.dumps({"v": TOKEN_VERSION, "rv": rv, "start": start_key}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).rstrip(b"=").decode()


def decode_continue(token: str) -> tuple[str, int]:
    """(start key, resourceVersion) of a token, or 400 "invalid continue token: ..." with the
    reason ``DecodeContinue`` gives."""
    if len(token) > MAX_TOKEN_CHARS:
        raise _bad_token(f"{ERR_GENERIC}: longer than {MAX_TOKEN_CHARS} characters")
    data = _base64_decode(token)
    try:
        decoded = json.loads(data.decode("utf-8"))
    except ValueError:
        first = next((chr(b) for b in data if chr(b) not in " \t\r\n"), "")
        raise _bad_token(f"{ERR_GENERIC}: invalid character {_go_quote(first)} looking for "
                         "beginning of value" if first else
                         f"{ERR_GENERIC}: unexpected end of JSON input") from None
    version, rv, start = _token_fields(decoded)
    if version != TOKEN_VERSION:
        raise _bad_token(f"{ERR_VERSION} {version}")
    if rv == 0:
        raise _bad_token(ERR_START_RV)
    if not start:
        raise _bad_token(ERR_EMPTY_KEY)
    key = start if start.startswith("/") else "/" + start
    if posixpath.normpath(key) != key or key.startswith("//"):
        raise _bad_token(f"{ERR_GENERIC}: {start}")
    return key[1:], rv


GO_FIELD_TYPES = (("v", str, "string"), ("rv", int, "int64"), ("start", str, "string"))


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    return {str: "string", int: "number", float: "number", list: "array",
            dict: "object"}.get(type(value), "value")


def _token_fields(decoded: object) -> tuple[str, int, str]:
    """(v, rv, start) as json.Unmarshal into continueToken fills them (null or absent: the
    zero value); a wrong type is Go's UnmarshalTypeError."""
    if not isinstance(decoded, dict):
        raise _bad_token(f"{ERR_GENERIC}: json: cannot unmarshal {_json_type(decoded)} into Go "
                         "value of type storage.continueToken")
    values: list[Any] = []
    for name, python_type, go_type in GO_FIELD_TYPES:
        value = decoded.get(name)
        if value is None:
            value = python_type()
        wrong = isinstance(value, bool) or not isinstance(value, python_type)
        if wrong:
            raise _bad_token(f"{ERR_GENERIC}: json: cannot unmarshal {_json_type(value)} into Go "
                             f"struct field continueToken.{name} of type {go_type}")
        values.append(value)
    return values[0], values[1], values[2]


def _base64_decode(token: str) -> bytes:
    """base64.RawURLEncoding.DecodeString, with Go's error text for bad input."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    bad = next((i for i, ch in enumerate(token) if ch not in alphabet), None)
    if bad is None and len(token) % 4 == 1:
        bad = len(token) - 1
    if bad is not None:
        raise _bad_token(f"{ERR_GENERIC}: illegal base64 data at input byte {bad}")
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))


def _go_quote(char: str) -> str:
    """A character as Go's %q of a byte in encoding/json's syntax errors ('x', '\\x00')."""
    return f"'{char}'" if char.isprintable() and ord(char) < 128 else f"'\\x{ord(char):02x}'"


def _bad_token(reason: str) -> BadRequestError:
    return BadRequestError(f"invalid continue token: {reason}")


def storage_key(body: dict[str, Any], all_namespaces: bool) -> str:
    """The item's key below the list's prefix: ``ns/name`` across namespaces, else ``name``."""
    meta = body.get("metadata") or {}
    name = str(meta.get("name", ""))
    return f"{meta.get('namespace', '')}/{name}" if all_namespaces else name


@dataclass(frozen=True, slots=True)
class Page:
    items: list[dict[str, Any]]
    continue_token: str = ""
    remaining: int | None = None


def cut_page(keyed: Iterable[tuple[str, dict[str, Any]]], read_plan: ReadPlan, limit: int, rv: int,
             keep: Any, filtered: bool) -> Page:
    """One page: items (sorted by key) from ``start_key`` on that pass ``keep``, at most
    ``limit`` (0: all); a continue token when keys remain after the last one returned."""
    ordered = sorted((k, body) for k, body in keyed if k >= read_plan.start_key)
    chosen: list[dict[str, Any]] = []
    last = -1
    for index, (_key, body) in enumerate(ordered):
        if limit and len(chosen) >= limit:
            break
        last = index
        if keep(body):
            chosen.append(body)
    left = len(ordered) - (last + 1)
    if not limit or left <= 0:
        return Page(chosen)
    token = encode_continue(ordered[last][0] + "\x00", rv)
    return Page(chosen, token, None if filtered else left)
