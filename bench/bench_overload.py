"""Overload benchmark: the sustained-overload replay ``gpusched replay --loops 3 --load 1.5``, in
full and in a shortened form that reaches overload in minutes (a script, not a test).

The default openb trace is looped three times (24,456 pods on 1,213 nodes) and its arrivals
compressed to a peak load of 1.5, so pods keep arriving while the cluster is full and the
scheduling queue holds many unschedulable pods for a long time. The cost of such a replay should
follow the events (arrivals, ends, attempts), not events x pending pods. Prints, per form, CPU
seconds, the pods started and never started, the preemptions and the load average (on a shared
machine only CPU seconds compare).

Forms (``--form``, comma-separated, in that order; default ``short,full``):

- ``short``: the first 2,000 pods on every 8th node (152 nodes) with the whole cluster's time
  scale: the smaller cluster sees about 8x the load, fills within the first few hundred pods
  and keeps a growing queue of unschedulable pods (567 preemptions);
- ``first``: the first 3,000 pods on the whole cluster (every one starts: no overload);
- ``full``: the whole looped trace on the whole cluster (many CPU-minutes).

``--limit N`` / ``--node-every N`` replace the form by one of their own.

    python bench/bench_overload.py                         # short, then full
    python bench/bench_overload.py --form short            # overloaded in a few CPU-minutes
    python bench/bench_overload.py --form short --profile  # cProfile top functions
    python bench/bench_overload.py --limit 1200 --node-every 8
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

from gpusched.sim.replay import ReplayConfig, ReplayTrace, replay
from gpusched.sim.replay_input import alibaba_trace
from gpusched.sim.replay_load import looped, scale_for_load, time_scaled

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "alibaba-gpu-v2023"


FORMS = {"short": (2000, 8), "first": (3000, 1), "full": (0, 1)}   # (first N pods or 0, node every)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", default=str(DATA / "openb_pod_list_default.csv"))
    parser.add_argument("--nodes", default=str(DATA / "openb_node_list_gpu_node.csv"))
    parser.add_argument("--policy", default="default")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--loops", type=int, default=3)
    parser.add_argument("--load", type=float, default=1.5)
    parser.add_argument("--form", default="short,full",
                        help=f"comma-separated forms to run, of {', '.join(FORMS)}")
    parser.add_argument("--limit", type=int, default=None,
                        help="replay only the first N pods of the looped trace (0: all)")
    parser.add_argument("--node-every", type=int, default=None,
                        help="keep every N-th node; the time scale stays the whole cluster's")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    if args.limit is not None or args.node_every is not None:
        forms = [("custom", args.limit or 0, args.node_every or 1)]
    else:
        names = [name.strip() for name in args.form.split(",") if name.strip()]
        unknown = [name for name in names if name not in FORMS]
        if unknown or not names:
            parser.error(f"--form: unknown form {', '.join(unknown) or '(none)'}; "
                         f"valid: {', '.join(FORMS)}")
        forms = [(name, *FORMS[name]) for name in names]
    trace = looped(alibaba_trace(args.nodes, args.pods), args.loops)
    trace = time_scaled(trace, scale_for_load(trace, args.load))
    for name, limit, node_every in forms:
        run_form(args, name, trace, limit, node_every)
    return 0


def run_form(args: argparse.Namespace, name: str, trace: ReplayTrace, limit: int,
             node_every: int) -> None:
    """Replay one form of the looped trace and print its line."""
    if limit:
        trace = replace(trace, jobs=trace.jobs[:limit])
    if node_every > 1:
        trace = replace(trace, nodes=trace.nodes[::node_every])
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
    print(f"[{name}] pods {len(trace.jobs)} nodes {len(trace.nodes)} (every {node_every}) "
          f"policy {args.policy} loops {args.loops} load {args.load} seed {args.seed}")
    print(f"[{name}] started {summary.started} finished {summary.finished} never started "
          f"{summary.never_started} preemptions {summary.preemptions}")
    print(f"[{name}] replay CPU {cpu:.1f} s, load average "
          f"{' '.join(f'{v:.1f}' for v in os.getloadavg())}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
