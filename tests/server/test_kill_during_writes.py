"""kill -9 of ``gpusched serve`` during a write burst (issue 16, point 7 "Measured").

Several client threads, each on its own keep-alive connection, create pods through the API as
fast as the server answers; once a good number of creates have been answered 201 the server is
killed with SIGKILL while the threads are still writing. Then:

- ``PRAGMA integrity_check`` on the state file answers ``ok`` (SQLite's WAL recovery, nothing
  torn), and
- a new ``gpusched serve`` on the same state file lists every pod whose create got a 201: the
  worker's group commit (``server/worker.py``) must answer a write only after its transaction
  committed. Creates in flight at the kill may or may not be there; none may be half there.

Synchronisation is by state only: the kill waits for a count of acknowledged creates, the
threads stop on the first connection error after it.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import sqlite3
import threading
from pathlib import Path

from tests.server.conftest import Served, start_serve, stops_cleanly, wait_for
from tests.conftest import CEILING_S

PODS = "/api/v1/namespaces/default/pods"
THREADS = 6
ACKED_BEFORE_KILL = 60


def pod(name: str) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                       "spec": {"containers": [{"name": "c", "image": "busybox"}]}}).encode()


class Burst:
    """Client threads creating pods until the server goes away; records every 201."""

    def __init__(self, served: Served):
        self.host, self.port = served.host_port
        self.lock = threading.Lock()
        self.acked: list[str] = []
        self.unexpected: list[object] = []
        self.threads = [threading.Thread(target=self.writer, args=(i,), daemon=True)
                        for i in range(THREADS)]

    def writer(self, index: int) -> None:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=CEILING_S)
        try:
            for count in range(100_000):
                name = f"w{index}-{count}"
                try:
                    conn.request("POST", PODS, body=pod(name),
                                 headers={"Content-Type": "application/json"})
                    response = conn.getresponse()
                    response.read()
                except OSError:             # the server was killed: reset, refused, closed
                    return
                with self.lock:
                    if response.status == 201:
                        self.acked.append(name)
                    else:
                        self.unexpected.append((name, response.status))
        finally:
            conn.close()

    def count(self) -> int:
        with self.lock:
            return len(self.acked)


def integrity(state: Path) -> str:
    with sqlite3.connect(state) as db:
        return db.execute("PRAGMA integrity_check").fetchone()[0]


def test_kill_9_during_write_burst_keeps_every_acknowledged_create(tmp_path):
    served = start_serve(tmp_path)
    burst = Burst(served)
    try:
        for thread in burst.threads:
            thread.start()
        wait_for(lambda: burst.count() >= ACKED_BEFORE_KILL, "acknowledged creates")
    finally:
        os.kill(served.process.pid, signal.SIGKILL)
        served.process.wait()
    for thread in burst.threads:
        thread.join(timeout=CEILING_S)
        assert not thread.is_alive(), "a writer did not notice the kill"
    assert burst.unexpected == []
    acked = set(burst.acked)
    assert len(acked) >= ACKED_BEFORE_KILL

    assert integrity(served.state) == "ok"
    again = start_serve(tmp_path)
    try:
        listed = again.json(PODS)
        names = {item["metadata"]["name"] for item in listed["items"]}
        assert acked - names == set(), f"acknowledged creates lost: {sorted(acked - names)[:10]}"
        status, _ = again.request("POST", PODS, raw=pod("after-restart"))
        assert status == 201
    finally:
        stops_cleanly(again.process)
    assert integrity(served.state) == "ok"
