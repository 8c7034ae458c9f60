"""Kueue's JobSet integration (``jobframework/reconciler.go`` for ``pkg/controller/jobs/jobset``):
a JobSet labelled ``kueue.x-k8s.io/queue-name`` (suspended at create by
``admission.kueue_jobset``) gets one Workload with a PodSet per replicatedJob (event
``CreatedWorkload``), so the whole JobSet - leader and workers - is admitted at once or not at
all; once admitted, each replicatedJob's pod template gets its PodSet's flavor labels and
tolerations and the JobSet is unsuspended (event ``Started``: ``Admitted by clusterQueue
<cq>``), which the JobSet controller passes on to its Jobs; an evicted JobSet is suspended with
its original templates (``Stopped``); a Completed or Failed JobSet finishes its Workload
(``FinishedWorkload``).

Neighbours: ``gpusched.kueue.jobsets`` (the pure half), ``scheduler`` (admits), ``jobs`` (the
batch/v1 Job integration, same events).
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.apiserver.view import View
from gpusched.cluster.controllers.base import WorkQueue, controller, itself
from gpusched.cluster.controllers.kueue.snapshot import condition, is_true
from gpusched.kueue import conditions as cond
from gpusched.kueue.jobs import PRIORITY_CLASS_LABEL, QUEUE_LABEL
from gpusched.kueue.jobsets import admitted_spec, jobset_workload_name, restored_spec, workload_for_jobset

COMPONENT = "kueue-jobset-controller"
QUEUE = WorkQueue("JobSet", (itself("JobSet"), controller("Workload", "JobSet")), frozenset({"ResourceFlavor"}),
                  pod_creator=False)


def _terminal(jobset: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in (jobset.get("status") or {}).get("conditions") or ()
                 if c.get("type") in ("Completed", "Failed") and c.get("status") == "True"), None)


def _priority(view: View, jobset: dict[str, Any]) -> tuple[int, str | None]:
    name = ((jobset.get("metadata") or {}).get("labels") or {}).get(PRIORITY_CLASS_LABEL)
    if name:
        wpc = view.get("WorkloadPriorityClass", name)
        if wpc is not None:
            return int(wpc.get("value") or 0), name
    return 0, None


def _flavor_parts(view: View, admission: dict[str, Any]) -> dict[str, tuple[dict[str, str], list[dict[str, Any]]]]:
    """Per PodSet: the node labels and tolerations of the flavors it was given."""
    parts: dict[str, tuple[dict[str, str], list[dict[str, Any]]]] = {}
    for podset in admission.get("podSetAssignments") or ():
        labels: dict[str, str] = {}
        tolerations: list[dict[str, Any]] = []
        for name in sorted(set((podset.get("flavors") or {}).values())):
            spec = (view.get("ResourceFlavor", name) or {}).get("spec") or {}
            labels.update(spec.get("nodeLabels") or {})
            tolerations.extend(spec.get("tolerations") or [])
        parts[str(podset.get("name", ""))] = (labels, tolerations)
    return parts


def _start(view: View, jobset: dict[str, Any], wl: dict[str, Any]) -> None:
    admission = (wl.get("status") or {}).get("admission") or {}
    spec, error = admitted_spec(jobset.get("spec") or {}, _flavor_parts(view, admission))
    if error:
        body = {**wl, "status": dict(wl.get("status") or {})}
        body["status"]["conditions"] = cond.set_condition(
            body["status"].get("conditions") or [], cond.Condition("Finished", "True", "FailedToStart", error),
            view.timestamp())
        write.update_status(view, body)
        return
    write.update(view, {**jobset, "spec": spec})
    view.record_event(jobset, "Started", f"Admitted by clusterQueue {admission.get('clusterQueue', '')}",
                      "Normal", COMPONENT)


def _stop(view: View, jobset: dict[str, Any], wl: dict[str, Any]) -> None:
    evicted = condition(wl, "Evicted") or {}
    spec = restored_spec(jobset.get("spec") or {}, (wl.get("spec") or {}).get("podSets") or [])
    write.update(view, {**jobset, "spec": spec})
    view.record_event(jobset, "Stopped", str(evicted.get("message") or "Not admitted by cluster queue"),
                      "Normal", COMPONENT)


def _finish(view: View, jobset: dict[str, Any], wl: dict[str, Any], done: dict[str, Any]) -> None:
    body = {**wl, "status": dict(wl.get("status") or {})}
    body["status"]["conditions"] = cond.set_condition(
        body["status"].get("conditions") or [],
        cond.finished(done.get("type") == "Completed", str(done.get("message") or "")), view.timestamp())
    write.update_status(view, body)
    meta = wl["metadata"]
    view.record_event(jobset, "FinishedWorkload", f"Workload '{meta['namespace']}/{meta['name']}' is declared finished",
                      "Normal", COMPONENT)


def _create_workload(view: View, jobset: dict[str, Any]) -> None:
    priority, wpc = _priority(view, jobset)
    body = workload_for_jobset(jobset, priority, wpc)
    write.create(view, body, owned=True)
    view.record_event(jobset, "CreatedWorkload",
                      f"Created Workload: {body['metadata']['namespace']}/{body['metadata']['name']}", "Normal", COMPONENT)


def _sync(view: View, jobset: dict[str, Any]) -> None:
    meta = jobset.get("metadata") or {}
    wl = view.get("Workload", jobset_workload_name(str(meta.get("name", "")), str(meta.get("uid", ""))),
                  str(meta.get("namespace", "default")))
    done = _terminal(jobset)
    if wl is None:
        if done is None:
            _create_workload(view, jobset)
        return
    if is_true(wl, "Finished"):
        return
    if done is not None:
        _finish(view, jobset, wl, done)
        return
    admitted = bool((wl.get("status") or {}).get("admission")) and is_true(wl, "Admitted")
    suspended = bool((jobset.get("spec") or {}).get("suspend"))
    if admitted and suspended:
        _start(view, jobset, wl)
    elif not admitted and not suspended:
        _stop(view, jobset, wl)


def reconcile(view: View, changes: Changes | None = None) -> None:
    """The JobSets with a queue label that ``QUEUE`` enqueues (every one without ``changes``)."""
    for jobset in QUEUE.objects(view, changes):
        if ((jobset.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL):
            _sync(view, jobset)
