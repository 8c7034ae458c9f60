"""The capacity log (``apiserver.notes``) as a write stores it: without the entries every
waiting pod has judged (``judged_entries_dropped``, the rule of ``scheduler.queue``'s trim).

The log is a meta row each write encodes whole and the other of ``serve``'s processes parses
whole at its next refresh. Each Node's create adds an entry; with no pod waiting no one reads
them, and before the trim at write time the row kept growing while nodes were added (1,000
nodes: 1,000 entries encoded and parsed at every write, a third of both processes' CPU per node
in ``bench/bench_serve_throughput.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from gpusched.cluster.apiserver.notes import judged_entries_dropped

from .builders import apply, docs, pod
from .test_kept_view import _bare_node
from .test_refresh import Split


@dataclass
class _Noted:
    epoch: int
    capacity_log: list[list[Any]]
    stats: dict[str, Any] = field(default_factory=dict)
    clock: float = 0.0


def _log(*epochs: int) -> list[list[Any]]:
    return [[e, "*", 0] for e in epochs]


CASES = {
    "no pod waiting: empty": (_log(1, 2, 3), {}, []),
    "kept after the oldest attempt": (_log(1, 2, 3, 4), {"a": 2, "b": 3}, _log(3, 4)),
    "every entry newer: unchanged": (_log(5, 6), {"a": 4}, _log(5, 6)),
    "every entry judged: empty": (_log(1, 2), {"a": 2}, []),
    "empty stays empty": ([], {"a": 1}, []),
}


@pytest.mark.parametrize("log, attempts, kept", CASES.values(), ids=list(CASES))
def test_judged_entries_dropped(log, attempts, kept):
    state = _Noted(epoch=6, capacity_log=log)
    judged_entries_dropped(state, attempts)
    assert state.capacity_log == kept


def _stored_log(split: Split) -> list[list[Any]]:
    return json.loads(split.api.store.read_meta("capacity_log").get("capacity_log", "[]"))


@pytest.mark.parametrize("waiting, kept", [(False, 0), (True, 3)],
                         ids=["no pod waiting: none kept", "a pod waiting: its unjudged kept"])
def test_nodes_created_by_the_api_process(tmp_path, waiting, kept):
    """serve's shape (``test_refresh.Split``): three Nodes created by the API cluster before the
    controller cluster settles. A pod that fits nowhere waits: the entries after its attempt are
    what its queueing hints will read, and they stay; with no pod waiting none does."""
    split = Split(str(tmp_path / "state.db"))
    try:
        if waiting:
            apply(split, pod("big", gpus=64))       # attempted, unschedulable, waiting
        for i in range(3):
            split.api.apply(docs(_bare_node(f"n{i}")))
        assert len(_stored_log(split)) == kept
    finally:
        split.close()
