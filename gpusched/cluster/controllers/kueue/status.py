"""Writing a Kueue object's status (Workload, ClusterQueue, LocalQueue): conditions set as
``meta.SetStatusCondition`` sets them, fields set or cleared, one status write through
``apiserver.write``. Shared by the Kueue scheduler and the waitForPodsReady controller.
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.view import View
from gpusched.kueue import conditions as cond


def set_status(view: View, obj: dict[str, Any], *conditions: cond.Condition, **status: Any) -> bool:
    """Set ``conditions`` and the ``status`` fields (None clears one) on ``obj``; True when the
    write changed it. A status that comes out equal is not written at all, as Kueue patches a
    Workload only when ``UnsetQuotaReservationWithCondition`` or ``SetStatusCondition`` report a
    change (``pkg/workload/workload.go``; the scheduler's ``requeueAndUpdate``): a Workload
    parked again with the same QuotaReserved condition costs a comparison, not a write."""
    body = {**obj, "status": dict(obj.get("status") or {})}
    current = list(body["status"].get("conditions") or [])
    for condition in conditions:
        current = cond.set_condition(current, condition, view.timestamp())
    body["status"]["conditions"] = current
    for field, value in status.items():
        if value is None:
            body["status"].pop(field, None)
        else:
            body["status"][field] = value
    if body["status"] == obj.get("status"):
        return False
    return write.update_status(view, body)
