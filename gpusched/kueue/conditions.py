"""The conditions Kueue writes, with its reasons and messages (``pkg/workload``,
``pkg/cache/scheduler/clusterqueue.go`` ``inactiveReason``, ``pkg/controller/core/
localqueue_controller.go``), and ``set_condition`` with ``meta.SetStatusCondition``'s rule: the
transition time moves only when the status changes.

Neighbours: nothing below ``objects``; the Kueue controllers write what these build.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str


def quota_reserved(cluster_queue: str) -> Condition:
    return Condition("QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {cluster_queue}")


def admitted() -> Condition:
    return Condition("Admitted", "True", "Admitted", "The workload is admitted")


def pending(reason: str, message: str) -> Condition:
    """QuotaReserved=False with the scheduler's reason (WaitingForQuota, ExceedsMaxQuota, ...)."""
    return Condition("QuotaReserved", "False", reason, message)


def evicted(reason: str, message: str) -> Condition:
    return Condition("Evicted", "True", reason, message)


def preempted(reason: str, message: str) -> Condition:
    """Preempted=True with InClusterQueue, InCohortReclamation, ... and the victim's message."""
    return Condition("Preempted", "True", reason, message)


def requeued(reason: str, message: str) -> Condition:
    return Condition("Requeued", "True", reason, message)


def finished(succeeded: bool, message: str) -> Condition:
    return Condition("Finished", "True", "Succeeded" if succeeded else "Failed", message)


def cluster_queue_active(stopped: bool, missing_flavors: Sequence[str], in_cycle: bool,
                         missing_topologies: Sequence[tuple[str, str]] = ()) -> Condition:
    """A ClusterQueue's ``Active`` condition (``inactiveReason``); a queue whose cohort chain
    loops is inactive without a message part of its own (upstream's snapshot drops it).
    ``missing_topologies`` are (TAS flavor, Topology) pairs whose Topology does not exist, by
    flavor (upstream walks a map)."""
    reasons, parts = [], []
    if stopped:
        reasons.append("Stopped")
        parts.append("is stopped")
    if missing_flavors:
        reasons.append("FlavorNotFound")
        parts.append(f"references missing ResourceFlavor(s): {','.join(missing_flavors)}")
    for flavor, topology in missing_topologies:
        reasons.append("TopologyNotFound")
        parts.append(f'there is no Topology "{topology}" for TAS flavor "{flavor}"')
    if reasons:
        return Condition("Active", "False", reasons[0], f"Can't admit new workloads: {', '.join(parts)}.")
    if in_cycle:
        return Condition("Active", "False", "Unknown", "Can't admit new workloads.")
    return Condition("Active", "True", "Ready", "Can admit new workloads")


def local_queue_active(cluster_queue_exists: bool, cluster_queue_active: bool, stopped: bool) -> Condition:
    if stopped:
        return Condition("Active", "False", "Stopped", "LocalQueue is stopped")
    if not cluster_queue_exists:
        return Condition("Active", "False", "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue")
    if not cluster_queue_active:
        return Condition("Active", "False", "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue")
    return Condition("Active", "True", "Ready", "Can submit new workloads to localQueue")


def set_condition(conditions: Sequence[dict[str, Any]], condition: Condition, now: str,
                  generation: int = 0) -> list[dict[str, Any]]:
    """``conditions`` with ``condition`` set; ``lastTransitionTime`` moves only on a status change."""
    out = [dict(c) for c in conditions if c.get("type") != condition.type]
    old = next((c for c in conditions if c.get("type") == condition.type), None)
    since = old.get("lastTransitionTime", now) if old is not None and old.get("status") == condition.status else now
    out.append({"type": condition.type, "status": condition.status, "reason": condition.reason,
                "message": condition.message, "lastTransitionTime": since, "observedGeneration": generation})
    return out
