"""Overload benchmark: a sustained-overload replay, ``gpusched replay --loops 3 --load 1.5``,
shortened to its first ``--limit`` pods (a script, not a test).

The default openb trace is looped three times and its arrivals compressed to a peak load of 1.5,
so pods keep arriving while the cluster is full and the scheduling queue holds many unschedulable
pods for a long time. The cost of such a replay should follow the events (arrivals, ends,
attempts), not events x pending pods (issue 28 point 5: re-sorting every pending pod at every
settle round left the full replay unfinished after 12 CPU-minutes). Prints CPU seconds, the pods
started and never started, and the load average (on a shared machine only CPU seconds compare).

    python bench/bench_overload.py                 # the first 3,000 pods of the looped trace
    python bench/bench_overload.py --limit 0       # the whole looped trace
    python bench/bench_overload.py --profile       # cProfile top functions
    python bench/bench_overload.py --limit 2000 --node-every 8 --profile   # overloaded quickly

The first 3,000 pods of the full cluster never reach overload (every one starts). To profile
the overloaded phase in a few CPU-minutes, ``--node-every N`` keeps every N-th node while the
arrivals keep the time scale found for the whole cluster at ``--load``: the smaller cluster then
sees about N x the load, fills within the first few hundred pods and keeps a growing queue of
unschedulable pods (with ``--node-every 8``: 152 nodes; the first 2,000 pods preempt 567 times,
and by the first 3,000 up to 684 pods wait in the queue).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from dataclasses import replace
from pathlib import Path

from gpusched.sim.replay import ReplayConfig, replay
from gpusched.sim.replay_input import alibaba_trace
from gpusched.sim.replay_load import looped, scale_for_load, time_scaled

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "alibaba-gpu-v2023"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", default=str(DATA / "openb_pod_list_default.csv"))
    parser.add_argument("--nodes", default=str(DATA / "openb_node_list_gpu_node.csv"))
    parser.add_argument("--policy", default="default")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--loops", type=int, default=3)
    parser.add_argument("--load", type=float, default=1.5)
    parser.add_argument("--limit", type=int, default=3000,
                        help="replay only the first N pods of the looped trace (0: all)")
    parser.add_argument("--node-every", type=int, default=1,
                        help="keep every N-th node; the time scale stays the whole cluster's")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    trace = looped(alibaba_trace(args.nodes, args.pods), args.loops)
    trace = time_scaled(trace, scale_for_load(trace, args.load))
    if args.limit:
        trace = replace(trace, jobs=trace.jobs[:args.limit])
    if args.node_every > 1:
        trace = replace(trace, nodes=trace.nodes[::args.node_every])
    profiler = cProfile.Profile(time.process_time) if args.profile else None   # CPU: shared machine
    cpu = time.process_time()
    if profiler is not None:
        profiler.enable()
    result = replay(trace, ReplayConfig(policy=args.policy, seed=args.seed))
    if profiler is not None:
        profiler.disable()
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(40)
    cpu = time.process_time() - cpu
    summary = result.summary
    print(f"pods {len(trace.jobs)} nodes {len(trace.nodes)} (every {args.node_every}) policy {args.policy} loops {args.loops} "
          f"load {args.load} seed {args.seed}")
    print(f"started {summary.started} finished {summary.finished} never started "
          f"{summary.never_started} preemptions {summary.preemptions}")
    print(f"replay CPU {cpu:.1f} s, load average {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
