"""Talking to a real Slurm controller: sbatch, squeue --json, scancel; states -> pod phases.

Every client command runs under ``timeout`` (a Slurm client blocks for a long time when
slurmctld is down) with ``SLURM_CONF`` set to the given file.

State mapping (:func:`phase_of`):

| Slurm state                                   | pod phase | reason                          |
|-----------------------------------------------|-----------|---------------------------------|
| PENDING, REQUEUED, RESV_DEL_HOLD              | Pending   | Slurm's state_reason            |
| CONFIGURING, RUNNING, COMPLETING, SUSPENDED   | Running   |                                 |
| COMPLETED                                     | Succeeded | Completed                       |
| FAILED                                        | Failed    | Error                           |
| TIMEOUT, DEADLINE                             | Failed    | DeadlineExceeded                |
| OUT_OF_MEMORY                                 | Failed    | OOMKilled                       |
| NODE_FAIL, BOOT_FAIL                          | Failed    | NodeLost                        |
| CANCELLED                                     | Failed    | Cancelled                       |
| PREEMPTED                                     | Failed    | Preempted                       |

GPUs: ``gres_detail`` of ``squeue --json`` (``gpu:t4:2(IDX:0-1)``) gives the indices Slurm put
in ``CUDA_VISIBLE_DEVICES``; it is empty once a job has finished.

Neighbours: ``slurm.translate`` builds requests; used by ``cli.slurm_cmd``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from typing import Any, Sequence

from gpusched.errors import GpuschedError

TIMEOUT_S = 20
PHASES = {"PENDING": "Pending", "REQUEUED": "Pending", "RESV_DEL_HOLD": "Pending",
          "CONFIGURING": "Running", "RUNNING": "Running", "COMPLETING": "Running",
          "SUSPENDED": "Running", "COMPLETED": "Succeeded"}
FAILED_REASONS = {"FAILED": "Error", "TIMEOUT": "DeadlineExceeded", "DEADLINE": "DeadlineExceeded",
                  "OUT_OF_MEMORY": "OOMKilled", "NODE_FAIL": "NodeLost", "BOOT_FAIL": "NodeLost",
                  "CANCELLED": "Cancelled", "PREEMPTED": "Preempted"}


class SlurmError(GpuschedError):
    """A Slurm client command failed: its stderr's first line."""


@dataclass(frozen=True, slots=True)
class SlurmJob:
    job_id: str                 # "12", or "12_3" for an array task
    name: str
    state: str                  # Slurm's job_state
    phase: str                  # pod phase
    reason: str
    node: str
    gpus: str                   # CUDA_VISIBLE_DEVICES indices ("0,1"), "" when unknown
    gres: str                   # what was asked ("gres:gpu:t4:2")
    partition: str = ""
    priority: int = 0


def phase_of(state: str, reason: str = "") -> tuple[str, str]:
    """(pod phase, reason) for a Slurm job state; see the module docstring.

    >>> phase_of("PENDING", "Resources"), phase_of("TIMEOUT"), phase_of("COMPLETED")
    (('Pending', 'Resources'), ('Failed', 'DeadlineExceeded'), ('Succeeded', 'Completed'))
    """
    state = state.split()[0].rstrip("+") if state else "PENDING"
    if state in FAILED_REASONS:
        return "Failed", FAILED_REASONS[state]
    phase = PHASES.get(state, "Unknown")
    if phase == "Pending":
        return phase, "" if reason in ("", "None") else reason
    return phase, "Completed" if phase == "Succeeded" else ""


def gpu_indices(gres_detail: Sequence[str]) -> str:
    """Indices from ``gpu:t4:2(IDX:0-1)`` entries, as CUDA_VISIBLE_DEVICES lists them.

    >>> gpu_indices(["gpu:a100_40gb:3(IDX:0,2-3)"]), gpu_indices([])
    ('0,2,3', '')
    """
    found: list[int] = []
    for entry in gres_detail:
        match = re.search(r"IDX:([0-9,\-]+)", entry)
        for part in (match.group(1).split(",") if match else []):
            first, _, last = part.partition("-")
            found += range(int(first), int(last or first) + 1)
    return ",".join(str(i) for i in sorted(set(found)))


def run(argv: list[str], slurm_conf: str, stdin: str | None = None) -> str:
    """Run a Slurm client under ``timeout``; its stdout, or SlurmError with its message."""
    env = dict(os.environ, SLURM_CONF=slurm_conf)
    try:
        proc = subprocess.run(["timeout", str(TIMEOUT_S), *argv], input=stdin, env=env,
                              capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise SlurmError(f"{argv[0]}: not installed (apt-get install slurm-client)") from None
    if proc.returncode == 124:
        raise SlurmError(f"{argv[0]}: no answer from slurmctld within {TIMEOUT_S}s "
                         f"(is it running? SLURM_CONF={slurm_conf})")
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        raise SlurmError(lines[-1] if lines else f"{argv[0]} exited with {proc.returncode}")
    return proc.stdout


def submit(options: Sequence[str], script: str, slurm_conf: str, chdir: str | None = None) -> str:
    """sbatch the script (given on stdin) with ``options``; returns the job id."""
    argv = ["sbatch", "--parsable", *options]
    if chdir:
        argv.append(f"--chdir={chdir}")
    return run(argv, slurm_conf, stdin=script).strip().split(";")[0]


def submit_file(path: str, slurm_conf: str, chdir: str | None = None) -> str:
    """sbatch an existing script file unchanged; returns the job id."""
    argv = ["sbatch", "--parsable"] + ([f"--chdir={chdir}"] if chdir else []) + [path]
    return run(argv, slurm_conf).strip().split(";")[0]


def jobs(slurm_conf: str) -> list[SlurmJob]:
    """Every job slurmctld still knows (finished ones for MinJobAge), sorted by id."""
    document = json.loads(run(["squeue", "--json"], slurm_conf))
    found = [_job(raw) for raw in document.get("jobs") or []]
    return sorted(found, key=lambda j: tuple(int(x) for x in j.job_id.split("_")))


def _job(raw: dict[str, Any]) -> SlurmJob:
    job_id = str(raw.get("job_id"))
    if raw.get("array_job_id") and raw.get("array_task_id") is not None:
        job_id = f"{raw['array_job_id']}_{raw['array_task_id']}"
    phase, reason = phase_of(str(raw.get("job_state", "")), str(raw.get("state_reason", "")))
    return SlurmJob(job_id, str(raw.get("name", "")), str(raw.get("job_state", "")), phase,
                    reason, str(raw.get("nodes") or ""), gpu_indices(raw.get("gres_detail") or []),
                    str(raw.get("tres_per_node") or ""), str(raw.get("partition") or ""),
                    int(raw.get("priority") or 0))


def cancel(job_ids: Sequence[str], slurm_conf: str) -> None:
    run(["scancel", *job_ids], slurm_conf)
