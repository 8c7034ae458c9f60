"""``gpusched serve`` in real-time mode stamps wall-clock times (issue 14 point 9): a new state
file's clock starts now, so creationTimestamp and kubectl's AGE are real; the suite's pinned
``$GPUSCHED_START`` is removed here."""

from __future__ import annotations

from datetime import datetime, timezone

from tests.server.conftest import start_serve, stops_cleanly, wait_for

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def _when(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


def test_real_time_serve_stamps_wall_clock_times(tmp_path, monkeypatch):
    monkeypatch.delenv("GPUSCHED_START", raising=False)
    before = datetime.now(timezone.utc).replace(microsecond=0)
    served = start_serve(tmp_path)
    try:
        created = served.json("/api/v1/namespaces/default/pods", POD)
        stamp = _when(created["metadata"]["creationTimestamp"])
        assert before <= stamp <= datetime.now(timezone.utc)
        rows = served.kubectl("get", "pods").stdout.splitlines()
        wait_for(lambda: served.kubectl("get", "pods").stdout.splitlines()[1].split()[-1].endswith("s"),
                 "an AGE in seconds")
        assert rows[0].split()[-1] == "AGE"
    finally:
        stops_cleanly(served.process)
