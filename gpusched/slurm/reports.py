"""The Slurm-style views of the embedded cluster: the rows of ``squeue``, ``sacct`` and ``sinfo``.

- :func:`squeue_rows`: one row per pending or running pod (sbatch array tasks ``<id>_<n>``),
  held Jobs and array tasks not created yet as pending rows, optionally finished sbatch pods;
- :func:`sacct_rows`: sacct's default view of the sbatch jobs and their batch steps;
- :func:`sinfo_rows`: partitions (or nodes) and their states.

The CLI (``cli.slurm_cmd``) prints them with Slurm's field widths.

Neighbours: ``slurm.embedded`` (what sbatch wrote), ``slurm.controller`` (names, completion),
``slurm.sbatch`` (partitions, hostlists); used by ``cli.slurm_cmd`` and ``slurm.output``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gpusched.cluster.controllers.common import controller_of, is_terminal, owned_pods
from gpusched.cluster.apiserver.view import View
from gpusched.objects.node import node_info
from gpusched.objects.pod import pod_resource_requests
from gpusched.objects.types import ANN_START_TIME
from gpusched.slurm.controller import (ANN_DEPENDENCY, ANN_JOB_NAME, ANN_PARTITION, LABEL_JOB_ID,
                                       complete, find_job)
from gpusched.slurm.embedded import ANN_ARRAY
from gpusched.slurm.sbatch import (DEFAULT_PARTITION, hostlist, partition_names,
                                   partitions_by_purpose)
from gpusched.objects.digits import is_digits


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
    top = _top_waiting_priority(view)
    for pod in view.list("Pod"):
        if not is_terminal(pod):
            rows.append(_active_row(view, pod, jobs.get((controller_of(pod) or {}).get("uid", "")),
                                    node_partition, top))
    for job in jobs.values():
        rows.extend(_unstarted_rows(view, job))
    return sorted(rows, key=_row_order)


def _top_waiting_priority(view: View) -> int:
    """The highest priority among unbound pods (0 when none waits)."""
    waiting = [p for p in view.list("Pod")
               if not is_terminal(p) and not (p.get("spec") or {}).get("nodeName")]
    waiting.sort(key=lambda p: (-int(p["spec"].get("priority") or 0),
                                p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]))
    return int(waiting[0]["spec"].get("priority") or 0) if waiting else 0


def _active_row(view: View, pod: dict[str, Any], owner: dict[str, Any] | None,
                node_partition: dict[str, str], top: int) -> QueueRow:
    """A running (``R``, its node) or pending (``PD``, below the top priority ``(Priority)``,
    else ``(Resources)``) pod."""
    job_id, name, partition = _identity(view, pod, owner, node_partition)
    node = (pod.get("spec") or {}).get("nodeName", "")
    priority = int(pod["spec"].get("priority") or 0)
    annotations = pod["metadata"].get("annotations") or {}
    if node:
        started = float(annotations.get(ANN_START_TIME, view.now()))
        return QueueRow(job_id, partition, name, pod["metadata"].get("namespace", ""),
                        "R", slurm_elapsed(view.now() - started), 1, node, priority)
    reason = "(Priority)" if priority < top else "(Resources)"
    return QueueRow(job_id, partition, name, pod["metadata"].get("namespace", ""),
                    "PD", "0:00", 1, reason, priority)


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
    from gpusched.cluster.kubelet.pod_lifecycle import run_time
    annotations = pod["metadata"].get("annotations") or {}
    if ANN_START_TIME not in annotations:
        return view.now()
    start = float(annotations[ANN_START_TIME])
    duration = run_time(pod)
    return start + duration if duration is not None else view.now()


def _row_order(row: QueueRow) -> tuple[Any, ...]:
    base, _, task = row.job_id.partition("_")
    numeric = is_digits(base)
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
    """A held sbatch Job (``(Dependency)``), or its array tasks not created yet
    (``(JobArrayTaskLimit)``); nothing for other, complete or failed Jobs."""
    labels = job["metadata"].get("labels") or {}
    if LABEL_JOB_ID not in labels or complete(job):
        return []
    status = job.get("status") or {}
    if any(c.get("type") == "Failed" for c in status.get("conditions") or []):
        return []
    annotations = job["metadata"].get("annotations") or {}
    row = QueueRow(labels[LABEL_JOB_ID], annotations.get(ANN_PARTITION, DEFAULT_PARTITION),
                   annotations.get(ANN_JOB_NAME, job["metadata"]["name"]),
                   job["metadata"].get("namespace", ""), "PD", "0:00", 1, "")
    if (job.get("spec") or {}).get("suspend"):
        return [_held_row(view, job, row)]
    return _waiting_tasks_row(view, job, row)


def _held_row(view: View, job: dict[str, Any], row: QueueRow) -> QueueRow:
    reason = "(Dependency)" if _dependency_alive(view, job) else "(DependencyNeverSatisfied)"
    tasks = (job["metadata"].get("annotations") or {}).get(ANN_ARRAY, "")
    shown = f"{row.job_id}_[{tasks}]" if tasks else row.job_id
    return replace(row, job_id=shown, nodelist=reason)


def _waiting_tasks_row(view: View, job: dict[str, Any], row: QueueRow) -> list[QueueRow]:
    annotations = job["metadata"].get("annotations") or {}
    tasks = annotations.get(ANN_ARRAY, "").split(",") if annotations.get(ANN_ARRAY) else []
    created = len(owned_pods(view, job))
    if len(tasks) <= created:
        return []
    waiting = hostlist([f"t{t}" for t in tasks[created:]]).replace("t", "")
    waiting = waiting if "[" in waiting else f"[{waiting}]"
    return [replace(row, job_id=f"{row.job_id}_{waiting}",
                                nodelist="(JobArrayTaskLimit)")]


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
