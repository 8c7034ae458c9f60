"""One Event seen through two group versions: core/v1 (how it is stored) and events.k8s.io/v1.

kube-apiserver keeps one Event storage and serves it as both; the field mapping is kubernetes
``pkg/apis/events/v1/conversion.go`` (``Convert_v1_Event_To_core_Event`` and back):

    events.k8s.io/v1            core/v1
    note                        message
    regarding                   involvedObject
    deprecatedSource            source
    deprecatedFirstTimestamp    firstTimestamp
    deprecatedLastTimestamp     lastTimestamp
    deprecatedCount             count
    reportingController         reportingComponent      (the Go field is ReportingController in both)
    eventTime, series, reportingInstance, action, reason, related, type: the same names

Go's encoding of the two structs shows through: ``metav1.Time``/``MicroTime`` fields without a
value are ``null`` (``eventTime`` in either version, the first/last timestamps), struct fields
(``source``/``deprecatedSource``, ``involvedObject``/``regarding``) are always present, and
core/v1's ``reportingComponent``/``reportingInstance`` have no ``omitempty``.

Field selectors of events.k8s.io/v1 name events.k8s.io fields (``regarding.name``...);
:data:`FIELD_LABELS` maps them to core/v1's (``AddFieldLabelConversionsForEvent``).

Neighbours: ``server.events`` (serves both versions), ``cluster.apiserver.api_ops`` (stores).
"""

from __future__ import annotations

from typing import Any

EVENTS_V1 = "events.k8s.io/v1"

# events.k8s.io/v1 name -> core/v1 name, for the fields whose names differ.
RENAMED = (("note", "message"), ("regarding", "involvedObject"), ("deprecatedSource", "source"),
           ("deprecatedFirstTimestamp", "firstTimestamp"),
           ("deprecatedLastTimestamp", "lastTimestamp"), ("deprecatedCount", "count"),
           ("reportingController", "reportingComponent"))
SAME = ("metadata", "eventTime", "series", "reportingInstance", "action", "reason", "related", "type")

FIELD_LABELS = {
    "reason": "reason", "regarding.kind": "involvedObject.kind",
    "regarding.namespace": "involvedObject.namespace", "regarding.name": "involvedObject.name",
    "regarding.uid": "involvedObject.uid", "regarding.apiVersion": "involvedObject.apiVersion",
    "regarding.resourceVersion": "involvedObject.resourceVersion",
    "regarding.fieldPath": "involvedObject.fieldPath", "reportingController": "reportingComponent",
    "source": "source", "type": "type", "metadata.namespace": "metadata.namespace",
    "metadata.name": "metadata.name",
}


def to_events_v1(core: dict[str, Any]) -> dict[str, Any]:
    """A stored core/v1 Event as events.k8s.io/v1 shows it.

    >>> e = to_events_v1({"metadata": {"name": "p.1"}, "message": "m", "count": 2,
    ...                   "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "R"})
    >>> e["note"], e["deprecatedCount"], e["regarding"]["name"], e["eventTime"]
    ('m', 2, 'p', None)
    """
    out: dict[str, Any] = {"kind": "Event", "apiVersion": EVENTS_V1}
    for name in SAME:
        if name in core:
            out[name] = core[name]
    for new, old in RENAMED:
        if core.get(old) not in (None, "", 0):
            out[new] = core[old]
    out.setdefault("eventTime", None)
    out.setdefault("regarding", {})
    out.setdefault("deprecatedSource", {})
    out.setdefault("deprecatedFirstTimestamp", None)
    out.setdefault("deprecatedLastTimestamp", None)
    return out


def to_core(event: dict[str, Any]) -> dict[str, Any]:
    """An events.k8s.io/v1 Event as core/v1 stores it (what ``to_events_v1`` undoes).

    >>> c = to_core({"apiVersion": EVENTS_V1, "kind": "Event", "note": "m",
    ...              "reportingController": "default-scheduler", "regarding": {"name": "p"}})
    >>> c["message"], c["reportingComponent"], c["involvedObject"], c["firstTimestamp"]
    ('m', 'default-scheduler', {'name': 'p'}, None)
    """
    out: dict[str, Any] = {"kind": "Event", "apiVersion": "v1"}
    for name in SAME:
        if name in event:
            out[name] = event[name]
    for new, old in RENAMED:
        if event.get(new) not in (None, "", 0):
            out[old] = event[new]
    return with_core_defaults(out)


def with_core_defaults(core: dict[str, Any]) -> dict[str, Any]:
    """The fields Go always writes for a core/v1 Event (see the module docstring)."""
    core.setdefault("involvedObject", {})
    core.setdefault("source", {})
    for name in ("firstTimestamp", "lastTimestamp", "eventTime"):
        core.setdefault(name, None)
    core.setdefault("reportingComponent", "")
    core.setdefault("reportingInstance", "")
    return core


def core_field_label(label: str) -> str | None:
    """The core/v1 field an events.k8s.io/v1 field selector names; None when it has none."""
    return FIELD_LABELS.get(label)
