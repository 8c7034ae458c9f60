"""The fuzz suite's large budget (issue 25): cases per surface and each failure class, with the
first example of each.

    python -m bench.fuzz [--cases 10000] [--surface manifests|api|concurrent|protobuf ...] [--seed 0] [--minutes M]

Run from the repository root (it imports the suite's surfaces from ``tests/fuzz``). Each surface
runs the table cases of issue 25 and then ``--cases`` generated cases (random hypothesis
examples under ``--seed``; concurrent: ``--cases`` writes in rounds), every process it starts
under the suite's 2 GiB memory limit. Prints one row per surface (cases, checks, each class),
the first example of each failure class, the CPU time of this process and its children, the
wall time and the load average. Not a test: the default suite's fixed budget is
``tests/fuzz/test_fuzz.py``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from tests.fuzz import surface_api, surface_concurrent, surface_manifests, surface_protobuf
from tests.fuzz.harness import CLASSES, Tally

SURFACES = ("manifests", "api", "concurrent", "protobuf")


def run_surface(name: str, workdir: Path, cases: int, seed: int, stop_at: float | None) -> Tally:
    workdir.mkdir(parents=True, exist_ok=True)
    if name == "manifests":
        return surface_manifests.run(workdir, cases, derandomize=False, seed=seed, stop_at=stop_at)
    if name == "api":
        return surface_api.run(workdir, cases, derandomize=False, seed=seed, stop_at=stop_at)
    if name == "protobuf":
        return surface_protobuf.run(workdir, cases, derandomize=False, seed=seed, stop_at=stop_at)
    return surface_concurrent.run(workdir, cases, seed=seed, stop_at=stop_at)


def table(tallies: list[tuple[Tally, float, float]]) -> str:
    head = ["surface", "cases", "checks", *CLASSES, "slowest s", "CPU s", "wall s"]
    rows = [[t.surface, str(t.cases), str(t.checks), *(str(t.counts[c]) for c in CLASSES),
             f"{t.slowest_s:.1f}", f"{cpu:.0f}", f"{wall:.0f}"] for t, cpu, wall in tallies]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return "\n".join("  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(r, widths)))
                     for r in [head, *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000, help="generated cases per surface")
    parser.add_argument("--surface", action="append", choices=SURFACES, help="default: all four")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--minutes", type=float, default=0,
                        help="stop each surface's generated cases after this long (0: no limit); "
                             "the table says how many ran")
    args = parser.parse_args()
    tallies = []
    with tempfile.TemporaryDirectory(prefix="gpusched-fuzz-") as tmp:
        for name in args.surface or SURFACES:
            before, start = os.times(), time.monotonic()
            stop_at = start + args.minutes * 60 if args.minutes else None
            tally = run_surface(name, Path(tmp, name), args.cases, args.seed, stop_at)
            after = os.times()
            cpu = sum(after[:4]) - sum(before[:4])
            tallies.append((tally, cpu, time.monotonic() - start))
            print(f"{tally.surface}: {tally.cases} cases, {cpu:.0f} s CPU, load {os.getloadavg()}", flush=True)
    print()
    print(table(tallies))
    for tally, _, _ in tallies:
        for cls, example in tally.failures().items():
            print(f"\n{tally.surface} / {cls}: {example}")
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
