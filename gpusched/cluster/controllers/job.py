"""Job controller: parallelism, completions, backoffLimit, activeDeadlineSeconds.

- ``completions`` (default 1 unless only parallelism is set) and ``parallelism`` (default 1):
  active pods = min(parallelism, completions - succeeded); pods ``<job>-<5 chars>`` labelled
  ``job-name`` / ``batch.kubernetes.io/job-name`` and ``controller-uid``.
- A Failed pod counts toward ``backoffLimit`` (default 6); more failures than the limit ->
  condition Failed reason ``BackoffLimitExceeded`` ("Job has reached the specified backoff
  limit"). Retries are immediate (the exponential back-off delay is not modelled).
- ``activeDeadlineSeconds`` past ``status.startTime`` -> condition Failed reason
  ``DeadlineExceeded`` message ``Job was active longer than specified deadline``; active pods
  are deleted.
- Done: ``succeeded >= completions`` -> condition Complete, ``completionTime``.
Status keeps ``active``, ``succeeded``, ``failed``, ``startTime``, ``completionTime``.

Neighbours: pods finish in ``controllers.pod_lifecycle``.
"""

from __future__ import annotations

import copy
from datetime import datetime

from gpusched.cluster.controllers.common import (create_from_template, delete_pod, is_terminal,
                                                 owned_pods)
from gpusched.cluster.store import EPOCH
from gpusched.cluster.view import View

COMPONENT = "job-controller"


def seconds_of(timestamp: str) -> float:
    """RFC 3339 virtual timestamp -> virtual seconds (inverse of ``store.rfc3339``)."""
    when = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=EPOCH.tzinfo)
    return (when - EPOCH).total_seconds()


def _finished(job: dict) -> bool:
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


def deadline_due(view: View, job: dict) -> float | None:
    """Timer (``cluster.timers``): when this unfinished Job's activeDeadlineSeconds expires."""
    deadline = (job.get("spec") or {}).get("activeDeadlineSeconds")
    start = (job.get("status") or {}).get("startTime")
    if deadline is None or not start or _finished(job):
        return None
    return seconds_of(start) + float(deadline)


def reconcile(view: View) -> None:
    for job in view.list("Job"):
        if not _finished(job):
            reconcile_one(view, job)


def reconcile_one(view: View, job: dict) -> None:
    spec = job.get("spec") or {}
    meta = job["metadata"]
    if spec.get("suspend") and not owned_pods(view, job):
        return   # suspended (e.g. an sbatch job held by its dependency): no pods, no startTime
    status = copy.deepcopy(job.get("status") or {})
    status.setdefault("startTime", view.timestamp())
    parallelism = int(spec.get("parallelism", 1))
    completions = spec.get("completions")
    completions = int(completions) if completions is not None else (
        None if "parallelism" in spec else 1)
    pods = owned_pods(view, job)
    active = [p for p in pods if not is_terminal(p)]
    succeeded = sum(1 for p in pods if p["status"].get("phase") == "Succeeded")
    failed = sum(1 for p in pods if p["status"].get("phase") == "Failed")
    deadline = spec.get("activeDeadlineSeconds")
    condition = None
    if failed > int(spec.get("backoffLimit", 6)):
        condition = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
    elif deadline is not None and view.now() >= seconds_of(status["startTime"]) + float(deadline):
        condition = ("DeadlineExceeded", "Job was active longer than specified deadline")
    now = view.timestamp()
    if condition is not None:
        for pod in active:
            delete_pod(view, pod, COMPONENT, job)
        status.update(active=0, failed=failed + len(active), succeeded=succeeded)
        status["conditions"] = [{"type": "Failed", "status": "True", "reason": condition[0],
                                 "message": condition[1], "lastProbeTime": now,
                                 "lastTransitionTime": now}]
        view.record_event(job, condition[0], condition[1], "Warning", COMPONENT)
        _write(view, job, status)
        return
    if completions is not None and succeeded >= completions:
        status.update(active=0, succeeded=succeeded, failed=failed, completionTime=now)
        status["conditions"] = [{"type": "Complete", "status": "True", "lastProbeTime": now,
                                 "lastTransitionTime": now}]
        view.record_event(job, "Completed", "Job completed", "Normal", COMPONENT)
        _write(view, job, status)
        return
    want = parallelism if completions is None else min(parallelism, completions - succeeded)
    if completions is None and succeeded > 0:
        want = 0
    name = meta["name"]
    labels = {"batch.kubernetes.io/controller-uid": meta["uid"],
              "batch.kubernetes.io/job-name": name, "controller-uid": meta["uid"],
              "job-name": name}
    template = spec.get("template") or {}
    for _ in range(want - len(active)):
        created = create_from_template(view, job, template, f"{name}-{view.random_suffix()}",
                                       COMPONENT, labels)
        if created is not None:
            active.append(created)
    if completions is None and succeeded > 0 and not active:
        status.update(active=0, succeeded=succeeded, failed=failed, completionTime=now)
        status["conditions"] = [{"type": "Complete", "status": "True", "lastProbeTime": now,
                                 "lastTransitionTime": now}]
        _write(view, job, status)
        return
    status.update(active=len(active), succeeded=succeeded, failed=failed)
    _write(view, job, status)


def _write(view: View, job: dict, status: dict) -> None:
    current = view.get("Job", job["metadata"]["name"], job["metadata"]["namespace"]) or job
    if current.get("status") != status:
        new = copy.deepcopy(current)
        new["status"] = status
        view.update(new)
