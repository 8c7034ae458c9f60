"""``gpusched serve`` on a full disk (issue 16, points 3 and 7): a write answers a 500 Status
naming the cause (SQLite's "database or disk is full", as kube-apiserver passes etcd's
"mvcc: database space exceeded" on), the real-time clock's failing ticks are logged once (not a
traceback every 0.25 s), nothing half-written is left, and writes work again once space returns.

The state file lives on a real 4 MiB tmpfs filled with a file (root only; skipped otherwise:
tests/cluster/test_disk_full.py covers SQLITE_FULL through PRAGMA max_page_count).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.server.conftest import start_serve, stop

CM = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
def small_disk(tmp_path: Path):
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.strip() or 'not root'})")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(path: Path) -> None:
    """Write zeros to ``path`` until the filesystem is full (unbuffered: nothing left to flush)."""
    with path.open("wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
        except OSError:
            pass


def configmap(name: str, size: int) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"blob": "x" * size}}


def test_full_disk_answers_a_status_logs_once_and_recovers(small_disk):
    served = start_serve(small_disk)               # real-time clock: ticks write the store
    filler = small_disk / "filler"
    try:
        assert served.request("POST", CM, configmap("before", 10))[0] == 201
        fill(filler)
        answers = [served.request("POST", CM, configmap(f"big{i}", 300_000)) for i in range(8)]
        for code, reply in answers:
            assert code == 500, reply
            assert reply["reason"] == "InternalError"
            assert ("database or disk is full" in reply["message"]
                    or "(no space left on device)" in reply["message"]), reply
        assert served.request("GET", CM)[0] == 200                 # reads still answer
        os.remove(filler)
        assert served.request("POST", CM, configmap("after", 300_000))[0] == 201
    finally:
        code = stop(served.process)
        log = served.process.stop_stderr
    assert code == 0, log[-2000:]
    assert "Traceback" not in log, log[-2000:]
    assert log.count("advance failed") <= 1, log[-2000:]
    check = sqlite3.connect(served.state)
    assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    names = {row[0] for row in check.execute("SELECT name FROM objects WHERE kind='ConfigMap'")}
    assert {"before", "after"} <= names and not any(name.startswith("big") for name in names)
    assert json.loads(check.execute("SELECT body FROM objects WHERE name='after'").fetchone()[0])
