"""Readers of replay inputs: Alibaba trace CSVs, the simple job CSV/Parquet, and manifests.

Every reader returns a ``sim.replay.ReplayTrace``; a bad input raises ``UsageError`` with one
line naming the file, the line (or document) and column, and what is wrong (docs/replay.md).

- :func:`alibaba_trace`: ``openb_node_list_*.csv`` + ``openb_pod_list_*.csv`` with the time
  columns. Arrival = ``creation_time`` minus the earliest one; run time = ``deletion_time -
  scheduled_time`` (the pod's observed run time), or ``deletion_time - creation_time`` for a pod
  the trace never scheduled; ``qos`` -> PriorityClass (``sim.replay.QOS_PRIORITY_CLASSES``).
- :func:`job_trace`: the job format of docs/replay.md (``name, arrival, gpus`` required;
  ``duration, cpu_milli, memory_mib, gpu_model, qos, namespace`` optional), CSV or Parquet
  (Parquet needs pyarrow).
- :func:`manifest_trace`: Pod and Job documents; ``gpusched.io/arrival`` (a duration such as
  ``90s`` or ``2h``, default 0) is when each is created; run times come from their own
  ``gpusched.io/duration``.

Neighbours: ``sim.alibaba`` (node/pod CSV parsing), ``sim.replay``; used by ``cli.replay``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable

from gpusched.devices.catalog import lookup_model
from gpusched.errors import GpuschedError, UsageError
from gpusched.objects.duration import parse_duration
from gpusched.objects.names import dns1123_label_errors, dns1123_subdomain_errors
from gpusched.sim.alibaba import MAX_QUANTITY, MAX_ROWS, MIB, TraceNode, csv_rows, load_nodes, load_pods
from gpusched.sim.replay import QOS_PRIORITY_CLASSES, ReplayJob, ReplayTrace

ANN_ARRIVAL = "gpusched.io/arrival"
TIME_COLUMNS = ("creation_time", "deletion_time")
JOB_COLUMNS = ("name", "arrival", "gpus")
JOB_OPTIONAL = ("duration", "cpu_milli", "memory_mib", "gpu_model", "qos", "namespace")
MAX_SECONDS = 10 * 365 * 86400.0


def nodes_from(path: str | Path) -> tuple[TraceNode, ...]:
    """The GPU nodes of an openb node list; every model must be one gpusched knows."""
    nodes = load_nodes(path, gpu_only=True)
    for node in nodes:
        try:
            lookup_model(node.model)
        except UsageError:
            raise UsageError(f'{path}: node {node.name}: model: unknown GPU model "{node.model}"') from None
    if not nodes:
        raise UsageError(f"{path}: no GPU nodes")
    return tuple(nodes)


def _seconds(path: Path, line: int, column: str, text: str, optional: bool = False) -> float | None:
    value = _number(path, line, column, text, optional, "a time >= 0 seconds")
    if value is not None and value > MAX_SECONDS:
        raise UsageError(f"{path}: line {line}: {column}: more than 10 years ({text.strip()} s)")
    return value


def _number(path: Path, line: int, column: str, text: str, optional: bool, what: str) -> float | None:
    """The finite number >= 0 in a cell (None for an empty optional one)."""
    text = (text or "").strip()
    if not text and optional:
        return None
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{path}: line {line}: {column}: not a number: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"{path}: line {line}: {column}: must be {what}, got {text}")
    return value


def _names(path: Path, line: int, name: str, namespace: str, seen: set[tuple[str, str]]) -> None:
    """A pod's name and namespace must be valid Kubernetes names, the pair unique in the file."""
    if not name:
        raise UsageError(f"{path}: line {line}: name: required")
    for column, value, errors in (("name", name, dns1123_subdomain_errors(name)),
                                  ("namespace", namespace, dns1123_label_errors(namespace))):
        if errors:
            raise UsageError(f'{path}: line {line}: {column}: invalid value "{value}": {errors[0]}')
    if (namespace, name) in seen:
        raise UsageError(f'{path}: line {line}: name: "{name}" appears twice')
    seen.add((namespace, name))


def _qos(path: Path, line: int, text: str) -> str:
    qos = (text or "").strip()
    if qos and qos not in QOS_PRIORITY_CLASSES:
        raise UsageError(f'{path}: line {line}: qos: unknown QoS class "{qos}" '
                         f'(one of {", ".join(QOS_PRIORITY_CLASSES)}, or empty)')
    return qos


def _models(path: Path, line: int, column: str, models: Iterable[str]) -> tuple[str, ...]:
    out = []
    for model in models:
        try:
            out.append(lookup_model(model).name)
        except UsageError:
            raise UsageError(f'{path}: line {line}: {column}: unknown GPU model "{model}"') from None
    return tuple(sorted(set(out)))


def alibaba_trace(nodes_csv: str | Path, pods_csv: str | Path) -> ReplayTrace:
    """See the module docstring."""
    path = Path(pods_csv)
    nodes = nodes_from(nodes_csv)
    rows = csv_rows(path, ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli") + TIME_COLUMNS)
    pods = load_pods(path)
    jobs: list[ReplayJob] = []
    seen: set[tuple[str, str]] = set()
    for line, (row, pod) in enumerate(zip(rows, pods), start=2):
        _names(path, line, pod.name, "default", seen)
        created = _seconds(path, line, "creation_time", row["creation_time"])
        deleted = _seconds(path, line, "deletion_time", row["deletion_time"])
        scheduled = _seconds(path, line, "scheduled_time", row.get("scheduled_time", ""), optional=True)
        assert created is not None and deleted is not None
        if scheduled is not None and scheduled < created:
            raise UsageError(f"{path}: line {line}: scheduled_time: {row['scheduled_time'].strip()} "
                             f"is before creation_time {created:g}")
        began = scheduled if scheduled is not None else created
        if deleted < began:
            raise UsageError(f"{path}: line {line}: deletion_time: {row['deletion_time']} is before "
                             f"{'scheduled_time' if scheduled is not None else 'creation_time'} {began:g}")
        jobs.append(ReplayJob(pod.name, created, deleted - began, pod.cpu_milli, pod.memory,
                              pod.num_gpu, pod.gpu_milli,
                              _models(path, line, "gpu_spec", pod.gpu_models),
                              _qos(path, line, row.get("qos", ""))))
    return _trace(jobs, nodes, str(path))


def _trace(jobs: list[ReplayJob], nodes: tuple[TraceNode, ...], source: str,
           extra: tuple[dict[str, Any], ...] = ()) -> ReplayTrace:
    """Arrivals shifted so the first is at 0, sorted by (arrival, input order)."""
    if not jobs:
        raise UsageError(f"{source}: no rows to replay (a header only)")
    origin = min((j.arrival for j in jobs), default=0.0)
    shifted = [ReplayJob(j.name, j.arrival - origin, j.run_time, j.cpu_milli, j.memory, j.num_gpu,
                         j.gpu_milli, j.gpu_models, j.qos, j.namespace, j.manifest) for j in jobs]
    order = sorted(range(len(shifted)), key=lambda i: (shifted[i].arrival, i))
    return ReplayTrace(nodes, tuple(shifted[i] for i in order), source, extra)


def _job_rows(path: Path) -> list[dict[str, str]]:
    if path.suffix.lower() != ".parquet":
        return csv_rows(path, JOB_COLUMNS)
    try:
        import pyarrow.parquet as pq  # type: ignore[import-not-found]  # optional, no stubs
    except ImportError:
        raise UsageError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow), "
                         "or give the jobs as CSV") from None
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a Parquet file: {exc}") from None
    missing = [c for c in JOB_COLUMNS if c not in table.column_names]
    if missing:
        raise UsageError(f"{path}: missing column(s) {', '.join(missing)}")
    if table.num_rows > MAX_ROWS:
        raise UsageError(f"{path}: more than {MAX_ROWS:,} rows")
    return [{k: "" if v is None else str(v) for k, v in row.items()} for row in table.to_pylist()]


def _check_columns(path: Path, rows: list[dict[str, str]]) -> None:
    """No column the format does not know (a misspelt ``duraton`` would run forever), no row
    with more cells than the header."""
    unknown = [c for c in (rows[0] if rows else {}) if c is not None and c not in JOB_COLUMNS + JOB_OPTIONAL]
    if unknown:
        raise UsageError(f"{path}: unknown column(s) {', '.join(unknown)} "
                         f"(known: {', '.join(JOB_COLUMNS + JOB_OPTIONAL)})")
    for line, row in enumerate(rows, start=2):
        if None in row:
            raise UsageError(f"{path}: line {line}: more cells than the header has columns")


def _gpus(path: Path, line: int, text: str) -> tuple[int, int]:
    """``gpus`` -> (num_gpu, per-GPU milli): 0 none, 0.25 a share, 2 two whole GPUs."""
    value = _number(path, line, "gpus", text, False, "a number of GPUs >= 0")
    assert value is not None
    if value == 0:
        return 0, 0
    if value < 1:
        return 1, max(1, round(value * 1000))
    if value != int(value) or value > 1024:
        raise UsageError(f"{path}: line {line}: gpus: a share below 1 or a whole number of GPUs "
                         f"(at most 1024), got {text}")
    return int(value), 1000


def _int(path: Path, line: int, column: str, text: str, default: int) -> int:
    value = _number(path, line, column, text, True, f"a whole number from 0 to {MAX_QUANTITY}")
    if value is not None and (value != int(value) or value > MAX_QUANTITY):
        raise UsageError(f"{path}: line {line}: {column}: must be a whole number from 0 to "
                         f"{MAX_QUANTITY}, got {text.strip()}")
    return default if value is None else int(value)


def job_trace(nodes_csv: str | Path, jobs_path: str | Path) -> ReplayTrace:
    """The job format of docs/replay.md over the GPU nodes of an openb node list."""
    path = Path(jobs_path)
    nodes = nodes_from(nodes_csv)
    jobs: list[ReplayJob] = []
    names: set[tuple[str, str]] = set()
    rows = _job_rows(path)
    _check_columns(path, rows)
    for line, row in enumerate(rows, start=2):
        name = (row.get("name") or "").strip()
        namespace = (row.get("namespace") or "").strip() or "default"
        _names(path, line, name, namespace, names)
        num_gpu, milli = _gpus(path, line, row.get("gpus", ""))
        duration = _seconds(path, line, "duration", row.get("duration", ""), optional=True)
        arrival = _seconds(path, line, "arrival", row.get("arrival", ""))
        assert arrival is not None
        models = [m for m in (row.get("gpu_model") or "").split("|") if m.strip()]
        jobs.append(ReplayJob(name, arrival, duration,
                              _int(path, line, "cpu_milli", row.get("cpu_milli", ""), 1000),
                              _int(path, line, "memory_mib", row.get("memory_mib", ""), 1024) * MIB,
                              num_gpu, milli, _models(path, line, "gpu_model", models),
                              _qos(path, line, row.get("qos", "")), namespace))
    return _trace(jobs, nodes, str(path))


def manifest_trace(nodes_csv: str | Path, paths: list[str]) -> ReplayTrace:
    """Pods and Jobs from YAML files; other kinds (ConfigMaps, quotas, PriorityClasses) are
    created before the first arrival. Every document is validated as ``apply`` would, before
    anything runs: a typo is one line, not a pod the replay records as Refused."""
    from gpusched.objects.manifest import load_manifests
    from gpusched.objects.validation import validate
    nodes = nodes_from(nodes_csv)
    jobs: list[ReplayJob] = []
    extra: list[dict[str, Any]] = []
    seen: dict[tuple[str, str, str], str] = {}
    for manifest in load_manifests(paths):
        validate(manifest)
        obj = manifest.obj
        if manifest.kind not in ("Pod", "Job"):
            extra.append(obj)
            continue
        meta = obj.get("metadata") or {}
        key = (manifest.kind, str(meta.get("namespace") or "default"), manifest.name)
        if key in seen:
            raise UsageError(f'{manifest.where}: metadata.name: {key[0]} "{key[2]}" in namespace '
                             f'"{key[1]}" appears twice (first in {seen[key]})')
        seen[key] = manifest.where
        jobs.append(ReplayJob(manifest.name, _arrival(manifest.where, meta), manifest=obj,
                              namespace=key[1]))
    if not jobs:
        raise UsageError(f"{', '.join(paths)}: no Pod or Job to replay")
    return ReplayTrace(nodes, tuple(sorted(jobs, key=lambda j: j.arrival)), ", ".join(paths), tuple(extra))


def _arrival(where: str, meta: dict[str, Any]) -> float:
    """``gpusched.io/arrival`` of a document: a duration up to 10 years, default 0."""
    text = (meta.get("annotations") or {}).get(ANN_ARRIVAL, "0")
    try:
        arrival = parse_duration(str(text))
    except GpuschedError as err:
        raise UsageError(f"{where}: metadata.annotations[{ANN_ARRIVAL}]: {err}") from None
    if arrival > MAX_SECONDS:
        raise UsageError(f'{where}: metadata.annotations[{ANN_ARRIVAL}]: more than 10 years ("{text}")')
    return arrival
