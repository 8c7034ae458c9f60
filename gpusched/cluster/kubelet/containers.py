"""How a pod's run ends when its container exits non-zero: ``restartPolicy`` decides.

A pod annotated ``gpusched.io/exit-code: "N"`` exits with N when its run time (see
``kubelet.pod_lifecycle``) is up. Exit 0 is Succeeded, as before. A non-zero exit:

- ``restartPolicy: Never``: phase Failed, the container ``terminated`` with that exit code
  and reason ``Error`` (what a Job's ``podFailurePolicy.onExitCodes`` reads);
- ``OnFailure`` / ``Always``: the kubelet restarts the container in place: ``restartCount``
  + 1, ``lastState.terminated`` keeps the exit, the container waits in ``CrashLoopBackOff``
  (not ready) for the kubelet's back-off, 10 s doubling per restart up to 300 s
  (kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle "Container restarts"), then runs
  again for its run time. A Job counts these restarts toward ``backoffLimit``.

``restart_due`` (the timer) is when a back-off ends; ``reconcile`` starts containers whose back-off
is over.

Neighbours: ``kubelet.pod_lifecycle`` calls :func:`end_run`; ``controllers.workloads.job`` reads
the exit codes and restart counts.
"""

from __future__ import annotations

from typing import Any

import copy

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.apiserver.notes import capacity_changed
from gpusched.cluster.apiserver.view import View
from gpusched.objects.pod import annotation_seconds
from gpusched.objects.types import ANN_START_TIME

ANN_EXIT_CODE = "gpusched.io/exit-code"
ANN_RESTART_AT = "gpusched.io/restart-at"    # virtual seconds the back-off ends
CRASH_BACKOFF_BASE = 10.0
CRASH_BACKOFF_MAX = 300.0


def exit_code(pod: dict[str, Any]) -> int:
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANN_EXIT_CODE, "0")
    try:
        return int(str(text))
    except ValueError:
        return 0


def crash_backoff(restarts_before: int) -> float:
    """10 s, 20 s, 40 s, ... capped at 300 s."""
    result: float = min(CRASH_BACKOFF_MAX, CRASH_BACKOFF_BASE * 2 ** max(0, restarts_before))
    return result


def end_run(view: View, pod: dict[str, Any], end: float) -> bool:
    """The pod's run is over at ``end``; returns False when it simply succeeded (exit 0)."""
    code = exit_code(pod)
    if code == 0:
        return False
    policy = (pod.get("spec") or {}).get("restartPolicy", "Always")
    if policy == "Never":
        _fail(view, pod, end, code)
    else:
        _restart_later(view, pod, end, code)
    return True


def _terminated(status: dict[str, Any], code: int, end: str) -> dict[str, Any]:
    started = ((status.get("state") or {}).get("running") or {}).get("startedAt", end)
    return {"exitCode": code, "reason": "Error", "startedAt": started, "finishedAt": end}


def _fail(view: View, pod: dict[str, Any], end: float, code: int) -> None:
    new = copy.deepcopy(pod)
    status = new["status"]
    finished = view.timestamp(end)
    status["phase"] = "Failed"
    for cs in status.get("containerStatuses") or []:
        cs.update(ready=False, started=False, state={"terminated": _terminated(cs, code, finished)})
    for cond in status.get("conditions") or []:
        if cond.get("type") in ("Ready", "ContainersReady"):
            cond.update(status="False", reason="PodFailed", lastTransitionTime=finished)
    write.update_status(view, new)
    capacity_changed(view, new)


def _restart_later(view: View, pod: dict[str, Any], end: float, code: int) -> None:
    new = copy.deepcopy(pod)
    meta, status = new["metadata"], new["status"]
    finished = view.timestamp(end)
    restarts = max((int(cs.get("restartCount", 0)) for cs in status.get("containerStatuses") or []),
                   default=0)
    resume = end + crash_backoff(restarts)
    meta.setdefault("annotations", {})[ANN_RESTART_AT] = repr(float(resume))
    meta["annotations"][ANN_START_TIME] = repr(float(resume))
    for cs in status.get("containerStatuses") or []:
        name = cs.get("name", "")
        message = (f"back-off {int(crash_backoff(restarts))}s restarting failed container={name} "
                   f"pod={meta.get('name', '')}_{meta.get('namespace', '')}({meta.get('uid', '')})")
        cs.update(ready=False, started=False, restartCount=int(cs.get("restartCount", 0)) + 1,
                  lastState={"terminated": _terminated(cs, code, finished)},
                  state={"waiting": {"reason": "CrashLoopBackOff", "message": message}})
    for cond in status.get("conditions") or []:
        if cond.get("type") in ("Ready", "ContainersReady"):
            cond.update(status="False", reason="ContainersNotReady", lastTransitionTime=finished)
    write.update_status(view, new)
    for cs in status.get("containerStatuses") or []:
        view.record_event(new, "BackOff", f"Back-off restarting failed container {cs.get('name', '')}"
                          f" in pod {meta.get('name', '')}_{meta.get('namespace', '')}"
                          f"({meta.get('uid', '')})", "Warning", "kubelet")


def restart_at(pod: dict[str, Any]) -> float | None:
    return annotation_seconds(pod, ANN_RESTART_AT)


def restart_due(view: View, pod: dict[str, Any]) -> float | None:
    """Timer (``cluster.clock.timers``): when this pod's crash-loop back-off ends."""
    if (pod.get("status") or {}).get("phase") != "Running":
        return None
    return restart_at(pod)


def reconcile(view: View, changes: Changes | None = None) -> None:
    """Containers whose back-off is over run again (ready, ``running.startedAt``); every pod, or
    (``changes``) the changed ones (a back-off's end is a timer on its pod)."""
    for pod in view.list("Pod") if changes is None else changes.pods():
        when = restart_at(pod)
        if when is None or when > view.now() or (pod.get("status") or {}).get("phase") != "Running":
            continue
        new = copy.deepcopy(pod)
        del new["metadata"]["annotations"][ANN_RESTART_AT]
        now = view.timestamp(when)
        for cs in new["status"].get("containerStatuses") or []:
            cs.update(ready=True, started=True, state={"running": {"startedAt": now}})
        for cond in new["status"].get("conditions") or []:
            if cond.get("type") in ("Ready", "ContainersReady"):
                cond.update(status="True", lastTransitionTime=now)
                cond.pop("reason", None)
        write.update_status(view, new)
