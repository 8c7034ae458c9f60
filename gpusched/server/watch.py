"""``?watch=true``: newline-delimited ``{"type", "object"}`` events streamed from the change feed.

- No ``resourceVersion`` (or ``0``): ADDED for every current matching object, then changes
  (``SetListOptionsDefaults`` with WatchList on turns this into ``sendInitialEvents=true``).
- ``sendInitialEvents=true&resourceVersionMatch=NotOlderThan`` (KEP-3157 watch-list): the
  current objects as ADDED, then, with ``allowWatchBookmarks``, a BOOKMARK whose object carries
  the annotation ``k8s.io/initial-events-end: "true"`` and the snapshot's resourceVersion; a
  ``resourceVersion`` newer than the store's is 504 "Too large resource version".
  ``sendInitialEvents=false``: changes only. Invalid combinations are 422 as
  ``validateWatchOptions`` words them.
- ``resourceVersion=R``: every change after R, in order, each once; R older than the feed's
  floor gets, as from kube-apiserver, HTTP 200 and one ``ERROR`` event carrying the Status
  ``410 Expired`` "too old resource version: R (floor)"; the client relists.
- ``labelSelector`` / ``fieldSelector``: as kube-apiserver's cacher (cache_watcher.go
  ``convertToWatchEvent``) the selectors are tested on the new and the previous state: ADDED when
  an object starts matching, MODIFIED while it matches, DELETED (its previous state, stamped
  with the change's resourceVersion) when it stops matching or is deleted.
- ``allowWatchBookmarks=true``: a ``BOOKMARK`` with the current resourceVersion after every
  ``BOOKMARK_SECONDS`` without an event.
- ``timeoutSeconds`` (default and maximum 30 minutes) ends the stream; so do server shutdown
  and ``gpusched reset`` (the counters restart; the client relists).
- A Table request (``kubectl get -w``) gets each object wrapped in a one-row Table; the column
  definitions come with the first event only, as kube-apiserver sends them.
- Protobuf (``server.protobuf.negotiate`` hands the watch an Accept of
  ``application/vnd.kubernetes.protobuf``, with the winning clause's ``as``/``g``/``v``): ``...;stream=watch``, each event a WatchEvent
  message behind its 4-byte big-endian length, the object inside in the full envelope
  (``server.protobuf.envelope``).

Neighbours: ``server.resources`` (calls :func:`watch_response`), ``server.feed``.
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass
from typing import Any, Iterator

from gpusched.cluster.apiserver.store import rfc3339
from gpusched.errors import FieldError, InvalidError, UsageError
from gpusched.server.lists import MATCH_NOT_OLDER, TooLargeResourceVersionError, parse_resource_version
from gpusched.objects.selectors import field_matches, matches, parse_field_selector, parse_selector
from gpusched.server.feed import EVENTS, OBJECTS
from gpusched.server import events, partial
from gpusched.server.http import Request, Response, status_object
from gpusched.server.protobuf.envelope import encode_event
from gpusched.server.protobuf.negotiate import PROTOBUF, PROTOBUF_WATCH
from gpusched.server.tables import wants_table

MAX_TIMEOUT_SECONDS = 1800
BOOKMARK_SECONDS = 10.0
WAIT_SLICE_SECONDS = 1.0
BATCH_BYTES = 256 * 1024        # one streamed chunk: the events of one wake-up, up to this size
WATCH_CONTENT_TYPE = "application/json"
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def _line(event_type: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": event_type, "object": obj}, separators=(",", ":")).encode() + b"\n"


@dataclass(frozen=True)
class _Watch:
    """One watch request: what it selects and how it renders, read once from the request."""

    api: Any
    req: Request
    target: Any
    stream: str
    label_sel: Any
    field_sel: Any
    timeout: int
    options: WatchOptions
    table: bool
    resets: int
    protobuf: bool = False          # length-prefixed WatchEvent frames (server.protobuf)
    metadata_only: partial.Target | None = None

    @property
    def info(self) -> Any:
        return self.target.info

    @property
    def feed(self) -> Any:
        return self.api.feed

    def wanted(self, kind: str, namespace: str, body: dict[str, Any]) -> bool:
        if kind != self.info.kind or (self.target.namespace is not None
                                      and namespace != self.target.namespace):
            return False
        return self.passes(body)

    def passes(self, body: dict[str, Any]) -> bool:
        labels = (body.get("metadata") or {}).get("labels") or {}
        return (self.label_sel is None or matches(self.label_sel, labels)) and \
            field_matches(body, self.field_sel)

    def shown(self, body: dict[str, Any]) -> dict[str, Any]:
        """An event's object as the request asked for it: metadata only, or an Event in the
        request's group version (``server.partial``, ``server.events``)."""
        if self.metadata_only is not None:
            return partial.partial(body, self.metadata_only)
        return events.as_requested(body, self.info) if events.is_event(self.info) else body

    def render(self, event_type: str, body: dict[str, Any], first: bool) -> bytes:
        if not self.table:
            return self.event(event_type, self.shown(body))
        rv = str((body.get("metadata") or {}).get("resourceVersion", ""))
        return _line(event_type, self.api.table(self.info, [body], rfc3339(self.feed.clock), rv,
                                                self.req, with_definitions=first))

    def event(self, event_type: str, obj: dict[str, Any]) -> bytes:
        """One event as this watch's media type frames it."""
        if not self.protobuf:
            return _line(event_type, obj)
        if "kind" not in obj:
            obj = {"apiVersion": self.info.api_version, "kind": self.info.kind, **obj}
        return encode_event(event_type, obj)


def watch_response(api: Any, req: Request, target: Any) -> Response:
    watch = _read_watch(api, req, target)
    start, initial = _start(watch)
    end_bookmark = watch.options.initial_events and watch.options.bookmarks
    if watch.protobuf:
        content_type = PROTOBUF_WATCH
    else:
        content_type = watch.metadata_only.content_type if watch.metadata_only else WATCH_CONTENT_TYPE
    return Response(200, content_type=content_type, stream=_events(watch, start, initial, end_bookmark))


def _read_watch(api: Any, req: Request, target: Any) -> _Watch:
    """The request's selectors, ``timeoutSeconds`` (capped) and watch options, in that order."""
    label_sel = parse_selector(req.query["labelSelector"]) if req.query.get("labelSelector") else None
    field_sel = events.field_selector(target.info, parse_field_selector(req.query.get("fieldSelector", "")))
    try:
        timeout = int(req.query.get("timeoutSeconds") or MAX_TIMEOUT_SECONDS)
    except ValueError:
        raise UsageError(f'invalid timeoutSeconds "{req.query.get("timeoutSeconds")}"') from None
    timeout = max(0, min(timeout, MAX_TIMEOUT_SECONDS))
    options = watch_options(req.query)
    return _Watch(api, req, target, EVENTS if target.info.kind == "Event" else OBJECTS, label_sel,
                  field_sel, timeout, options, wants_table(req.accept), api.feed.resets,
                  req.accept.split(";")[0] == PROTOBUF, partial.requested(req.accept))


def _start(watch: _Watch) -> tuple[int, list[tuple[str, dict[str, Any]]]]:
    """Where the stream starts, and the initial events (``sendInitialEvents``) before it."""
    options, feed = watch.options, watch.feed
    if options.initial_events:
        feed.sync()
        start, state = feed.snapshot(watch.stream)
        if options.rv > start:
            raise TooLargeResourceVersionError(options.rv, start)
        return start, [("ADDED", body) for (kind, ns, _name), body in state
                       if watch.wanted(kind, ns, body)]
    if options.rv_text in ("", "0"):
        return feed.snapshot(watch.stream)[0], []          # sendInitialEvents=false: from now on
    return options.rv, []


def _events(watch: _Watch, start: int, initial: list[tuple[str, dict[str, Any]]],
            end_bookmark: bool) -> Iterator[bytes]:
    feed = watch.feed
    feed.sync()
    floor, _cursor = feed.floor(watch.stream)
    if start < floor:
        yield watch.event("ERROR", status_object(
            410, f"too old resource version: {start} ({floor})", "Expired"))
        return
    batch = _Batch()
    for index, (event_type, body) in enumerate(initial):
        yield from batch.add(watch.render(event_type, body, index == 0))
    if end_bookmark:
        batch.lines.append(watch.event("BOOKMARK", watch.shown(_bookmark(watch.info, start, initial_events_end=True))))
    yield from batch.flush()
    yield from _follow(watch, start, batch, not initial)


def _follow(watch: _Watch, position: int, batch: _Batch, first: bool) -> Iterator[bytes]:
    """The changes after ``position`` until the timeout, a reset or shutdown; bookmarks when
    idle; ERROR 410 when the feed compacted past ``position``."""
    feed = watch.feed
    deadline = time.monotonic() + watch.timeout
    last_sent = time.monotonic()
    while time.monotonic() < deadline:
        wait = min(WAIT_SLICE_SECONDS, max(0.0, deadline - time.monotonic()))
        changes = feed.wait(watch.stream, position, wait, watch.resets)
        if changes is None:
            if feed.closed or feed.resets != watch.resets:
                return
            yield watch.event("ERROR", status_object(
                410, f"too old resource version: {position} ({feed.floor(watch.stream)[0]})",
                "Expired"))
            return
        for change in changes:
            position = change.rv
            event = _convert(change, watch.info.kind, watch.target.namespace, watch.passes)
            if event is not None:
                yield from batch.add(watch.render(*event, first))
                first = False
                last_sent = time.monotonic()
        yield from batch.flush()
        if watch.options.bookmarks and time.monotonic() - last_sent >= BOOKMARK_SECONDS:
            position = max(position, feed.floor(watch.stream)[1]) if not changes else position
            yield watch.event("BOOKMARK", watch.shown(_bookmark(watch.info, position)))
            last_sent = time.monotonic()


class _Batch:
    """Event lines gathered into one chunk per wake-up of the watch: every chunk costs the server
    a hop between the stream pool and the event loop (``server.app``), so one chunk per event
    made a watch fall further behind the busier the store was (seconds at ~100 writes/s). A
    watch that is behind gets everything pending in one ``feed.wait`` and catches up in a few
    chunks; a chunk is cut at ``BATCH_BYTES`` to bound its memory."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.size = 0

    def add(self, line: bytes) -> Iterator[bytes]:
        self.lines.append(line)
        self.size += len(line)
        if self.size >= BATCH_BYTES:
            yield from self.flush()

    def flush(self) -> Iterator[bytes]:
        if self.lines:
            chunk = b"".join(self.lines)
            self.lines, self.size = [], 0
            yield chunk


@dataclass(frozen=True, slots=True)
class WatchOptions:
    rv_text: str
    rv: int
    bookmarks: bool
    initial_events: bool


def _flag(value: str | None) -> bool | None:
    """A boolean query parameter as apimachinery's conversion reads it; None when absent."""
    if value is None:
        return None
    return value.lower() in ("true", "1", "t")


def watch_options(query: dict[str, str]) -> WatchOptions:
    """The watch parameters, defaulted as ``SetListOptionsDefaults`` (WatchList on: a watch from
    ""/"0" without the new parameters sends initial events) and validated as
    ``validateWatchOptions`` (apimachinery ``pkg/apis/meta/internalversion/validation``)."""
    rv_text = query.get("resourceVersion", "")
    match = query.get("resourceVersionMatch", "")
    send = _flag(query.get("sendInitialEvents"))
    if send is None and not match and rv_text in ("", "0"):
        send, match = True, MATCH_NOT_OLDER
    elif query.get("sendInitialEvents") is not None or match:
        errors = []
        if send is not None and match != MATCH_NOT_OLDER:
            errors.append(FieldError("resourceVersionMatch", "Forbidden", None,
                                     "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
        if match:
            if send is None:
                errors.append(FieldError("resourceVersionMatch", "Forbidden", None, "resourceVersionMatch "
                                         "is forbidden for watch unless sendInitialEvents is provided"))
            if match != MATCH_NOT_OLDER:
                errors.append(FieldError("resourceVersionMatch", "Unsupported value", match,
                                         'supported values: "NotOlderThan"'))
        if errors:
            raise InvalidError("ListOptions.meta.k8s.io", "", errors)
    rv = 0 if rv_text in ("", "0") else parse_resource_version(rv_text)
    return WatchOptions(rv_text, rv, _flag(query.get("allowWatchBookmarks")) or False, bool(send))


def _bookmark(info: Any, rv: int, initial_events_end: bool = False) -> dict[str, Any]:
    """A BOOKMARK's object: an empty object of the kind carrying only the resourceVersion (and,
    after the initial events, the ``k8s.io/initial-events-end`` annotation: KEP-3157)."""
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_events_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    return {"kind": info.kind, "apiVersion": info.api_version, "metadata": meta}


def _convert(change: Any, kind: str, namespace: str | None, passes: Any) -> tuple[str, dict[str, Any]] | None:
    """cache_watcher.go ``convertToWatchEvent``: the event a selector watch sees, or None."""
    if change.kind != kind or (namespace is not None and change.namespace != namespace):
        return None
    current = change.type != "DELETED" and passes(change.body)
    previous = change.prev is not None and passes(change.prev)
    if current:
        return ("MODIFIED" if previous else "ADDED"), change.body
    if previous:
        if change.type == "DELETED":
            return "DELETED", change.body      # the last state, already at the deletion's rv
        old = copy.deepcopy(change.prev)
        old.setdefault("metadata", {})["resourceVersion"] = str(change.rv)
        return "DELETED", old
    return None
