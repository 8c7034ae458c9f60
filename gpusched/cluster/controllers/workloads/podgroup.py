"""scheduler-plugins' PodGroup controller (``pkg/controllers/podgroup_controller.go``): each
PodGroup's ``status.phase`` and counts from the pods labelled ``scheduling.x-k8s.io/pod-group``
with its name in its namespace.

- ``""`` -> ``Pending``; ``Pending`` -> ``Scheduling`` once the group has ``minMember`` pods
  (``status.occupiedBy``: the sorted ``<ns>/<owner>`` of the first pod's owners);
- after that the counts ``running``, ``succeeded``, ``failed`` (pod phases) and: ``Pending``
  when fewer than ``minMember`` pods are left, ``Running`` while ``running + succeeded >=
  minMember``, else ``Scheduling``; ``Failed`` when a pod failed and ``failed + running +
  succeeded >= minMember``; ``Finished`` when ``succeeded >= minMember``. A Finished or Failed
  group is left as it is.

Neighbours: ``scheduler.plugins.coscheduling`` (the plugin that reads the PodGroups), the
settle loop (``controllers.registry``).
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.apiserver.view import View
from gpusched.cluster.controllers.base import WorkQueue, itself, same_name

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
QUEUE = WorkQueue("PodGroup", (itself("PodGroup"), same_name("Pod", "PodGroup", POD_GROUP_LABEL)))
FINAL = ("Finished", "Failed")


def reconcile(view: View, changes: Changes | None = None) -> None:
    """Every PodGroup, or (``changes``) those its informers enqueue (``QUEUE``)."""
    for group in QUEUE.objects(view, changes):
        reconcile_one(view, group)


def _members(view: View, group: dict[str, Any]) -> list[dict[str, Any]]:
    meta = group["metadata"]
    return [p for p in view.list("Pod", meta["namespace"])
            if ((p["metadata"].get("labels") or {}).get(POD_GROUP_LABEL)) == meta["name"]]


def _occupied_by(pods: list[dict[str, Any]]) -> str:
    """``fillOccupiedObj``: the first pod's owners as sorted ``<ns>/<name>``, comma-joined."""
    return ",".join(sorted(f"{p['metadata']['namespace']}/{ref.get('name', '')}"
                           for p in pods[:1] for ref in p["metadata"].get("ownerReferences") or ()))


def _counts(pods: list[dict[str, Any]]) -> dict[str, int]:
    phases = [(p.get("status") or {}).get("phase") for p in pods]
    return {"running": phases.count("Running"), "succeeded": phases.count("Succeeded"),
            "failed": phases.count("Failed")}


def _phase(min_member: int, members: int, counts: dict[str, int]) -> str:
    running, succeeded, failed = counts["running"], counts["succeeded"], counts["failed"]
    if members < min_member:
        return "Pending"
    if succeeded >= min_member:
        return "Finished"
    if failed and failed + running + succeeded >= min_member:
        return "Failed"
    return "Running" if running + succeeded >= min_member else "Scheduling"


def next_status(status: dict[str, Any], min_member: int, pods: list[dict[str, Any]]) -> dict[str, Any]:
    """The controller's status for a group with these pods (see the module docstring)."""
    new = dict(status)
    phase = status.get("phase", "")
    if phase == "":
        new["phase"] = "Pending"
    elif phase == "Pending":
        if len(pods) >= min_member:
            new["phase"] = "Scheduling"
            if _occupied_by(pods):
                new["occupiedBy"] = _occupied_by(pods)
    else:
        counts = _counts(pods)
        for field, count in counts.items():
            if count:
                new[field] = count
            else:
                new.pop(field, None)
        new["phase"] = _phase(min_member, len(pods), counts)
    return new


def reconcile_one(view: View, group: dict[str, Any]) -> None:
    status = group.get("status") or {}
    if status.get("phase") in FINAL:
        return
    min_member = int((group.get("spec") or {}).get("minMember") or 0)
    new = next_status(status, min_member, _members(view, group))
    if new != status:
        write.update_status(view, {**group, "status": new})
