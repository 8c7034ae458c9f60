"""Kueue's batch/v1 Job integration (``pkg/controller/jobframework/reconciler.go`` for
``pkg/controller/jobs/job``): a Job labelled ``kueue.x-k8s.io/queue-name`` (suspended at create by
``admission.kueue_job``) gets its Workload (event ``CreatedWorkload``); once the Workload is
admitted the Job's pod template gets the flavors' nodeLabels and tolerations and the Job is
unsuspended (event ``Started``: ``Admitted by clusterQueue <cq>``); when the Workload loses its
admission (preempted) a running Job is suspended again with its original template (event
``Stopped``); a finished Job finishes its Workload (event ``FinishedWorkload``). A template whose
nodeSelector conflicts with a flavor's labels finishes the Workload with ``FailedToStart``.

Neighbours: ``gpusched.kueue.jobs`` (Workload, admission, template), ``scheduler`` (admits).
"""

from __future__ import annotations

import copy
from typing import Any

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.apiserver.view import View
from gpusched.cluster.controllers.base import WorkQueue, controller, itself
from gpusched.cluster.controllers.kueue.snapshot import condition, is_true
from gpusched.kueue import conditions as cond
from gpusched.kueue.jobs import (QUEUE_LABEL, PRIORITY_CLASS_LABEL, admitted_template, podset_meta, workload_for_job,
                                workload_name)

COMPONENT = "kueue-job-controller"
# A Job is synced when it changes or its Workload does; a ResourceFlavor's change re-checks all.
QUEUE = WorkQueue("Job", (itself("Job"), controller("Workload", "Job")), frozenset({"ResourceFlavor"}),
                  pod_creator=False)


def _finished(job: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in (job.get("status") or {}).get("conditions") or ()
                 if c.get("type") in ("Complete", "Failed") and c.get("status") == "True"), None)


def _priority(view: View, job: dict[str, Any]) -> tuple[int, str | None]:
    """The Workload's priority: the WorkloadPriorityClass of ``kueue.x-k8s.io/priority-class``,
    else the pod template's PriorityClass, else 0."""
    name = ((job.get("metadata") or {}).get("labels") or {}).get(PRIORITY_CLASS_LABEL)
    if name:
        wpc = view.get("WorkloadPriorityClass", name)
        if wpc is not None:
            return int(wpc.get("value") or 0), name
    pc_name = (((job.get("spec") or {}).get("template") or {}).get("spec") or {}).get("priorityClassName")
    pc = view.get("PriorityClass", pc_name) if pc_name else None
    return (int(pc.get("value") or 0) if pc else 0), None


def _create_workload(view: View, job: dict[str, Any]) -> None:
    priority, wpc = _priority(view, job)
    body = workload_for_job(job, priority, wpc)
    write.create(view, body, owned=True)
    view.record_event(job, "CreatedWorkload",
                      f"Created Workload: {body['metadata']['namespace']}/{body['metadata']['name']}", "Normal", COMPONENT)


def _flavor_parts(view: View, admission: dict[str, Any]) -> tuple[dict[str, str], list[dict[str, Any]]]:
    labels: dict[str, str] = {}
    tolerations: list[dict[str, Any]] = []
    for podset in admission.get("podSetAssignments") or ():
        for name in sorted(set((podset.get("flavors") or {}).values())):
            spec = (view.get("ResourceFlavor", name) or {}).get("spec") or {}
            labels.update(spec.get("nodeLabels") or {})
            tolerations.extend(spec.get("tolerations") or [])
    return labels, tolerations


def _start(view: View, job: dict[str, Any], wl: dict[str, Any]) -> None:
    admission = (wl.get("status") or {}).get("admission") or {}
    labels, tolerations = _flavor_parts(view, admission)
    template, error = admitted_template((job.get("spec") or {}).get("template") or {}, labels, tolerations,
                                        podset_meta(wl, 0))
    if error:
        body = {**wl, "status": dict(wl.get("status") or {})}
        body["status"]["conditions"] = cond.set_condition(
            body["status"].get("conditions") or [], cond.Condition("Finished", "True", "FailedToStart", error),
            view.timestamp())
        write.update_status(view, body)
        return
    body = copy.deepcopy(job)
    body["spec"]["template"] = template
    body["spec"]["suspend"] = False
    write.update(view, body)
    view.record_event(job, "Started", f"Admitted by clusterQueue {admission.get('clusterQueue', '')}",
                      "Normal", COMPONENT)


def _stop(view: View, job: dict[str, Any], wl: dict[str, Any]) -> None:
    evicted = condition(wl, "Evicted") or {}
    body = copy.deepcopy(job)
    body["spec"]["suspend"] = True
    podsets = (wl.get("spec") or {}).get("podSets") or []
    if podsets:
        body["spec"]["template"] = copy.deepcopy(podsets[0].get("template") or {})
    body.setdefault("status", {}).pop("startTime", None)
    write.update(view, body)
    view.record_event(job, "Stopped", str(evicted.get("message") or "Not admitted by cluster queue"),
                      "Normal", COMPONENT)


def _finish(view: View, job: dict[str, Any], wl: dict[str, Any], done: dict[str, Any]) -> None:
    body = {**wl, "status": dict(wl.get("status") or {})}
    body["status"]["conditions"] = cond.set_condition(
        body["status"].get("conditions") or [],
        cond.finished(done.get("type") == "Complete", str(done.get("message") or "")), view.timestamp())
    write.update_status(view, body)
    meta = wl["metadata"]
    view.record_event(job, "FinishedWorkload", f"Workload '{meta['namespace']}/{meta['name']}' is declared finished",
                      "Normal", COMPONENT)


def _sync(view: View, job: dict[str, Any]) -> None:
    meta = job.get("metadata") or {}
    wl = view.get("Workload", workload_name(str(meta.get("name", "")), str(meta.get("uid", ""))),
                  str(meta.get("namespace", "default")))
    done = _finished(job)
    if wl is None:
        if done is None:
            _create_workload(view, job)
        return
    if is_true(wl, "Finished"):
        return
    if done is not None:
        _finish(view, job, wl, done)
        return
    admitted = bool((wl.get("status") or {}).get("admission")) and is_true(wl, "Admitted")
    suspended = bool((job.get("spec") or {}).get("suspend"))
    if admitted and suspended:
        _start(view, job, wl)
    elif not admitted and not suspended:
        _stop(view, job, wl)


def reconcile(view: View, changes: Changes | None = None) -> None:
    """The Jobs with a queue label that ``QUEUE`` enqueues (every one without ``changes``)."""
    for job in QUEUE.objects(view, changes):
        if ((job.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL):
            _sync(view, job)
