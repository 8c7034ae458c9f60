"""``View.nominated_to``: the pods whose ``status.nominatedNodeName`` names a node, kept as the
view's other indexes are, on every create, update and delete (what upstream's nominator answers
with ``NominatedPodsForNode``, ``pkg/scheduler/backend/queue/nominator.go``). A preemption reads
it to clear lower-priority nominations (``cluster.scheduling.binder.preempt``) instead of
listing every pod: under a long overload the replay's pods run into the tens of thousands."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from gpusched.cluster.apiserver.view import View, copy_tree


def make_pod(view: View, name: str, nominated: str = "", node: str = "") -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": name, "namespace": "default"},
                            "spec": {"containers": [{"name": "c", "image": "x"}]}, "status": {}}
    if nominated:
        body["status"]["nominatedNodeName"] = nominated
    if node:
        body["spec"]["nodeName"] = node
    return view.create(body)


def set_nominated(view: View, name: str, node: str) -> None:
    body = copy_tree(view.get("Pod", name, "default"))
    if node:
        body["status"]["nominatedNodeName"] = node
    else:
        body["status"].pop("nominatedNodeName", None)
    view.update(body)


def _created(view: View) -> None:
    make_pod(view, "b", nominated="n1")
    make_pod(view, "a", nominated="n1")
    make_pod(view, "c", nominated="n2")
    make_pod(view, "d")


def _moved(view: View) -> None:
    _created(view)
    set_nominated(view, "a", "n2")


def _cleared(view: View) -> None:
    _created(view)
    set_nominated(view, "b", "")


def _deleted(view: View) -> None:
    _created(view)
    view.delete("Pod", "b", "default")


def _bound_keeps_it(view: View) -> None:
    make_pod(view, "a", nominated="n1", node="n3")     # any phase, as listing every pod found


def _reset(view: View) -> None:
    _created(view)
    view.clear()


@pytest.mark.parametrize("build, n1, n2", [
    (_created, ["a", "b"], ["c"]),
    (_moved, ["b"], ["a", "c"]),
    (_cleared, ["a"], ["c"]),
    (_deleted, ["a"], ["c"]),
    (_bound_keeps_it, ["a"], []),
    (_reset, [], []),
], ids=["created", "moved-to-another-node", "cleared", "deleted", "bound-pod", "reset"])
def test_nominated_to_follows_every_write(build: Callable[[View], None], n1: list[str],
                                          n2: list[str]) -> None:
    view = View()
    build(view)
    assert [key[2] for key in view.nominated_to("n1")] == n1
    assert [key[2] for key in view.nominated_to("n2")] == n2
    assert view.nominated_to("nowhere") == []


def test_nominated_to_equals_a_scan_of_every_pod() -> None:
    view = View()
    for index in range(40):
        make_pod(view, f"p{index:02d}", nominated=f"n{index % 3}" if index % 4 else "")
    for index in range(0, 40, 5):
        set_nominated(view, f"p{index:02d}", f"n{index % 2}")
    for index in range(3, 40, 7):
        view.delete("Pod", f"p{index:02d}", "default")
    for node in ("n0", "n1", "n2"):
        scanned = [("Pod", "default", p["metadata"]["name"]) for p in view.list("Pod")
                   if (p.get("status") or {}).get("nominatedNodeName") == node]
        assert view.nominated_to(node) == scanned
