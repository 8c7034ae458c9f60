"""Event validation as kube-apiserver's event strategy runs it, on the core/v1 form.

kubernetes ``pkg/apis/core/validation/events.go``:

- ``legacyValidateEvent`` (every create and update, either group version): an Event without
  ``eventTime`` must sit in its involved object's namespace (or ``default`` when that has none);
  one with ``eventTime`` needs ``reportingController`` (a qualified name), ``reportingInstance``,
  ``action`` and ``reason`` (each at most 128 characters) and a ``message`` of at most 1024;
- ``ValidateEventCreate`` through events.k8s.io/v1 (``strict``): ``eventTime`` required, ``type``
  Normal or Warning, a ``series`` of count >= 2 with ``lastObservedTime``, and none of the
  deprecated fields (``firstTimestamp``, ``lastTimestamp``, ``count``, ``source``) set;
- ``ValidateEventUpdate`` through events.k8s.io/v1: every field but ``series`` (and metadata) is
  immutable (``field is immutable``).

The field paths are the internal type's (``message``, ``count``, ``reportingController``) in
either group version, as upstream prints them.

Neighbours: ``cluster.apiserver.event_ops`` (calls these), ``objects.event_versions``.
"""

from __future__ import annotations

from typing import Any

from gpusched.objects.fieldcheck import Errors
from gpusched.objects.names import dns1123_subdomain_errors, qualified_name_errors

LIMITS = (("reportingInstance", 128), ("action", 128), ("reason", 128))
NOTE_LIMIT = 1024
IMMUTABLE = ("involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp",
             "count", "type", "eventTime", "action", "related", "reportingComponent",
             "reportingInstance")
# the internal type's field name where core/v1's JSON name differs
INTERNAL_NAME = {"reportingComponent": "reportingController"}


def _text(event: dict[str, Any], name: str) -> str:
    value = event.get(name)
    return value if isinstance(value, str) else ""


def _mapping(event: dict[str, Any], name: str) -> dict[str, Any]:
    value = event.get(name)
    return value if isinstance(value, dict) else {}


def _legacy(event: dict[str, Any], namespace: str, e: Errors) -> None:
    involved = _mapping(event, "involvedObject")
    involved_ns = str(involved.get("namespace") or "")
    if not event.get("eventTime"):
        if (namespace not in ("", "default")) if not involved_ns else namespace != involved_ns:
            e.invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
        return
    if not involved_ns and namespace not in ("default", "kube-system"):
        e.invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
    controller = _text(event, "reportingComponent")
    if not controller:
        e.required("reportingController")
    for msg in qualified_name_errors(controller):
        e.invalid("reportingController", controller, msg)
    for name, most in LIMITS:
        if not _text(event, name):
            e.required(name)
        if len(_text(event, name)) > most:
            e.invalid(name, "", f"can have at most {most} characters")
    if len(_text(event, "message")) > NOTE_LIMIT:
        e.invalid("message", "", f"can have at most {NOTE_LIMIT} characters")


def _series(event: dict[str, Any], e: Errors) -> None:
    series = event.get("series")
    if not isinstance(series, dict):
        return
    count = series.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or count < 2:
        e.invalid("series.count", "", "should be at least 2")
    if not series.get("lastObservedTime"):
        e.required("series.lastObservedTime")


def _strict_create(event: dict[str, Any], e: Errors) -> None:
    _series(event, e)
    if not event.get("eventTime"):
        e.required("eventTime")
    if event.get("type") not in ("Normal", "Warning"):
        e.invalid("type", "", f"has invalid value: {event.get('type') or ''}")
    for name in ("firstTimestamp", "lastTimestamp", "count"):
        if event.get(name):
            e.invalid(name, "", "needs to be unset")
    source = _mapping(event, "source")
    if source.get("component") or source.get("host"):
        e.invalid("source", "", "needs to be unset")


def validate_create(event: dict[str, Any], namespace: str, strict: bool) -> Errors:
    """``ValidateEventCreate``; ``strict``: the request came through events.k8s.io/v1."""
    e = Errors()
    _legacy(event, namespace, e)
    if strict:
        _strict_create(event, e)
    for msg in dns1123_subdomain_errors(namespace) if namespace else ():
        e.invalid("namespace", namespace, msg)
    return e


def validate_update(event: dict[str, Any], old: dict[str, Any], namespace: str, strict: bool) -> Errors:
    """``ValidateEventUpdate``; ``strict``: the request came through events.k8s.io/v1."""
    e = Errors()
    _legacy(event, namespace, e)
    if not strict:
        return e
    if event.get("series") != old.get("series"):
        _series(event, e)
    for name in IMMUTABLE:
        if event.get(name) != old.get(name):
            e.invalid(INTERNAL_NAME.get(name, name), event.get(name), "field is immutable")
    return e
