"""The SQLite store: metadata rules, reload equality, crash atomicity, concurrent writers."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest
import yaml

from gpusched.cluster.cluster import Cluster
from datetime import datetime, timezone

from gpusched.cluster.apiserver.store import EPOCH, default_state_path, rfc3339, seconds_of
from gpusched.cluster.apiserver.view import View

from tests.conftest import CEILING_S, gpusched_executable

from .builders import apply, join, pod, pool


def configmaps(count: int, prefix: str = "cm") -> str:
    return join(*(yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": f"{prefix}-{i}"}, "data": {"k": str(i)}})
                  for i in range(count)))


def test_metadata_uid_resource_version_generation_timestamp(cluster):
    apply(cluster, join(pool(count=1, gpus=0), pod("p")))
    cluster.advance(65)
    apply(cluster, configmaps(1))
    cm = cluster.get("cm", ["cm-0"])[0]["metadata"]
    assert cm["creationTimestamp"] == "2026-01-01T00:01:05Z" and cm["generation"] == 1
    rv = int(cm["resourceVersion"])
    apply(cluster, yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": "cm-0"}, "data": {"k": "changed"}}))
    cm2 = cluster.get("cm", ["cm-0"])[0]["metadata"]
    assert int(cm2["resourceVersion"]) > rv and cm2["uid"] == cm["uid"]
    ns = cluster.get("ns", ["default"])[0]["metadata"]
    assert ns["uid"] != cm["uid"]


def test_generation_bumps_on_spec_change_only(cluster):
    apply(cluster, pool(count=1, gpus=0))
    apply(cluster, yaml.safe_dump({"apiVersion": "apps/v1", "kind": "Deployment",
                                   "metadata": {"name": "d"}, "spec": {
                                       "replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                                       "template": {"metadata": {"labels": {"a": "b"}}, "spec": {
                                           "containers": [{"name": "c", "image": "x"}]}}}}))
    assert cluster.get("deploy", ["d"])[0]["metadata"]["generation"] == 1
    cluster.label("deploy", "d", {"team": "a"})
    assert cluster.get("deploy", ["d"])[0]["metadata"]["generation"] == 1
    cluster.scale("deploy", "d", 3)
    assert cluster.get("deploy", ["d"])[0]["metadata"]["generation"] == 2


def test_same_history_gives_same_uids_and_names(tmp_path):
    def run(path):
        with Cluster.open(str(path)) as c:
            apply(c, join(pool(count=2, gpus=0), yaml.safe_dump({
                "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                "spec": {"replicas": 3, "selector": {"matchLabels": {"a": "b"}},
                         "template": {"metadata": {"labels": {"a": "b"}},
                                      "spec": {"containers": [{"name": "c", "image": "x"}]}}}})))
            return [(p["metadata"]["name"], p["metadata"]["uid"], p["spec"]["nodeName"])
                    for p in c.get("pods")]
    assert run(tmp_path / "a.db") == run(tmp_path / "b.db")


def test_reload_from_disk_equals_memory_view(cluster, tmp_path):
    apply(cluster, join(pool(count=2), pod("a", gpus=2), pod("b", gpus=1, duration="5m")))
    cluster.advance(600)
    with Cluster.open(str(cluster.store.path)) as other:
        assert other.view().snapshot() == cluster.view().snapshot()
        assert other.now() == cluster.now() == 600


def test_change_log_records_watch_events(cluster):
    apply(cluster, configmaps(1))
    cluster.delete("cm", "cm-0")
    changes = [(kind, name, kind_of_change) for _, kind, _, name, kind_of_change
               in cluster.store.changes_since(0) if kind == "ConfigMap"]
    assert changes == [("ConfigMap", "cm-0", "ADDED"), ("ConfigMap", "cm-0", "DELETED")]


def test_reset_empties_the_state(cluster):
    apply(cluster, join(pool(count=1), pod("p")))
    cluster.advance(10)
    cluster.reset()
    assert cluster.get("pods") == [] and cluster.get("nodes") == [] and cluster.now() == 0
    assert cluster.events(None) == []


@pytest.mark.parametrize("env,explicit,want", [
    ({"GPUSCHED_STATE": "/x/s.db"}, "/y/t.db", "/y/t.db"),
    ({"GPUSCHED_STATE": "/x/s.db"}, None, "/x/s.db"),
    ({"XDG_STATE_HOME": "/xdg", "HOME": "/h"}, None, "/xdg/gpusched/cluster.db"),
    ({"HOME": "/h"}, None, "/h/.local/state/gpusched/cluster.db"),
], ids=["explicit-wins", "env", "xdg", "home"])
def test_state_path(monkeypatch, env, explicit, want):
    for key in ("GPUSCHED_STATE", "XDG_STATE_HOME"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert str(default_state_path(explicit)) == want


def test_rfc3339_epoch():
    assert rfc3339(0) == "2026-01-01T00:00:00Z" and rfc3339(86400 + 1.9) == "2026-01-02T00:00:01Z"


# seconds_of reads gpusched's own stamps by position and anything else with strptime: the same
# answer (or the same error) as strptime("%Y-%m-%dT%H:%M:%SZ") for every text.
STAMPS = {
    "epoch": "2026-01-01T00:00:00Z",
    "leap-day": "2028-02-29T23:59:59Z",
    "before-epoch": "1999-12-31T23:59:59Z",
    "single-digit-fields": "2026-1-2T3:4:5Z",         # strptime's %m %d %H %M %S take one digit
    "month-13": "2026-13-01T00:00:00Z",
    "february-30": "2026-02-30T00:00:00Z",
    "hour-24": "2026-01-01T24:00:00Z",
    "second-60": "2026-01-01T00:00:60Z",
    "fraction": "2026-01-01T00:00:00.5Z",
    "offset": "2026-01-01T00:00:00+00:00",
    "no-zone": "2026-01-01T00:00:00",
    "lowercase-t": "2026-01-01t00:00:00Z",
    "arabic-indic-digits": "\u0662\u0660\u0662\u0666-01-01T00:00:00Z",
    "empty": "",
}


def _by_strptime(stamp: str) -> float | str:
    try:
        when = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError as err:
        return str(err)
    return (when - EPOCH).total_seconds()


@pytest.mark.parametrize("stamp", STAMPS.values(), ids=STAMPS.keys())
def test_seconds_of_reads_as_strptime_does(stamp):
    try:
        got: float | str = seconds_of(stamp)
    except ValueError as err:
        got = str(err)
    assert got == _by_strptime(stamp)


def test_wal_mode(cluster):
    mode = sqlite3.connect(str(cluster.store.path)).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


# ---- crashes and concurrency ---------------------------------------------------------------

CHILD = textwrap.dedent("""
    import sys
    from gpusched.cluster.apiserver import store as store_mod
    from gpusched.cluster.cluster import Cluster
    from gpusched.objects.manifest import load_text

    path, text_file, pause_after = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rows = 0
    original = store_mod.Store.upsert_object

    def upsert(self, *args):
        global rows
        original(self, *args)
        rows += 1
        if rows == pause_after:
            print("mid-write", flush=True)
            sys.stdin.readline()          # wait here until the parent kills us
    store_mod.Store.upsert_object = upsert
    with Cluster.open(path) as c:
        c.apply(load_text(open(text_file).read(), text_file))
    print("done", flush=True)
""")


def _child(tmp_path, db, count, pause_after, prefix="cm"):
    manifest = tmp_path / f"{prefix}.yaml"
    manifest.write_text(configmaps(count, prefix))
    # one script per child: a second child rewriting a shared file (truncate, then write) while
    # the first starts could hand the first an empty script that exits without a word
    script = tmp_path / f"child-{prefix}.py"
    script.write_text(CHILD)
    return subprocess.Popen([sys.executable, str(script), str(db), str(manifest), str(pause_after)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def test_kill_9_mid_apply_leaves_old_state(tmp_path):
    db = tmp_path / "c.db"
    with Cluster.open(str(db)) as c:
        apply(c, configmaps(3, "old"))
    proc = _child(tmp_path, db, 200, pause_after=150)
    assert proc.stdout.readline().strip() == "mid-write"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with Cluster.open(str(db)) as c:
        names = [cm["metadata"]["name"] for cm in c.get("cm")]
    assert names == ["old-0", "old-1", "old-2"]


def test_completed_apply_survives_kill(tmp_path):
    db = tmp_path / "c.db"
    proc = _child(tmp_path, db, 50, pause_after=10_000)
    assert proc.stdout.readline().strip() == "done"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with Cluster.open(str(db)) as c:
        assert len(c.get("cm")) == 50


def test_concurrent_applies_serialize(tmp_path):
    db = tmp_path / "c.db"
    with Cluster.open(str(db)) as c:
        apply(c, configmaps(1, "seed"))
    procs = [_child(tmp_path, db, 60, pause_after=10_000, prefix=p) for p in ("a", "b")]
    for proc in procs:
        assert proc.stdout.readline().strip() == "done"
        proc.wait()
    with Cluster.open(str(db)) as c:
        items = c.get("cm")
        assert len(items) == 121
        versions = [int(cm["metadata"]["resourceVersion"]) for cm in items]
        assert len(set(versions)) == len(versions)
        uids = [cm["metadata"]["uid"] for cm in items]
        assert len(set(uids)) == len(uids)
        reloaded = View.load(c.store)
        assert reloaded.rv >= max(versions)


# ---- the write lock: a bounded wait, said in one line ------------------------------------------

def _writer(db, manifest, lock_wait: str) -> subprocess.Popen:
    return subprocess.Popen([gpusched_executable(), "--state", str(db), "apply", "-f", str(manifest)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "GPUSCHED_LOCK_WAIT": lock_wait})


def _ended(proc: subprocess.Popen, what: str) -> tuple[int, str, str]:
    """The exit code and output of ``proc``, waited for up to the suite's ceiling."""
    try:
        out, err = proc.communicate(timeout=CEILING_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{what} still running after {CEILING_S:g} s: {out}{err}")
    return proc.returncode, out, err


def test_a_writer_gives_up_on_a_lock_held_past_its_wait(tmp_path):
    # was: SQLite's fixed 30 s, then "error: internal error: OperationalError: database is locked"
    db = tmp_path / "c.db"
    with Cluster.open(str(db)) as c:
        apply(c, configmaps(1, "seed"))
    manifest = tmp_path / "new.yaml"
    manifest.write_text(configmaps(1, "new"))
    holder = sqlite3.connect(str(db), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")          # another writer's transaction, kept open
    try:
        ended = _ended(_writer(db, manifest, "1"), "the writer waiting for the lock")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert ended == (1, "", f"error: state file {db} is locked by another writer: gave up after "
                            "waiting 1 s for the lock; nothing was written (retry when it is free)\n")
    with Cluster.open(str(db)) as c:
        assert [cm["metadata"]["name"] for cm in c.get("cm")] == ["seed-0"]


@pytest.mark.parametrize("value", ["soon", "0", "-5"])
def test_a_bad_lock_wait_is_one_line(tmp_path, value):
    manifest = tmp_path / "new.yaml"
    manifest.write_text(configmaps(1, "new"))
    code, out, err = _ended(_writer(tmp_path / "c.db", manifest, value), "the writer")
    assert (code, out) == (1, "")
    assert err == (f'error: GPUSCHED_LOCK_WAIT="{value}": want seconds to wait for the state '
                   "file's write lock, a number above 0 and at most 86400\n")


def test_four_cli_writers_on_one_state_file_each_finish(tmp_path):
    # four `gpusched apply` processes at once: each waits its turn for the write lock and ends
    db = tmp_path / "c.db"
    with Cluster.open(str(db)) as c:
        apply(c, configmaps(1, "seed"))
    writers = []
    for number in range(4):
        manifest = tmp_path / f"w{number}.yaml"
        manifest.write_text(configmaps(20, f"w{number}"))
        writers.append(_writer(db, manifest, str(CEILING_S)))
    for number, proc in enumerate(writers):
        code, out, err = _ended(proc, f"writer {number}")
        assert (code, err, out.count(" created\n")) == (0, "", 20), out
    with Cluster.open(str(db)) as c:
        assert len(c.get("cm")) == 81
