"""Replay benchmark: the full default openb trace through the embedded cluster (a script, not a test).

The 8,152 pods of ``openb_pod_list_default.csv`` arrive at their creation times and leave after
their run times on the 1,213 GPU nodes of ``openb_node_list_gpu_node.csv``, scheduled by the FGD
policy (``gpusched replay --policy fgd``), one seed. Prints wall and CPU seconds, the steps of
the virtual clock, and the load average (on the shared 2-core machine only CPU seconds compare).
Target (issue "Speed"): under 30 s.

    python bench/bench_replay.py                   # full trace, FGD, seed 42
    python bench/bench_replay.py --limit 2000      # the first 2,000 pods
    python bench/bench_replay.py --profile         # cProfile top functions
    python bench/bench_replay.py --policy default --load 0.95 --until 3   # the capacity example's peak
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import resource
import sys
import time
from dataclasses import replace
from pathlib import Path

from gpusched.sim.replay import ReplayConfig, replay
from gpusched.sim.replay_input import alibaba_trace
from gpusched.sim.replay_load import scale_for_load, time_scaled

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "alibaba-gpu-v2023"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", default=str(DATA / "openb_pod_list_default.csv"))
    parser.add_argument("--nodes", default=str(DATA / "openb_node_list_gpu_node.csv"))
    parser.add_argument("--policy", default="fgd")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--limit", type=int, default=0, help="replay only the first N pods")
    parser.add_argument("--load", type=float, default=None,
                        help="compress arrivals to this peak load (gpusched replay --load)")
    parser.add_argument("--until", type=float, default=None, help="stop after this many hours")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    started, cpu = time.perf_counter(), time.process_time()
    trace = alibaba_trace(args.nodes, args.pods)
    if args.limit:
        trace = replace(trace, jobs=trace.jobs[:args.limit])
    if args.load is not None:
        trace = time_scaled(trace, scale_for_load(trace, args.load))
    loaded = time.perf_counter() - started
    config = ReplayConfig(policy=args.policy, seed=args.seed,
                          until=None if args.until is None else args.until * 3600.0)
    profiler = cProfile.Profile(time.process_time) if args.profile else None   # CPU: the machine is shared
    if profiler is not None:
        profiler.enable()
    result = replay(trace, config)
    if profiler is not None:
        profiler.disable()
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(30)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    summary = result.summary
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"pods {len(trace.jobs)} nodes {len(trace.nodes)} policy {args.policy} seed {args.seed}")
    print(f"started {summary.started} finished {summary.finished} never started "
          f"{summary.never_started} preemptions {summary.preemptions} "
          f"GPU-hours used {summary.gpu_hours_used:,.0f}")
    print(f"wall {wall:.1f} s (trace load {loaded:.1f} s), CPU {cpu:.1f} s, peak RSS {rss:.0f} MiB, "
          f"load average {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
