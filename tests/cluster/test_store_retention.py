"""The state file's schema version (PRAGMA user_version), its migration, and retention: events
expire after kube-apiserver's ``--event-ttl`` (1 h by default, cmd/kube-apiserver/app/options/
options.go ``EventTTL: 1 * time.Hour``; the TTL is renewed on every write of the event, as
pkg/registry/core/event/storage's ``TTLFunc`` does) and the change log is compacted as etcd's,
with a watch from a compacted resourceVersion answered "too old resource version" (apiserver
pkg/storage/cacher/watch_cache.go). Real SQLite files, the real console script."""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path

import pytest

from gpusched.cli.get import Request, _changes
from gpusched.cluster.cluster import Cluster
from gpusched.cluster.apiserver.store import DEFAULT_EVENT_TTL, SCHEMA_VERSION, Store
from gpusched.cluster.apiserver.store_errors import SchemaVersionError, TooOldResourceVersionError
from gpusched.objects.kinds import resolve_kind
from tests.cli.runner import Gpusched

from .builders import apply, join, pod, pool

# The layout before schema versioning (user_version 0), as the previous gpusched created it.
VERSION_0_SQL = """
CREATE TABLE objects (
    kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    uid TEXT NOT NULL, resource_version INTEGER NOT NULL, generation INTEGER NOT NULL,
    creation_timestamp TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (kind, namespace, name)
);
CREATE TABLE events (
    namespace TEXT NOT NULL, name TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (namespace, name)
);
CREATE TABLE changes (
    rv INTEGER PRIMARY KEY, kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    type TEXT NOT NULL
);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('rv', '1'), ('clock', '100.0'), ('event_counter', '1');
INSERT INTO objects VALUES ('ConfigMap', 'default', 'old', 'u-1', 1, 0, '2026-01-01T00:00:00Z',
    '{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":{"creationTimestamp":"2026-01-01T00:00:00Z","name":"old","namespace":"default","resourceVersion":"1","uid":"u-1"}}');
INSERT INTO changes VALUES (1, 'ConfigMap', 'default', 'old', 'ADDED');
INSERT INTO events VALUES ('default', 'old.1', 1,
    '{"apiVersion":"v1","count":1,"firstTimestamp":"2026-01-01T00:01:40Z","involvedObject":{"kind":"ConfigMap","name":"old","namespace":"default"},"kind":"Event","lastTimestamp":"2026-01-01T00:01:40Z","message":"kept","metadata":{"name":"old.1","namespace":"default"},"reason":"Old","source":{"component":"test"},"type":"Normal"}');
"""


def version_0_file(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(VERSION_0_SQL)
    conn.close()
    return path


def user_version(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def test_new_file_gets_the_current_schema_version(tmp_path):
    Store(tmp_path / "new.db").close()
    assert user_version(tmp_path / "new.db") == SCHEMA_VERSION


def test_version_0_file_is_migrated_in_place_keeping_objects_and_events(tmp_path):
    path = version_0_file(tmp_path / "old.db")
    gpusched = Gpusched(tmp_path)
    gpusched.state = str(path)
    cm = gpusched.json("get", "configmap", "old")
    assert cm["data"] == {"k": "v"} and cm["metadata"]["uid"] == "u-1"
    assert user_version(path) == SCHEMA_VERSION
    assert "kept" in gpusched.ok("events").out
    conn = sqlite3.connect(path)
    expires = conn.execute("SELECT expires FROM events WHERE name='old.1'").fetchone()[0]
    conn.close()
    assert expires == 100.0 + DEFAULT_EVENT_TTL    # one TTL from the migration's clock


def indexes(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='index' "
                                                 "AND name NOT LIKE 'sqlite_%'")}
    finally:
        conn.close()


@pytest.mark.parametrize("version", [0, 1])
def test_an_older_file_gets_the_same_indexes_as_a_new_one(tmp_path, version):
    path = version_0_file(tmp_path / "old.db")
    if version == 1:      # version 1: events with expires, no index on seq
        conn = sqlite3.connect(path)
        conn.execute("ALTER TABLE events ADD COLUMN expires REAL NOT NULL DEFAULT 0")
        conn.execute("CREATE INDEX events_expires ON events (expires)")
        conn.execute("PRAGMA user_version=1")
        conn.commit()
        conn.close()
    Store(path).close()
    Store(tmp_path / "new.db").close()
    assert indexes(path) == indexes(tmp_path / "new.db") == {"events_expires", "events_seq"}
    assert user_version(path) == SCHEMA_VERSION


def test_migrated_file_opens_again_without_migrating(tmp_path):
    path = version_0_file(tmp_path / "old.db")
    Store(path).close()
    with Cluster.open(str(path)) as cluster:
        assert [c["metadata"]["name"] for c in cluster.get("configmap")] == ["old"]
    assert user_version(path) == SCHEMA_VERSION


def test_newer_schema_is_refused_with_one_line_and_left_alone(tmp_path):
    path = tmp_path / "state.db"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 5}")
    conn.close()
    before = path.read_bytes()
    line = Gpusched(tmp_path).fails("get", "pods")
    assert line == (f"error: state file {path} has schema version {SCHEMA_VERSION + 5}, newer "
                    f"than this gpusched knows ({SCHEMA_VERSION}): upgrade gpusched or use "
                    "another --state")
    assert path.read_bytes() == before
    with pytest.raises(SchemaVersionError):
        Store(path)


@pytest.mark.parametrize("elapsed, kept", [("59m", True), ("1h", False), ("2h", False)],
                         ids=["before-ttl-kept", "at-ttl-gone", "after-ttl-gone"])
def test_events_vanish_after_the_event_ttl_on_the_virtual_clock(tmp_path, elapsed, kept):
    gpusched = Gpusched(tmp_path)
    gpusched.ok("apply", "-f", "-", stdin=join(pool(count=1, gpus=1), pod("p", gpus=1)))
    assert "Scheduled" in gpusched.ok("events").out
    gpusched.ok("advance", elapsed)
    assert ("Scheduled" in gpusched.ok("events").out) is kept


def test_repeated_event_renews_its_ttl(cluster):
    apply(cluster, pool(count=1, gpus=1))
    with cluster.writing(settle=False) as view:
        view.record_event({"kind": "Node", "metadata": {"name": "n"}}, "Ping", "again")
    cluster.advance(3000)
    with cluster.writing(settle=False) as view:
        view.record_event({"kind": "Node", "metadata": {"name": "n"}}, "Ping", "again")
    cluster.advance(3000)       # 6000 s after the first write, 3000 s after the second
    assert [e["count"] for e in cluster.events(None) if e["reason"] == "Ping"] == [2]
    cluster.advance(600)
    assert [e for e in cluster.events(None) if e["reason"] == "Ping"] == []


def compacting_cluster(path: Path) -> Cluster:
    store = Store(path)
    store.changes_kept, store.compact_every = 20, 5
    return Cluster(store)


def test_change_log_is_compacted_and_an_older_watch_is_too_old(tmp_path):
    with compacting_cluster(tmp_path / "c.db") as cluster:
        apply(cluster, pool(count=1, gpus=0))
        start = int(cluster.get("node")[0]["metadata"]["resourceVersion"])
        for i in range(40):
            cluster.label("node", cluster.get("node")[0]["metadata"]["name"], {f"i{i}": "x"})
        store = cluster.store
        with store.reading():
            floor = store.compacted_rv()
            rows = store.changes_since(0)
        assert floor > start and rows[0][0] > floor
        assert len(rows) < store.changes_kept + store.compact_every
        request = Request(resolve_kind("nodes"))
        args = argparse.Namespace(all_namespaces=True, namespace=None)
        with pytest.raises(TooOldResourceVersionError) as err:
            _changes(cluster, start, request, args)        # the CLI's `get -w` reader
        assert str(err.value) == f"too old resource version: {start} ({floor})"
        assert _changes(cluster, floor, request, args)[1]   # from the floor on: every change
