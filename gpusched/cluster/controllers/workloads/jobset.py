"""The JobSet controller (kubernetes-sigs/jobset ``pkg/controllers/jobset_controller.go``):
each JobSet's child Jobs, headless Service and status.

- **Jobs**: for every replicatedJob and index ``i < replicas`` a Job ``<jobset>-<rjob>-<i>``
  from the replicatedJob's template (``constructJob``), owned by the JobSet, with JobSet's labels
  and annotations on the Job and its pod template (``jobset.sigs.k8s.io/jobset-name``,
  ``replicatedjob-name``, ``replicatedjob-replicas``, ``global-replicas``, ``job-index``,
  ``job-global-index``, ``job-key`` = sha1 of ``<ns>/<job>``, ``restart-attempt``), the pod
  ``subdomain`` set to the JobSet's (``spec.network.subdomain``, else its name) when DNS
  hostnames are on, and ``suspend`` as the JobSet's. With the Job controller's Indexed
  completion mode (the webhook's default) every pod is ``<job>-<index>`` under that subdomain:
  the leader/worker hostnames a training job's rendezvous uses.
- **Headless Service** ``<subdomain>`` selecting ``jobset.sigs.k8s.io/jobset-name``
  (``createHeadlessSvcIfNecessary``).
- **Suspend / resume**: a suspended JobSet suspends its Jobs; a resumed one resumes them, first
  copying its replicatedJob template's pod labels, annotations, nodeSelector and tolerations
  into each suspended Job and adding the template's scheduling gates (``resumeJob``: what
  Kueue's admission put into the JobSet reaches the pods).
- **Status**: ``replicatedJobsStatus`` per replicatedJob (``ready``: Jobs whose pods are all
  ready or succeeded, ``succeeded``, ``failed``, ``active``, ``suspended``); a failed Job fails
  the JobSet (condition Failed ``FailedJobs`` ``jobset failed due to one or more job failures``,
  ``terminalState: Failed``; restarts are not modelled); every Job complete (successPolicy
  ``All``; ``Any``: one) completes it (Completed ``AllJobsCompleted`` ``jobset completed
  successfully``, ``terminalState: Completed``); the Suspended condition (``SuspendedJobs``
  ``jobset is suspended`` / ``ResumeJobs`` ``jobset is resumed``). Each condition change is an
  event with the same reason and message.

Neighbours: ``controllers.workloads.job`` (runs the Jobs), ``controllers.kueue.jobsets``
(Kueue's integration suspends and resumes JobSets).
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.apiserver.view import View
from gpusched.cluster.controllers.base import WorkQueue, controller, itself
from gpusched.errors import GpuschedError

PREFIX = "jobset.sigs.k8s.io/"
JOBSET_NAME = PREFIX + "jobset-name"
COMPONENT = "jobset-controller"
QUEUE = WorkQueue("JobSet", (itself("JobSet"), controller("Job", "JobSet")))
COMPLETED = ("Completed", "AllJobsCompleted", "jobset completed successfully")
FAILED = ("Failed", "FailedJobs", "jobset failed due to one or more job failures")


def reconcile(view: View, changes: Changes | None = None) -> None:
    """Every JobSet, or (``changes``) those its informers enqueue (``QUEUE``)."""
    for jobset in QUEUE.objects(view, changes):
        reconcile_one(view, jobset)


def replicated_jobs(jobset: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in (jobset.get("spec") or {}).get("replicatedJobs") or () if isinstance(r, dict)]


def _replicas(rjob: dict[str, Any]) -> int:
    return int(rjob.get("replicas", 1) if rjob.get("replicas") is not None else 1)


def subdomain(jobset: dict[str, Any]) -> str | None:
    network = (jobset.get("spec") or {}).get("network") or {}
    if not network.get("enableDNSHostnames"):
        return None
    return str(network.get("subdomain") or jobset["metadata"]["name"])


def job_labels(jobset: dict[str, Any], rjob: dict[str, Any], index: int) -> dict[str, str]:
    """``labelAndAnnotateObject``'s keys (the same set is written as labels and annotations)."""
    meta, rjobs = jobset["metadata"], replicated_jobs(jobset)
    name = f"{meta['name']}-{rjob['name']}-{index}"
    before = sum(_replicas(r) for r in rjobs[: next(i for i, r in enumerate(rjobs) if r is rjob)])
    restarts = int((jobset.get("status") or {}).get("restarts") or 0)
    return {JOBSET_NAME: meta["name"], PREFIX + "replicatedjob-name": rjob["name"],
            PREFIX + "restart-attempt": str(restarts),
            PREFIX + "replicatedjob-replicas": str(_replicas(rjob)),
            PREFIX + "global-replicas": str(sum(_replicas(r) for r in rjobs)),
            PREFIX + "job-index": str(index),
            PREFIX + "job-key": hashlib.sha1(f"{meta['namespace']}/{name}".encode()).hexdigest(),
            PREFIX + "job-global-index": str(before + index)}


def _tagged(obj: dict[str, Any], tags: dict[str, str]) -> None:
    meta = obj.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), **tags}
    meta["annotations"] = {**(meta.get("annotations") or {}), **tags}


def child_job(jobset: dict[str, Any], rjob: dict[str, Any], index: int) -> dict[str, Any]:
    """``constructJob``: the Job for ``rjob``'s ``index``-th replica."""
    meta = jobset["metadata"]
    template = copy.deepcopy(rjob.get("template") or {})
    body: dict[str, Any] = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": f"{meta['name']}-{rjob['name']}-{index}", "namespace": meta["namespace"],
                     "labels": dict((template.get("metadata") or {}).get("labels") or {}),
                     "annotations": dict((template.get("metadata") or {}).get("annotations") or {}),
                     "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                          "name": meta["name"], "uid": meta.get("uid", ""),
                                          "controller": True, "blockOwnerDeletion": True}]},
        "spec": template.get("spec") or {}}
    tags = job_labels(jobset, rjob, index)
    _tagged(body, tags)
    pod_template = body["spec"].setdefault("template", {})
    _tagged(pod_template, tags)
    domain = subdomain(jobset)
    if domain:
        pod_template.setdefault("spec", {})["subdomain"] = domain
    body["spec"]["suspend"] = bool((jobset.get("spec") or {}).get("suspend"))
    return body


def _children(view: View, jobset: dict[str, Any]) -> dict[str, dict[str, Any]]:
    uid = jobset["metadata"].get("uid")
    return {j["metadata"]["name"]: j for j in view.list("Job", jobset["metadata"]["namespace"])
            if any(r.get("uid") == uid and r.get("controller") for r in j["metadata"].get("ownerReferences") or ())}


def _finished(job: dict[str, Any]) -> str:
    for c in (job.get("status") or {}).get("conditions") or ():
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return str(c["type"])
    return ""


def _resumed(job: dict[str, Any], rjob: dict[str, Any]) -> dict[str, Any]:
    """``resumeJob``: the template's pod labels, annotations, nodeSelector and tolerations
    copied into a suspended Job, and its scheduling gates added to the Job's (``MergeSlices``:
    Kueue's topology gate reaches the pods), which is unsuspended."""
    body = copy.deepcopy(job)
    source = ((rjob.get("template") or {}).get("spec") or {}).get("template") or {}
    target = body["spec"].setdefault("template", {})
    for field in ("labels", "annotations"):
        merged = {**(target.get("metadata") or {}).get(field, {}), **(source.get("metadata") or {}).get(field, {})}
        target.setdefault("metadata", {})[field] = merged
    _resumed_pod_spec(target.setdefault("spec", {}), source.get("spec") or {})
    body["spec"]["suspend"] = False
    return body


def _resumed_pod_spec(pod: dict[str, Any], source: dict[str, Any]) -> None:
    """The template's nodeSelector and tolerations copied into the Job's pod spec, its scheduling
    gates added to the Job's."""
    for field in ("nodeSelector", "tolerations"):
        value = source.get(field)
        if value:
            pod[field] = copy.deepcopy(value)
        else:
            pod.pop(field, None)
    gates = list(pod.get("schedulingGates") or ())
    gates += [g for g in source.get("schedulingGates") or () if g not in gates]
    if gates:
        pod["schedulingGates"] = gates


def _sync_jobs(view: View, jobset: dict[str, Any], children: dict[str, dict[str, Any]]) -> None:
    suspended = bool((jobset.get("spec") or {}).get("suspend"))
    for rjob in replicated_jobs(jobset):
        for index in range(_replicas(rjob)):
            name = f"{jobset['metadata']['name']}-{rjob['name']}-{index}"
            job = children.get(name)
            if job is None:
                _create_job(view, jobset, child_job(jobset, rjob, index))
            elif _finished(job):
                continue
            elif suspended and not (job.get("spec") or {}).get("suspend"):
                write.update(view, {**job, "spec": {**job["spec"], "suspend": True}})
            elif not suspended and (job.get("spec") or {}).get("suspend"):
                write.update(view, _resumed(job, rjob))


def _create_job(view: View, jobset: dict[str, Any], job: dict[str, Any]) -> None:
    try:
        write.create(view, job, owned=True)
    except GpuschedError as err:
        view.record_event(jobset, "JobCreationFailed",
                          f"job {job['metadata']['name']!r} creation failed with error: {err}",
                          "Warning", COMPONENT)


def _headless_service(view: View, jobset: dict[str, Any]) -> None:
    domain = subdomain(jobset)
    meta = jobset["metadata"]
    if not domain or view.get("Service", domain, meta["namespace"]) is not None:
        return
    network = (jobset.get("spec") or {}).get("network") or {}
    write.create(view, {"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": domain, "namespace": meta["namespace"],
        "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": meta["name"],
                             "uid": meta.get("uid", ""), "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"clusterIP": "None", "selector": {JOBSET_NAME: meta["name"]},
                 "publishNotReadyAddresses": network.get("publishNotReadyAddresses", True)}}, owned=True)


def _job_ready(job: dict[str, Any]) -> bool:
    spec, status = job.get("spec") or {}, job.get("status") or {}
    parallelism = int(spec.get("parallelism", 1) if spec.get("parallelism") is not None else 1)
    return int(status.get("ready") or 0) + int(status.get("succeeded") or 0) >= parallelism


def _rjob_status(name: str, jobs: list[dict[str, Any]]) -> dict[str, Any]:
    done = [_finished(j) for j in jobs]
    running = [j for j, d in zip(jobs, done) if not d]
    return {"name": name, "ready": sum(1 for j in running if _job_ready(j)),
            "succeeded": done.count("Complete"), "failed": done.count("Failed"),
            "active": sum(1 for j in running if int((j.get("status") or {}).get("active") or 0) > 0),
            "suspended": sum(1 for j in running if (j.get("spec") or {}).get("suspend"))}


def replicated_status(jobset: dict[str, Any], children: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """``status.replicatedJobsStatus``: per replicatedJob, its Jobs counted by state."""
    by_rjob: dict[str, list[dict[str, Any]]] = {}
    for job in children.values():
        by_rjob.setdefault(str((job["metadata"].get("labels") or {}).get(PREFIX + "replicatedjob-name")),
                           []).append(job)
    return [_rjob_status(r["name"], by_rjob.get(r["name"], [])) for r in replicated_jobs(jobset)]


def _targets(jobset: dict[str, Any], policy: dict[str, Any]) -> dict[str, int]:
    """The replicatedJobs the success policy counts (all by default), with their replicas."""
    named = set(policy.get("targetReplicatedJobs") or ())
    return {r["name"]: _replicas(r) for r in replicated_jobs(jobset) if not named or r["name"] in named}


def _terminal(jobset: dict[str, Any], statuses: list[dict[str, Any]]) -> tuple[str, str, str] | None:
    """``executeFailurePolicy`` (no restarts: a failed Job fails the JobSet) and
    ``executeSuccessPolicy`` (``All``: every targeted Job succeeded; ``Any``: one did)."""
    if any(s["failed"] for s in statuses):
        return FAILED
    policy = (jobset.get("spec") or {}).get("successPolicy") or {}
    wanted = _targets(jobset, policy)
    counted = [s for s in statuses if s["name"] in wanted]
    if policy.get("operator") == "Any":
        done = any(s["succeeded"] for s in counted)
    else:
        done = bool(counted) and all(s["succeeded"] >= wanted[s["name"]] for s in counted)
    return COMPLETED if done else None


def _with_condition(view: View, jobset: dict[str, Any], conditions: list[dict[str, Any]],
                    type_: str, status: str, reason: str, message: str) -> list[dict[str, Any]]:
    old = next((c for c in conditions if c.get("type") == type_), None)
    if old is not None and old.get("status") == status:
        return conditions
    view.record_event(jobset, reason, message, "Normal", COMPONENT)
    kept = [c for c in conditions if c.get("type") != type_]
    return kept + [{"type": type_, "status": status, "reason": reason, "message": message,
                    "lastTransitionTime": view.timestamp()}]


def _update_status(view: View, jobset: dict[str, Any], children: dict[str, dict[str, Any]]) -> None:
    status = dict(jobset.get("status") or {})
    statuses = replicated_status(jobset, children)
    conditions = list(status.get("conditions") or [])
    suspended = bool((jobset.get("spec") or {}).get("suspend"))
    if suspended or any(c.get("type") == "Suspended" for c in conditions):
        conditions = _with_condition(view, jobset, conditions, "Suspended", "True" if suspended else "False",
                                     "SuspendedJobs" if suspended else "ResumeJobs",
                                     "jobset is suspended" if suspended else "jobset is resumed")
    terminal = None if suspended else _terminal(jobset, statuses)
    if terminal is not None:
        conditions = _with_condition(view, jobset, conditions, terminal[0], "True", terminal[1], terminal[2])
        status["terminalState"] = terminal[0]
    status.update(replicatedJobsStatus=statuses, conditions=conditions)
    status.setdefault("restarts", 0)
    if status != (jobset.get("status") or {}):
        write.update_status(view, {**jobset, "status": status})


def reconcile_one(view: View, jobset: dict[str, Any]) -> None:
    if (jobset.get("status") or {}).get("terminalState"):
        return
    children = _children(view, jobset)
    _headless_service(view, jobset)
    _sync_jobs(view, jobset, children)
    fresh = view.get("JobSet", jobset["metadata"]["name"], jobset["metadata"]["namespace"]) or jobset
    _update_status(view, fresh, _children(view, fresh))
