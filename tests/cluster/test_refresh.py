"""Two processes on one state file, as ``serve`` arranges them: an API cluster that stores and
never settles, and a controller cluster that keeps its view, catches up with what was committed
(``apiserver.refresh``: the change log since its resourceVersion) and settles only that.

- Each scenario of ``test_kept_view`` run that way (every command on the API cluster, then one
  settle of the controller cluster; ``advance`` on the controller cluster) ends in the state of
  one process doing both, objects (resourceVersion aside) and events alike.
- Catching up reads what changed, not the store: after the other process's write, neither
  cluster loads the whole view again (``View.load``), where before every commit of another
  process made the next command load everything.
- A store that was reset or compacted past the kept view is loaded afresh.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

from gpusched.cluster.apiserver import view as view_module
from gpusched.cluster.apiserver.store import Store
from gpusched.cluster.cluster import Cluster

from .builders import apply, pod, pool
from .test_kept_view import SCENARIOS, Reopening, _state


class Split:
    """``serve``'s two processes in one test: writes on ``api`` (``settles`` False), each
    followed by a settle of ``controllers``, which alone moves the clock."""

    def __init__(self, path: str) -> None:
        self.api, self.controllers = Cluster.open(path), Cluster.open(path)
        self.api.settles = False
        self.controllers.settle()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name == "advance":
            return self.controllers.advance

        def command(*args: Any, **kwargs: Any) -> Any:
            answer = getattr(self.api, name)(*args, **kwargs)
            self.controllers.settle()
            return answer
        return command

    def close(self) -> None:
        self.api.close()
        self.controllers.close()


@pytest.mark.parametrize("scenario", list(SCENARIOS), ids=list(SCENARIOS))
def test_split_reaches_the_state_of_one_process(tmp_path, scenario):
    split_path, one_path = str(tmp_path / "split.db"), str(tmp_path / "one.db")
    split = Split(split_path)
    try:
        SCENARIOS[scenario](split)
    finally:
        split.close()
    SCENARIOS[scenario](Reopening(one_path))
    split_state, one_state = _state(split_path), _state(one_path)
    assert split_state[0] == one_state[0]
    assert split_state[1] == one_state[1]


def _counting_loads(monkeypatch) -> list[int]:
    loads: list[int] = []
    original = view_module.View.load.__func__

    def load(cls, store: Store):
        loads.append(1)
        return original(cls, store)
    monkeypatch.setattr(view_module.View, "load", classmethod(load))
    return loads


def test_catching_up_reads_only_what_changed(tmp_path, monkeypatch):
    split = Split(str(tmp_path / "state.db"))
    try:
        apply(split, pool(count=2, gpus=4))
        loads = _counting_loads(monkeypatch)
        for i in range(3):
            apply(split, pod(f"p{i}", gpus=1))
        assert split.controllers.get("pods", ["p2"])[0]["spec"]["nodeName"]
        assert split.api.get("pods", ["p2"])[0]["spec"]["nodeName"]   # the API saw the binding
        assert loads == []
    finally:
        split.close()


@pytest.mark.parametrize("change", ["reset", "compacted"])
def test_a_reset_or_compacted_store_is_loaded_afresh(tmp_path, monkeypatch, change):
    path = str(tmp_path / "state.db")
    split = Split(path)
    try:
        apply(split, pool(count=1, gpus=2))
        with Cluster.open(path) as other:
            if change == "reset":
                other.reset()
                apply(other, pod("after-reset", gpus=1))
            else:
                other.store.changes_kept = other.store.compact_every = 1
                for i in range(3):
                    apply(other, pod(f"late{i}", gpus=1))
        loads = _counting_loads(monkeypatch)
        names = [p["metadata"]["name"] for p in split.controllers.get("pods")]
        assert names == (["after-reset"] if change == "reset" else ["late0", "late1", "late2"])
        assert loads == [1]
    finally:
        split.close()


def test_events_another_process_expired_leave_the_kept_view(tmp_path):
    path = str(tmp_path / "state.db")
    split = Split(path)
    try:
        apply(split, pool(count=1, gpus=1))
        apply(split, pod("p", gpus=1))
        assert "Scheduled" in [e["reason"] for e in split.api.events()]
        with Cluster.open(path) as other:
            other.advance(2 * 3600)           # past the default event TTL: its write deletes them
        assert [e["reason"] for e in split.api.events()] == []
    finally:
        split.close()


@pytest.mark.parametrize("seconds, reads, kept", [(60, 0, True), (2 * 3600, 1, False)],
                         ids=["clock moved, nothing expired: no key read",
                              "past the event TTL: keys read, expired events leave"])
def test_event_keys_are_read_only_when_events_expired(tmp_path, monkeypatch, seconds, reads,
                                                      kept):
    """Another process moved the clock (serve's controller process ticks every 0.25 s): the
    kept view reads every stored event's key only when the store holds fewer events than it."""
    path = str(tmp_path / "state.db")
    split = Split(path)
    calls: list[int] = []
    original = Store.event_keys
    monkeypatch.setattr(Store, "event_keys", lambda self: calls.append(1) or original(self))
    try:
        apply(split, pool(count=1, gpus=1))
        apply(split, pod("p", gpus=1))
        split.api.events()                   # the API cluster's view is current
        calls.clear()
        with Cluster.open(path) as other:
            other.advance(seconds)
        assert ("Scheduled" in [e["reason"] for e in split.api.events()]) == kept
        assert len(calls) == reads
    finally:
        split.close()


@pytest.mark.parametrize("bodies_kept, object_reads", [(True, 0), (False, 1)],
                         ids=["bodies in the log: no object row read",
                              "a change logged before schema 4: the object row read"])
def test_changed_keys_take_the_body_of_their_last_change(tmp_path, monkeypatch, bodies_kept,
                                                         object_reads):
    """The change log keeps each change's body (schema 4): a kept view takes it from there, one
    read of the log where it read each changed object's row again."""
    path = str(tmp_path / "state.db")
    split = Split(path)
    reads: list[tuple[str, str, str]] = []
    original = Store.object_version
    monkeypatch.setattr(Store, "object_version",
                        lambda self, *key: reads.append(key) or original(self, *key))
    try:
        apply(split, pool(count=1, gpus=1))
        split.api.events()                     # the API cluster's view is current
        with Cluster.open(path) as other:
            other.label("Node", "gpu-1", {"team": "a"})
            if not bodies_kept:
                with other.store.immediate() as conn:
                    conn.execute("UPDATE changes SET body = NULL")
        reads.clear()
        node = split.api.get("Node", ["gpu-1"])[0]
        assert node["metadata"]["labels"]["team"] == "a"
        assert len(reads) == object_reads
    finally:
        split.close()
