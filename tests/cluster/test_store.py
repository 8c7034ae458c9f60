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
from gpusched.cluster.apiserver.store import default_state_path, rfc3339
from gpusched.cluster.apiserver.view import View

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
