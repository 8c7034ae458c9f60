"""Benchmark: one FGD run (default trace, seed 42) and, with --full, 6 policies x 10 seeds.

Every run goes through the real scheduler (``sim.experiment.run`` -> ``Scheduler.schedule_one``).
Targets of issue 4 on the 2-core machine: one FGD run < 30 s; the 60 runs < 10 min with --jobs 2.

Usage: python bench/bench_fgd.py [--full] [--jobs 2]. Prints wall seconds (this is the one place
that reads the wall clock: it measures, it does not decide anything).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from gpusched.sim.experiment import RunSpec, run
from gpusched.sim.report import run_all

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "alibaba-gpu-v2023"
NODES, PODS = str(DATA / "openb_node_list_gpu_node.csv"), str(DATA / "openb_pod_list_default.csv")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    start = time.perf_counter()
    result = run(RunSpec(NODES, PODS, "fgd", 42))
    print(f"one FGD run: {time.perf_counter() - start:.1f} s (alloc@100 {result.allocation[100]})")
    if args.full:
        specs = [RunSpec(NODES, PODS, p, s) for p in ("random", "dotprod", "clustering", "packing",
                                                      "bestfit", "fgd") for s in range(42, 52)]
        start = time.perf_counter()
        run_all(specs, jobs=args.jobs, progress=False)
        took = time.perf_counter() - start
        print(f"60 runs (6 policies x seeds 42-51), --jobs {args.jobs}: {took:.0f} s = {took / 60:.1f} min")


if __name__ == "__main__":
    main()
