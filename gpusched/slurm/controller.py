"""The sbatch controller: releases held sbatch Jobs and stops pods at their time limit.

It runs in the cluster's settle order in the slot ``sbatch`` (``cluster.controllers.installed``)
once :func:`install` filled it (the CLI does when it builds its commands).

- A Job with ``spec.suspend: true`` and the annotation ``gpusched.io/slurm-dependency``
  (``afterok:ID[:ID...]``, written by ``slurm.embedded.submit``) is un-suspended once every Job
  ``sbatch-<ID>`` has the condition Complete (an event ``Resumed`` records it). The Job
  controller creates no pods while a Job is suspended.
- A pod annotated ``gpusched.io/slurm-timeout`` runs for its time limit only (its body would run
  longer); when it ends it is marked Failed with reason ``DeadlineExceeded``, Slurm's TIMEOUT.

Neighbours: ``slurm.embedded`` (writes the Jobs), ``cluster.controllers.workloads.job`` (honours
``suspend``), ``cluster.controllers.installed`` (the slot).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from gpusched.cluster.apiserver import write
from gpusched.cluster.controllers import installed

if TYPE_CHECKING:
    from gpusched.cluster.apiserver.changes import Changes
    from gpusched.cluster.apiserver.view import View

LABEL_JOB_ID = "gpusched.io/slurm-job-id"
ANN_JOB_NAME = "gpusched.io/slurm-job-name"
ANN_PARTITION = "gpusched.io/slurm-partition"
ANN_DEPENDENCY = "gpusched.io/slurm-dependency"
ANN_TIME_LIMIT = "gpusched.io/time-limit"
ANN_TIMED_OUT = "gpusched.io/slurm-timeout"
COMPONENT = "sbatch"


def job_object_name(job_id: str) -> str:
    return f"sbatch-{job_id}"


def find_job(view: View, job_id: str, namespace: str) -> dict[str, Any] | None:
    return view.get("Job", job_object_name(job_id), namespace)


def complete(job: dict[str, Any] | None) -> bool:
    return job is not None and any(
        c.get("type") == "Complete" and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or [])


def dependencies_met(view: View, job: dict[str, Any]) -> bool:
    text = ((job.get("metadata") or {}).get("annotations") or {}).get(ANN_DEPENDENCY, "")
    ids = [i.split("_")[0] for i in text.partition(":")[2].split(":") if i]
    ns = job["metadata"].get("namespace", "default")
    return all(complete(find_job(view, i, ns)) for i in ids)


def reconcile(view: View, changes: Changes | None = None) -> None:
    """Release held sbatch Jobs whose dependencies completed; fail pods that hit their limit.
    Every object, or (``changes``) the Jobs when a Job changed and the changed pods."""
    jobs = view.list("Job") if changes is None or changes.any_kind(("Job",)) else []
    for job in jobs:
        _release_if_ready(view, job)
    for pod in view.list("Pod") if changes is None else changes.pods():
        _fail_if_timed_out(view, pod)


def _release_if_ready(view: View, job: dict[str, Any]) -> None:
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    if not ((job.get("spec") or {}).get("suspend") and ANN_DEPENDENCY in annotations
            and dependencies_met(view, job)):
        return
    released = copy.deepcopy(job)
    released["spec"]["suspend"] = False
    write.update(view, released)
    view.record_event(released, "Resumed", "Job resumed: dependencies satisfied",
                      "Normal", COMPONENT)


def _fail_if_timed_out(view: View, pod: dict[str, Any]) -> None:
    """A pod that ran into its time limit ended Succeeded (its run time was cut to the limit):
    it failed, as Slurm's TIMEOUT."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if not (annotations.get(ANN_TIMED_OUT) and (pod.get("status") or {}).get("phase") == "Succeeded"):
        return
    failed = copy.deepcopy(pod)
    failed["status"].update(phase="Failed", reason="DeadlineExceeded",
                            message="Pod was active on the node longer than the "
                                    "specified deadline")
    write.update_status(view, failed)
    view.record_event(failed, "DeadlineExceeded", "Pod was active on the node longer "
                      "than the specified deadline", "Warning", "kubelet")


def install() -> None:
    """Fill the cluster's ``sbatch`` controller slot with :func:`reconcile`."""
    installed.install(COMPONENT, reconcile)
