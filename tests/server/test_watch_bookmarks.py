"""Watch options as kube-apiserver reads them: ``allowWatchBookmarks``, ``sendInitialEvents`` with
``resourceVersionMatch=NotOlderThan`` (KEP-3157 watch-list: the initial ADDED events, then a
BOOKMARK annotated ``k8s.io/initial-events-end``), the defaults of ``SetListOptionsDefaults`` and
the checks of ``validateWatchOptions`` (apimachinery ``pkg/apis/meta/internalversion``;
``staging/src/k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go`` for the bookmark object).
"""

from __future__ import annotations

import pytest

from gpusched.errors import InvalidError
from gpusched.server.watch import watch_options
from tests.server.test_watch import Watcher
from tests.conftest import CEILING_S

CMS = "/api/v1/namespaces/default/configmaps"


def configmap(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


@pytest.mark.parametrize(("query", "initial"), [
    ({}, True),
    ({"resourceVersion": "0"}, True),
    ({"resourceVersion": "7"}, False),
    ({"sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan"}, True),
    ({"sendInitialEvents": "false", "resourceVersionMatch": "NotOlderThan"}, False),
    ({"sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan", "resourceVersion": "7"}, True),
], ids=["no-rv-defaults-to-initial-events", "rv-0", "resume", "watch-list", "watch-list-off",
        "watch-list-not-older-than-rv"])
def test_watch_options_defaults(query, initial):
    assert watch_options(query).initial_events is initial


@pytest.mark.parametrize(("query", "messages"), [
    ({"sendInitialEvents": "true"},
     ["resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"]),
    ({"resourceVersionMatch": "NotOlderThan", "resourceVersion": "3"},
     ["resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless "
      "sendInitialEvents is provided"]),
    ({"sendInitialEvents": "true", "resourceVersionMatch": "Exact"},
     ["resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
      'resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"']),
], ids=["watch-sendInitialEvents-without-resourceversionmatch-forbidden",
        "watch-resourceversionmatch-without-sendInitialEvents-forbidden",
        "watch-sendInitialEvents-with-exact-resourceversionmatch-forbidden"])
def test_watch_options_validated_as_validate_watch_options(query, messages):
    with pytest.raises(InvalidError) as err:
        watch_options(query)
    assert [str(e) for e in err.value.errors] == messages


def _until_bookmark(events: list[dict]) -> bool:
    return any(e["type"] == "BOOKMARK" for e in events)


@pytest.mark.slow
def test_send_initial_events_ends_with_annotated_bookmark_then_streams_changes(serve):
    for name in ("a", "b"):
        assert serve.request("POST", CMS, configmap(name))[0] == 201
    rv = serve.json(CMS)["metadata"]["resourceVersion"]
    watcher = Watcher(serve, f"{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                             "&allowWatchBookmarks=true",
                      lambda events: any(e["object"]["metadata"].get("name") == "c" for e in events))
    watcher.start()
    serve.request("POST", CMS, configmap("c"))
    watcher.join(timeout=CEILING_S)
    events = [e for e in watcher.events if e["type"] != "BOOKMARK"
              or e["object"]["metadata"].get("annotations")]       # periodic bookmarks may come too
    types = [(e["type"], e["object"]["metadata"].get("name")) for e in events]
    assert types == [("ADDED", "a"), ("ADDED", "b"), ("BOOKMARK", None), ("ADDED", "c")]
    bookmark = events[2]["object"]
    assert bookmark["kind"] == "ConfigMap" and bookmark["apiVersion"] == "v1"
    assert bookmark["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert int(bookmark["metadata"]["resourceVersion"]) >= int(rv)


@pytest.mark.slow
def test_plain_watch_without_bookmarks_has_no_bookmark(serve):
    serve.request("POST", CMS, configmap("a"))
    watcher = Watcher(serve, f"{CMS}?watch=true", lambda events: len(events) >= 2)
    watcher.start()
    serve.request("POST", CMS, configmap("b"))
    watcher.join(timeout=CEILING_S)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in watcher.events] == [
        ("ADDED", "a"), ("ADDED", "b")]


@pytest.mark.slow
def test_invalid_watch_options_are_422_and_too_new_rv_is_504(serve):
    status, body = serve.request("GET", f"{CMS}?watch=true&sendInitialEvents=true")
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["message"] == ('ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
                               "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")
    status, body = serve.request("GET", f"{CMS}?watch=true&sendInitialEvents=true"
                                        "&resourceVersionMatch=NotOlderThan&resourceVersion=99999")
    assert (status, body["reason"]) == (504, "Timeout")


@pytest.mark.slow
def test_kubernetes_client_watch_list(serve):
    pytest.importorskip("kubernetes")
    from kubernetes import client, config, watch

    api = client.CoreV1Api(config.new_client_from_config(config_file=str(serve.kubeconfig)))
    api.create_namespaced_config_map("default", configmap("x"))
    seen = []
    for event in watch.Watch().stream(api.list_namespaced_config_map, "default",
                                      send_initial_events=True, resource_version_match="NotOlderThan",
                                      allow_watch_bookmarks=True, timeout_seconds=20):
        seen.append(event["type"])
        if event["type"] == "BOOKMARK":
            annotations = event["raw_object"]["metadata"]["annotations"]
            assert annotations == {"k8s.io/initial-events-end": "true"}
            break
    assert seen == ["ADDED", "BOOKMARK"]
