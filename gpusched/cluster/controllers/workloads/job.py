"""Job controller, as kube-controller-manager's (pkg/controller/job/job_controller.go).

- Pods: ``<job>-<5 chars>`` (Indexed: ``<job>-<index>-<5 chars>``, hostname ``<job>-<index>``,
  the ``batch.kubernetes.io/job-completion-index`` annotation and label and the
  ``JOB_COMPLETION_INDEX`` env var), labelled ``job-name`` / ``batch.kubernetes.io/job-name``
  and ``controller-uid``, and carrying the ``batch.kubernetes.io/job-tracking`` finalizer: a
  pod deleted, evicted or preempted before it finished stays (phase Failed) until this
  controller has counted it, then goes (``trackJobStatusAndRemoveFinalizers``).
- Active pods = min(parallelism, completions - succeeded) (``manageJob``); ``completions``
  unset: done once a pod succeeded and none is active. ``suspend`` deletes the active pods
  (uncounted) and sets the Suspended condition; resuming resets ``startTime``.
- Failures: a Failed pod (or one deleted before it finished) counts toward ``backoffLimit``
  (default 6) unless a ``podFailurePolicy`` rule says Ignore (``matchPodFailurePolicy``: rules in
  order, ``onExitCodes`` In/NotIn on non-zero exit codes, ``onPodConditions`` such as
  DisruptionTarget); FailJob fails the Job (reason PodFailurePolicy). With ``restartPolicy:
  OnFailure`` the containers' restartCounts count instead (``pastBackoffLimitOnFailure``).
- Back-off (``backoff_utils.go``): after a failure the next pod waits 10 s, doubling per
  failure since the last success, capped at 6 min; the record lives in ``view.stats``.
- Finishing (JobManagedBy/JobPodReplacementPolicy on, as in v1.35): the interim
  FailureTarget (BackoffLimitExceeded "Job has reached the specified backoff limit",
  DeadlineExceeded "Job was active longer than specified deadline", PodFailurePolicy) or
  SuccessCriteriaMet (CompletionsReached "Reached expected number of succeeded pods")
  condition first, the active pods are deleted, and once none is terminating Failed or
  Complete follows with the same reason and message.
- ``ttlSecondsAfterFinished`` (the ttlafterfinished controller): the Job (and so its pods)
  is deleted that long after it finished.
``due`` (the timer) is the earliest deadline, back-off expiry or TTL expiry.

Neighbours: pods finish in ``kubelet.pod_lifecycle`` (``kubelet.containers`` for exit
codes and in-place restarts); ``gpusched.slurm.controller`` holds and releases suspended Jobs.
``controllers.workloads.job_rules`` reads a Job, matches podFailurePolicy and computes the back-off.
"""

from __future__ import annotations

from typing import Any

import copy

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.controllers.base import WorkQueue, controller, itself
from gpusched.cluster.controllers.common import (controller_of, create_from_template, delete_pod,
                                                 is_active, is_terminal, owned_pods,
                                                 remove_finalizer)
from gpusched.cluster.apiserver.store import seconds_of
from gpusched.cluster.controllers.workloads.job_rules import (COMPLETE_REASON, COMPONENT, FINALIZER,
                                                              INDEX_KEY, _update_backoff,
                                                              backoff_remaining, completion_index,
                                                              completions_of, deadline_due, finished,
                                                              has_condition, indexed, is_pod_failed,
                                                              match_pod_failure_policy)
from gpusched.cluster.apiserver.view import View

# ---- the sync ----------------------------------------------------------------------------------

# The informers (``job_controller.go`` NewController): Jobs, and pods enqueue their Job.
QUEUE = WorkQueue("Job", (itself("Job"), controller("Pod", "Job")))


def reconcile(view: View, changes: Changes | None = None) -> None:
    """Every Job, or (``changes``) those its informers enqueue (``QUEUE``)."""
    full = QUEUE.everything(changes)
    job_list = QUEUE.objects(view, changes)
    jobs = {j["metadata"]["uid"] for j in job_list if not finished(j)}
    _sync_orphan_pods(view, _pods_to_check(view, changes, job_list), jobs, full)
    for job in job_list:
        if finished(job):
            _expire(view, job)
        else:
            sync_job(view, job)


def _pods_to_check(view: View, changes: Changes | None,
                   job_list: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every pod, or the changed pods and the pods of changed Jobs (a Job that finished frees
    them)."""
    if changes is None or changes.resync:
        return view.list("Pod")
    keys = {k for k in changes.keys if k[0] == "Pod"}
    for job in job_list:
        keys.update(k for k in view.dependents(job["metadata"]["uid"]) if k[0] == "Pod")
    return [view.objects[k] for k in sorted(keys) if k in view.objects]


def _sync_orphan_pods(view: View, pods: list[dict[str, Any]], jobs: set[Any], full: bool) -> None:
    """``syncOrphanPod``: a pod whose Job is gone or finished loses the tracking finalizer;
    ``jobs`` (the unfinished Jobs' uids) grows by the owners of changed pods."""
    for pod in pods:
        owner = (controller_of(pod) or {}).get("uid")
        if not full and owner not in jobs and _unfinished_job(view, owner):
            jobs.add(owner)
        if FINALIZER in (pod["metadata"].get("finalizers") or []) and owner not in jobs:
            remove_finalizer(view, pod, FINALIZER)   # orphan or finished Job: nothing to count


def _unfinished_job(view: View, uid: str | None) -> bool:
    owner_job = view.by_uid(uid or "")
    return owner_job is not None and owner_job.get("kind") == "Job" and not finished(owner_job)


def sync_job(view: View, job: dict[str, Any]) -> None:
    """``syncJob``: count finished pods, then finish the Job or manage its pods, then status."""
    spec = job.get("spec") or {}
    status = copy.deepcopy(job.get("status") or {})
    # upstream getFailJobMessage reads the pods before trackJobStatusAndRemoveFinalizers: a
    # preempted or evicted pod is gone once its finalizer goes, and with it its DisruptionTarget
    fail_job = _fail_job_message(job, owned_pods(view, job))
    _track_finished_pods(view, job, status)
    if status.get("startTime") is None and not spec.get("suspend"):
        status["startTime"] = view.timestamp()
    pods = owned_pods(view, job)
    active = [p for p in pods if is_active(p)]
    condition = _finish_condition(view, job, status, pods, fail_job)
    if condition is not None:
        for pod in active:
            delete_pod(view, pod, COMPONENT, job)   # keeps the finalizer: counted as failed
        _count_deleted(view, job, status, active)
        active = []
    elif not has_condition(job, "SuccessCriteriaMet"):
        active = _manage(view, job, status, active)
        condition = _success_condition(view, spec, status, active)
    _write_status(view, job, status, active, condition, owned_pods(view, job))


def _track_finished_pods(view: View, job: dict[str, Any], status: dict[str, Any]) -> None:
    """``trackJobStatusAndRemoveFinalizers``: newly finished pods counted into ``status``
    (completedIndexes for Indexed Jobs), the back-off record updated, finalizers removed."""
    spec = job.get("spec") or {}
    new_succeeded, new_failed = _new_finished(job, owned_pods(view, job))
    counted_failed = [p for p in new_failed
                      if match_pod_failure_policy(spec.get("podFailurePolicy"), p)[1]]
    status["succeeded"] = int(status.get("succeeded", 0)) + len(new_succeeded)
    status["failed"] = int(status.get("failed", 0)) + len(counted_failed)
    if indexed(spec):
        done = _indexes(status.get("completedIndexes", "")) | {
            i for i in (completion_index(p) for p in new_succeeded)
            if i is not None and i < int(completions_of(spec) or 0)}
        status["completedIndexes"] = _format_indexes(done)
        status["succeeded"] = len(done)
    _update_backoff(view, job, new_succeeded, new_failed)
    for pod in new_succeeded + new_failed:
        remove_finalizer(view, pod, FINALIZER)


def _new_finished(job: dict[str, Any], pods: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Pods still carrying the tracking finalizer that have finished (``getNewFinishedPods``)."""
    succeeded, failed = [], []
    for pod in pods:
        if FINALIZER not in (pod["metadata"].get("finalizers") or []):
            continue
        if (pod.get("status") or {}).get("phase") == "Succeeded":
            succeeded.append(pod)
        elif is_pod_failed(pod, job):
            failed.append(pod)
    return succeeded, failed


def _count_deleted(view: View, job: dict[str, Any], status: dict[str, Any], deleted: list[dict[str, Any]]) -> None:
    """Active pods deleted because the Job failed count as failed (finalizers then go)."""
    for pod in deleted:
        current = view.get("Pod", pod["metadata"]["name"], pod["metadata"]["namespace"])
        if current is not None and FINALIZER in (current["metadata"].get("finalizers") or []):
            status["failed"] = int(status.get("failed", 0)) + 1
            remove_finalizer(view, current, FINALIZER)


def _fail_job_message(job: dict[str, Any], pods: list[dict[str, Any]]) -> str | None:
    """``getFailJobMessage``: the message of the first failed pod matching a FailJob rule."""
    policy = (job.get("spec") or {}).get("podFailurePolicy")
    if policy is None:
        return None
    return next((message for pod in pods if is_pod_failed(pod, job)
                 for message in [match_pod_failure_policy(policy, pod)[0]] if message is not None),
                None)


def _finish_condition(view: View, job: dict[str, Any], status: dict[str, Any],
                      pods: list[dict[str, Any]], fail_job: str | None) -> tuple[Any, ...] | None:
    """(reason, message) when the Job fails now or already has FailureTarget; ``fail_job`` is
    ``_fail_job_message`` of the pods as the sync found them."""
    spec = job.get("spec") or {}
    target = has_condition(job, "FailureTarget")
    if target is not None:
        return target.get("reason", ""), target.get("message", "")
    if has_condition(job, "SuccessCriteriaMet"):
        return None
    if fail_job is not None:
        return "PodFailurePolicy", fail_job
    if int(status.get("failed", 0)) > int(spec.get("backoffLimit", 6)) or \
            _past_backoff_limit_on_failure(job, pods):
        return "BackoffLimitExceeded", "Job has reached the specified backoff limit"
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and status.get("startTime") and not spec.get("suspend") and \
            view.now() >= seconds_of(status["startTime"]) + float(deadline):
        return "DeadlineExceeded", "Job was active longer than specified deadline"
    return None


def _past_backoff_limit_on_failure(job: dict[str, Any], pods: list[dict[str, Any]]) -> bool:
    """``pastBackoffLimitOnFailure``: restartCounts of Pending/Running pods under OnFailure."""
    spec = job.get("spec") or {}
    if ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy") != "OnFailure":
        return False
    restarts = sum(int(cs.get("restartCount", 0) or 0) for pod in pods
                   if (pod.get("status") or {}).get("phase") in ("Pending", "Running")
                   for cs in ((pod.get("status") or {}).get("initContainerStatuses") or [])
                   + ((pod.get("status") or {}).get("containerStatuses") or []))
    limit = int(spec.get("backoffLimit", 6))
    return restarts > 0 if limit == 0 else restarts >= limit


def _success_condition(view: View, spec: dict[str, Any], status: dict[str, Any], active: list[dict[str, Any]]) -> tuple[Any, ...] | None:
    completions = completions_of(spec)
    succeeded = int(status.get("succeeded", 0))
    done = succeeded > 0 if completions is None else succeeded >= completions
    return ("success",) if done and not active else None


# ---- manageJob ---------------------------------------------------------------------------------

def _manage(view: View, job: dict[str, Any], status: dict[str, Any], active: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``manageJob``: suspend, surplus removal, back-off, and pod creation."""
    spec = job.get("spec") or {}
    if spec.get("suspend"):
        for pod in active:
            _delete_job_pod(view, job, pod)         # deleteJobPods: not a failure
        return []
    want = _wanted_active(spec, status, active)
    if len(active) > want:
        from gpusched.cluster.controllers.workloads.replicaset import pods_to_delete
        for pod in pods_to_delete(active, active, len(active) - want, view.now()):
            _delete_job_pod(view, job, pod)
        return [p for p in owned_pods(view, job) if is_active(p)]
    want -= _awaited_terminating(view, job, spec)
    if len(active) < want and backoff_remaining(view, job) <= 0:
        for index in _indexes_to_create(spec, status, active, want - len(active)):
            created = _create_pod(view, job, index)
            if created is not None:
                active.append(created)
    return active


def _delete_job_pod(view: View, job: dict[str, Any], pod: dict[str, Any]) -> None:
    """An active pod removed uncounted: its finalizer first, then the (current) pod."""
    remove_finalizer(view, pod, FINALIZER)
    delete_pod(view, view.get("Pod", pod["metadata"]["name"],
                              pod["metadata"]["namespace"]) or pod, COMPONENT, job)


def _wanted_active(spec: dict[str, Any], status: dict[str, Any], active: list[dict[str, Any]]) -> int:
    """``manageJob``'s wantActive: min(parallelism, completions - succeeded); without
    completions, parallelism until one pod succeeded, then the active ones."""
    parallelism = int(spec.get("parallelism", 1))
    completions = completions_of(spec)
    succeeded = int(status.get("succeeded", 0))
    if completions is None:
        return len(active) if succeeded > 0 else parallelism
    return max(0, min(parallelism, completions - succeeded))


def _awaited_terminating(view: View, job: dict[str, Any], spec: dict[str, Any]) -> int:
    """podReplacementPolicy Failed (the default with a podFailurePolicy): a replacement only
    once a terminating pod is fully terminated (job_controller.go manageJob, terminating)."""
    if not _only_replace_failed(spec):
        return 0
    return sum(1 for p in owned_pods(view, job) if p["metadata"].get("deletionTimestamp")
               and not is_terminal(p))


def _only_replace_failed(spec: dict[str, Any]) -> bool:
    """``onlyReplaceFailedPods``: podReplacementPolicy Failed, or a podFailurePolicy set."""
    return spec.get("podReplacementPolicy") == "Failed" or spec.get("podFailurePolicy") is not None


def _indexes_to_create(spec: dict[str, Any], status: dict[str, Any], active: list[dict[str, Any]], count: int) -> list[Any]:
    if not indexed(spec):
        return [None] * count
    busy = _indexes(status.get("completedIndexes", "")) | {
        i for i in (completion_index(p) for p in active) if i is not None}
    free = [i for i in range(int(completions_of(spec) or 0)) if i not in busy]
    return free[:count]


def _create_pod(view: View, job: dict[str, Any], index: int | None) -> dict[str, Any] | None:
    meta = job["metadata"]
    name = meta["name"]
    labels = {"batch.kubernetes.io/controller-uid": meta["uid"],
              "batch.kubernetes.io/job-name": name, "controller-uid": meta["uid"],
              "job-name": name}
    template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
    template.setdefault("metadata", {})["finalizers"] = [FINALIZER]
    pod_name = f"{name}-{view.random_suffix()}"
    patch = None
    if index is not None:
        labels[INDEX_KEY] = str(index)
        template["metadata"].setdefault("annotations", {})[INDEX_KEY] = str(index)
        pod_name = f"{name}-{index}-{view.random_suffix()}"
        tspec = template.get("spec") or {}
        containers = copy.deepcopy(tspec.get("containers") or [])
        for container in containers:
            container["env"] = [*(container.get("env") or []),
                                {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                                    "fieldPath": f"metadata.annotations['{INDEX_KEY}']"}}}]
        patch = {"containers": containers, "hostname": f"{name}-{index}"}
    return create_from_template(view, job, template, pod_name, COMPONENT, labels, patch)


def _indexes(text: str) -> set[int]:
    """``1,3-5`` -> {1, 3, 4, 5} (status.completedIndexes)."""
    out: set[int] = set()
    for part in filter(None, (text or "").split(",")):
        low, _, high = part.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return out


def _format_indexes(indexes: set[int]) -> str:
    """{1, 3, 4, 5} -> ``1,3-5`` and {0, 1} -> ``0,1`` (``orderedIntervals.String``: a run of
    two is written with a comma)."""
    parts, ordered = [], sorted(indexes)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if i == j:
            parts.append(str(ordered[i]))
        else:
            parts.append(f"{ordered[i]}{',' if j == i + 1 else '-'}{ordered[j]}")
        i = j + 1
    return ",".join(parts)


# ---- status, conditions, TTL -------------------------------------------------------------------

def _condition(view: View, type_: str, reason: str = "", message: str = "",
               status: str = "True") -> dict[str, Any]:
    now = view.timestamp()
    cond = {"type": type_, "status": status, "lastProbeTime": now, "lastTransitionTime": now}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def _ensure_condition(conditions: list[dict[str, Any]], cond: dict[str, Any]) -> bool:
    """``ensureJobConditionStatus``: add, or update a condition whose status changed."""
    for i, current in enumerate(conditions):
        if current.get("type") == cond["type"]:
            if current.get("status") == cond["status"]:
                return False
            conditions[i] = cond
            return True
    conditions.append(cond)
    return True


def _write_status(view: View, job: dict[str, Any], status: dict[str, Any], active: list[dict[str, Any]],
                  condition: tuple[Any, ...] | None, pods: list[dict[str, Any]]) -> None:
    """The Job's conditions, counters and events, written when the status changed."""
    terminating = sum(1 for p in pods if p["metadata"].get("deletionTimestamp")
                      and not is_terminal(p))
    conditions = status.setdefault("conditions", [])
    _update_conditions(view, job, status, conditions, condition, terminating)
    if not conditions:
        del status["conditions"]
    status["active"] = len(active)
    status["ready"] = sum(1 for p in active if (p.get("status") or {}).get("phase") == "Running")
    status["terminating"] = terminating
    status["uncountedTerminatedPods"] = {}
    _drop_empty_counts(job.get("spec") or {}, status)
    current = view.get("Job", job["metadata"]["name"], job["metadata"]["namespace"]) or job
    if current.get("status") != status:
        new = copy.deepcopy(current)
        new["status"] = status
        write.update_status(view, new)


def _update_conditions(view: View, job: dict[str, Any], status: dict[str, Any],
                       conditions: list[dict[str, Any]], condition: tuple[Any, ...] | None,
                       terminating: int) -> None:
    """Suspended/resumed, or SuccessCriteriaMet then Complete, or FailureTarget then Failed:
    the final condition (and its event) only once no pod is terminating."""
    if condition is None and not has_condition(job, "SuccessCriteriaMet"):
        _suspend_condition(view, job, status, conditions)
    elif condition == ("success",) or has_condition(job, "SuccessCriteriaMet"):
        _ensure_condition(conditions, _condition(view, "SuccessCriteriaMet", *COMPLETE_REASON))
        if terminating == 0 and _ensure_condition(conditions,
                                                  _condition(view, "Complete", *COMPLETE_REASON)):
            status["completionTime"] = view.timestamp()
            view.record_event(job, "Completed", "Job completed", "Normal", COMPONENT)
    else:
        assert condition is not None        # None took one of the branches above
        reason, message = condition
        _ensure_condition(conditions, _condition(view, "FailureTarget", reason, message))
        if terminating == 0 and _ensure_condition(conditions,
                                                  _condition(view, "Failed", reason, message)):
            view.record_event(job, reason, message, "Warning", COMPONENT)


def _drop_empty_counts(spec: dict[str, Any], status: dict[str, Any]) -> None:
    """Zero active/succeeded/failed and an empty completedIndexes are omitted (omitempty)."""
    for key in ("active", "succeeded", "failed"):
        if not status.get(key):
            status.pop(key, None)
    if indexed(spec) and not status.get("completedIndexes"):
        status.pop("completedIndexes", None)


def _suspend_condition(view: View, job: dict[str, Any], status: dict[str, Any], conditions: list[dict[str, Any]]) -> None:
    """Suspended True (JobSuspended) while suspended; False (JobResumed) once resumed, which
    also resets startTime (the deadline counts from the resume)."""
    if (job.get("spec") or {}).get("suspend"):
        if _ensure_condition(conditions, _condition(view, "Suspended", "JobSuspended",
                                                    "Job suspended")):
            view.record_event(job, "Suspended", "Job suspended", "Normal", COMPONENT)
    elif any(c.get("type") == "Suspended" for c in conditions):
        if _ensure_condition(conditions, _condition(view, "Suspended", "JobResumed",
                                                    "Job resumed", "False")):
            view.record_event(job, "Resumed", "Job resumed", "Normal", COMPONENT)
            status["startTime"] = view.timestamp()


def _finished_at(job: dict[str, Any]) -> float | None:
    cond = finished(job)
    return seconds_of(cond["lastTransitionTime"]) if cond and cond.get("lastTransitionTime") else None


def _expire(view: View, job: dict[str, Any]) -> None:
    """The TTL-after-finished controller: delete the Job once its TTL has passed."""
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    at = _finished_at(job)
    if ttl is not None and at is not None and view.now() >= at + float(ttl):
        write.delete(view, "Job", job["metadata"]["name"], job["metadata"]["namespace"])


def due(view: View, job: dict[str, Any]) -> float | None:
    """Timer (``cluster.clock.timers``): this Job's earliest active deadline, back-off expiry or TTL
    expiry. A back-off record change touches the Job (``View.touch``) so this is re-derived."""
    spec = job.get("spec") or {}
    if finished(job):
        at = _finished_at(job)
        if spec.get("ttlSecondsAfterFinished") is None or at is None:
            return None
        return at + float(spec["ttlSecondsAfterFinished"])
    if spec.get("suspend"):
        return None
    times = [t for t in (deadline_due(job),) if t is not None]
    remaining = backoff_remaining(view, job)
    if remaining > 0:
        times.append(view.now() + remaining)
    return min(times) if times else None
