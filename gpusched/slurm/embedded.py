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

:func:`squeue_rows` and :func:`sinfo_rows` compute the rows of the Slurm-style views; the CLI
(``cli.slurm_cmd``) prints them.

Neighbours: ``slurm.sbatch`` (parsing, partition names), ``cluster.cluster`` (transactions),
``cluster.controllers.job`` (honours ``spec.suspend``); used by ``cli.slurm_cmd``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpusched.cluster.apply import apply_one
from gpusched.cluster.controllers.common import controller_of, is_terminal, owned_pods
from gpusched.slurm.controller import (ANN_DEPENDENCY, ANN_JOB_NAME, ANN_PARTITION,
                                                 ANN_TIME_LIMIT, ANN_TIMED_OUT, LABEL_JOB_ID,
                                                 complete, find_job, job_object_name)
from gpusched.cluster.view import View
from gpusched.errors import UsageError
from gpusched.objects.manifest import Manifest
from gpusched.objects.node import node_info
from gpusched.objects.pod import pod_resource_requests
from gpusched.slurm.sbatch import (DEFAULT_ARRAY_OUTPUT, DEFAULT_OUTPUT, DEFAULT_PARTITION,
                                     PURPOSE_LABEL, SbatchJob, gres_type, hostlist,
                                     partition_names, partitions_by_purpose)
from gpusched.objects.types import ANN_DURATION, ANN_GPU_MODEL, ANN_START_TIME

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
        apply_one(view, Manifest(job.source, 0, {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": COUNTER, "namespace": namespace},
            "data": {"nextJobId": str(job_id + 1)}}))
        apply_one(view, Manifest(job.source, 0, body))
    return job_id


def next_job_id(view: View, namespace: str = "default") -> int:
    counter = view.get("ConfigMap", COUNTER, namespace)
    return int(((counter or {}).get("data") or {}).get("nextJobId", "1"))


def job_manifest(view: View, job: SbatchJob, job_id: int, namespace: str = "default") -> dict[str, Any]:
    """The Job an sbatch script stands for (pure apart from reading the view's objects)."""
    annotations: dict[str, str] = {}
    pod_spec: dict[str, Any] = {"restartPolicy": "Never"}
    model = _model_constraint(view, job)
    if model:
        annotations[ANN_GPU_MODEL] = model
    purpose = _purpose_constraint(view, job.partition)
    if purpose:
        pod_spec["nodeSelector"] = {PURPOSE_LABEL: purpose}
    if job.qos:
        if view.get("PriorityClass", job.qos) is None:
            raise UsageError(f"Batch job submission failed: Invalid qos specification "
                             f'("{job.qos}" is not a PriorityClass)')
        pod_spec["priorityClassName"] = job.qos
    run = job.run_seconds
    if job.time_limit is not None:
        annotations[ANN_TIME_LIMIT] = str(job.time_limit)
        if run is None or run > job.time_limit:
            run = float(job.time_limit)
            annotations[ANN_TIMED_OUT] = "true"
    if run is not None:
        annotations[ANN_DURATION] = f"{run:g}s"
    requests: dict[str, str] = {"cpu": str(job.cpus_per_task)}
    if job.mem_mib is not None:
        requests["memory"] = f"{job.mem_mib}Mi"
    resources: dict[str, Any] = {"requests": requests}
    if job.gpus:
        resources["limits"] = {"nvidia.com/gpu": job.gpus}
    pod_spec["containers"] = [{"name": "batch", "image": "sbatch",
                               "command": ["/bin/sh", "-c", job.script],
                               "resources": resources}]
    labels = {LABEL_JOB_ID: str(job_id)}
    job_annotations = {ANN_JOB_NAME: job.name, ANN_PARTITION: job.partition or DEFAULT_PARTITION}
    spec: dict[str, Any] = {"backoffLimit": 0, "template": {
        "metadata": {"labels": dict(labels), "annotations": annotations}, "spec": pod_spec}}
    if job.array:
        job_annotations[ANN_ARRAY] = ",".join(str(i) for i in job.array)
        spec["completions"] = len(job.array)
        spec["parallelism"] = min(job.array_limit or len(job.array), len(job.array))
    if job.dependencies:
        for dep in job.dependencies:
            if find_job(view, dep.split("_")[0], namespace) is None:
                raise UsageError(f"Batch job submission failed: Job dependency problem "
                                 f"(no job {dep})")
        spec["suspend"] = True
        job_annotations[ANN_DEPENDENCY] = "afterok:" + ":".join(job.dependencies)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": job_object_name(str(job_id)), "namespace": namespace,
                         "labels": labels, "annotations": job_annotations},
            "spec": spec}


def _catalog_by_gres() -> dict[str, str]:
    from gpusched.devices.catalog import CATALOG
    return {gres_type(name): name for name in CATALOG}


def cluster_gres_types(view: View) -> list[str]:
    """The GRES types of the cluster's GPU nodes (what ``--gres=gpu:TYPE:N`` may name)."""
    return sorted({gres_type(node_info(n).gpu_model) for n in view.list("Node")
                   if node_info(n).gpu_model})


def _model_constraint(view: View, job: SbatchJob) -> str:
    by_gres = _catalog_by_gres()
    by_gres.update({t: node_info(n).gpu_model for n in view.list("Node")
                    for t in [gres_type(node_info(n).gpu_model)] if node_info(n).gpu_model})
    valid = cluster_gres_types(view)
    if job.gpu_type and (job.gpu_type not in by_gres or job.gpu_type not in valid):
        raise UsageError(f"Batch job submission failed: Invalid generic resource (gres) "
                         f'specification (unknown GPU type "{job.gpu_type}"; valid types: '
                         f'{", ".join(valid) or "none: the cluster has no GPU nodes"})')
    nodes = view.list("Node")
    partitions = {p for n in nodes for p in partition_names(n, partitions_by_purpose(nodes))}
    if job.partition and job.partition not in partitions:
        raise UsageError(f"Batch job submission failed: Invalid partition name specified "
                         f'("{job.partition}"; partitions: {", ".join(sorted(partitions))})')
    model = by_gres.get(job.gpu_type, "")
    part_model = by_gres.get(job.partition, "") if not partitions_by_purpose(nodes) else ""
    if model and part_model and model != part_model:
        raise UsageError(f'Batch job submission failed: Requested node configuration is not '
                         f'available (GPU type "{job.gpu_type}" in partition "{job.partition}")')
    return model or part_model


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
    if not base.isdigit():
        raise UsageError(f"Invalid job id specified: {job_id}")
    with cluster.writing() as view:
        if find_job(view, base, namespace) is None:
            raise UsageError(f"Kill job error on job id {job_id}: Invalid job id specified")
        view.delete("Job", job_object_name(base), namespace)


# ---- squeue ------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class QueueRow:
    job_id: str
    partition: str
    name: str
    user: str
    state: str            # PD | R
    time: str             # run time, Slurm's [D-]H:MM:SS / M:SS
    nodes: int
    nodelist: str         # node name, or (Reason)
    priority: int = 0


def slurm_elapsed(seconds: float) -> str:
    """Slurm's elapsed-time format.

    >>> slurm_elapsed(0), slurm_elapsed(65), slurm_elapsed(3723), slurm_elapsed(90061)
    ('0:00', '1:05', '1:02:03', '1-01:01:01')
    """
    total = int(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


STATE_CODES = {"PENDING": "PD", "RUNNING": "R", "COMPLETED": "CD", "TIMEOUT": "TO",
               "FAILED": "F", "CANCELLED": "CA"}


def finished_state(pod: dict[str, Any]) -> tuple[str, int]:
    """Slurm's state and exit code of a finished sbatch pod: COMPLETED (Succeeded), TIMEOUT
    (Failed with reason DeadlineExceeded: its --time limit), FAILED (any other failure)."""
    status = pod.get("status") or {}
    if status.get("phase") == "Succeeded":
        return "COMPLETED", 0
    if status.get("reason") == "DeadlineExceeded":
        return "TIMEOUT", 0
    code = 1
    for cs in status.get("containerStatuses") or []:
        terminated = (cs.get("state") or {}).get("terminated") or {}
        if terminated.get("exitCode") is not None:
            code = int(terminated["exitCode"])
    return "FAILED", code


def squeue_rows(view: View, finished: bool = False) -> list[QueueRow]:
    """Pending and running work, one row per pod (array tasks ``<id>_<n>``); held and not yet
    created tasks as pending rows; with ``finished`` also sbatch pods that ended (``CD``,
    ``TO``, ``F``). Sorted by job id (numeric, sbatch jobs first), then name."""
    node_partition = _node_partitions(view)
    rows: list[QueueRow] = []
    jobs = {j["metadata"]["uid"]: j for j in view.list("Job")}
    if finished:
        rows.extend(_finished_rows(view, jobs, node_partition))
    waiting = [p for p in view.list("Pod")
               if not is_terminal(p) and not (p.get("spec") or {}).get("nodeName")]
    waiting.sort(key=lambda p: (-int(p["spec"].get("priority") or 0),
                                p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]))
    top = int(waiting[0]["spec"].get("priority") or 0) if waiting else 0
    for pod in view.list("Pod"):
        if is_terminal(pod):
            continue
        owner = jobs.get((controller_of(pod) or {}).get("uid", ""))
        job_id, name, partition = _identity(view, pod, owner, node_partition)
        node = (pod.get("spec") or {}).get("nodeName", "")
        priority = int(pod["spec"].get("priority") or 0)
        annotations = pod["metadata"].get("annotations") or {}
        if node:
            started = float(annotations.get(ANN_START_TIME, view.now()))
            rows.append(QueueRow(job_id, partition, name, pod["metadata"].get("namespace", ""),
                                 "R", slurm_elapsed(view.now() - started), 1, node, priority))
        else:
            reason = "(Priority)" if priority < top else "(Resources)"
            rows.append(QueueRow(job_id, partition, name, pod["metadata"].get("namespace", ""),
                                 "PD", "0:00", 1, reason, priority))
    for job in jobs.values():
        rows.extend(_unstarted_rows(view, job))
    return sorted(rows, key=_row_order)


def _finished_rows(view: View, jobs: dict[str, Any], node_partition: dict[str, str]) -> list[QueueRow]:
    rows = []
    for pod in view.list("Pod"):
        owner = jobs.get((controller_of(pod) or {}).get("uid", ""))
        if not is_terminal(pod) or owner is None or \
                LABEL_JOB_ID not in (owner["metadata"].get("labels") or {}):
            continue
        job_id, name, partition = _identity(view, pod, owner, node_partition)
        state, _code = finished_state(pod)
        annotations = pod["metadata"].get("annotations") or {}
        started = float(annotations.get(ANN_START_TIME, view.now()))
        ended = run_end(view, pod)
        rows.append(QueueRow(job_id, partition, name, pod["metadata"].get("namespace", ""),
                             STATE_CODES[state], slurm_elapsed(max(0.0, ended - started)), 1,
                             pod["spec"].get("nodeName", ""), int(pod["spec"].get("priority") or 0)))
    return rows


def run_end(view: View, pod: dict[str, Any]) -> float:
    """Virtual seconds at which a finished pod's run ended (its start + run time, capped by its
    time limit), the current time when that is unknown."""
    from gpusched.cluster.controllers.pod_lifecycle import run_time
    annotations = pod["metadata"].get("annotations") or {}
    if ANN_START_TIME not in annotations:
        return view.now()
    start = float(annotations[ANN_START_TIME])
    duration = run_time(pod)
    return start + duration if duration is not None else view.now()


def _row_order(row: QueueRow) -> tuple[Any, ...]:
    base, _, task = row.job_id.partition("_")
    numeric = base.isdigit()
    return (not numeric, int(base) if numeric else 0, base if not numeric else "", task)


def _identity(view: View, pod: dict[str, Any], owner: dict[str, Any] | None,
              node_partition: dict[str, str]) -> tuple[str, str, str]:
    meta = pod["metadata"]
    node = (pod.get("spec") or {}).get("nodeName", "")
    if owner is None or LABEL_JOB_ID not in (owner["metadata"].get("labels") or {}):
        return meta["name"], meta["name"], node_partition.get(node, DEFAULT_PARTITION)
    job_id = owner["metadata"]["labels"][LABEL_JOB_ID]
    annotations = owner["metadata"].get("annotations") or {}
    tasks = annotations.get(ANN_ARRAY, "").split(",") if annotations.get(ANN_ARRAY) else []
    if tasks:
        # Task k = the k-th pod created for the array Job (finished ones included).
        names = [p["metadata"]["name"] for p in owned_pods(view, owner)]
        index = names.index(meta["name"])
        job_id = f"{job_id}_{tasks[index] if index < len(tasks) else index}"
    return job_id, annotations.get(ANN_JOB_NAME, owner["metadata"]["name"]), \
        annotations.get(ANN_PARTITION, DEFAULT_PARTITION)


def _unstarted_rows(view: View, job: dict[str, Any]) -> list[QueueRow]:
    labels = job["metadata"].get("labels") or {}
    if LABEL_JOB_ID not in labels or complete(job):
        return []
    spec = job.get("spec") or {}
    annotations = job["metadata"].get("annotations") or {}
    status = job.get("status") or {}
    if any(c.get("type") == "Failed" for c in status.get("conditions") or []):
        return []
    job_id, name = labels[LABEL_JOB_ID], annotations.get(ANN_JOB_NAME, job["metadata"]["name"])
    partition = annotations.get(ANN_PARTITION, DEFAULT_PARTITION)
    user = job["metadata"].get("namespace", "")
    if spec.get("suspend"):
        reason = "(Dependency)" if _dependency_alive(view, job) else "(DependencyNeverSatisfied)"
        tasks = annotations.get(ANN_ARRAY, "")
        shown = f"{job_id}_[{tasks}]" if tasks else job_id
        return [QueueRow(shown, partition, name, user, "PD", "0:00", 1, reason)]
    tasks = annotations.get(ANN_ARRAY, "").split(",") if annotations.get(ANN_ARRAY) else []
    created = len(owned_pods(view, job))
    if len(tasks) > created:
        waiting = hostlist([f"t{t}" for t in tasks[created:]]).replace("t", "")
        waiting = waiting if "[" in waiting else f"[{waiting}]"
        return [QueueRow(f"{job_id}_{waiting}", partition, name, user, "PD", "0:00", 1,
                         "(JobArrayTaskLimit)")]
    return []


def _dependency_alive(view: View, job: dict[str, Any]) -> bool:
    text = (job["metadata"].get("annotations") or {}).get(ANN_DEPENDENCY, "")
    ns = job["metadata"].get("namespace", "default")
    for dep in [i.split("_")[0] for i in text.partition(":")[2].split(":") if i]:
        found = find_job(view, dep, ns)
        if found is None or any(c.get("type") == "Failed" and c.get("status") == "True"
                                for c in (found.get("status") or {}).get("conditions") or []):
            return False
    return True


# ---- sinfo -------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class InfoRow:
    partition: str        # default partition marked with "*"
    avail: str
    timelimit: str
    nodes: int
    state: str            # idle | mix | alloc | drain
    nodelist: str


def _node_partitions(view: View) -> dict[str, str]:
    nodes = view.list("Node")
    by_purpose = partitions_by_purpose(nodes)
    return {n["metadata"]["name"]: partition_names(n, by_purpose)[-1] for n in nodes}


def node_state(node: dict[str, Any], pods: list[dict[str, Any]]) -> str:
    """Slurm's node state from the node and the pods bound to it."""
    if (node.get("spec") or {}).get("unschedulable"):
        return "drain"
    if not pods:
        return "idle"
    info = node_info(node)
    used: dict[str, int] = {}
    for pod in pods:
        for key, amount in pod_resource_requests(pod).items():
            used[key] = used.get(key, 0) + amount
    gpus = info.allocatable.get("nvidia.com/gpu", 0)
    if gpus:
        return "alloc" if used.get("nvidia.com/gpu", 0) >= gpus else "mix"
    return "alloc" if used.get("cpu", 0) >= info.allocatable.get("cpu", 0) else "mix"


def sinfo_rows(view: View, per_node: bool = False) -> list[InfoRow]:
    """Rows per (partition, state) with a compressed node list, or one per node with -N."""
    nodes = sorted(view.list("Node"), key=lambda n: n["metadata"]["name"])
    by_purpose = partitions_by_purpose(nodes)
    bound: dict[str, list[dict[str, Any]]] = {}
    for pod in view.list("Pod"):
        node = (pod.get("spec") or {}).get("nodeName")
        if node and not is_terminal(pod):
            bound.setdefault(node, []).append(pod)
    groups: dict[tuple[str, str], list[str]] = {}
    for node in nodes:
        name = node["metadata"]["name"]
        state = node_state(node, bound.get(name, []))
        for partition in partition_names(node, by_purpose):
            groups.setdefault((partition, state), []).append(name)
    order = {"idle": 0, "mix": 1, "alloc": 2, "drain": 3}
    rows: list[InfoRow] = []
    for (partition, state), names in sorted(groups.items(), key=lambda kv: (
            kv[0][0] != DEFAULT_PARTITION, kv[0][0], order[kv[0][1]])):
        label = partition + ("*" if partition == DEFAULT_PARTITION else "")
        if per_node:
            rows.extend(InfoRow(label, "up", "infinite", 1, state, n) for n in names)
        else:
            rows.append(InfoRow(label, "up", "infinite", len(names), state, hostlist(names)))
    return rows


# ---- sacct -------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class AcctRow:
    job_id: str
    job_name: str
    partition: str
    account: str
    alloc_cpus: int
    state: str
    exit_code: str        # "<code>:<signal>"


def sacct_rows(view: View) -> list[AcctRow]:
    """``sacct``'s default view of the sbatch jobs: one line per job (array task) and one per
    batch step once it started. A job stopped at its time limit is TIMEOUT (exit ``0:0``) with
    its batch step CANCELLED by signal 15 (``0:15``), as Slurm accounts it."""
    rows: list[AcctRow] = []
    node_partition = _node_partitions(view)
    for job in view.list("Job"):
        labels = job["metadata"].get("labels") or {}
        if LABEL_JOB_ID not in labels:
            continue
        annotations = job["metadata"].get("annotations") or {}
        name = annotations.get(ANN_JOB_NAME, job["metadata"]["name"])
        partition = annotations.get(ANN_PARTITION, DEFAULT_PARTITION)
        account = job["metadata"].get("namespace", "")
        pods = owned_pods(view, job)
        if not pods:
            rows.append(AcctRow(labels[LABEL_JOB_ID], name, partition, account, 0, "PENDING", "0:0"))
        for pod in pods:
            job_id, _, _ = _identity(view, pod, job, node_partition)
            cpus = max(1, pod_resource_requests(pod).get("cpu", 1000) // 1000)
            if not (pod.get("spec") or {}).get("nodeName"):
                rows.append(AcctRow(job_id, name, partition, account, 0, "PENDING", "0:0"))
                continue
            if not is_terminal(pod):
                rows += [AcctRow(job_id, name, partition, account, cpus, "RUNNING", "0:0"),
                         AcctRow(f"{job_id}.batch", "batch", "", account, cpus, "RUNNING", "0:0")]
                continue
            state, code = finished_state(pod)
            step_state, step_exit = (("CANCELLED", "0:15") if state == "TIMEOUT"
                                     else (state, f"{code}:0"))
            rows += [AcctRow(job_id, name, partition, account, cpus, state, f"{code}:0"),
                     AcctRow(f"{job_id}.batch", "batch", "", account, cpus, step_state, step_exit)]
    return sorted(rows, key=lambda r: _row_order(QueueRow(r.job_id.split(".")[0], "", "", "", "",
                                                          "", 0, "")) + (r.job_id,))
