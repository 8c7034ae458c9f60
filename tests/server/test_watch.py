"""Watch: every change exactly once and in order under a burst of creations; 410 when too old."""

from __future__ import annotations

import http.client
import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.server.conftest import start_serve, stops_cleanly
from tests.conftest import CEILING_S

BURST = 1000
CLIENTS = 8


def make_pod(name: str, cpu: str = "10m") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"burst": "yes"}},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                                     "resources": {"requests": {"cpu": cpu}}}]}}


class Watcher(threading.Thread):
    """Reads a watch stream line by line until ``stop_after`` events of interest arrived."""

    def __init__(self, served, path: str, stop_after) -> None:
        super().__init__(daemon=True)
        host, port = served.host_port
        self.conn = http.client.HTTPConnection(host, port, timeout=CEILING_S)
        self.conn.request("GET", path)
        self.response = self.conn.getresponse()
        self.events: list[dict] = []
        self.stop_after = stop_after

    def run(self) -> None:
        while not self.stop_after(self.events):
            line = self.response.readline()
            if not line:
                return
            self.events.append(json.loads(line))
        self.conn.close()


def _create_all(served, names: list[str]) -> list[int]:
    host, port = served.host_port
    conn = http.client.HTTPConnection(host, port, timeout=CEILING_S)
    codes = []
    for name in names:
        conn.request("POST", "/api/v1/namespaces/default/pods", body=json.dumps(make_pod(name)),
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        codes.append(response.status)
    conn.close()
    return codes


@pytest.mark.slow
def test_burst_of_creations_is_watched_exactly_once_in_order(serve):
    status, listed = serve.request("GET", "/api/v1/namespaces/default/pods")
    assert status == 200
    start_rv = listed["metadata"]["resourceVersion"]
    names = [f"burst-{i:04d}" for i in range(BURST)]

    def added_all(events: list[dict]) -> bool:
        return sum(1 for e in events if e["type"] == "ADDED") >= BURST

    watcher = Watcher(serve, f"/api/v1/namespaces/default/pods?watch=true&resourceVersion={start_rv}"
                      "&labelSelector=burst%3Dyes&timeoutSeconds=300", added_all)
    watcher.start()
    chunks = [names[i::CLIENTS] for i in range(CLIENTS)]
    with ThreadPoolExecutor(CLIENTS) as pool:
        codes = [c for result in pool.map(lambda chunk: _create_all(serve, chunk), chunks) for c in result]
    assert codes == [201] * BURST
    watcher.join(timeout=CEILING_S)
    assert not watcher.is_alive(), f"watch saw {len(watcher.events)} events"
    added = [e["object"]["metadata"]["name"] for e in watcher.events if e["type"] == "ADDED"]
    assert sorted(added) == names                         # every creation, exactly once
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in watcher.events]
    assert rvs == sorted(rvs) and len(set(rvs)) == len(rvs)   # in order, no repeats
    assert all(int(rv) > int(start_rv) for rv in rvs)


@pytest.mark.slow
def test_resuming_from_a_compacted_resource_version_gets_410(tmp_path):
    served = start_serve(tmp_path, "--virtual-clock", "--watch-cache-size", "5")
    try:
        served.request("POST", "/api/v1/namespaces/default/configmaps",
                       {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "first"}})
        _, listed = served.request("GET", "/api/v1/namespaces/default/configmaps")
        old_rv = int(listed["metadata"]["resourceVersion"])
        assert old_rv > 0   # 0 would mean "start from now" (ADDED for every object)
        for i in range(12):
            served.request("POST", "/api/v1/namespaces/default/configmaps",
                           {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}"},
                            "data": {"i": str(i)}})
        _, now = served.request("GET", "/api/v1/namespaces/default/configmaps")
        latest = int(now["metadata"]["resourceVersion"])
        watcher = Watcher(served, f"/api/v1/configmaps?watch=true&resourceVersion={old_rv}",
                          lambda events: bool(events))
        watcher.run()
        assert len(watcher.events) == 1
        event = watcher.events[0]
        assert event["type"] == "ERROR"
        status = event["object"]
        assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
        assert status["message"].startswith(f"too old resource version: {old_rv} (")
        # a recent version still resumes: the next change arrives, nothing before it
        recent = Watcher(served, f"/api/v1/configmaps?watch=true&resourceVersion={latest}",
                         lambda events: bool(events))
        served.request("POST", "/api/v1/namespaces/default/configmaps",
                       {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "last"}})
        recent.run()
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in recent.events] == [("ADDED", "last")]
    finally:
        stops_cleanly(served.process)


@pytest.mark.slow
def test_changes_by_another_process_reach_the_watch(serve):
    _, listed = serve.request("GET", "/api/v1/configmaps")
    watcher = Watcher(serve, "/api/v1/configmaps?watch=true&resourceVersion="
                      f"{listed['metadata']['resourceVersion']}", lambda events: len(events) >= 2)
    manifest = serve.state.parent / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-cli}\ndata: {a: '1'}\n")
    assert serve.gpusched("apply", "-f", str(manifest)).returncode == 0
    assert serve.gpusched("delete", "configmap", "from-cli").returncode == 0
    watcher.run()
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in watcher.events] == [
        ("ADDED", "from-cli"), ("DELETED", "from-cli")]


def _first_chunk(response: http.client.HTTPResponse) -> bytes:
    """The first HTTP/1.1 chunk of a chunked body, read off the wire as the server framed it."""
    assert response.getheader("Transfer-Encoding") == "chunked"
    size = int(response.fp.readline().split(b";")[0], 16)
    return response.fp.read(size)


@pytest.mark.slow
def test_a_watch_sends_the_pending_events_in_one_chunk(serve):
    """Each streamed chunk costs the server a thread-pool/event-loop hop; one chunk per event let
    watches fall seconds behind under write load (bench/bench_serve_load.py, docs/serve.md).
    Events already committed when a watch resumes arrive framed as one chunk, one line each."""
    _, listed = serve.request("GET", "/api/v1/namespaces/default/configmaps")
    start_rv = listed["metadata"]["resourceVersion"]
    names = [f"pending-{i}" for i in range(5)]
    for name in names:
        status, _ = serve.request("POST", "/api/v1/namespaces/default/configmaps",
                                  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
        assert status == 201
    host, port = serve.host_port
    conn = http.client.HTTPConnection(host, port, timeout=CEILING_S)
    try:
        conn.request("GET", "/api/v1/namespaces/default/configmaps?watch=true"
                     f"&resourceVersion={start_rv}&timeoutSeconds=60")
        response = conn.getresponse()
        assert response.status == 200
        lines = _first_chunk(response).splitlines()
    finally:
        conn.close()
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in map(json.loads, lines)] == [
        ("ADDED", name) for name in names]
