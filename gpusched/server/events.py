"""Events through the API: one storage served as core/v1 and events.k8s.io/v1.

The stored form is core/v1 (``cluster.apiserver.event_ops`` writes it); what a request gets is
the stored Event converted to the request's group version (``objects.event_versions``), with its
resourceVersion (the recording sequence number). Tables are built from the stored form, as
kube-apiserver prints the internal object whichever version was asked for. A field selector of an
events.k8s.io/v1 request names events.k8s.io fields (``regarding.name``); it is translated to
the core/v1 fields the stored Events are filtered by (``AddFieldLabelConversionsForEvent``, an
unknown label 400 ``field label not supported: <label>``).

Neighbours: ``server.resources`` and ``server.watch`` (call these), ``apiserver.event_ops``.
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.apiserver import event_ops
from gpusched.cluster.apiserver.api_ops import BadRequestError
from gpusched.cluster.apiserver.view import View, copy_tree
from gpusched.objects.event_versions import EVENTS_V1, core_field_label, to_events_v1
from gpusched.objects.kinds import KindInfo
from gpusched.objects.selectors import FieldRequirement


def is_event(info: KindInfo) -> bool:
    return info.kind == "Event"


def as_requested(event: dict[str, Any], info: KindInfo) -> dict[str, Any]:
    """A stored (core/v1) Event in the request's group version."""
    if info.api_version == EVENTS_V1:
        return to_events_v1(event)
    out = {"kind": "Event", "apiVersion": "v1", **event}
    return out


def listed(view: View, namespace: str | None) -> list[dict[str, Any]]:
    """The stored Events of a namespace (None: all), oldest first, with their resourceVersions."""
    return [event_ops.served(view, _key(e)) for e in view.list_events(namespace)]


def fetched(view: View, namespace: str, name: str) -> dict[str, Any] | None:
    """One stored Event with its resourceVersion, or None."""
    if (namespace, name) not in view.events:
        return None
    return copy_tree(event_ops.served(view, (namespace, name)))


def field_selector(info: KindInfo, selector: list[FieldRequirement]) -> list[FieldRequirement]:
    """The selector on the stored (core/v1) fields."""
    if info.api_version != EVENTS_V1:
        return selector
    out = []
    for label, op, value in selector:
        core = core_field_label(label)
        if core is None:
            raise BadRequestError(f"field label not supported: {label}")
        out.append((core, op, value))
    return out


def _key(event: dict[str, Any]) -> tuple[str, str]:
    meta = event.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))
