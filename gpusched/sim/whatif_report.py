"""The comparison of ``gpusched whatif``: table, CSV and plots.

Input: per variant, one ``RunMetrics`` per seed (same seeds in every variant, in the same order),
variant "as is" first. Output:

- ``comparison_table``: a rich ``Table``, one row per metric, per variant the mean over seeds with
  its 95 % t interval (``12.3 ± 0.4``), and for every other variant the paired per-seed
  difference from the first one (``-1.2 [-1.5, -0.9]``; ``*`` marks an interval that excludes 0,
  i.e. a difference outside seed noise). The CLI prints it full width when output is redirected.
- ``write_csvs``: ``runs.csv`` (variant, seed, every metric) and ``comparison.csv`` (variant,
  metric, mean, half width, seed range, difference and its interval).
- ``write_plots``: ``timeseries.{png,svg}`` (one panel per time series: the mean over seeds
  with a band from the lowest to the highest seed) and ``summary.{png,svg}`` (per metric, each
  variant's mean with its 95 % interval as an error bar). Lines and points differ by colour
  (Okabe-Ito), marker and dash, so the figures read in greyscale.

Neighbours: ``sim.whatif_stats`` (intervals), ``sim.report`` (palette, markers, dashes);
used by ``cli.whatif``.
"""

from __future__ import annotations

import csv
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from gpusched.sim.whatif_stats import Estimate, estimate, paired_difference

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
DASHES: tuple[Any, ...] = ("-", "--", "-.", ":", (0, (5, 1, 1, 1)), (0, (3, 1)), (0, (1, 1)),
                           (0, (8, 2)))


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    digits: int = 1
    better: str = "lower"          # "lower" or "higher": which direction is an improvement


@dataclass(frozen=True)
class Series:
    """One time series of one run: values at virtual times (seconds)."""

    times: tuple[float, ...]
    values: tuple[float, ...]


@dataclass(frozen=True)
class RunMetrics:
    """What one (variant, seed) run reports: scalar metrics and time series by key."""

    seed: int
    values: Mapping[str, float]
    series: Mapping[str, Series] = field(default_factory=dict)


Runs = Mapping[str, Sequence[RunMetrics]]       # variant name -> runs, one per seed


def _cell(e: Estimate, digits: int) -> str:
    if e.n == 1 or math.isnan(e.half_width):
        return f"{e.mean:,.{digits}f}"
    return f"{e.mean:,.{digits}f} ± {e.half_width:,.{digits}f}"


def _delta_cell(d: Estimate, digits: int) -> str:
    if d.n == 1 or math.isnan(d.half_width):
        return f"{d.mean:+,.{digits}f}"
    low, high = d.interval
    mark = " *" if d.excludes_zero() else ""
    return f"{d.mean:+,.{digits}f} [{low:+,.{digits}f}, {high:+,.{digits}f}]{mark}"


def _values(runs: Sequence[RunMetrics], key: str) -> list[float]:
    return [float(r.values[key]) for r in runs]


def comparison_table(runs: Runs, metrics: Sequence[Metric], title: str) -> Any:
    """The rich Table described in the module docstring."""
    from rich.table import Table

    names = list(runs)
    baseline = names[0]
    table = Table(title=title, caption=f"mean ± 95 % t interval over {len(runs[baseline])} seeds; "
                  f"Δ = paired difference from \"{baseline}\" [95 % interval], * = outside seed noise")
    table.add_column("metric", justify="left", no_wrap=True)
    for name in names:
        table.add_column(name, justify="right")
        if name != baseline:
            table.add_column(f"Δ {name}", justify="right")
    for metric in metrics:
        base = _values(runs[baseline], metric.key)
        cells = [metric.label]
        for name in names:
            values = _values(runs[name], metric.key)
            cells.append(_cell(estimate(values), metric.digits))
            if name != baseline:
                cells.append(_delta_cell(paired_difference(values, base), metric.digits))
        table.add_row(*cells)
    return table


def write_csvs(runs: Runs, metrics: Sequence[Metric], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    names = list(runs)
    per_run, summary = out / "runs.csv", out / "comparison.csv"
    with open(per_run, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["variant", "seed", *(m.key for m in metrics)])
        for name in names:
            for run in runs[name]:
                writer.writerow([name, run.seed, *(f"{run.values[m.key]:.6g}" for m in metrics)])
    with open(summary, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["variant", "metric", "seeds", "mean", "ci95_half_width", "seed_low",
                         "seed_high", "diff_mean", "diff_ci95_low", "diff_ci95_high"])
        for metric in metrics:
            base = _values(runs[names[0]], metric.key)
            for name in names:
                values = _values(runs[name], metric.key)
                e, d = estimate(values), paired_difference(values, base)
                writer.writerow([name, metric.key, e.n, f"{e.mean:.6g}", f"{e.half_width:.6g}",
                                 f"{e.low:.6g}", f"{e.high:.6g}", f"{d.mean:.6g}",
                                 f"{d.interval[0]:.6g}", f"{d.interval[1]:.6g}"])
    return [per_run, summary]


def _style(k: int) -> dict[str, Any]:
    return {"color": PALETTE[k % len(PALETTE)], "linestyle": DASHES[k % len(DASHES)],
            "marker": MARKERS[k % len(MARKERS)], "markersize": 4, "linewidth": 1.4}


def resample(series: Sequence[Series], points: int = 200) -> tuple[Any, Any]:
    """Step-wise (last value holds) values of every run on one common time grid:
    (grid, array runs x points)."""
    import numpy as np

    end = max((s.times[-1] for s in series if s.times), default=0.0)
    grid = np.linspace(0.0, end, points)
    rows = []
    for s in series:
        times, values = np.asarray(s.times, dtype=float), np.asarray(s.values, dtype=float)
        if not len(values):
            rows.append(np.zeros(points))
            continue
        index = np.searchsorted(times, grid, side="right") - 1
        rows.append(np.where(index >= 0, values[np.clip(index, 0, None)], 0.0))
    return grid, np.array(rows)


def _save(fig: Any, out: Path, stem: str) -> list[Path]:
    paths = []
    for suffix in ("png", "svg"):
        path = out / f"{stem}.{suffix}"
        fig.savefig(path, dpi=130, bbox_inches="tight", metadata=_metadata(suffix))
        paths.append(path)
    return paths


def _metadata(suffix: str) -> dict[str, Any]:
    """No creation date in the files, so the same runs give the same bytes."""
    return {"Date": None} if suffix == "svg" else {"Software": None}


def write_plots(runs: Runs, metrics: Sequence[Metric], series_labels: Mapping[str, str],
                out: Path, title: str) -> list[Path]:
    """``timeseries`` and ``summary`` figures (module docstring), PNG and SVG each."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "gpusched"   # SVG element ids from a fixed salt, not random
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    keys = [k for k in series_labels if all(k in r.series for rs in runs.values() for r in rs)]
    if keys:
        fig, axes = plt.subplots(len(keys), 1, figsize=(9, 2.6 * len(keys)), sharex=True,
                                 squeeze=False)
        for ax, key in zip(axes[:, 0], keys):
            _plot_series(ax, runs, key, series_labels[key])
        axes[-1, 0].set_xlabel("virtual time (hours)")
        axes[0, 0].legend(fontsize=7, loc="best")
        fig.suptitle(f"{title}: mean over seeds, band = lowest..highest seed", fontsize=10)
        fig.tight_layout()
        paths += _save(fig, out, "timeseries")
        plt.close(fig)
    fig = _summary_figure(plt, runs, metrics, title)
    paths += _save(fig, out, "summary")
    plt.close(fig)
    return paths


def _plot_series(ax: Any, runs: Runs, key: str, label: str) -> None:
    import numpy as np

    for k, (name, variant_runs) in enumerate(runs.items()):
        grid, values = resample([r.series[key] for r in variant_runs])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean, low, high = values.mean(0), values.min(0), values.max(0)
        hours = grid / 3600.0
        style = _style(k)
        ax.plot(hours, mean, label=f"{name} (n={len(variant_runs)})",
                markevery=max(1, len(grid) // 10), **style)
        if len(variant_runs) > 1:
            ax.fill_between(hours, low, high, color=style["color"], alpha=0.15, linewidth=0)
        ax.set_ylim(bottom=min(0.0, float(np.nanmin(low)) if low.size else 0.0))
    ax.set_ylabel(label, fontsize=8)
    ax.grid(alpha=0.3)


def _summary_figure(plt: Any, runs: Runs, metrics: Sequence[Metric], title: str) -> Any:
    names = list(runs)
    columns = min(3, len(metrics))
    rows = -(-len(metrics) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.4 * columns, 2.9 * rows), squeeze=False)
    for ax, metric in zip(axes.flat, metrics):
        for k, name in enumerate(names):
            e = estimate(_values(runs[name], metric.key))
            err = 0.0 if math.isnan(e.half_width) else e.half_width
            style = _style(k)
            ax.errorbar([k], [e.mean], yerr=[err], fmt=style["marker"], color=style["color"],
                        capsize=4, markersize=6, label=name)
        ax.set_xticks(range(len(names)), names, rotation=20, ha="right", fontsize=7)
        ax.set_xlim(-0.6, len(names) - 0.4)
        ax.set_title(metric.label, fontsize=8)
        ax.ticklabel_format(axis="y", useOffset=False)
        ax.grid(alpha=0.3, axis="y")
    for ax in list(axes.flat)[len(metrics):]:
        ax.set_visible(False)
    fig.suptitle(f"{title}: mean and 95 % t interval over seeds", fontsize=10)
    fig.tight_layout()
    return fig
