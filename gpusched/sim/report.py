"""Experiment outputs: published-layout CSVs, the terminal summary, PNG plots, parallel runs.

- ``run_all(specs, jobs, progress)``: runs ``sim.experiment.run`` over specs, in a ``spawn``
  process pool when ``jobs > 1`` (results ordered like the specs), with a rich progress bar.
- ``write_csvs(results, out)``: ``allocation.csv``, ``fragmentation.csv``,
  ``fragmentation_ratio.csv`` with columns ``workload,sc_policy,tune,seed,total_gpus,0..130``
  (the published layout; ``total_gpus`` in every file here).
- ``load_published(dir)`` / ``summary_rows(results, published)``: mean allocation at 100 % and
  130 % per (workload, policy) beside the published mean; ``print_summary`` renders it with rich.
- ``write_plots(results, out)``: allocation and fragmentation vs arrived, one PNG each (Agg).

Neighbours: ``sim.experiment``; used by ``sim.commands`` and ``scripts/compare_fgd.py``.
"""

from __future__ import annotations

import csv
import multiprocessing
from collections import defaultdict
from pathlib import Path
from typing import Iterable

from gpusched.sim.experiment import POINTS, RunResult, RunSpec, run

HEADER = ["workload", "sc_policy", "tune", "seed", "total_gpus"] + [str(i) for i in range(POINTS)]
FILES = {"allocation.csv": "allocation", "fragmentation.csv": "fragmentation",
         "fragmentation_ratio.csv": "fragmentation_ratio"}


def run_all(specs: list[RunSpec], jobs: int = 1, progress: bool = True) -> list[RunResult]:
    from rich.progress import Progress

    results: list[RunResult | None] = [None] * len(specs)
    with Progress(disable=not progress, transient=False) as bar:
        task = bar.add_task("runs", total=len(specs))
        if jobs <= 1:
            for i, spec in enumerate(specs):
                results[i] = run(spec)
                bar.advance(task)
        else:
            with multiprocessing.get_context("spawn").Pool(jobs) as pool:
                for i, result in pool.imap_unordered(_indexed_run, list(enumerate(specs))):
                    results[i] = result
                    bar.advance(task)
    return [r for r in results if r is not None]


def _indexed_run(item: tuple[int, RunSpec]) -> tuple[int, RunResult]:
    return item[0], run(item[1])


def _cell(value: float) -> str:
    return "" if value != value else f"{value:.2f}"


def write_csvs(results: Iterable[RunResult], out: str | Path) -> list[Path]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results = list(results)
    paths = []
    for filename, field in FILES.items():
        path = out / filename
        with open(path, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(HEADER)
            for r in results:
                writer.writerow([r.workload, r.policy, r.tune, r.seed, r.total_gpus,
                                 *(_cell(v) for v in getattr(r, field))])
        paths.append(path)
    return paths


def load_published(directory: str | Path) -> dict[tuple[str, str], dict[int, float]]:
    """(workload, sc_policy) -> {point: mean allocation over seeds} from analysis_allo_discrete.csv."""
    path = Path(directory) / "analysis_allo_discrete.csv"
    if not path.is_file():
        return {}
    sums: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            for point in (100, 130):
                sums[(row["workload"], row["sc_policy"])][point].append(float(row[str(point)]))
    return {key: {p: sum(v) / len(v) for p, v in points.items()} for key, points in sums.items()}


def summary_rows(results: Iterable[RunResult], published: dict) -> list[dict]:
    groups: dict[tuple[str, str], list[RunResult]] = defaultdict(list)
    for r in results:
        groups[(r.workload, r.policy)].append(r)
    rows = []
    for (workload, policy), runs in sorted(groups.items()):
        row = {"workload": workload, "policy": policy, "seeds": len(runs)}
        for point in (100, 130):
            row[f"alloc{point}"] = sum(r.allocation[point] for r in runs) / len(runs)
            row[f"published{point}"] = published.get((workload, policy), {}).get(point)
        rows.append(row)
    return rows


def print_summary(rows: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="GPU allocation (%) at arrived 100 % and 130 % (mean over seeds)")
    for column in ("workload", "policy", "seeds", "alloc@100", "published@100", "alloc@130", "published@130"):
        table.add_column(column, justify="left" if column in ("workload", "policy") else "right")
    for row in rows:
        table.add_row(row["workload"], row["policy"], str(row["seeds"]),
                      f"{row['alloc100']:.2f}", _maybe(row["published100"]),
                      f"{row['alloc130']:.2f}", _maybe(row["published130"]))
    Console().print(table)


def _maybe(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def write_plots(results: Iterable[RunResult], out: str | Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    out = Path(out)
    groups: dict[tuple[str, str], list[RunResult]] = defaultdict(list)
    for r in results:
        groups[(r.workload, r.policy)].append(r)
    paths = []
    for field, ylabel in (("allocation", "GPU allocation (%)"), ("fragmentation", "fragmentation (% of GPUs)")):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for (workload, policy), runs in sorted(groups.items()):
            mean = np.nanmean(np.array([getattr(r, field) for r in runs]), axis=0)
            ax.plot(range(POINTS), mean, label=f"{policy} ({workload})" if len({w for w, _ in groups}) > 1 else policy)
        ax.set_xlabel("arrived GPU request (% of capacity)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        path = out / f"{field}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        paths.append(path)
    return paths
