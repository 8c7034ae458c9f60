"""Writing a Kueue object's status (``cluster.controllers.kueue.status.set_status``): a status
that comes out equal is not written at all, as Kueue patches a Workload only when
``UnsetQuotaReservationWithCondition`` / ``SetStatusCondition`` report a change
(``pkg/workload/workload.go``, used by ``pkg/scheduler/scheduler.go`` ``requeueAndUpdate``).
A Workload parked again with the same QuotaReserved condition must not pay for a write."""

from __future__ import annotations

from typing import Any

import pytest

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.view import View
from gpusched.cluster.controllers.kueue.status import set_status
from gpusched.kueue import conditions as cond

WAITING = cond.pending("Pending", "couldn't assign flavors to pod set main: insufficient quota")


def workload(*conditions: cond.Condition, **status: Any) -> dict[str, Any]:
    current: list[dict[str, Any]] = []
    for condition in conditions:
        current = cond.set_condition(current, condition, "2026-01-01T00:00:00Z")
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "job-a", "namespace": "team-a"}, "spec": {"queueName": "q"},
            "status": {"conditions": current, **status}}


# (id, stored Workload, conditions set, fields set, want written)
CASES = [
    ("the same QuotaReserved=False again", workload(WAITING), [WAITING], {}, False),
    ("the same condition, a field cleared that is absent", workload(WAITING), [WAITING], {"admission": None},
     False),
    ("a new message", workload(WAITING), [cond.pending("Pending", "4 more needed")], {}, True),
    ("a new reason", workload(WAITING), [cond.pending("Inadmissible", WAITING.message)], {}, True),
    ("a field cleared that was set", workload(WAITING, admission={"clusterQueue": "cq"}), [WAITING],
     {"admission": None}, True),
    ("no status yet", {**workload(), "status": None}, [WAITING], {}, True),
]


@pytest.mark.parametrize("stored,conditions,fields,want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_status_written_only_when_it_changes(monkeypatch, stored, conditions, fields, want) -> None:
    view = View()
    view.create(stored)
    body = view.get("Workload", "job-a", "team-a")
    assert body is not None
    writes: list[dict[str, Any]] = []
    real = write.update_status

    def counting(view_: View, new: dict[str, Any]) -> bool:
        writes.append(new)
        return real(view_, new)

    monkeypatch.setattr(write, "update_status", counting)
    assert set_status(view, body, *conditions, **fields) is want
    assert len(writes) == (1 if want else 0)
