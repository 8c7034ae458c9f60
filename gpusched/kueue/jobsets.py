"""Kueue's JobSet integration, pure half (``pkg/controller/jobs/jobset/jobset_controller.go``):
the Workload a queued JobSet gets (one PodSet per replicatedJob, named after it, of
``replicas * min(parallelism, completions)`` pods; the Workload named
``jobset-<name>-<5 hex>``), the JobSet spec an admitted JobSet runs with (each replicatedJob's
pod template gets its PodSet's flavors, as ``RunWithPodSetsInfo``), and when its pods count as
ready (``PodsReady``: every replicatedJob's ready + succeeded Jobs reach its replicas).

Neighbours: ``kueue.jobs`` (names, templates, PodSet counts); the controller is
``cluster.controllers.kueue.jobsets``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from gpusched.kueue.jobs import KUEUE_API, QUEUE_LABEL, admitted_template, pods_count, workload_name

JOBSET_API = "jobset.x-k8s.io/v1alpha2"


def jobset_workload_name(name: str, uid: str) -> str:
    """``GetWorkloadNameForOwnerWithGVK`` for a JobSet.

    >>> jobset_workload_name("train", "u")[:13]
    'jobset-train-'
    """
    return workload_name(name, uid, kind="JobSet", group="jobset.x-k8s.io")


def _replicas(rjob: Mapping[str, Any]) -> int:
    return int(rjob.get("replicas", 1) if rjob.get("replicas") is not None else 1)


def podsets(jobset: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One PodSet per replicatedJob (``PodSets``)."""
    out = []
    for rjob in (jobset.get("spec") or {}).get("replicatedJobs") or ():
        template = rjob.get("template") or {}
        out.append({"name": rjob["name"], "count": _replicas(rjob) * pods_count(template),
                    "template": copy.deepcopy((template.get("spec") or {}).get("template") or {})})
    return out


def workload_for_jobset(jobset: Mapping[str, Any], priority: int = 0,
                        priority_class: str | None = None) -> dict[str, Any]:
    """The Workload Kueue creates for a queued JobSet (its controller owner is the JobSet)."""
    meta = jobset.get("metadata") or {}
    body: dict[str, Any] = {"queueName": (meta.get("labels") or {}).get(QUEUE_LABEL, ""),
                            "podSets": podsets(jobset), "priority": priority, "active": True}
    if priority_class:
        body["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                    "name": priority_class}
    owner = {"apiVersion": JOBSET_API, "kind": "JobSet", "name": meta.get("name", ""),
             "uid": meta.get("uid", ""), "controller": True, "blockOwnerDeletion": True}
    return {"apiVersion": KUEUE_API, "kind": "Workload",
            "metadata": {"name": jobset_workload_name(meta.get("name", ""), meta.get("uid", "")),
                         "namespace": meta.get("namespace", "default"), "ownerReferences": [owner],
                         "labels": {"kueue.x-k8s.io/job-uid": meta.get("uid", "")}},
            "spec": body}


def admitted_spec(spec: Mapping[str, Any], parts: Mapping[str, tuple[Mapping[str, str], Sequence[Mapping[str, Any]]]]
                  ) -> tuple[dict[str, Any], str]:
    """The JobSet spec with each replicatedJob's pod template merged with its PodSet's flavor
    labels and tolerations (``parts``: podset name -> (nodeLabels, tolerations)), unsuspended;
    or the first conflict error."""
    out = copy.deepcopy(dict(spec))
    for rjob in out.get("replicatedJobs") or ():
        labels, tolerations = parts.get(rjob["name"], ({}, []))
        job_spec = rjob.setdefault("template", {}).setdefault("spec", {})
        template, error = admitted_template(job_spec.get("template") or {}, labels, tolerations)
        if error:
            return dict(spec), error
        job_spec["template"] = template
    out["suspend"] = False
    return out, ""


def restored_spec(spec: Mapping[str, Any], workload_podsets: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``RestorePodSetsInfo``: each replicatedJob's pod template as the Workload recorded it,
    suspended."""
    out = copy.deepcopy(dict(spec))
    originals = {p.get("name"): p.get("template") for p in workload_podsets}
    for rjob in out.get("replicatedJobs") or ():
        if originals.get(rjob["name"]) is not None:
            rjob.setdefault("template", {}).setdefault("spec", {})["template"] = copy.deepcopy(originals[rjob["name"]])
    out["suspend"] = True
    return out


def jobset_pods_ready(jobset: Mapping[str, Any]) -> bool:
    """``PodsReady``: ready + succeeded Jobs of every replicatedJob reach its replicas."""
    wanted = sum(_replicas(r) for r in (jobset.get("spec") or {}).get("replicatedJobs") or ())
    statuses = (jobset.get("status") or {}).get("replicatedJobsStatus") or ()
    return sum(int(s.get("ready") or 0) + int(s.get("succeeded") or 0) for s in statuses) >= wanted
