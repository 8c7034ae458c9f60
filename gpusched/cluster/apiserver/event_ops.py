"""The API server's writes of Events: create, update (PUT and every PATCH) and delete.

Events are kept as kube-apiserver keeps them (``pkg/registry/core/event``): one storage in the
core/v1 form (the view's ``events``, the store's ``events`` table with its TTL, renewed at each
write) served through ``v1`` and ``events.k8s.io/v1`` (``objects.event_versions`` converts). The
name a client sends is the stored name (client-go's recorders name an event
``<object>.<unix nanoseconds in hex>``); a second create of that name is 409 AlreadyExists
(client-go's events/v1 recorder then retries its PATCH). An update checks the sent
``resourceVersion`` (an Event's is its recording sequence number) and keeps ``uid`` and
``creationTimestamp``; client-go's core/v1 recorder PATCHes ``count``/``lastTimestamp``
(``tools/record/events_cache.go``), its events/v1 recorder ``series``
(``tools/events/event_broadcaster.go`` ``createPatchBytesForSeries``). Validation:
``objects.validation_events``. gpusched's own components record through ``View.record_event``.

Neighbours: ``apiserver.api_ops`` (hands Event requests here), ``apiserver.view`` (put_event,
drop_event), ``server.events`` (serves the results).
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.apiserver.view import View, copy_tree
from gpusched.errors import AlreadyExistsError, ConflictError, InvalidError, NotFoundError
from gpusched.objects.event_versions import EVENTS_V1, to_core, with_core_defaults
from gpusched.objects.kinds import KindInfo
from gpusched.objects.validation import validate_object
from gpusched.objects.validation_events import validate_create, validate_update


def plural(info: KindInfo) -> str:
    return f"{info.plural}.{info.group}" if info.group else info.plural


def served(view: View, ekey: tuple[str, str]) -> dict[str, Any]:
    """The stored Event (core/v1) with its resourceVersion, the recording sequence number."""
    event = view.events[ekey]
    return {**event, "metadata": {**(event.get("metadata") or {}),
                                  "resourceVersion": str(view.event_seq.get(ekey, 0))}}


def _as_core(info: KindInfo, body: dict[str, Any]) -> dict[str, Any]:
    if info.api_version == EVENTS_V1 or body.get("apiVersion") == EVENTS_V1:
        return to_core(body)
    return copy_tree(body)


def _check(errors: Any, name: str) -> None:
    if errors:
        raise InvalidError("Event", name, errors.items)


def create(view: View, info: KindInfo, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST: ``body`` has passed ``api_ops.check_body`` (its name generated if asked)."""
    event = validate_object(_as_core(info, body), owned=True)
    meta = event["metadata"]
    name = str(meta["name"])
    _check(validate_create(event, namespace, info.api_version == EVENTS_V1), name)
    if (namespace, name) in view.events:
        raise AlreadyExistsError(plural(info), name)
    meta["namespace"] = namespace
    meta["uid"] = view.new_uid("Event", namespace, name)
    meta["creationTimestamp"] = view.timestamp()
    view.put_event((namespace, name), event)
    return served(view, (namespace, name))


def replace(view: View, info: KindInfo, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
    """PUT, and PATCH once patched: ``body`` has passed ``api_ops.check_body``/``check_name``."""
    ekey = (namespace, name)
    if ekey not in view.events:
        raise NotFoundError(plural(info), name)
    old = view.events[ekey]
    sent_rv = (body.get("metadata") or {}).get("resourceVersion")
    if sent_rv not in (None, "") and str(sent_rv) != str(view.event_seq.get(ekey, 0)):
        raise ConflictError(f'Operation cannot be fulfilled on {plural(info)} "{name}": the object '
                            "has been modified; please apply your changes to the latest version "
                            "and try again")
    event = validate_object(_as_core(info, body), owned=True)
    strict = info.api_version == EVENTS_V1
    _check(validate_update(with_core_defaults(copy_tree(event)), with_core_defaults(copy_tree(old)),
                           namespace, strict), name)
    meta, old_meta = event["metadata"], old.get("metadata") or {}
    for field in ("uid", "creationTimestamp"):
        if field in old_meta:
            meta[field] = old_meta[field]
    meta.pop("resourceVersion", None)
    meta["namespace"] = namespace
    view.put_event(ekey, event)
    return served(view, ekey)


def delete(view: View, info: KindInfo, namespace: str, name: str) -> dict[str, Any]:
    """DELETE: the Event as it was (no watch event is sent for it, as for an expired one)."""
    ekey = (namespace, name)
    if ekey not in view.events:
        raise NotFoundError(plural(info), name)
    last = served(view, ekey)
    view.drop_event(ekey)
    return last
