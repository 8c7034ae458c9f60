"""The trace ``gpusched whatif`` replays: an Alibaba openb node list and pod list as a ReplayTrace.

Each pod row becomes one ``sim.replay.ReplayJob``: arrival = ``creation_time`` (seconds since the
first creation) divided by ``time_scale``; run time = ``deletion_time`` minus ``scheduled_time``
(``creation_time`` for a pod the trace never scheduled), at least 1 s and not scaled; requests,
GPU share/count, ``gpu_spec`` models and the ``qos`` class as in the file. ``first`` keeps the
first N pods by arrival.

Why ``time_scale``: the openb pod list is a sample of pod specs, not a load trace. Replayed at
its own times it keeps about 1 % of the 6,212 GPUs busy (``fgd-and-alibaba-trace.md`` 2.4), so
no variant of the cluster changes any wait. Dividing the arrival times by a factor (run times
unchanged) is the load the cluster would see if the same pods came that much faster; that is the
load a capacity question is about.

Neighbours: ``sim.alibaba`` (nodes, units), ``sim.replay`` (the records); used by ``cli.whatif``.
"""

from __future__ import annotations

import csv
from pathlib import Path

from gpusched.errors import UsageError
from gpusched.sim.alibaba import MIB, load_nodes
from gpusched.sim.replay import QOS_PRIORITY_CLASSES, ReplayJob, ReplayTrace

TIME_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time",
                "deletion_time")
MAX_PODS = 1_000_000


def _number(path: Path, line: int, row: dict[str, str], column: str, cast: type) -> float:
    text = (row.get(column) or "").strip()
    try:
        value = cast(text)
    except ValueError:
        raise UsageError(f"{path}: line {line}: {column}: not a number: {text!r}") from None
    if value < 0:
        raise UsageError(f"{path}: line {line}: {column}: negative: {text}")
    return float(value)


def _job(path: Path, line: int, row: dict[str, str]) -> tuple[float, ReplayJob]:
    created = _number(path, line, row, "creation_time", float)
    deleted = _number(path, line, row, "deletion_time", float)
    scheduled = (row.get("scheduled_time") or "").strip()
    start = _number(path, line, row, "scheduled_time", float) if scheduled else created
    if deleted < start:
        raise UsageError(f"{path}: line {line}: deletion_time: {deleted:g} is before the pod "
                         f"started ({start:g})")
    num_gpu = int(_number(path, line, row, "num_gpu", int))
    gpu_milli = int(_number(path, line, row, "gpu_milli", int)) if num_gpu else 0
    if gpu_milli > 1000 or gpu_milli < 1000 and num_gpu > 1:
        raise UsageError(f"{path}: line {line}: gpu_milli: {gpu_milli} with num_gpu {num_gpu}")
    qos = (row.get("qos") or "").strip()
    if qos and qos not in QOS_PRIORITY_CLASSES:
        raise UsageError(f'{path}: line {line}: qos: unknown class "{qos}" (one of '
                         f'{", ".join(QOS_PRIORITY_CLASSES)})')
    models = tuple(sorted({m for m in (row.get("gpu_spec") or "").split("|") if m}))
    job = ReplayJob(row["name"].strip(), created, max(1.0, deleted - start),
                    int(_number(path, line, row, "cpu_milli", int)),
                    int(_number(path, line, row, "memory_mib", int)) * MIB,
                    num_gpu, gpu_milli, models, qos)
    return created, job


def alibaba_trace(nodes_csv: str | Path, pods_csv: str | Path, time_scale: float = 1.0,
                  first: int | None = None) -> ReplayTrace:
    """The ReplayTrace of an openb node list (GPU nodes) and pod list; see the module docstring."""
    pods_path = Path(pods_csv)
    if not 0 < time_scale <= 1e6:
        raise UsageError(f"invalid --time-scale {time_scale:g}: must be in (0, 1e6]")
    try:
        with open(pods_path, newline="") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in TIME_COLUMNS if c not in (reader.fieldnames or ())]
            if missing:
                raise UsageError(f"{pods_path}: missing column(s) {', '.join(missing)} "
                                 "(a replay needs the pod list's time columns)")
            jobs = []
            for line, row in enumerate(reader, start=2):
                if line - 1 > MAX_PODS:
                    raise UsageError(f"{pods_path}: more than {MAX_PODS} pods")
                jobs.append(_job(pods_path, line, row))
    except OSError as exc:
        raise UsageError(f"{pods_path}: cannot read: {exc.strerror}") from None
    if not jobs:
        raise UsageError(f"{pods_path}: no pods")
    jobs.sort(key=lambda item: item[0])
    if first is not None:
        jobs = jobs[:first]
    origin = jobs[0][0]
    scaled = tuple(ReplayJob(j.name, (created - origin) / time_scale, j.run_time, j.cpu_milli,
                             j.memory, j.num_gpu, j.gpu_milli, j.gpu_models, j.qos)
                   for created, j in jobs)
    nodes = tuple(load_nodes(nodes_csv, gpu_only=True))
    source = pods_path.name + (f" (arrivals / {time_scale:g})" if time_scale != 1 else "")
    return ReplayTrace(nodes, scaled, source + (f", first {first} pods" if first else ""))
