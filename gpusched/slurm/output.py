"""The output file of an sbatch job on the embedded cluster: ``slurm-%j.out`` in the submit dir.

A job's file is written when its pod starts (as slurmd opens it at job start), in the directory
``sbatch`` ran in (or ``--chdir``), named by ``--output`` (default ``slurm-%j.out``, arrays
``slurm-%A_%a.out``; ``%j`` job id, ``%A`` array master id, ``%a`` task id, ``%x`` job name,
``%N`` node, ``%u`` user, ``%%``). Its content, after one line marking it simulated and one
naming the allocated GPUs:

- the simulated output of each command line gpusched knows (``metrics.container``):
  ``nvidia-smi`` and ``nvidia-smi -L`` (the job's GPUs only, as with ``ConstrainDevices``),
  ``hostname``, ``echo`` (with ``$VAR``/``${VAR}`` from the job's environment), ``env``,
  ``printenv [VAR]``; ``srun CMD`` runs CMD; ``sleep``, ``cd``, ``export``, ``module``, ``set``,
  ``source`` print nothing;
- one line per other command saying it was not run.

The job's environment: ``CUDA_VISIBLE_DEVICES`` (0..n-1: the job's devices as its cgroup shows
them), ``SLURM_JOB_GPUS`` (the node's GPU indices), ``SLURM_JOB_ID``, ``SLURM_JOB_NAME``,
``SLURM_JOB_NODELIST``, ``SLURMD_NODENAME``, ``SLURM_SUBMIT_DIR``, ``SLURM_CPUS_PER_TASK``,
``SLURM_NTASKS``, ``SLURM_ARRAY_JOB_ID``/``SLURM_ARRAY_TASK_ID`` for arrays.

A job stopped at its ``--time`` limit gets slurmstepd's line appended:
``slurmstepd: error: *** JOB 7 ON gpu-node-1 CANCELLED AT 2026-01-01T00:20:00 DUE TO TIME LIMIT ***``.

:func:`pending_outputs` lists what to write now; :func:`write_outputs` (run by the CLI after
every command that can start or end a job: ``sbatch``, ``squeue``, ``advance``...) writes the
files on this machine's disk and records on the pod (annotation
``gpusched.io/slurm-output-state``: ``started``, then ``final``) that it did.

Neighbours: ``metrics.container`` (nvidia-smi), ``slurm.embedded`` (annotations),
``slurm.reports`` (run ends, states); used by ``cli.slurm_cmd``.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from gpusched.cluster.apiserver import write as writes
from gpusched.cluster.controllers.common import controller_of, owned_pods
from gpusched.cluster.apiserver.store import EPOCH
from gpusched.cluster.apiserver.view import View
from gpusched.metrics.container import build_view, known_output
from gpusched.objects.assignment import held_by
from gpusched.objects.types import ANN_START_TIME
from gpusched.slurm import embedded, reports
from gpusched.slurm.controller import ANN_JOB_NAME, LABEL_JOB_ID

if TYPE_CHECKING:
    from gpusched.cluster.cluster import Cluster

ANN_OUTPUT_STATE = "gpusched.io/slurm-output-state"
SILENT = ("sleep", "cd", "export", "module", "set", "source", ".", "ulimit", "umask", "true", ":")
_VAR = re.compile(r"\$\{(\w+)\}|\$(\w+)")
MAX_LINES = 10_000


@dataclass(frozen=True, slots=True)
class OutputWrite:
    pod: str                  # pod name (namespace default)
    namespace: str
    path: str                 # absolute file path
    text: str
    append: bool              # append (the timeout line) rather than create
    state: str                # the pod's output state after this write


def _job_of(view: View, pod: dict[str, Any]) -> dict[str, Any] | None:
    ref = controller_of(pod) or {}
    if ref.get("kind") != "Job":
        return None
    job = view.get("Job", ref.get("name", ""), pod["metadata"].get("namespace", "default"))
    if job is None or LABEL_JOB_ID not in (job["metadata"].get("labels") or {}):
        return None
    return job


def _task(view: View, job: dict[str, Any], pod: dict[str, Any]) -> str:
    tasks = ((job["metadata"].get("annotations") or {}).get(embedded.ANN_ARRAY) or "").split(",")
    if not tasks or tasks == [""]:
        return ""
    names = [p["metadata"]["name"] for p in owned_pods(view, job)]
    index = names.index(pod["metadata"]["name"]) if pod["metadata"]["name"] in names else 0
    return tasks[index] if index < len(tasks) else str(index)


def output_path(job: dict[str, Any], pod: dict[str, Any], task: str) -> str:
    """The file a job's output goes to (its ``--output`` pattern in its submit directory)."""
    annotations = job["metadata"].get("annotations") or {}
    job_id = job["metadata"]["labels"][LABEL_JOB_ID]
    pattern = annotations.get(embedded.ANN_OUTPUT) or "slurm-%j.out"
    values = {"j": job_id, "A": job_id, "a": task or "0", "x": annotations.get(ANN_JOB_NAME, ""),
              "N": pod["spec"].get("nodeName", ""), "u": pod["metadata"].get("namespace", ""),
              "%": "%"}
    name = re.sub(r"%([jAaxNu%])", lambda m: values[m.group(1)], pattern)
    workdir = annotations.get(embedded.ANN_WORKDIR, "")
    return name if os.path.isabs(name) or not workdir else os.path.join(workdir, name)


def job_env(view: View, job: dict[str, Any], pod: dict[str, Any], task: str) -> dict[str, str]:
    gpus = [str(g) for g in held_by(pod).gpu_indices]
    job_id = job["metadata"]["labels"][LABEL_JOB_ID]
    node = pod["spec"].get("nodeName", "")
    cpus = ((pod["spec"]["containers"][0].get("resources") or {}).get("requests") or {}).get("cpu", 1)
    env = {"SLURM_JOB_ID": job_id, "SLURM_JOBID": job_id,
           "SLURM_JOB_NAME": (job["metadata"].get("annotations") or {}).get(ANN_JOB_NAME, ""),
           "SLURM_JOB_NODELIST": node, "SLURMD_NODENAME": node, "SLURM_NNODES": "1",
           "SLURM_NTASKS": "1", "SLURM_CPUS_PER_TASK": str(cpus),
           "SLURM_SUBMIT_DIR": (job["metadata"].get("annotations") or {}).get(embedded.ANN_WORKDIR, ""),
           "HOSTNAME": node, "USER": pod["metadata"].get("namespace", "")}
    if gpus:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(len(gpus)))
        env["SLURM_JOB_GPUS"] = ",".join(gpus)
        env["GPU_DEVICE_ORDINAL"] = env["CUDA_VISIBLE_DEVICES"]
    if task:
        env.update(SLURM_ARRAY_JOB_ID=job_id, SLURM_ARRAY_TASK_ID=task)
    return env


def job_output(view: View, job: dict[str, Any], pod: dict[str, Any]) -> str:
    """The file's content at job start (see the module docstring)."""
    task = _task(view, job, pod)
    env = job_env(view, job, pod, task)
    job_id = env["SLURM_JOB_ID"] + (f"_{task}" if task else "")
    container = pod["spec"]["containers"][0]
    words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
    script = words[-1] if words else ""
    gpus = env.get("SLURM_JOB_GPUS", "")
    devices = ",".join(build_view(view, pod, container.get("name", "")).visible)
    lines = [f"[gpusched: simulated output of batch job {job_id} ({env['SLURM_JOB_NAME']}) on "
             f"{env['SLURMD_NODENAME']}; the embedded cluster runs no programs]",
             f"[gpusched: allocated GPUs: {gpus or 'none'}"
             + (f" (CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']}, {devices})" if gpus else "")
             + "]"]
    for line in script.splitlines()[:MAX_LINES]:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        lines.extend(_run_line(view, pod, container.get("name", ""), stripped, env))
    return "\n".join(lines) + "\n"


def _run_line(view: View, pod: dict[str, Any], container: str, line: str, env: dict[str, str]) -> list[str]:
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return _not_run(line)
    if words and words[0] == "srun":
        words = [w for w in words[1:] if not w.startswith("-")] if len(words) > 1 else []
    if not words or words[0] in SILENT:
        if words and words[0] == "export":
            _export(words[1:], env)
        return []
    words = [_expand(w, env) for w in words]
    printed = _shell_output(words, env)
    if printed is not None:
        return printed
    answer = known_output(view, pod, container, words)
    if answer is not None and words[0] == "nvidia-smi":
        return answer.stdout.splitlines()
    return _not_run(line)


def _not_run(line: str) -> list[str]:
    return [f"[gpusched: `{line}` was not run: the embedded cluster runs no programs]"]


def _export(items: list[str], env: dict[str, str]) -> None:
    """``export K=V ...``: into the job's environment (``$VAR`` expanded); bare names ignored."""
    for item in items:
        key, eq, value = item.partition("=")
        if eq:
            env[key] = _expand(value, env)


def _shell_output(words: list[str], env: dict[str, str]) -> list[str] | None:
    """``hostname``, ``echo``, ``env``/``printenv [VAR]`` from the job's environment; None for
    any other command."""
    if words[0] == "hostname":
        return [env["SLURMD_NODENAME"]]
    if words[0] == "echo":
        return [" ".join(w for w in words[1:] if w != "-e")]
    if words in (["env"], ["printenv"]):
        return [f"{k}={v}" for k, v in sorted(env.items())]
    if words[0] == "printenv":
        return [env[w] for w in words[1:] if w in env]
    return None


def _expand(text: str, env: dict[str, str]) -> str:
    return _VAR.sub(lambda m: env.get(m.group(1) or m.group(2), ""), text)


def timeout_line(view: View, job_id: str, pod: dict[str, Any]) -> str:
    end = reports.run_end(view, pod)
    when = datetime.fromtimestamp(EPOCH.timestamp() + end, tz=EPOCH.tzinfo)
    return (f"slurmstepd: error: *** JOB {job_id} ON {pod['spec'].get('nodeName', '')} CANCELLED "
            f"AT {when:%Y-%m-%dT%H:%M:%S} DUE TO TIME LIMIT ***\n")


def pending_outputs(view: View) -> list[OutputWrite]:
    """The output files to create (jobs that started) or complete (jobs that timed out)."""
    writes = []
    for pod in view.list("Pod"):
        annotations = pod["metadata"].get("annotations") or {}
        if ANN_START_TIME not in annotations:
            continue
        state = annotations.get(ANN_OUTPUT_STATE, "")
        if state == "final":
            continue
        job = _job_of(view, pod)
        if job is None:
            continue
        task = _task(view, job, pod)
        path = output_path(job, pod, task)
        meta = pod["metadata"]
        if not state:
            writes.append(OutputWrite(meta["name"], meta.get("namespace", "default"), path,
                                      job_output(view, job, pod), False, "started"))
        finished = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        if finished:
            slurm_state, _ = reports.finished_state(pod)
            job_id = job["metadata"]["labels"][LABEL_JOB_ID] + (f"_{task}" if task else "")
            text = timeout_line(view, job_id, pod) if slurm_state == "TIMEOUT" else ""
            writes.append(OutputWrite(meta["name"], meta.get("namespace", "default"), path, text,
                                      True, "final"))
    return writes


def write_outputs(cluster: Cluster) -> list[str]:
    """Write the output files (``slurm-%j.out``) of sbatch jobs that started or timed out since
    the last call; returns one warning per file that cannot be written."""
    warnings = []
    with cluster.writing(settle=False) as view:
        for write in pending_outputs(view):
            try:
                if write.text or not write.append:
                    with open(write.path, "a" if write.append else "w", encoding="utf-8") as out:
                        out.write(write.text)
            except OSError as err:
                warnings.append(f"warning: cannot write {write.path}: {err.strerror}")
            pod = view.copy("Pod", write.pod, write.namespace)
            if pod is not None:
                pod["metadata"].setdefault("annotations", {})[ANN_OUTPUT_STATE] = write.state
                writes.update(view, pod)
    return warnings
