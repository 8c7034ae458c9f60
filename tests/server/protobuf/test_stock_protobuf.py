"""The stock components' requests in protobuf through ``gpusched serve``: kube-scheduler's
events.k8s.io/v1 recorder POSTs its Event in protobuf and PATCHes its series
(``tools/events/event_broadcaster.go``), its informers list the stored-only kinds in protobuf,
and client-go's metadata client lists and watches ``as=PartialObjectMetadataList`` /
``as=PartialObjectMetadata`` in protobuf (apiserver ``handlers/response.go``; the Content-Type
names the kind as ``responsewriters.generateMediaTypeWithGVK``)."""

from __future__ import annotations

import json

import pytest

from gpusched.server.protobuf.envelope import decode_event, decode_object, encode_object, read_frames
from tests.server.conftest import start_serve, stops_cleanly
from tests.server.protobuf.test_serve_protobuf import PROTOBUF, call

pytestmark = [pytest.mark.slow]
EVENTS_V1 = "/apis/events.k8s.io/v1/namespaces/default/events"
METADATA = "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    served = start_serve(tmp_path_factory.mktemp("stock-protobuf"), "--virtual-clock")
    yield served
    stops_cleanly(served.process)


def test_scheduler_event_series_in_protobuf(served):
    name = "real-big.18ec4be41ad6a0a5"
    event = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
             "metadata": {"name": name, "namespace": "default"},
             "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "default-scheduler",
             "reportingInstance": "default-scheduler-host", "action": "Scheduling",
             "reason": "FailedScheduling", "type": "Warning", "note": "0/1 nodes are available",
             "regarding": {"kind": "Pod", "namespace": "default", "name": "real-big"}}
    status, content_type, body = call(served, "POST", EVENTS_V1, encode_object(event))
    assert status == 201 and content_type == PROTOBUF, body
    created = decode_object(body)
    assert created["metadata"]["name"] == name and created["note"] == "0/1 nodes are available"
    patch = json.dumps({"series": {"count": 2, "lastObservedTime": "2026-01-01T00:01:00.000000Z"}})
    status, _, body = call(served, "PATCH", f"{EVENTS_V1}/{name}", patch.encode(),
                           "application/strategic-merge-patch+json")
    assert status == 200 and decode_object(body)["series"]["count"] == 2
    status, _, body = call(served, "GET", f"/api/v1/namespaces/default/events/{name}")
    core = decode_object(body)
    assert (core["message"], core["series"]["count"], core["reportingComponent"]) == (
        "0/1 nodes are available", 2, "default-scheduler")


@pytest.mark.parametrize("path", [
    "/apis/storage.k8s.io/v1/csinodes", "/apis/storage.k8s.io/v1/csistoragecapacities",
    "/api/v1/replicationcontrollers", "/apis/resource.k8s.io/v1/resourceslices",
    "/apis/resource.k8s.io/v1/deviceclasses", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
], ids=lambda p: p.rsplit("/", 1)[1])
def test_informer_lists_in_protobuf(served, path):
    status, content_type, body = call(served, "GET", f"{path}?limit=500&resourceVersion=0")
    assert status == 200 and content_type == PROTOBUF, body
    assert decode_object(body)["kind"].endswith("List")


def test_metadata_only_list_and_watch_in_protobuf(served):
    status, content_type, body = call(served, "GET", "/api/v1/namespaces",
                                      accept=f"{PROTOBUF};{METADATA},application/json;{METADATA},application/json")
    assert status == 200 and content_type == f"{PROTOBUF};g=meta.k8s.io;v=v1;as=PartialObjectMetadataList"
    listed = decode_object(body)
    assert listed["kind"] == "PartialObjectMetadataList"
    assert {i["metadata"]["name"] for i in listed["items"]} >= {"default", "kube-system"}
    rv = listed["metadata"]["resourceVersion"]
    served.json("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "later"}})
    watch_accept = f"{PROTOBUF};as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
    status, _, stream = call(served, "GET", f"/api/v1/namespaces?watch=true&resourceVersion={rv}"
                             "&timeoutSeconds=1", accept=watch_accept)
    events = [decode_event(frame) for frame in read_frames(stream)]
    assert [(kind, obj["kind"], obj["metadata"]["name"]) for kind, obj in events] == [
        ("ADDED", "PartialObjectMetadata", "later")]
