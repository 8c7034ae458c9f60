"""A full disk: the write fails whole with a one-line error naming the cause, and the store works
again once space returns (issue 16, points 3 and 7).

Two ways to fill it, both reaching SQLite's SQLITE_FULL ("database or disk is full"):

- ``PRAGMA max_page_count`` on the cluster's own connection (always possible);
- the CLI on a real 2 MiB tmpfs, filled with a file and then emptied (needs root to mount;
  skipped with the reason otherwise). The API server's answer is in tests/server/test_disk_full.py.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from gpusched.cluster.cluster import Cluster
from gpusched.cluster.apiserver.store_errors import StoreFullError
from gpusched.objects.manifest import load_text
from tests.conftest import gpusched_executable, run_process


def configmap(name: str, size: int) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                       "data": {"blob": "x" * size}})


def test_sqlite_full_is_one_error_and_the_store_recovers(tmp_path):
    with Cluster.open(str(tmp_path / "cluster.db")) as cluster:
        cluster.apply(load_text(configmap("small", 10), "a.json"))
        pages = cluster.store.conn.execute("PRAGMA page_count").fetchone()[0]
        cluster.store.conn.execute(f"PRAGMA max_page_count={pages + 2}")
        with pytest.raises(StoreFullError) as caught:
            cluster.apply(load_text(configmap("big", 500_000), "b.json"))
        assert "database or disk is full" in str(caught.value) and caught.value.code == 500
        assert cluster.read(lambda view: view.get("ConfigMap", "big", "default")) is None
        cluster.store.conn.execute("PRAGMA max_page_count=1073741823")     # space is back
        cluster.apply(load_text(configmap("big", 500_000), "b.json"))
    check = sqlite3.connect(tmp_path / "cluster.db")
    assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    names = [row[0] for row in check.execute("SELECT name FROM objects WHERE kind='ConfigMap'")]
    assert {"small", "big"} <= set(names)


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 2 MiB tmpfs mounted under tmp_path (root only), unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.strip() or 'not root'}); "
                    "the PRAGMA max_page_count case covers SQLITE_FULL")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(path: Path) -> None:
    with path.open("wb", buffering=0) as handle:     # unbuffered: nothing left to flush on close
        try:
            while True:
                handle.write(b"\0" * 65536)
        except OSError:
            pass


def test_cli_on_a_full_filesystem_says_so_in_one_line_and_recovers(small_disk, tmp_path):
    state = small_disk / "cluster.db"
    run = lambda *args: run_process([gpusched_executable(), "--state", str(state), *args],  # noqa: E731
                                    check=False)
    (tmp_path / "small.json").write_text(configmap("small", 10))
    (tmp_path / "big.json").write_text(configmap("big", 400_000))
    assert run("apply", "-f", str(tmp_path / "small.json")).returncode == 0
    filler = small_disk / "filler"
    fill(filler)
    done = run("apply", "-f", str(tmp_path / "big.json"))
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and ("database or disk is full" in done.stderr
                                             or "(no space left on device)" in done.stderr), done.stderr
    assert "Traceback" not in done.stderr
    os.remove(filler)
    assert run("apply", "-f", str(tmp_path / "big.json")).returncode == 0
    listed = run("get", "configmaps", "-o", "name")
    assert "configmap/big" in listed.stdout and "configmap/small" in listed.stdout
