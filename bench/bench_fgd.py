"""Benchmark: one FGD run (default trace, seed 42) and, with --full, 6 policies x 10 seeds.

Every run goes through the real scheduler (``sim.experiment.run`` -> ``Scheduler.schedule_one``).
Targets on the 2-core machine: one FGD fill-only run < 3 s (the trace files are read before the
clock starts); the 60 runs < 10 min with --jobs 2.

Usage: python bench/bench_fgd.py [--full] [--jobs 2] [--seed 42] [--policy fgd]
(``--policy``: another policy of ``gpusched experiment fgd`` for the single run, e.g. fgdfill).
Prints wall and CPU seconds (user + system of this process) and the load average, since the
shared machine's load inflates the wall time; this is the one place that reads the clock: it measures, it decides nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

from gpusched.sim.experiment import RunSpec, _nodes, _pods, run
from gpusched.sim.report import run_all

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "alibaba-gpu-v2023"
NODES, PODS = str(DATA / "openb_node_list_gpu_node.csv"), str(DATA / "openb_pod_list_default.csv")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--policy", default="fgd", help="the policy of the single timed run")
    args = parser.parse_args()
    _nodes(NODES), _pods(PODS)                     # CSV parsing is not part of the run
    before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    result = run(RunSpec(NODES, PODS, args.policy, args.seed))
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"one {args.policy} run, seed {args.seed}: wall {wall:.2f} s, CPU {cpu:.2f} s "
          f"(user {after.ru_utime - before.ru_utime:.2f}, system {after.ru_stime - before.ru_stime:.2f}); "
          f"{result.pods} pods, alloc@100 {result.allocation[100]}; load average {load}")
    if args.full:
        specs = [RunSpec(NODES, PODS, p, s) for p in ("random", "dotprod", "clustering", "packing",
                                                      "bestfit", "fgd") for s in range(42, 52)]
        start = time.perf_counter()
        run_all(specs, jobs=args.jobs, progress=False)
        took = time.perf_counter() - start
        print(f"60 runs (6 policies x seeds 42-51), --jobs {args.jobs}: {took:.0f} s = {took / 60:.1f} min")


if __name__ == "__main__":
    main()
