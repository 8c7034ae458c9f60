"""``gpusched serve --event-ttl``: how long an Event is kept after its last write.

kube-apiserver's ``--event-ttl`` (cmd/kube-apiserver/app/options/options.go, default 1h) sets
the lease of every Event it stores (pkg/registry/core/event/storage: the TTL function renews
it on each write). Here the server's writes stamp each Event with the TTL given to serve; it
is dropped once the cluster clock passes it, whoever writes next.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster.builders import pool
from tests.conftest import gpusched_executable, run_process
from tests.server.conftest import start_serve, stops_cleanly, wait_for


def scheduled_events(served) -> list[dict]:
    reply = served.json("/api/v1/namespaces/default/events")
    return [e for e in reply["items"] if e.get("reason") == "Scheduled"
            and (e.get("involvedObject") or {}).get("name") == "p"]


@pytest.mark.parametrize("elapsed, kept", [("9m", True), ("11m", False)], ids=["before-ttl", "after-ttl"])
def test_server_events_expire_after_the_event_ttl(tmp_path: Path, elapsed: str, kept: bool) -> None:
    served = start_serve(tmp_path, "--virtual-clock", "--event-ttl", "10m")
    try:
        (tmp_path / "pool.yaml").write_text(pool(count=1, gpus=1))
        served.cli("apply", "-f", str(tmp_path / "pool.yaml"))
        served.create_pod("p", gpus=1)          # the server's worker writes the Scheduled event
        wait_for(lambda: scheduled_events(served), "the Scheduled event")
        served.cli("advance", elapsed)
        served.cli("get", "pods")               # a later write or read on the state file
        if kept:
            assert scheduled_events(served)
        else:
            wait_for(lambda: not scheduled_events(served), "the event to expire")
    finally:
        stops_cleanly(served.process)


@pytest.mark.parametrize("value", ["=-5m", "=0s", "=soon"], ids=["negative", "zero", "not-a-duration"])
def test_bad_event_ttl_is_one_line(tmp_path: Path, value: str) -> None:
    done = run_process([gpusched_executable(), "--state", str(tmp_path / "s.db"), "serve",
                           "--port", "0", f"--event-ttl{value}"], check=False)
    assert done.returncode == 1
    assert done.stderr == (f'error: --event-ttl: invalid duration "{value[1:]}": a positive duration '
                           "such as 1h or 30m\n")
