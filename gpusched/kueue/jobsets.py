"""Kueue's JobSet integration, pure half (``pkg/controller/jobs/jobset/jobset_controller.go``):
the JobSet's :class:`~gpusched.kueue.jobframework.Integration` (one PodSet per replicatedJob,
named after it, of ``replicas * min(parallelism, completions)`` pods, so the Workload
``jobset-<name>-<5 hex>`` admits it whole; run with each replicatedJob's pod template given its
PodSet's flavors, as ``RunWithPodSetsInfo``; restored to the recorded templates), and when its
pods count as ready (``PodsReady``: every replicatedJob's ready + succeeded Jobs reach its
replicas).

Neighbours: ``jobframework`` (names, the Workload), ``jobs`` (templates, PodSet counts); the
controller is ``cluster.controllers.kueue.jobsets``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from gpusched.kueue.jobframework import NO_META, Integration, PodSetInfo, workload_name
from gpusched.kueue.jobs import admitted_template, pods_count
from gpusched.kueue.tas_request import JOB_COMPLETION_INDEX, topology_request_field

JOBSET_API = "jobset.x-k8s.io/v1alpha2"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"   # jobsetapi.JobIndexKey


def jobset_workload_name(name: str, uid: str) -> str:
    """``GetWorkloadNameForOwnerWithGVK`` for a JobSet.

    >>> jobset_workload_name("train", "u")[:13]
    'jobset-train-'
    """
    return workload_name(name, uid, kind="JobSet", group=JOBSET_API.split("/")[0])


def _replicas(rjob: Mapping[str, Any]) -> int:
    return int(rjob.get("replicas", 1) if rjob.get("replicas") is not None else 1)


def podsets(jobset: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One PodSet per replicatedJob (``PodSets``), with its topology request: the pod template's
    annotations, the Job's completion index as pod index and the JobSet's job index over the
    replicas as sub-group (``NewPodSetTopologyRequest(...).PodIndexLabel(...).SubGroup(...)``)."""
    out = []
    for rjob in (jobset.get("spec") or {}).get("replicatedJobs") or ():
        template = rjob.get("template") or {}
        pod_template = copy.deepcopy((template.get("spec") or {}).get("template") or {})
        podset: dict[str, Any] = {"name": rjob["name"], "count": _replicas(rjob) * pods_count(template), "template": pod_template}
        podset["topologyRequest"] = topology_request_field(
            (pod_template.get("metadata") or {}).get("annotations") or {}, JOB_COMPLETION_INDEX,
            (JOB_INDEX, _replicas(rjob)))
        out.append(podset)
    return out


def _run_with_podsets_info(jobset: Mapping[str, Any], infos: Sequence[PodSetInfo]) -> tuple[dict[str, Any], str]:
    """``RunWithPodSetsInfo``: each replicatedJob's pod template merged with its PodSet's whole
    info (``podset.Merge``: the flavors' labels and tolerations, the PodSet label, the Workload
    annotation and, placed by topology, the topology scheduling gate), unsuspended; or the first
    conflict error."""
    parts = {info.name: info for info in infos}
    spec = copy.deepcopy(dict(jobset.get("spec") or {}))
    for rjob in spec.get("replicatedJobs") or ():
        info = parts.get(rjob["name"], PodSetInfo(rjob["name"], {}, [], NO_META))
        job_spec = rjob.setdefault("template", {}).setdefault("spec", {})
        template, error = admitted_template(job_spec.get("template") or {}, info.node_selector, info.tolerations,
                                            info.meta)
        if error:
            return dict(jobset), error
        job_spec["template"] = template
    spec["suspend"] = False
    return {**jobset, "spec": spec}, ""


def _restore_podsets_info(jobset: Mapping[str, Any], workload_podsets: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``RestorePodSetsInfo``: each replicatedJob's pod template as the Workload recorded it,
    suspended."""
    spec = copy.deepcopy(dict(jobset.get("spec") or {}))
    originals = {p.get("name"): p.get("template") for p in workload_podsets}
    for rjob in spec.get("replicatedJobs") or ():
        if originals.get(rjob["name"]) is not None:
            rjob.setdefault("template", {}).setdefault("spec", {})["template"] = copy.deepcopy(originals[rjob["name"]])
    spec["suspend"] = True
    return {**jobset, "spec": spec}


def jobset_pods_ready(jobset: Mapping[str, Any]) -> bool:
    """``PodsReady``: ready + succeeded Jobs of every replicatedJob reach its replicas."""
    wanted = sum(_replicas(r) for r in (jobset.get("spec") or {}).get("replicatedJobs") or ())
    statuses = (jobset.get("status") or {}).get("replicatedJobsStatus") or ()
    return sum(int(s.get("ready") or 0) + int(s.get("succeeded") or 0) for s in statuses) >= wanted


JOBSET = Integration("JobSet", JOBSET_API, "Completed", podsets, _run_with_podsets_info, _restore_podsets_info,
                     jobset_pods_ready)
