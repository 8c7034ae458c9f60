"""Experiment outputs: published-layout CSVs, the terminal summary, PNG plots, parallel runs.

- ``run_all(specs, jobs, progress)``: runs ``sim.experiment.run`` over specs, in a ``spawn``
  process pool when ``jobs > 1`` (results ordered like the specs), with a rich progress bar that
  advances per batch of pods (``sim.progress``).
- ``write_csvs(results, out)``: ``allocation.csv``, ``fragmentation.csv``,
  ``fragmentation_ratio.csv`` with columns ``workload,sc_policy,tune,seed,total_gpus,0..130``
  (the published layout; ``total_gpus`` in every file here).
- ``load_published(dir)`` / ``summary_rows(results, published)``: mean allocation at 100 % and
  130 % per (workload, policy) beside the published mean; ``print_summary`` renders it with rich.
- ``write_plots(results, out, published_dir)``: allocation and fragmentation vs arrived, PNG and
  SVG: seed-spread band, published curve overlaid, a zoomed 85..130 % panel, lines told apart by
  marker and dash as well as colour (Okabe-Ito palette), policy names as users say them.

Neighbours: ``sim.experiment``; used by ``sim.commands`` and ``scripts/compare_fgd.py``.
"""

from __future__ import annotations

import csv
import warnings
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from gpusched.sim.experiment import POINTS, RunResult, RunSpec
from gpusched.sim.progress import RunProgress, run_local
from gpusched.objects.digits import is_digits

if TYPE_CHECKING:
    import numpy as np
    from matplotlib.axes import Axes


REDIRECTED_WIDTH = 10_000        # columns of the summary table when stdout is not a terminal
HEADER = ["workload", "sc_policy", "tune", "seed", "total_gpus"] + [str(i) for i in range(POINTS)]
FILES = {"allocation.csv": "allocation", "fragmentation.csv": "fragmentation",
         "fragmentation_ratio.csv": "fragmentation_ratio"}


def run_all(specs: list[RunSpec], jobs: int = 1, progress: bool = True) -> list[RunResult]:
    results: list[RunResult | None] = [None] * len(specs)

    def finished(i: int, result: RunResult) -> None:
        results[i] = result

    with RunProgress(len(specs), progress) as bar:
        run_local(list(enumerate(specs)), jobs, finished, bar)
    return [r for r in results if r is not None]


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
    curves = load_published_curves(directory, "allocation")
    return {key: {p: curve[p] for p in (100, 130)} for key, curve in curves.items()}


PUBLISHED_FILES = {"allocation": "analysis_allo_discrete.csv",
                   "fragmentation": "analysis_frag_discrete.csv"}


def load_published_curves(directory: str | Path, field: str) -> dict[tuple[str, str], list[float]]:
    """(workload, sc_policy) -> the published mean over seeds at every point 0..130 (nan where a
    seed has no value); empty when the folder or file is missing."""
    path = Path(directory) / PUBLISHED_FILES.get(field, "")
    if not path.is_file():
        return {}
    rows: dict[tuple[str, str], list[list[float]]] = defaultdict(list)
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            rows[(row["workload"], row["sc_policy"])].append(
                [float(row[str(p)]) if row.get(str(p)) not in (None, "") else float("nan")
                 for p in range(POINTS)])
    return {key: [_nanmean([seed[p] for seed in seeds]) for p in range(POINTS)]
            for key, seeds in rows.items()}


def _nanmean(values: list[float]) -> float:
    present = [v for v in values if v == v]
    return sum(present) / len(present) if present else float("nan")


def summary_rows(results: Iterable[RunResult],
                 published: dict[tuple[str, str], dict[int, float]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], list[RunResult]] = defaultdict(list)
    for r in results:
        groups[(r.workload, r.policy)].append(r)
    rows = []
    for (workload, policy), runs in sorted(groups.items()):
        row: dict[str, Any] = {"workload": workload, "policy": policy, "seeds": len(runs)}
        for point in (100, 130):
            row[f"alloc{point}"] = sum(r.allocation[point] for r in runs) / len(runs)
            row[f"published{point}"] = published.get((workload, policy), {}).get(point)
        rows.append(row)
    return rows


def print_summary(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="GPU allocation (%) at arrived 100 % and 130 % (mean over seeds)")
    for column in ("workload", "policy", "seeds", "alloc@100", "published@100", "alloc@130", "published@130"):
        table.add_column(column, justify="left" if column in ("workload", "policy") else "right")
    for row in rows:
        table.add_row(row["workload"], row["policy"], str(row["seeds"]),
                      f"{row['alloc100']:.2f}", _maybe(row["published100"]),
                      f"{row['alloc130']:.2f}", _maybe(row["published130"]))
    console = Console()
    if not console.is_terminal:          # redirected: never squeeze or cut the columns (the
        console = Console(width=REDIRECTED_WIDTH)   # table keeps its natural width)
    console.print(table)


def _maybe(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


# How users say the policies, and a style per policy that survives greyscale printing.
POLICY_NAMES = {"01-Random": "Random", "02-DotProd": "DotProd", "03-GpuClustering": "GPU clustering",
                "04-GpuPacking": "GPU packing", "05-BestFit": "Best fit", "06-FGD": "FGD"}
# Okabe-Ito, the colour-blind-safe palette; markers and dashes tell lines apart without colour.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
DASHES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1)), (0, (3, 1)), (0, (1, 1)), (0, (8, 2)))
ZOOM = (85, 130)                 # arrived % where the FGD policies differ
PLOT_FIELDS = (("allocation", "GPU allocation (%)"), ("fragmentation", "fragmentation (% of GPUs)"))


def policy_display_name(label: str) -> str:
    """``"06-FGD"`` -> ``"FGD"``; gpusched's own labels lose their number the same way."""
    return POLICY_NAMES.get(label, label.split("-", 1)[1] if is_digits(label[:2]) and "-" in label else label)


def write_plots(results: Iterable[RunResult], out: str | Path,
                published_dir: str | Path | None = None) -> list[Path]:
    """Per field, one figure (PNG and SVG): the mean over seeds with a band from the lowest to the
    highest seed, the published mean as a thin dotted line of the same colour where a published
    curve exists, and a zoomed panel over arrived 85..130 %."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    groups: dict[tuple[str, str], list[RunResult]] = defaultdict(list)
    for r in results:
        groups[(r.workload, r.policy)].append(r)
    several_workloads = len({w for w, _ in groups}) > 1
    paths = []
    x = np.arange(POINTS)
    for field, ylabel in PLOT_FIELDS:
        published = load_published_curves(published_dir, field) if published_dir else {}
        fig, (whole, zoom) = plt.subplots(1, 2, figsize=(11, 4.5), gridspec_kw={"width_ratios": [3, 2]})
        for k, ((workload, policy), runs) in enumerate(sorted(groups.items())):
            values = np.array([getattr(r, field) for r in runs], dtype=float)
            with warnings.catch_warnings():      # all-nan columns (points no run reached) stay nan
                warnings.simplefilter("ignore", RuntimeWarning)
                mean, low, high = np.nanmean(values, 0), np.nanmin(values, 0), np.nanmax(values, 0)
            name = policy_display_name(policy) + (f" ({workload})" if several_workloads else "")
            style = {"color": PALETTE[k % len(PALETTE)], "linestyle": DASHES[k % len(DASHES)],
                     "marker": MARKERS[k % len(MARKERS)], "markevery": 10, "markersize": 4, "linewidth": 1.4}
            ref = published.get((workload, policy))
            for ax in (whole, zoom):
                ax.plot(x, mean, label=f"{name} (n={len(runs)})", **style)
                if len(runs) > 1:
                    ax.fill_between(x, low, high, color=style["color"], alpha=0.15, linewidth=0)
                if ref is not None:
                    ax.plot(x, ref, color=style["color"], linestyle=(0, (1, 2)), linewidth=0.9,
                            label=f"{name}, published" if ax is whole else None)
        zoom.set_xlim(*ZOOM)
        _fit_y(zoom, [line.get_ydata() for line in zoom.get_lines()], x, ZOOM)
        for ax, title in ((whole, "arrived 0..130 %"), (zoom, f"zoom: arrived {ZOOM[0]}..{ZOOM[1]} %")):
            ax.set_xlabel("arrived GPU request (% of capacity)")
            ax.set_ylabel(ylabel)
            ax.set_title(title, fontsize=9)
            ax.grid(alpha=0.3)
        whole.legend(fontsize=7, loc="upper left")
        fig.suptitle(f"{ylabel}: mean over seeds, band = lowest..highest seed", fontsize=10)
        fig.tight_layout()
        for suffix in ("png", "svg"):
            path = out / f"{field}.{suffix}"
            fig.savefig(path, dpi=130, bbox_inches="tight")
            paths.append(path)
        plt.close(fig)
    return paths


def _fit_y(ax: Axes, series: Sequence[Any], x: np.ndarray, window: tuple[int, int]) -> None:
    """Scale the zoomed panel's y axis to the data inside the window."""
    import numpy as np

    inside = (x >= window[0]) & (x <= window[1])
    values = np.concatenate([np.asarray(s, dtype=float)[inside] for s in series]) if series else np.array([])
    values = values[np.isfinite(values)]
    if values.size:
        pad = max((values.max() - values.min()) * 0.08, 0.5)
        ax.set_ylim(values.min() - pad, values.max() + pad)
