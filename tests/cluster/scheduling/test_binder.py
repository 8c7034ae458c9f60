"""``binder.preempt``: after choosing a node, the preemptor clears the nomination of the pods of
lower priority nominated to that node and keeps the others' (upstream ``prepareCandidate`` with
``getLowerPriorityNominatedPods``, ``pkg/scheduler/framework/preemption/preemption.go``), read
from the view's index of nominations (``View.nominated_to``, the nominator's
``NominatedPodsForNode``), never from a list of every pod."""

from __future__ import annotations

from typing import Any

import pytest

from gpusched.cluster.apiserver.view import View
from gpusched.cluster.scheduling import binder
from gpusched.objects.pod import pod_info
from gpusched.scheduler.framework import ScheduleResult


def make_pod(view: View, name: str, priority: int, nominated: str = "") -> dict[str, Any]:
    status = {"phase": "Pending", **({"nominatedNodeName": nominated} if nominated else {})}
    return view.create({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": name, "namespace": "default"},
                        "spec": {"priority": priority,
                                 "containers": [{"name": "c", "image": "x"}]},
                        "status": status})


@pytest.mark.parametrize("other, node, cleared", [
    (("lower", 10, "n1"), "n1", True),
    (("equal", 100, "n1"), "n1", False),
    (("higher", 1000, "n1"), "n1", False),
    (("elsewhere", 10, "n2"), "n1", False),
], ids=["lower-priority-same-node", "equal-priority", "higher-priority", "other-node"])
def test_preempt_clears_lower_priority_nominations_on_its_node(monkeypatch, other, node, cleared):
    view = View()
    name, priority, nominated = other
    make_pod(view, name, priority, nominated)
    preemptor = make_pod(view, "preemptor", 100)
    listed = []
    real_list = view.list
    monkeypatch.setattr(view, "list", lambda kind, namespace=None: listed.append(kind)
                        or real_list(kind, namespace))
    binder.preempt(view, preemptor, ScheduleResult(pod_info(preemptor), nominated_node=node,
                                                   message="0/2 nodes are available."))
    status = view.get("Pod", name, "default")["status"]
    assert ("nominatedNodeName" not in status) is cleared
    assert view.get("Pod", "preemptor", "default")["status"]["nominatedNodeName"] == node
    assert "Pod" not in listed
