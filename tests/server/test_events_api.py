"""Events as kube-apiserver keeps them, over HTTP: the name a client sends is kept, client-go's
recorders can count a repeat into the same Event with a PATCH (core/v1: ``count`` and
``lastTimestamp``, ``tools/record/events_cache.go``; events.k8s.io/v1: ``series``,
``tools/events/event_broadcaster.go`` ``createPatchBytesForSeries``), and one storage is served
as both ``v1`` and ``events.k8s.io/v1`` with the field mapping of
``pkg/apis/events/v1/conversion.go``; events.k8s.io/v1 writes are validated as
``pkg/apis/core/validation/events.go`` does.
"""

from __future__ import annotations

import itertools
import json

import pytest

from tests.server.conftest import start_serve, stops_cleanly

CORE = "/api/v1/namespaces/default/events"
EVENTS_V1 = "/apis/events.k8s.io/v1/namespaces/default/events"
STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}
NAMES = itertools.count(1)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    served = start_serve(tmp_path_factory.mktemp("events"), "--virtual-clock")
    yield served
    stops_cleanly(served.process)


def core_event(name: str, **fields) -> dict:
    """What client-go's core/v1 recorder POSTs (``tools/record/event.go`` ``makeEvent``)."""
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": name.split(".")[0],
                               "uid": "u-1", "apiVersion": "v1"},
            "reason": "FailedScheduling", "message": "0/1 nodes are available", "type": "Warning",
            "source": {"component": "default-scheduler"}, "count": 1,
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
            **fields}


def v1_event(name: str, **fields) -> dict:
    """What client-go's events.k8s.io/v1 recorder POSTs (``tools/events/recorder.go``
    ``makeEvent``): eventTime, reportingController/Instance, action, regarding, note."""
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "default"},
            "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "default-scheduler",
            "reportingInstance": "default-scheduler-host", "action": "Scheduling",
            "reason": "FailedScheduling", "type": "Warning", "note": "0/1 nodes are available",
            "regarding": {"kind": "Pod", "namespace": "default", "name": name.split(".")[0],
                          "uid": "u-2", "apiVersion": "v1"}, **fields}


def unique(prefix: str) -> str:
    return f"{prefix}-{next(NAMES)}.18ec4be41ad6a0a5"


@pytest.mark.parametrize("path,build", [(CORE, core_event), (EVENTS_V1, v1_event)],
                         ids=["core-v1", "events-k8s-io-v1"])
def test_the_name_a_client_sends_is_kept(served, path, build):
    name = unique("real-big")
    created = served.json(path, build(name))
    assert created["metadata"]["name"] == name
    assert served.json(f"{path}/{name}")["metadata"]["uid"] == created["metadata"]["uid"]
    status, again = served.request("POST", path, build(name))
    resource = "events" if path == CORE else "events.events.k8s.io"
    assert status == 409 and again["message"] == f'{resource} "{name}" already exists', again


def test_core_recorder_patch_counts_a_repeat(served):
    """events_cache.go ``eventObserve``: a repeat is a strategic merge patch of ``count``,
    ``lastTimestamp`` (and ``message``) on the first Event."""
    name = unique("repeat")
    served.json(CORE, core_event(name))
    status, patched = served.request("PATCH", f"{CORE}/{name}", {
        "count": 2, "lastTimestamp": "2026-01-01T00:05:00Z", "message": "0/1 nodes are available"},
        STRATEGIC)
    assert status == 200, patched
    assert (patched["count"], patched["lastTimestamp"], patched["firstTimestamp"]) == (
        2, "2026-01-01T00:05:00Z", "2026-01-01T00:00:00Z")
    assert int(patched["metadata"]["resourceVersion"]) > 0


def test_events_v1_recorder_series_patch(served):
    """event_broadcaster.go: the second occurrence PATCHes ``series`` (count 2 and
    lastObservedTime) onto the Event it created; the core/v1 view shows the same object."""
    name = unique("series")
    served.json(EVENTS_V1, v1_event(name))
    series = {"count": 2, "lastObservedTime": "2026-01-01T00:01:00.000000Z"}
    status, patched = served.request("PATCH", f"{EVENTS_V1}/{name}", {"series": series}, STRATEGIC)
    assert status == 200 and patched["series"] == series, patched
    core = served.json(f"{CORE}/{name}")
    assert core["series"] == series and core["message"] == "0/1 nodes are available"
    assert core["reportingComponent"] == "default-scheduler"
    assert core["involvedObject"]["uid"] == "u-2"
    assert core["firstTimestamp"] is None and core["lastTimestamp"] is None


# (events.k8s.io/v1 field, core/v1 field): pkg/apis/events/v1/conversion.go
MAPPING = [("note", "message"), ("regarding", "involvedObject"), ("deprecatedSource", "source"),
           ("deprecatedFirstTimestamp", "firstTimestamp"), ("deprecatedLastTimestamp", "lastTimestamp"),
           ("deprecatedCount", "count"), ("reportingController", "reportingComponent"),
           ("eventTime", "eventTime"), ("reason", "reason"), ("type", "type")]


@pytest.fixture(scope="module")
def both_views(served):
    name = unique("both")
    served.json(CORE, core_event(name, reportingComponent="default-scheduler",
                                 eventTime="2026-01-01T00:00:00.000000Z",
                                 reportingInstance="default-scheduler-host", action="Scheduling"))
    return served.json(f"{EVENTS_V1}/{name}"), served.json(f"{CORE}/{name}")


@pytest.mark.parametrize("new,old", MAPPING, ids=[m[0] for m in MAPPING])
def test_one_event_seen_through_both_groups(both_views, new, old):
    as_v1, as_core = both_views
    assert as_v1["apiVersion"] == "events.k8s.io/v1" and as_core["apiVersion"] == "v1"
    assert as_v1[new] == as_core[old]
    assert as_v1["metadata"] == as_core["metadata"]


# (id, fields changed from a valid events.k8s.io/v1 Event, upstream's field errors)
INVALID_V1 = [
    ("no-event-time", {"eventTime": None}, "eventTime: Required value"),
    ("bad-type", {"type": "Bogus"}, 'type: Invalid value: "": has invalid value: Bogus'),
    ("deprecated-count", {"deprecatedCount": 3}, 'count: Invalid value: "": needs to be unset'),
    ("short-series", {"series": {"count": 1, "lastObservedTime": "2026-01-01T00:00:00.000000Z"}},
     'series.count: Invalid value: "": should be at least 2'),
    ("no-action", {"action": ""}, "action: Required value"),
    ("controller-not-qualified", {"reportingController": "default scheduler"},
     'reportingController: Invalid value: "default scheduler": name part must consist of'),
]


@pytest.mark.parametrize("fields,message", [c[1:] for c in INVALID_V1], ids=[c[0] for c in INVALID_V1])
def test_events_v1_create_validation(served, fields, message):
    name = unique("invalid")
    status, reply = served.request("POST", EVENTS_V1, v1_event(name, **fields))
    assert status == 422 and message in reply["message"], reply
    assert reply["message"].startswith(f'Event.events.k8s.io "{name}" is invalid: '), reply
    assert served.request("GET", f"{CORE}/{name}")[0] == 404


def test_events_v1_update_keeps_all_but_series(served):
    """ValidateEventUpdate: through events.k8s.io/v1 every field but series is immutable."""
    name = unique("immutable")
    served.json(EVENTS_V1, v1_event(name))
    status, reply = served.request("PATCH", f"{EVENTS_V1}/{name}", {"note": "changed"}, STRATEGIC)
    assert status == 422 and 'message: Invalid value: "changed": field is immutable' in reply["message"], reply
    assert served.json(f"{CORE}/{name}")["message"] == "0/1 nodes are available"


def test_stale_resource_version_conflicts(served):
    name = unique("stale")
    created = served.json(CORE, core_event(name))
    served.request("PATCH", f"{CORE}/{name}", {"count": 2}, STRATEGIC)
    status, reply = served.request("PUT", f"{CORE}/{name}", {**created, "count": 5})
    assert status == 409 and "the object has been modified" in reply["message"], reply


def test_events_v1_field_selector_names_events_fields(served):
    """AddFieldLabelConversionsForEvent: ``regarding.name`` selects involvedObject.name; a
    field the mapping lacks is refused."""
    name = unique("selected")
    served.json(EVENTS_V1, v1_event(name))
    listed = served.json(f"{EVENTS_V1}?fieldSelector=regarding.name={name.split('.')[0]}")
    assert [e["metadata"]["name"] for e in listed["items"]] == [name]
    assert listed["kind"] == "EventList" and listed["apiVersion"] == "events.k8s.io/v1"
    status, reply = served.request("GET", f"{EVENTS_V1}?fieldSelector=note=x")
    assert status == 400 and reply["message"] == "field label not supported: note", reply


def test_delete_event(served):
    name = unique("deleted")
    served.json(CORE, core_event(name))
    status, _ = served.request("DELETE", f"{EVENTS_V1}/{name}")
    assert status == 200
    assert served.request("GET", f"{CORE}/{name}")[0] == 404


MERGE = {"Content-Type": "application/merge-patch+json"}
# (id, method, path under the event's collection ("{name}": the existing event), body, headers,
#  status, message): bad writes get one clear line and change nothing
HOSTILE = [
    ("rename", "PATCH", CORE + "/{name}", {"metadata": {"name": "other"}}, MERGE, 400,
     "the name of the object (other) does not match the name on the URL ({name})"),
    ("count-type", "PATCH", CORE + "/{name}", {"count": "x"}, MERGE, 400,
     "json: cannot unmarshal string into Go struct field Event.count of type int32"),
    ("series-type", "PATCH", EVENTS_V1 + "/{name}", {"series": {"count": "many"}}, STRATEGIC, 400,
     "cannot unmarshal string into Go struct field EventSeries.series.count of type int32"),
    ("other-kind", "PUT", CORE + "/{name}", {"kind": "Pod", "metadata": {"name": "{name}"}}, None, 400,
     "the kind in the data (Pod) does not match the expected kind (Event)"),
    ("missing", "PATCH", CORE + "/nope", {"count": 2}, MERGE, 404, 'events "nope" not found'),
    ("missing-delete", "DELETE", EVENTS_V1 + "/nope", None, None, 404,
     'events.events.k8s.io "nope" not found'),
]


@pytest.mark.parametrize("method,path,body,headers,status,message", [c[1:] for c in HOSTILE],
                         ids=[c[0] for c in HOSTILE])
def test_bad_event_writes_change_nothing(served, method, path, body, headers, status, message):
    name = unique("hostile")
    stored = served.json(CORE, core_event(name))
    if isinstance(body, dict) and body.get("metadata", {}).get("name") == "{name}":
        body = {**body, "metadata": {"name": name}}
    code, reply = served.request(method, path.format(name=name), body, headers)
    assert code == status and message.format(name=name) in reply["message"], reply
    assert served.json(f"{CORE}/{name}") == stored


def test_events_v1_watch_sends_events_v1_objects(served):
    """A watch through events.k8s.io/v1 streams the stored Events converted to that version."""
    name = unique("watched")
    created = served.json(CORE, core_event(name))
    served.request("PATCH", f"{CORE}/{name}", {"count": 2}, STRATEGIC)
    status, text = served.request("GET", f"{EVENTS_V1}?watch=true&timeoutSeconds=1"
                                  f"&resourceVersion={created['metadata']['resourceVersion']}")
    assert status == 200
    lines = [json.loads(line) for line in (text if isinstance(text, str) else json.dumps(text)).splitlines()]
    mine = [e for e in lines if e["object"]["metadata"]["name"] == name]
    assert [(e["type"], e["object"]["apiVersion"], e["object"]["deprecatedCount"]) for e in mine] == [
        ("MODIFIED", "events.k8s.io/v1", 2)]
