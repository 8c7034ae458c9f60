"""The Deployment's status and conditions, as upstream's ``sync.go`` (syncRolloutStatus,
``calculateStatus``) and ``progress.go``: Available (MinimumReplicasAvailable /
MinimumReplicasUnavailable), Progressing (NewReplicaSetCreated, ReplicaSetUpdated,
NewReplicaSetAvailable, ProgressDeadlineExceeded, DeploymentPaused), and when the next progress
deadline is due (``progress_due``, ``next_time``).

Neighbours: ``controllers.workloads.deployment`` (calls it after each sync), ``deployment_util``;
``controllers.registry`` times ``progress_due``.
"""

from __future__ import annotations

from typing import Any

import copy

from gpusched.cluster.apiserver import write
from gpusched.cluster.controllers.common import set_status
from gpusched.cluster.controllers.workloads.deployment_util import (DEFAULT_PROGRESS_DEADLINE,
                                                                    _replicas, _status_int,
                                                                    max_unavailable)
from gpusched.cluster.apiserver.store import seconds_of
from gpusched.cluster.apiserver.view import View

# ---- status and conditions ---------------------------------------------------------------------

def _complete(deploy: dict[str, Any], status: dict[str, Any]) -> bool:
    """``DeploymentComplete``."""
    want = _replicas(deploy)
    return (int(status.get("updatedReplicas", 0)) == want and int(status.get("replicas", 0)) == want
            and int(status.get("availableReplicas", 0)) == want
            and int(status.get("observedGeneration", 0)) >= int(deploy["metadata"].get("generation", 1)))


def _progressing(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """``DeploymentProgressing``: more updated/ready/available replicas, or fewer old ones."""
    def get(status: dict[str, Any], key: str) -> int:
        return int(status.get(key, 0))
    old_old = get(old, "replicas") - get(old, "updatedReplicas")
    new_old = get(new, "replicas") - get(new, "updatedReplicas")
    return (get(new, "updatedReplicas") > get(old, "updatedReplicas") or new_old < old_old
            or get(new, "readyReplicas") > get(old, "readyReplicas")
            or get(new, "availableReplicas") > get(old, "availableReplicas"))


def _condition(status: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == type_), None)


def set_condition(status: dict[str, Any], cond: dict[str, Any]) -> None:
    """``SetDeploymentCondition``: same status and reason -> unchanged; same status keeps the
    lastTransitionTime; the condition moves to the end."""
    current = _condition(status, cond["type"])
    if current is not None and current["status"] == cond["status"] \
            and current.get("reason") == cond.get("reason"):
        return
    if current is not None and current["status"] == cond["status"]:
        cond["lastTransitionTime"] = current.get("lastTransitionTime", cond["lastTransitionTime"])
    status["conditions"] = [c for c in status.get("conditions") or []
                            if c.get("type") != cond["type"]] + [cond]


def _new_condition(view: View, type_: str, status: str, reason: str, message: str) -> dict[str, Any]:
    now = view.timestamp()
    return {"type": type_, "status": status, "lastUpdateTime": now, "lastTransitionTime": now,
            "reason": reason, "message": message}


def _set_progressing(view: View, deploy: dict[str, Any], status: str, reason: str, message: str) -> None:
    body = view.copy("Deployment", deploy["metadata"]["name"], deploy["metadata"]["namespace"])
    if body is None or _progress_deadline(body) is None:
        return
    new_status = body.setdefault("status", {})
    set_condition(new_status, _new_condition(view, "Progressing", status, reason, message))
    write.update_status(view, body)


def _progress_deadline(deploy: dict[str, Any]) -> int | None:
    value = (deploy.get("spec") or {}).get("progressDeadlineSeconds", DEFAULT_PROGRESS_DEADLINE)
    return None if value is None or int(value) >= 2**31 - 1 else int(value)


def calculate_status(deploy: dict[str, Any], new: dict[str, Any] | None, old: list[dict[str, Any]]) -> dict[str, Any]:
    """``calculateStatus``: counters over all ReplicaSets (zero counters omitted, as the API
    omits them) and the Available condition."""
    sets = ([new] if new is not None else []) + old
    total = sum(_replicas(rs) for rs in sets)
    available = sum(_status_int(rs, "availableReplicas") for rs in sets)
    counts = {"replicas": sum(_status_int(rs, "replicas") for rs in sets),
              "updatedReplicas": _status_int(new, "replicas") if new is not None else 0,
              "readyReplicas": sum(_status_int(rs, "readyReplicas") for rs in sets),
              "availableReplicas": available,
              "unavailableReplicas": max(0, total - available)}
    status: dict[str, Any] = {"observedGeneration": int(deploy["metadata"].get("generation", 1))}
    status.update({k: v for k, v in counts.items() if v})
    old_status = deploy.get("status") or {}
    status["conditions"] = copy.deepcopy(old_status.get("conditions") or [])
    if "collisionCount" in old_status:
        status["collisionCount"] = old_status["collisionCount"]
    return status


def _sync_status(view: View, deploy: dict[str, Any], new: dict[str, Any] | None, old: list[dict[str, Any]],
                 rollout: bool) -> None:
    """``syncRolloutStatus`` after a rollout step, ``syncDeploymentStatus`` after scaling."""
    status = calculate_status(deploy, new, old)
    if available_enough(deploy, status):
        cond = _new_condition(view, "Available", "True", "MinimumReplicasAvailable",
                              "Deployment has minimum availability.")
    else:
        cond = _new_condition(view, "Available", "False", "MinimumReplicasUnavailable",
                              "Deployment does not have minimum availability.")
    set_condition(status, cond)
    if _progress_deadline(deploy) is None:
        status["conditions"] = [c for c in status["conditions"] if c["type"] != "Progressing"]
    elif (deploy.get("spec") or {}).get("paused"):
        _paused_condition(view, status)
    elif rollout and new is not None:
        _progress_condition(view, deploy, new, status)
    set_status(view, view.get("Deployment", deploy["metadata"]["name"],
                              deploy["metadata"]["namespace"]) or deploy, status)


def _paused_condition(view: View, status: dict[str, Any]) -> None:
    """``checkPausedConditions`` (a timed-out rollout keeps its condition)."""
    current = _condition(status, "Progressing")
    if current is not None and current.get("reason") in ("ProgressDeadlineExceeded",
                                                         "DeploymentPaused"):
        return
    set_condition(status, _new_condition(view, "Progressing", "Unknown", "DeploymentPaused",
                                         "Deployment is paused"))


def available_enough(deploy: dict[str, Any], status: dict[str, Any]) -> bool:
    return int(status.get("availableReplicas", 0)) >= _replicas(deploy) - max_unavailable(deploy)


def _progress_condition(view: View, deploy: dict[str, Any], new: dict[str, Any], status: dict[str, Any]) -> None:
    """The Progressing part of ``syncRolloutStatus`` (a finished rollout is not re-estimated)."""
    current = _condition(deploy.get("status") or {}, "Progressing")
    if (int(status.get("replicas", 0)) == int(status.get("updatedReplicas", 0))
            and current is not None and current.get("reason") == "NewReplicaSetAvailable"):
        return
    name = new["metadata"]["name"]
    if _complete(deploy, status):
        set_condition(status, _new_condition(view, "Progressing", "True", "NewReplicaSetAvailable",
                                             f'ReplicaSet "{name}" has successfully progressed.'))
    elif _progressing(deploy.get("status") or {}, status):
        cond = _new_condition(view, "Progressing", "True", "ReplicaSetUpdated",
                              f'ReplicaSet "{name}" is progressing.')
        now_cond = _condition(status, "Progressing")
        if now_cond is not None:
            if now_cond["status"] == "True":
                cond["lastTransitionTime"] = now_cond.get("lastTransitionTime",
                                                          cond["lastTransitionTime"])
            status["conditions"] = [c for c in status["conditions"] if c["type"] != "Progressing"]
        set_condition(status, cond)
    elif _timed_out(view, deploy, status):
        set_condition(status, _new_condition(view, "Progressing", "False",
                                             "ProgressDeadlineExceeded",
                                             f'ReplicaSet "{name}" has timed out progressing.'))


def _timed_out(view: View, deploy: dict[str, Any], status: dict[str, Any]) -> bool:
    """``DeploymentTimedOut``: lastUpdateTime + progressDeadlineSeconds strictly before now."""
    cond, deadline = _condition(status, "Progressing"), _progress_deadline(deploy)
    if cond is None or deadline is None or cond.get("reason") == "NewReplicaSetAvailable":
        return False
    if cond.get("reason") == "ProgressDeadlineExceeded":
        return True
    since = cond.get("lastUpdateTime")
    return bool(since) and seconds_of(str(since)) + deadline < view.now()


def next_time(view: View) -> float | None:
    """The next progress deadline of a Deployment still rolling out (the first whole second
    strictly after lastUpdateTime + progressDeadlineSeconds)."""
    times = [t for t in (progress_due(view, d) for d in view.list("Deployment")) if t is not None]
    return min(times) if times else None


def progress_due(view: View, deploy: dict[str, Any]) -> float | None:
    """Timer (``cluster.clock.timers``): this Deployment's progress deadline, as ``next_time``."""
    status = deploy.get("status") or {}
    cond = _condition(status, "Progressing")
    deadline = _progress_deadline(deploy)
    if (deadline is None or cond is None or cond.get("status") != "True"
            or cond.get("reason") == "NewReplicaSetAvailable" or _complete(deploy, status)
            or not cond.get("lastUpdateTime")):
        return None
    return seconds_of(cond["lastUpdateTime"]) + deadline + 1
