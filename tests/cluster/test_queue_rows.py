"""The scheduling queue's lasting state (``View.attempts``/``View.queue``) in the state file: one
row per pod in ``scheduling_queue``, a write stores only the pods it changed, a reload gives
back what was written, and a file from before the table (schema version 2: two JSON values in
``meta``) keeps its queue and has it moved into rows at its next write."""

from __future__ import annotations

import json
import sqlite3

import pytest

from gpusched.cluster.apiserver.store import SCHEMA_VERSION, Store
from gpusched.cluster.apiserver.view import View


def record(failures: int = 1, at: float = 10.0) -> dict:
    return {"failures": failures, "at": at, "plugins": ["NodeResourcesFit"], "dry": False,
            "moved": False, "over": False}


def written(path, attempts: dict, queue: dict) -> None:
    store = Store(path)
    with store.immediate():
        view = View.load(store)
        view.attempts.update(attempts)
        view.queue.update(queue)
        view.write(store)
    store.close()


def loaded(path) -> View:
    store = Store(path)
    with store.immediate():
        view = View.load(store)
    store.close()
    return view


def queue_statements(path, change) -> list[str]:
    """The SQL a write after ``change(view)`` sends for the queue's rows."""
    store = Store(path)
    sent: list[str] = []
    with store.immediate():
        view = View.load(store)
        change(view)
        store.conn.set_trace_callback(sent.append)
        view.write(store)
        store.conn.set_trace_callback(None)
    store.close()
    return [s for s in sent if "scheduling_queue" in s or "'queue'" in s or "attempts" in s]


PENDING = {f"uid-{i:04d}": record(i % 5 + 1, float(i)) for i in range(300)}
ATTEMPTS = {uid: 7 for uid in PENDING}


def test_a_write_stores_only_the_pod_it_changed(tmp_path):
    path = tmp_path / "state.db"
    written(path, ATTEMPTS, PENDING)

    def one_more_failure(view):
        view.queue["uid-0003"] = record(9, 99.0)
    sent = queue_statements(path, one_more_failure)
    assert len(sent) == 1 and "uid-0003" in sent[0], sent
    assert "uid-0004" not in " ".join(sent), "the other pending pods' records are not re-encoded"


@pytest.mark.parametrize("change,expected_attempts,expected_queue", [
    (lambda v: v.queue.__setitem__("uid-new", record(1, 5.0)), ATTEMPTS,
     {**PENDING, "uid-new": record(1, 5.0)}),
    (lambda v: v.queue["uid-0001"].__setitem__("moved", True), ATTEMPTS,
     {**PENDING, "uid-0001": {**PENDING["uid-0001"], "moved": True}}),
    (lambda v: (v.queue.pop("uid-0002"), v.attempts.pop("uid-0002")),
     {u: a for u, a in ATTEMPTS.items() if u != "uid-0002"},
     {u: r for u, r in PENDING.items() if u != "uid-0002"}),
    (lambda v: v.attempts.pop("uid-0005"), {u: a for u, a in ATTEMPTS.items() if u != "uid-0005"},
     PENDING),
    (lambda v: v.queue.clear(), ATTEMPTS, {}),
], ids=["new-record", "record-changed-in-place", "pod-forgotten", "attempt-only-forgotten",
        "every-record-gone"])
def test_a_reload_gives_back_what_was_written(tmp_path, change, expected_attempts, expected_queue):
    path = tmp_path / "state.db"
    written(path, ATTEMPTS, PENDING)
    queue_statements(path, change)
    view = loaded(path)
    assert view.attempts == expected_attempts
    assert view.queue == expected_queue


def test_a_kept_view_writes_twice_what_changed_each_time(tmp_path):
    store = Store(tmp_path / "state.db")
    with store.immediate():
        view = View.load(store)
        view.queue.update(PENDING)
        view.write(store)
    for failures in (2, 3):
        with store.immediate():
            view.queue["uid-0000"]["failures"] = failures      # the queue changes records in place
            view.write(store)
    store.close()
    assert loaded(tmp_path / "state.db").queue["uid-0000"]["failures"] == 3


def version_2_file(path, attempts: dict, queue: dict) -> None:
    """A state file as schema version 2 left it: the queue as two JSON values in meta."""
    written(path, {}, {})
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE scheduling_queue")
    conn.execute("ALTER TABLE changes DROP COLUMN body")      # added by version 4
    conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                     [("attempts", json.dumps(attempts)),
                      ("queue", json.dumps(queue))])
    conn.execute("PRAGMA user_version=2")
    conn.commit()
    conn.close()


def test_a_version_2_file_keeps_its_queue_and_moves_it_into_rows(tmp_path):
    path = tmp_path / "old.db"
    version_2_file(path, {"a": 3, "b": 4}, {"a": record(2, 1.0)})
    view = loaded(path)
    assert (view.attempts, view.queue) == ({"a": 3, "b": 4}, {"a": record(2, 1.0)})
    queue_statements(path, lambda v: None)          # any write moves them
    conn = sqlite3.connect(path)
    meta_keys = {k for (k,) in conn.execute("SELECT key FROM meta")}
    rows = sorted(conn.execute("SELECT uid, attempt FROM scheduling_queue"))
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    conn.close()
    assert not meta_keys & {"attempts", "queue"} and rows == [("a", 3), ("b", 4)]
    assert version == SCHEMA_VERSION >= 3
    view = loaded(path)
    assert (view.attempts, view.queue) == ({"a": 3, "b": 4}, {"a": record(2, 1.0)})
