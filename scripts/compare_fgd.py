"""Compare gpusched's FGD-protocol runs with the published results, and write the tables.

Runs workloads x policies x seeds (default: the 9 shared workloads x the 6 published policies x
seeds 42-51) through ``gpusched.sim.experiment.run`` with ``--jobs`` processes, stores each
(workload, policy)'s runs in the published CSV layout under ``--results DIR/<workload>/<policy>/``
(a pair already stored anywhere under ``DIR/<workload>/`` is not run again unless ``--rerun``),
then rewrites the generated block of ``docs/fgd-results.md`` (between the ``compare_fgd``
markers) from every ``allocation.csv`` found under ``--results``: mean allocation at arrived
100 % and 130 % per policy, the published mean beside it, and the difference (the issue's
tolerance is 0.5 points). Policies without published values (gpusched's own) show their mean
and, in the "vs FGD" table, the difference to gpusched's FGD on the same seeds.

Usage::

    .venv/bin/python scripts/compare_fgd.py --jobs 2                     # everything (~35 min on 2 cores)
    .venv/bin/python scripts/compare_fgd.py --workloads default,cpu050 --jobs 2
    .venv/bin/python scripts/compare_fgd.py --doc-only                   # tables from stored runs

Neighbours: ``gpusched.sim.experiment`` / ``sim.report`` (runs, CSVs, published means).
"""

from __future__ import annotations

import argparse
import csv
import logging
import re
import sys
from collections import defaultdict
from pathlib import Path

from gpusched.sim.experiment import POLICIES, RunSpec, parse_seeds
from gpusched.sim.report import run_all, write_csvs

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
WORKLOADS = ("default", "cpu050", "cpu200", "gpushare40", "gpushare80", "multigpu20", "multigpu40",
             "gpuspec10", "gpuspec25")
PUBLISHED_POLICIES = ("random", "dotprod", "clustering", "packing", "bestfit", "fgd")
TOLERANCE = 0.5
BEGIN, END = "<!-- compare_fgd:begin -->", "<!-- compare_fgd:end -->"

log = logging.getLogger("compare_fgd")


def read_means(path: Path) -> dict[tuple[str, str], dict[str, object]]:
    """(workload, sc_policy) -> {"seeds": [...], 100: mean, 130: mean} from an allocation CSV."""
    values: dict[tuple[str, str], dict[str, list]] = defaultdict(lambda: defaultdict(list))
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            cell = values[(row["workload"], row["sc_policy"])]
            cell["seeds"].append(int(float(row["seed"])))
            for point in ("100", "130"):
                cell[point].append(float(row[point]))
    return {key: {"seeds": sorted(v["seeds"]), 100: sum(v["100"]) / len(v["100"]),
                  130: sum(v["130"]) / len(v["130"])} for key, v in values.items()}


def stored(results: Path, workload: str) -> set[str]:
    """The sc_policy labels that already have runs under ``results/<workload>/``."""
    return {label for path in (results / workload).rglob("allocation.csv")
            for (_, label) in read_means(path)}


def run_workload(workload: str, policies: list[str], seeds: list[int], jobs: int,
                 results: Path) -> None:
    nodes = SHARED / "alibaba-gpu-v2023" / "openb_node_list_gpu_node.csv"
    pods = SHARED / "alibaba-gpu-v2023" / f"openb_pod_list_{workload}.csv"
    specs = [RunSpec(str(nodes), str(pods), p, s) for p in policies for s in seeds]
    log.info("%s: %d runs (%s) with --jobs %d", workload, len(specs), ",".join(policies), jobs)
    done = run_all(specs, jobs=jobs, progress=sys.stderr.isatty())
    for policy in policies:
        write_csvs([r for r in done if r.policy == POLICIES[policy][0]], results / workload / policy)


def table(ours: dict, published: dict, point: int, policies: list[str]) -> list[str]:
    labels = [POLICIES[p][0] for p in policies]
    lines = [f"| Workload | {' | '.join(labels)} |", "|---" * (len(labels) + 1) + "|"]
    for workload in WORKLOADS:
        name = f"openb_pod_list_{workload}"
        if not any((name, label) in ours for label in labels):
            continue
        cells = []
        for label in labels:
            mine, pub = ours.get((name, label)), published.get((name, label))
            if mine is None:
                cells.append("-")
            elif pub is None:
                cells.append(f"{mine[point]:.2f} (n={len(mine['seeds'])})")
            else:
                diff = mine[point] - pub[point]
                flag = "" if abs(diff) <= TOLERANCE else " **!**"
                few = "" if len(mine["seeds"]) == 10 else f" n={len(mine['seeds'])}"
                cells.append(f"{mine[point]:.2f} / {pub[point]:.2f} ({diff:+.2f}){flag}{few}")
        lines.append(f"| {workload} | {' | '.join(cells)} |")
    return lines


def versus_fgd(ours: dict, own: list[str]) -> list[str]:
    """gpusched's own policies against gpusched's FGD on the same workload and seeds."""
    fgd = POLICIES["fgd"][0]
    lines = ["| Workload | Policy | seeds | @100 | FGD @100 | diff | @130 | FGD @130 | diff |",
             "|---" * 9 + "|"]
    for policy in own:
        label = POLICIES[policy][0]
        for workload in WORKLOADS:
            name = f"openb_pod_list_{workload}"
            mine, base = ours.get((name, label)), ours.get((name, fgd))
            if mine is None or base is None:
                continue
            seeds = mine["seeds"] if mine["seeds"] == base["seeds"] else "seeds differ"
            cells = [f"{mine[p]:.2f} | {base[p]:.2f} | {mine[p] - base[p]:+.2f}" for p in (100, 130)]
            lines.append(f"| {workload} | {label} | {seeds if isinstance(seeds, str) else len(seeds)} | "
                         + " | ".join(cells) + " |")
    return lines


def render(results: Path, published_csv: Path, policies: list[str]) -> str:
    ours: dict = {}
    for path in sorted(results.rglob("allocation.csv")):
        ours.update(read_means(path))
    published = read_means(published_csv)
    seeds = sorted({s for v in ours.values() for s in v["seeds"]})
    workloads = [w for w in WORKLOADS if any(k[0] == f"openb_pod_list_{w}" for k in ours)]
    worst = max((abs(ours[k][p] - published[k][p]) for k in ours if k in published
                 for p in (100, 130)), default=float("nan"))
    lines = [BEGIN, "", "Generated by `scripts/compare_fgd.py` from the runs under "
             f"`{results.relative_to(REPO) if results.is_relative_to(REPO) else results}`; "
             f"seeds {seeds[0]}-{seeds[-1]} ({len(seeds)}) unless a cell says n=...; workloads run: "
             f"{', '.join(workloads)}. "
             "Each cell: gpusched mean / published mean (difference); **!** marks a difference "
             f"above {TOLERANCE} points. Largest |difference| over the cells shown: {worst:.2f}.", ""]
    for point in (100, 130):
        lines += [f"GPU allocation (%) at arrived = {point} %:", ""]
        lines += table(ours, published, point, policies) + [""]
    own = [p for p in POLICIES if p not in PUBLISHED_POLICIES
           and any(label == POLICIES[p][0] for (_, label) in ours)]
    if own:
        lines += ["gpusched's own policies vs gpusched's FGD (same seeds; mean allocation %):", ""]
        lines += versus_fgd(ours, own) + [""]
    return "\n".join(lines + [END])


def write_doc(doc: Path, block: str) -> None:
    text = doc.read_text() if doc.is_file() else "# FGD results\n\n"
    if BEGIN in text and END in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n## Full comparison\n\n" + block + "\n"
    doc.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--policies", default=",".join(PUBLISHED_POLICIES))
    parser.add_argument("--seeds", default="42-51")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--results", default=str(REPO / "results" / "fgd"), help="run CSVs (git-ignored)")
    parser.add_argument("--doc", default=str(REPO / "docs" / "fgd-results.md"))
    parser.add_argument("--rerun", action="store_true", help="run workloads that already have CSVs")
    parser.add_argument("--doc-only", action="store_true", help="only regenerate the tables")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    results = Path(args.results)
    policies = [p for p in args.policies.split(",") if p]
    if not args.doc_only:
        for workload in [w for w in args.workloads.split(",") if w]:
            if workload not in WORKLOADS:
                parser.error(f"unknown workload {workload!r} (one of {', '.join(WORKLOADS)})")
            have = set() if args.rerun else stored(results, workload)
            todo = [p for p in policies if POLICIES[p][0] not in have]
            if len(todo) < len(policies):
                log.info("%s: stored runs used for %s (--rerun to redo)", workload,
                         ",".join(p for p in policies if p not in todo))
            if todo:
                run_workload(workload, todo, parse_seeds(args.seeds), args.jobs, results)
    shown = list(PUBLISHED_POLICIES)
    write_doc(Path(args.doc), render(results, SHARED / "fgd-published" / "analysis_allo_discrete.csv", shown))
    log.info("wrote %s", args.doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
