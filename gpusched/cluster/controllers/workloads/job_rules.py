"""The rules the Job controller applies to a Job and its pods, as kube-controller-manager's
``pkg/controller/job``: reading a Job (conditions, completions, the completion index),
``podFailurePolicy`` (``pod_failure_policy.go``: FailJob / Ignore / Count on exit codes
or pod conditions) and the failure back-off (``backoff_utils.go``: 10 s doubling to 6 min).

Neighbours: ``controllers.workloads.job`` (the sync), ``cluster.explain_facts`` (``finished``).
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.apiserver.store import seconds_of
from gpusched.cluster.apiserver.view import View
from gpusched.objects import limits

COMPONENT = "job-controller"
FINALIZER = "batch.kubernetes.io/job-tracking"
INDEX_KEY = "batch.kubernetes.io/job-completion-index"
BACKOFF_BASE = 10.0      # DefaultJobPodFailureBackOff
BACKOFF_MAX = 360.0      # MaxJobPodFailureBackOff
_BACKOFF_STATS = "job_backoff"
COMPLETE_REASON = ("CompletionsReached", "Reached expected number of succeeded pods")


# ---- reading a Job -----------------------------------------------------------------------------

def _conditions(job: dict[str, Any]) -> list[dict[str, Any]]:
    return list((job.get("status") or {}).get("conditions") or [])


def has_condition(job: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in _conditions(job) if c.get("type") == type_
                 and c.get("status") == "True"), None)


def finished(job: dict[str, Any]) -> dict[str, Any] | None:
    """``IsJobFinished``: the Complete or Failed condition, if any."""
    return has_condition(job, "Complete") or has_condition(job, "Failed")


def deadline_due(job: dict[str, Any]) -> float | None:
    """When this unfinished, unsuspended Job's activeDeadlineSeconds expires (its pods are
    killed then; ``explain`` dates the room they free with it)."""
    spec, status = job.get("spec") or {}, job.get("status") or {}
    if finished(job) or spec.get("suspend") or spec.get("activeDeadlineSeconds") is None \
            or not status.get("startTime"):
        return None
    return seconds_of(status["startTime"]) + float(spec["activeDeadlineSeconds"])


def completions_of(spec: dict[str, Any]) -> int | None:
    """Defaulting: completions 1 unless only parallelism is set."""
    if spec.get("completions") is not None:
        return int(spec["completions"])
    return None if "parallelism" in spec else 1


def indexed(spec: dict[str, Any]) -> bool:
    return spec.get("completionMode") == "Indexed"


def completion_index(pod: dict[str, Any]) -> int | None:
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(INDEX_KEY)
    return None if text is None else limits.small_int(text)


# ---- podFailurePolicy (pod_failure_policy.go) --------------------------------------------------

def match_pod_failure_policy(policy: dict[str, Any] | None, pod: dict[str, Any]) -> tuple[str | None, bool, str | None]:
    """``matchPodFailurePolicy``: (FailJob message or None, count the failure?, action)."""
    meta = pod.get("metadata") or {}
    for index, rule in enumerate((policy or {}).get("rules") or []):
        action = rule.get("action", "")
        if rule.get("onExitCodes") is not None:
            status = _match_exit_codes(pod, rule["onExitCodes"])
            if status is None:
                continue
            code = status["state"]["terminated"]["exitCode"]
            message = (f"Container {status.get('name', '')} for pod {meta.get('namespace', '')}/"
                       f"{meta.get('name', '')} failed with exit code {code} matching {action} "
                       f"rule at index {index}")
        elif rule.get("onPodConditions") is not None:
            cond = _match_conditions(pod, rule["onPodConditions"])
            if cond is None:
                continue
            message = (f"Pod {meta.get('namespace', '')}/{meta.get('name', '')} has condition "
                       f"{cond.get('type')} matching {action} rule at index {index}")
        else:
            continue
        if action == "Ignore":
            return None, False, action
        if action == "FailJob":
            return message, True, action
        return None, True, action
    return None, True, None


def _match_exit_codes(pod: dict[str, Any], requirement: dict[str, Any]) -> dict[str, Any] | None:
    status = pod.get("status") or {}
    values = {int(v) for v in requirement.get("values") or []}
    operator = requirement.get("operator", "In")
    name = requirement.get("containerName")
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        terminated = (cs.get("state") or {}).get("terminated")
        if terminated is None or (name and cs.get("name") != name):
            continue
        code = int(terminated.get("exitCode", 0))
        if code != 0 and ((operator == "In") == (code in values)):
            result: dict[str, Any] | None = cs
            return result
    return None


def _match_conditions(pod: dict[str, Any], patterns: list[dict[str, Any]]) -> dict[str, Any] | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        for pattern in patterns:
            if cond.get("type") == pattern.get("type") and \
                    cond.get("status") == pattern.get("status", "True"):
                result: dict[str, Any] | None = cond
                return result
    return None


def is_pod_failed(pod: dict[str, Any], job: dict[str, Any]) -> bool:
    """``isPodFailed``: Failed, or (without a podFailurePolicy) deleted before it succeeded."""
    phase = (pod.get("status") or {}).get("phase")
    if phase == "Failed" or (job.get("spec") or {}).get("podFailurePolicy") is not None:
        return phase == "Failed"
    return bool(pod["metadata"].get("deletionTimestamp")) and phase != "Succeeded"


# ---- back-off (backoff_utils.go) ---------------------------------------------------------------

def backoff_delay(failures: int) -> float:
    """10 s doubling per failure after the first, capped at 6 min (``getRemainingTime``)."""
    if failures <= 0:
        return 0.0
    delay = BACKOFF_BASE
    for _ in range(1, failures):
        delay *= 2
        if delay >= BACKOFF_MAX:
            return BACKOFF_MAX
    return delay


def _finish_time(pod: dict[str, Any], now: float) -> float:
    """``getFinishedTime``: the latest container finish, else the deletion time, else now."""
    times = [seconds_of(t["finishedAt"]) for cs in (pod.get("status") or {}).get(
        "containerStatuses") or [] for t in [(cs.get("state") or {}).get("terminated") or {}]
        if t.get("finishedAt")]
    if times:
        return max(times)
    deleted = pod["metadata"].get("deletionTimestamp")      # getFinishTimeFromDeletionTimestamp:
    grace = float(pod["metadata"].get("deletionGracePeriodSeconds") or 0)   # minus the grace
    return seconds_of(deleted) - grace if deleted else now


def _backoff_record(view: View, job: dict[str, Any]) -> list[float]:
    return list(view.stats.get(_BACKOFF_STATS, {}).get(job["metadata"]["uid"], [0, 0.0]))


def _update_backoff(view: View, job: dict[str, Any], succeeded: list[dict[str, Any]], failed: list[dict[str, Any]]) -> None:
    """``newBackoffRecord``: failures since the last success and the last failure's time."""
    if not succeeded and not failed:
        return
    count, last = _backoff_record(view, job)
    now = view.now()
    if not succeeded:
        count, last = count + len(failed), max(_finish_time(p, now) for p in failed)
    else:
        success = max(_finish_time(p, now) for p in succeeded)
        after = [_finish_time(p, now) for p in failed if _finish_time(p, now) > success]
        count, last = len(after), max(after, default=0.0)
    view.stats.setdefault(_BACKOFF_STATS, {})[job["metadata"]["uid"]] = [count, last]
    view.touch(job)


def backoff_remaining(view: View, job: dict[str, Any]) -> float:
    count, last = _backoff_record(view, job)
    if count <= 0:
        return 0.0
    return max(0.0, backoff_delay(int(count)) - (view.now() - last))
