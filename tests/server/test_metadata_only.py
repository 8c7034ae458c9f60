"""Metadata-only lists, gets and watches (``as=PartialObjectMetadata[List]``), as client-go's
metadata client and controller-runtime's metadata informers ask for them: apimachinery
``pkg/endpoints/handlers/response.go`` (``asPartialObjectMetadata``,
``asPartialObjectMetadataList``, ``errNotAcceptable``), ``rest.go`` (``AllowsMediaTypeTransform``)
and ``responsewriters/writers.go`` (``generateMediaTypeWithGVK``: the Content-Type names the kind).
"""

from __future__ import annotations

import http.client
import json

import pytest

from tests.conftest import CEILING_S
from tests.server.conftest import start_serve, stops_cleanly

LIST_V1 = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
OBJECT_V1 = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
# a JSON client's fallback to plain JSON (client-go's metadata client puts protobuf first:
# tests/server/protobuf/test_stock_protobuf.py)
JSON_CLIENT_LIST = f"{LIST_V1},application/json"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    served = start_serve(tmp_path_factory.mktemp("partial"), "--virtual-clock")
    served.json("/api/v1/namespaces/default/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "labels": {"app": "x"}}, "data": {"k": "secret"}})
    yield served
    stops_cleanly(served.process)


def get(served, path: str, accept: str, raw: bool = False) -> tuple[int, str, dict | str]:
    """(status, Content-Type, body: parsed, or the text with ``raw``) of a GET with ``accept``."""
    host, port = served.host_port
    conn = http.client.HTTPConnection(host, port, timeout=CEILING_S)
    try:
        conn.request("GET", path, headers={"Accept": accept})
        response = conn.getresponse()
        text = response.read().decode()
    finally:
        conn.close()
    if raw:
        return response.status, response.getheader("Content-Type", ""), text
    try:
        return response.status, response.getheader("Content-Type", ""), json.loads(text)
    except ValueError:
        return response.status, response.getheader("Content-Type", ""), text


CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


@pytest.mark.parametrize("accept,version", [
    (LIST_V1, "v1"), (JSON_CLIENT_LIST, "v1"),
    ("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1", "v1beta1"),
], ids=["json", "with-plain-json-fallback", "v1beta1"])
def test_list_as_partial_object_metadata_list(served, accept, version):
    status, content_type, body = get(served, CONFIGMAPS, accept)
    assert status == 200, body
    assert content_type == f"application/json;g=meta.k8s.io;v={version};as=PartialObjectMetadataList"
    assert body["kind"] == "PartialObjectMetadataList"
    assert body["apiVersion"] == f"meta.k8s.io/{version}"
    assert body["metadata"]["resourceVersion"]
    item = next(i for i in body["items"] if i["metadata"]["name"] == "settings")
    assert item["kind"] == "PartialObjectMetadata" and item["apiVersion"] == f"meta.k8s.io/{version}"
    assert item["metadata"]["labels"] == {"app": "x"} and "data" not in item


def test_get_as_partial_object_metadata(served):
    status, content_type, body = get(served, f"{CONFIGMAPS}/settings", OBJECT_V1)
    assert status == 200 and content_type.endswith(";as=PartialObjectMetadata"), body
    assert set(body) == {"kind", "apiVersion", "metadata"} and body["metadata"]["name"] == "settings"


@pytest.mark.parametrize("path,accept,message", [
    (CONFIGMAPS, OBJECT_V1, "you requested PartialObjectMetadata, but the requested object is a "
                            "list (*core.ConfigMapList)"),
    (f"{CONFIGMAPS}/settings", LIST_V1, "you requested PartialObjectMetadataList, but the requested "
                                        "object is not a list (*core.ConfigMap)"),
], ids=["list-asked-as-object", "object-asked-as-list"])
def test_mismatched_partial_kind_is_not_acceptable(served, path, accept, message):
    status, _, body = get(served, path, accept)
    assert status == 406 and body["reason"] == "NotAcceptable" and body["message"] == message, body


def test_watch_sends_partial_objects(served):
    _, _, listed = get(served, CONFIGMAPS, LIST_V1)
    rv = listed["metadata"]["resourceVersion"]
    served.json(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "later"},
                             "data": {"k": "v"}})
    status, content_type, text = get(served, f"{CONFIGMAPS}?watch=true&resourceVersion={rv}"
                                     "&timeoutSeconds=1", OBJECT_V1, raw=True)
    assert status == 200 and content_type.endswith(";as=PartialObjectMetadata")
    lines = [json.loads(line) for line in str(text).splitlines() if line.strip()]
    assert [(e["type"], e["object"]["kind"], e["object"]["metadata"]["name"]) for e in lines] == [
        ("ADDED", "PartialObjectMetadata", "later")]
    assert "data" not in lines[0]["object"]


def test_table_and_plain_json_unchanged(served):
    _, _, table = get(served, CONFIGMAPS, "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
    assert table["kind"] == "Table"
    _, content_type, plain = get(served, CONFIGMAPS, "application/json")
    assert plain["kind"] == "ConfigMapList" and content_type == "application/json"
