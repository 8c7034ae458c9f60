"""Slurm's commands on the embedded cluster: sbatch -> Job, squeue / sinfo rows, scancel.

:func:`submit` turns a parsed :class:`~gpusched.slurm.sbatch.SbatchJob` into one Job named
``sbatch-<id>`` (ids: the counter ``nextJobId`` in the ConfigMap ``default/gpusched-sbatch``,
starting at 1), created in the same transaction that takes the id:

- GPUs -> ``nvidia.com/gpu`` limits; ``--cpus-per-task`` / ``--mem`` -> requests;
- GRES type or a GPU-model partition -> the pod annotation ``gpusched.io/gpu-model``; a purpose
  partition -> ``nodeSelector`` on ``gpusched.io/purpose``; ``all`` (the default) -> anything;
- ``--qos`` -> ``priorityClassName`` (the PriorityClass of that name must exist);
- ``--time`` -> annotation ``gpusched.io/time-limit`` (seconds; backfill reads it). A job whose
  body sleeps longer than its limit is stopped at the limit and fails with reason
  ``DeadlineExceeded`` (Slurm's TIMEOUT);
- ``--array`` -> ``completions`` = task count, ``parallelism`` = the ``%N`` limit or the count;
- ``--dependency=afterok:ID`` -> ``spec.suspend: true`` plus annotation
  ``gpusched.io/slurm-dependency``; ``slurm.controller`` (a controller run by ``settle``)
  un-suspends the Job once every dependency Job has completed. A failed dependency leaves it
  held (``DependencyNeverSatisfied``), as Slurm does without ``kill_invalid_depend``;
- the body's ``sleep N`` lines -> ``gpusched.io/duration``; ``backoffLimit: 0`` (no retries).

:func:`cancel` is scancel. The squeue / sacct / sinfo rows are ``slurm.reports``.

Neighbours: ``slurm.sbatch`` (parsing, partition names), ``cluster.cluster`` (transactions),
``cluster.controllers.workloads.job`` (honours ``spec.suspend``), ``slurm.controller``; used by
``cli.slurm_cmd``, ``slurm.reports``, ``slurm.output``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.view import View
from gpusched.errors import UsageError
from gpusched.objects.manifest import Manifest
from gpusched.objects.node import node_info
from gpusched.objects.types import ANN_DURATION, ANN_GPU_MODEL
from gpusched.slurm.controller import (ANN_DEPENDENCY, ANN_JOB_NAME, ANN_PARTITION, ANN_TIME_LIMIT,
                                       ANN_TIMED_OUT, LABEL_JOB_ID, find_job, job_object_name)
from gpusched.slurm.sbatch import (DEFAULT_ARRAY_OUTPUT, DEFAULT_OUTPUT, DEFAULT_PARTITION,
                                   PURPOSE_LABEL, SbatchJob, gres_type, partition_names,
                                   partitions_by_purpose)
from gpusched.objects.digits import is_digits

if TYPE_CHECKING:
    from gpusched.cluster.cluster import Cluster

COUNTER = "gpusched-sbatch"
ANN_ARRAY = "gpusched.io/slurm-array"        # the array's task ids, "0,1,2,3"
ANN_WORKDIR = "gpusched.io/slurm-workdir"    # absolute submit directory (sbatch's cwd or --chdir)
ANN_OUTPUT = "gpusched.io/slurm-output"      # the --output pattern
ANN_SCRIPT = "gpusched.io/slurm-script"      # on the pod: nothing (the script is the command)


# ---- submission --------------------------------------------------------------------------------

def submit(cluster: Cluster, job: SbatchJob, namespace: str = "default", workdir: str = "") -> int:
    """Create the Job for ``job`` and return its id (see the module docstring). ``workdir``:
    the absolute submit directory, where the job's output file is written."""
    # The id and the Job are written in one store transaction (the facade's write context).
    with cluster.writing() as view:
        job_id = next_job_id(view, namespace)
        body = job_manifest(view, job, job_id, namespace)
        annotations = body["metadata"]["annotations"]
        if workdir:
            annotations[ANN_WORKDIR] = workdir
        annotations[ANN_OUTPUT] = job.output or (DEFAULT_ARRAY_OUTPUT if job.array
                                                 else DEFAULT_OUTPUT)
        write.apply(view, Manifest(job.source, 0, {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": COUNTER, "namespace": namespace},
            "data": {"nextJobId": str(job_id + 1)}}))
        write.apply(view, Manifest(job.source, 0, body))
    return job_id


def next_job_id(view: View, namespace: str = "default") -> int:
    counter = view.get("ConfigMap", COUNTER, namespace)
    return int(((counter or {}).get("data") or {}).get("nextJobId", "1"))


def job_manifest(view: View, job: SbatchJob, job_id: int, namespace: str = "default") -> dict[str, Any]:
    """The Job an sbatch script stands for (pure apart from reading the view's objects)."""
    annotations: dict[str, str] = {}
    model = _model_constraint(view, job)
    if model:
        annotations[ANN_GPU_MODEL] = model
    pod_spec = _pod_placement(view, job)
    annotations.update(_run_annotations(job))
    pod_spec["containers"] = [_container(job)]
    labels = {LABEL_JOB_ID: str(job_id)}
    job_annotations = {ANN_JOB_NAME: job.name, ANN_PARTITION: job.partition or DEFAULT_PARTITION}
    spec: dict[str, Any] = {"backoffLimit": 0, "template": {
        "metadata": {"labels": dict(labels), "annotations": annotations}, "spec": pod_spec}}
    if job.array:
        job_annotations[ANN_ARRAY] = ",".join(str(i) for i in job.array)
        spec["completions"] = len(job.array)
        spec["parallelism"] = min(job.array_limit or len(job.array), len(job.array))
    if job.dependencies:
        _check_dependencies(view, job.dependencies, namespace)
        spec["suspend"] = True
        job_annotations[ANN_DEPENDENCY] = "afterok:" + ":".join(job.dependencies)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": job_object_name(str(job_id)), "namespace": namespace,
                         "labels": labels, "annotations": job_annotations},
            "spec": spec}


def _pod_placement(view: View, job: SbatchJob) -> dict[str, Any]:
    """The pod spec's restart policy, purpose nodeSelector and priorityClassName (``--qos``)."""
    pod_spec: dict[str, Any] = {"restartPolicy": "Never"}
    purpose = _purpose_constraint(view, job.partition)
    if purpose:
        pod_spec["nodeSelector"] = {PURPOSE_LABEL: purpose}
    if job.qos:
        if view.get("PriorityClass", job.qos) is None:
            raise UsageError(f"Batch job submission failed: Invalid qos specification "
                             f'("{job.qos}" is not a PriorityClass)')
        pod_spec["priorityClassName"] = job.qos
    return pod_spec


def _run_annotations(job: SbatchJob) -> dict[str, str]:
    """``--time`` and the body's run time: the time limit, whether the job runs into it, and
    how long the pod runs."""
    annotations: dict[str, str] = {}
    run = job.run_seconds
    if job.time_limit is not None:
        annotations[ANN_TIME_LIMIT] = str(job.time_limit)
        if run is None or run > job.time_limit:
            run = float(job.time_limit)
            annotations[ANN_TIMED_OUT] = "true"
    if run is not None:
        annotations[ANN_DURATION] = f"{run:g}s"
    return annotations


def _container(job: SbatchJob) -> dict[str, Any]:
    requests: dict[str, str] = {"cpu": str(job.cpus_per_task)}
    if job.mem_mib is not None:
        requests["memory"] = f"{job.mem_mib}Mi"
    resources: dict[str, Any] = {"requests": requests}
    if job.gpus:
        resources["limits"] = {"nvidia.com/gpu": job.gpus}
    return {"name": "batch", "image": "sbatch", "command": ["/bin/sh", "-c", job.script],
            "resources": resources}


def _check_dependencies(view: View, dependencies: Sequence[str], namespace: str) -> None:
    for dep in dependencies:
        if find_job(view, dep.split("_")[0], namespace) is None:
            raise UsageError(f"Batch job submission failed: Job dependency problem "
                             f"(no job {dep})")


def _catalog_by_gres() -> dict[str, str]:
    from gpusched.devices.catalog import CATALOG
    return {gres_type(name): name for name in CATALOG}


def cluster_gres_types(view: View) -> list[str]:
    """The GRES types of the cluster's GPU nodes (what ``--gres=gpu:TYPE:N`` may name)."""
    return sorted({gres_type(node_info(n).gpu_model) for n in view.list("Node")
                   if node_info(n).gpu_model})


def _model_constraint(view: View, job: SbatchJob) -> str:
    """The GPU model the job asks for (GRES type or a GPU-model partition); a type or partition
    the cluster lacks, or the two naming different models, is an error."""
    by_gres = _catalog_by_gres()
    by_gres.update({t: node_info(n).gpu_model for n in view.list("Node")
                    for t in [gres_type(node_info(n).gpu_model)] if node_info(n).gpu_model})
    _check_gpu_type(job.gpu_type, by_gres, cluster_gres_types(view))
    nodes = view.list("Node")
    _check_partition(job.partition, nodes)
    model = by_gres.get(job.gpu_type, "")
    part_model = by_gres.get(job.partition, "") if not partitions_by_purpose(nodes) else ""
    if model and part_model and model != part_model:
        raise UsageError(f'Batch job submission failed: Requested node configuration is not '
                         f'available (GPU type "{job.gpu_type}" in partition "{job.partition}")')
    return model or part_model


def _check_gpu_type(gpu_type: str, by_gres: Mapping[str, str], valid: Sequence[str]) -> None:
    if gpu_type and (gpu_type not in by_gres or gpu_type not in valid):
        raise UsageError(f"Batch job submission failed: Invalid generic resource (gres) "
                         f'specification (unknown GPU type "{gpu_type}"; valid types: '
                         f'{", ".join(valid) or "none: the cluster has no GPU nodes"})')


def _check_partition(partition: str, nodes: Sequence[dict[str, Any]]) -> None:
    partitions = {p for n in nodes for p in partition_names(n, partitions_by_purpose(nodes))}
    if partition and partition not in partitions:
        raise UsageError(f"Batch job submission failed: Invalid partition name specified "
                         f'("{partition}"; partitions: {", ".join(sorted(partitions))})')


def _purpose_constraint(view: View, partition: str) -> str:
    nodes = view.list("Node")
    if not partition or partition == DEFAULT_PARTITION or not partitions_by_purpose(nodes):
        return ""
    for node in nodes:
        purpose = ((node.get("metadata") or {}).get("labels") or {}).get(PURPOSE_LABEL, "")
        if purpose and gres_type(purpose) == partition:
            result: str = purpose
            return result
    return ""


def cancel(cluster: Cluster, job_id: str, namespace: str = "default") -> None:
    """scancel: delete the Job ``sbatch-<id>`` (its pods go with it)."""
    base = job_id.split("_")[0]
    if not is_digits(base):
        raise UsageError(f"Invalid job id specified: {job_id}")
    with cluster.writing() as view:
        if find_job(view, base, namespace) is None:
            raise UsageError(f"Kill job error on job id {job_id}: Invalid job id specified")
        write.delete(view, "Job", job_object_name(base), namespace)
