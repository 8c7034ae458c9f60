"""A watch with a label selector follows objects into and out of the selection, as kube-apiserver's
cacher does (staging/src/k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go,
convertToWatchEvent): ADDED when an object starts matching, MODIFIED while it matches, DELETED
with its previous state at the change's resourceVersion when it stops matching."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.server.conftest import wait_for
from tests.server.test_kubectl import _kubectl_binaries
from tests.server.test_watch import Watcher
from tests.conftest import CEILING_S

BINARIES = [pytest.param(p.values[0], id=p.id, marks=p.marks) for p in _kubectl_binaries()]
MERGE = {"Content-Type": "application/merge-patch+json"}


def make_pod(name: str, app: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": app}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def relabel(serve, name: str, app: str) -> str:
    """Merge-patch the pod's app label; returns the new resourceVersion."""
    status, body = serve.request("PATCH", f"/api/v1/namespaces/default/pods/{name}",
                                 {"metadata": {"labels": {"app": app}}}, headers=MERGE)
    assert status == 200, body
    return body["metadata"]["resourceVersion"]


def transitions(events: list[dict]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"]["name"]) for e in events if e["type"] != "MODIFIED"]


def test_label_selector_watch_sees_objects_enter_and_leave(serve):
    serve.json("/api/v1/namespaces/default/pods", make_pod("a", "x"))
    serve.json("/api/v1/namespaces/default/pods", make_pod("b", "y"))
    expected = [("ADDED", "a"), ("ADDED", "b"), ("DELETED", "a"), ("DELETED", "b")]
    watcher = Watcher(serve, "/api/v1/namespaces/default/pods?watch=true&labelSelector=app%3Dx",
                      lambda events: len(transitions(events)) >= len(expected))
    watcher.start()
    wait_for(lambda: transitions(watcher.events) == [("ADDED", "a")], "the initial ADDED")
    relabel(serve, "b", "x")                       # b starts matching
    left_at = relabel(serve, "a", "z")             # a stops matching
    # the feed reads each object's current body, so two changes of one object between two of
    # its polls reach watchers as one (README, known differences): let it see this one first
    wait_for(lambda: ("DELETED", "a") in transitions(watcher.events), "a's DELETED")
    relabel(serve, "a", "w")                       # no longer selected: nothing
    status, _ = serve.request("DELETE", "/api/v1/namespaces/default/pods/b?gracePeriodSeconds=0")
    assert status == 200
    watcher.join(timeout=CEILING_S)
    assert transitions(watcher.events) == expected
    gone = [e["object"] for e in watcher.events if e["type"] == "DELETED"][0]
    assert gone["metadata"]["labels"] == {"app": "x"}          # the previous state ...
    assert gone["metadata"]["resourceVersion"] == left_at      # ... at the change's rv
    added_b = [e["object"] for e in watcher.events if e["type"] == "ADDED"][1]
    assert added_b["metadata"]["labels"] == {"app": "x"}


@pytest.mark.slow
@pytest.mark.parametrize("binary", BINARIES)
def test_kubectl_get_pods_watch_across_a_relabel(serve, binary):
    serve.json("/api/v1/namespaces/default/pods", make_pod("a", "x"))
    serve.json("/api/v1/namespaces/default/pods", make_pod("b", "y"))
    out = serve.home / "watch.out"
    with out.open("w") as sink:
        watcher = subprocess.Popen([binary, "get", "pods", "-w", "-l", "app=x", "--output-watch-events",
                                    "--no-headers"], stdout=sink, stderr=subprocess.STDOUT,
                                   env=serve.kubectl_env())
        try:
            wait_for(lambda: "ADDED" in out.read_text(), "kubectl's first row")
            relabel(serve, "a", "z")
            relabel(serve, "b", "x")
            wait_for(lambda: "DELETED" in out.read_text() and out.read_text().count("ADDED") >= 2,
                     "DELETED a and ADDED b")
        finally:
            watcher.terminate()
            watcher.wait(timeout=CEILING_S)
    text = out.read_text()
    rows = [line.split()[:2] for line in text.strip().splitlines() if line.split()[0] != "MODIFIED"]
    assert rows == [["ADDED", "a"], ["DELETED", "a"], ["ADDED", "b"]], text
    listed = json.loads(serve.kubectl("get", "pods", "-l", "app=x", "-o", "json").stdout)["items"]
    assert [p["metadata"]["name"] for p in listed] == ["b"]
