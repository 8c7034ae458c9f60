"""``gpusched replay``: a trace over virtual time through the embedded cluster and scheduler.

Inputs (one of): ``--pods`` an Alibaba openb pod list with its time columns, ``--jobs`` the job
CSV/Parquet of docs/replay.md, ``-f`` Pod/Job manifests with ``gpusched.io/duration`` (and
``gpusched.io/arrival``); ``--nodes`` an openb node list (its GPU nodes become the cluster).
Prints a summary (wait by job size, GPU-hours used and idle, preemptions) and writes
``timeseries``, ``pods`` and ``summary`` tables to ``--out`` (CSV, and Parquet with pyarrow).
A progress bar advances per simulated hour (on stderr, when ``rich`` is installed:
``gpusched[experiments]``; ``--no-progress`` turns it off).

Neighbours: ``sim.replay`` (the run), ``sim.replay_input`` (readers), ``sim.replay_output``.
"""

from __future__ import annotations

import argparse
import math
from typing import Any, Callable

MAX_SEED = 2**32 - 1            # NumPy's seeds

EXAMPLES = """Examples:
  # The Alibaba default trace on its 1,213 GPU nodes, FGD policy, one seed
  gpusched replay --nodes ../shared/data/alibaba-gpu-v2023/openb_node_list_gpu_node.csv \\
      --pods ../shared/data/alibaba-gpu-v2023/openb_pod_list_default.csv --policy fgd --seed 42 --out replay-fgd
  # The same pods arriving 20,000 times faster (run times as recorded): the cluster gets busy
  gpusched replay --nodes ../shared/data/alibaba-gpu-v2023/openb_node_list_gpu_node.csv \\
      --pods ../shared/data/alibaba-gpu-v2023/openb_pod_list_default.csv --time-scale 20000 --until 2h
  # Your own jobs (docs/replay.md: name,arrival,gpus[,duration,cpu_milli,memory_mib,gpu_model,qos,namespace])
  gpusched replay --nodes nodes.csv --jobs jobs.csv --out replay-jobs
  # Pods and Jobs with gpusched.io/duration and gpusched.io/arrival, first 2 days only
  gpusched replay --nodes nodes.csv -f jobs.yaml --until 2d --sample-every 10m --out replay-yaml"""


def add_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    text = ("Replay a trace over virtual time through the embedded cluster and scheduler: "
            "arrivals, run times, priorities and preemption; time series, per-pod records and a summary")
    parser = sub.add_parser("replay", help=text, description=text, epilog=EXAMPLES,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", required=True, metavar="CSV",
                        help="openb node list (sn,cpu_milli,memory_mib,gpu,model); its GPU nodes")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--pods", metavar="CSV", help="Alibaba openb pod list with time columns")
    source.add_argument("--jobs", metavar="FILE", help="job CSV or Parquet (docs/replay.md)")
    source.add_argument("-f", "--filename", action="append", metavar="PATH",
                        help="Pod/Job manifests (file, directory or -; repeatable)")
    parser.add_argument("--policy", default="default",
                        help="default (kube-scheduler's default profile) or an FGD-study policy: "
                             "fgd, bestfit, packing, clustering, dotprod, random, ...")
    add_load_options(parser)
    parser.add_argument("--seed", type=int, default=0, help="seed of the run (default 0)")
    parser.add_argument("--sample-every", default="1h", metavar="DURATION",
                        help="time-series step (default 1h)")
    parser.add_argument("--until", default=None, metavar="DURATION",
                        help="stop the clock this long after the first arrival (default: when "
                             "nothing is left to happen)")
    parser.add_argument("--out", default="replay-out", help="output folder (default replay-out)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(handler=cmd_replay)


def _duration(text: str, flag: str, positive: bool = False) -> float:
    from gpusched.errors import GpuschedError, UsageError
    from gpusched.objects.duration import parse_duration
    from gpusched.sim.replay_input import MAX_SECONDS
    try:
        seconds = parse_duration(text)
    except GpuschedError as err:
        raise UsageError(f"{flag}: {err}") from None
    if positive and seconds <= 0:
        raise UsageError(f"{flag}: must be longer than 0, got {text}")
    if seconds > MAX_SECONDS:
        raise UsageError(f"{flag}: more than 10 years, got {text}")
    return seconds


def _trace(args: argparse.Namespace) -> Any:
    """The input trace, ``--loops`` times, its arrivals divided by ``--time-scale`` or by
    ``--load``'s scale."""
    from gpusched.sim import replay_input
    from gpusched.sim.replay_load import check_time_scale, looped, scale_for_load, time_scaled
    check_time_scale(args.time_scale)
    if args.pods:
        trace = replay_input.alibaba_trace(args.nodes, args.pods)
    elif args.jobs:
        trace = replay_input.job_trace(args.nodes, args.jobs)
    else:
        trace = replay_input.manifest_trace(args.nodes, list(args.filename))
    trace = looped(trace, args.loops)
    return time_scaled(trace, scale_for_load(trace, args.load) if args.load is not None else args.time_scale)


def cmd_replay(args: argparse.Namespace) -> int:
    from gpusched.errors import UsageError
    from gpusched.sim.replay import ReplayConfig, replay
    from gpusched.sim.replay_output import check_out_folder, write_results
    from gpusched.sim.replay_profile import policy_names
    if args.policy not in policy_names():
        raise UsageError(f'--policy: unknown policy "{args.policy}" (one of {", ".join(policy_names())})')
    if not 0 <= args.seed <= MAX_SEED:
        raise UsageError(f"invalid --seed {args.seed}: must be 0 to {MAX_SEED}")
    check_out_folder(args.out)
    every = _duration(args.sample_every, "--sample-every", positive=True)
    until = _duration(args.until, "--until") if args.until is not None else None
    trace = _trace(args)
    config = ReplayConfig(policy=args.policy, seed=args.seed, sample_every=every, until=until)
    with _progress(not args.no_progress, until) as advance:
        result = replay(trace, config, advance)
    for line in summary_lines(result) + write_results(result, args.out):
        print(line)
    return 0


class _progress:
    """A rich progress bar on stderr in simulated hours; a no-op when off."""

    def __init__(self, on: bool, until: float | None) -> None:
        self.on, self.until = on, until
        self.bar: Any = None
        self.task: Any = None

    def __enter__(self) -> Callable[[float, float], None]:
        import importlib.util
        if self.on and importlib.util.find_spec("rich") is not None:   # rich: gpusched[experiments]
            from rich.console import Console
            from rich.progress import Progress
            self.bar = Progress(console=Console(stderr=True), transient=False)
            self.bar.__enter__()
            self.task = self.bar.add_task("replay (simulated hours)", total=None)
        return self.advance

    def advance(self, done: float, expected: float) -> None:
        if self.bar is None:
            return
        end = self.until if self.until is not None else expected
        self.bar.update(self.task, completed=done / 3600.0,
                        total=max(end, done) / 3600.0 if end else None)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


def summary_lines(result: Any) -> list[str]:
    s = result.summary
    capacity_hours = s.gpu_hours_used + s.gpu_hours_idle
    pct = 100.0 * s.gpu_hours_used / capacity_hours if capacity_hours else 0.0
    lines = [f"replay: {s.pods:,} pods ({s.started:,} started, {s.finished:,} finished, "
             f"{s.never_started:,} never started, {s.refused:,} refused), {s.preemptions:,} "
             f"preemptions, {s.span_seconds / 86400:.2f} days simulated",
             f"GPU-hours: {s.gpu_hours_used:,.1f} used, {s.gpu_hours_idle:,.1f} idle "
             f"({pct:.2f} % allocated on average)",
             "wait by job size (GPUs), seconds:",
             f"{'SIZE':>5} {'PODS':>7} {'STARTED':>8} {'MEAN':>10} {'P50':>10} {'P95':>10} {'P99':>10}"]
    for w in s.wait_by_size:
        cells = " ".join(f"{'-' if math.isnan(v) else f'{v:.1f}':>10}" for v in (w.mean, w.p50, w.p95, w.p99))
        lines.append(f"{w.size:>5} {w.pods:>7,} {w.started:>8,} {cells}")
    return lines


def add_load_options(parser: argparse.ArgumentParser, see: str = "") -> None:
    """``--time-scale``, ``--load`` and ``--loops``: how hard the trace loads the cluster
    (``sim.replay_load``), the same options in ``replay`` and ``whatif``."""
    load = parser.add_mutually_exclusive_group()
    load.add_argument("--time-scale", type=float, default=1.0, metavar="K",
                      help="divide arrival times by K (run times unchanged): K times the arrival rate")
    load.add_argument("--load", type=float, default=None, metavar="X",
                      help="pick the --time-scale whose peak GPU demand (every pod started on "
                           f"arrival) is X times the cluster's GPUs, e.g. 0.95{see}")
    parser.add_argument("--loops", type=int, default=1, metavar="N",
                        help="the trace N times back to back (before --time-scale or --load): "
                             "N times the work (default 1)")
