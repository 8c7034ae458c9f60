"""Writing a replay's results: CSV always, Parquet when pyarrow is installed.

``write_results(result, out)`` writes into ``out``:

- ``timeseries.csv``: one row per sample (``time_s``, ``gpu_allocated``, ``gpu_capacity`` in
  GPUs, ``allocation_pct``, ``fragmentation_gpus``, ``pending``, ``running``, and one
  ``running_<namespace>`` column per namespace);
- ``pods.csv``: one row per pod (``namespace, name, job, gpus, arrival_s, start_s, end_s,
  wait_s, run_s, node, devices, preempted, outcome``; empty cells where not applicable);
- ``summary.csv``: wait by job size (``size, pods, started, mean_s, p50_s, p95_s, p99_s``);
- the same three as ``.parquet`` when ``pyarrow`` imports; otherwise one line says why not.

Returns the lines the CLI prints (paths written, the Parquet note).

``check_out_folder(out)``: the output folder of replay, whatif, experiment and sweep is checked
before the run, so a path that is a file is one line at once, not an ``OSError`` after the work.

Neighbours: ``sim.replay_record`` (the rows); used by ``cli.replay``.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from gpusched.errors import UsageError
from gpusched.sim.replay import ReplayResult

PARQUET_MISSING = "Parquet not written: pyarrow is not installed (pip install pyarrow); CSV only"


def check_out_folder(out: str | Path | None, flag: str = "--out") -> None:
    """One line when ``out`` exists and is not a folder (the command would fail after its run)."""
    if out and Path(out).exists() and not Path(out).is_dir():
        raise UsageError(f"{flag} {out}: not a folder")


def _cell(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return round(value, 3)
    return value


def timeseries_rows(result: ReplayResult) -> list[dict[str, Any]]:
    namespaces = sorted({ns for s in result.samples for ns, _n in s.running_by_namespace})
    rows = []
    for s in result.samples:
        running = dict(s.running_by_namespace)
        row: dict[str, Any] = {
            "time_s": s.time, "gpu_allocated": s.gpu_milli_allocated / 1000,
            "gpu_capacity": s.gpu_milli_capacity / 1000,
            "allocation_pct": 100.0 * s.gpu_milli_allocated / s.gpu_milli_capacity
            if s.gpu_milli_capacity else 0.0,
            "fragmentation_gpus": s.fragmentation_milli / 1000, "pending": s.pending,
            "running": s.running}
        row.update({f"running_{ns}": running.get(ns, 0) for ns in namespaces})
        rows.append(row)
    return rows


def pod_rows(result: ReplayResult) -> list[dict[str, Any]]:
    return [{"namespace": p.namespace, "name": p.name, "job": p.job, "gpus": p.gpus,
             "arrival_s": p.arrival, "start_s": p.start, "end_s": p.end, "wait_s": p.wait,
             "run_s": None if p.start is None or p.end is None else p.end - p.start,
             "node": p.node, "devices": p.devices, "preempted": p.preempted, "outcome": p.outcome}
            for p in result.pods]


def summary_rows(result: ReplayResult) -> list[dict[str, Any]]:
    return [{"size": w.size, "pods": w.pods, "started": w.started, "mean_s": w.mean,
             "p50_s": w.p50, "p95_s": w.p95, "p99_s": w.p99} for w in result.summary.wait_by_size]


def _write_csv(path: Path, rows: list[dict[str, Any]], columns: list[str]) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _cell(row.get(k)) for k in columns})


def _write_parquet(path: Path, rows: list[dict[str, Any]], columns: list[str]) -> None:
    import pyarrow as pa  # type: ignore[import-not-found]  # optional, no stubs
    import pyarrow.parquet as pq  # type: ignore[import-not-found]
    table = pa.table({c: [row.get(c) for row in rows] for c in columns})
    pq.write_table(table, path)


def write_results(result: ReplayResult, out: str | Path) -> list[str]:
    """See the module docstring."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tables = {"timeseries": timeseries_rows(result), "pods": pod_rows(result),
              "summary": summary_rows(result)}
    columns = {name: list(rows[0]) if rows else [] for name, rows in tables.items()}
    if not columns["pods"]:
        columns["pods"] = list(pod_rows_header())
    written = []
    for name, rows in tables.items():
        _write_csv(out / f"{name}.csv", rows, columns[name])
        written.append(str(out / f"{name}.csv"))
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return written + [PARQUET_MISSING]
    for name, rows in tables.items():
        _write_parquet(out / f"{name}.parquet", rows, columns[name])
        written.append(str(out / f"{name}.parquet"))
    return written


def pod_rows_header() -> tuple[str, ...]:
    return ("namespace", "name", "job", "gpus", "arrival_s", "start_s", "end_s", "wait_s", "run_s",
            "node", "devices", "preempted", "outcome")
