"""``gpusched whatif``: compare variants of one replay; ``gpusched whatif pod -f``: one pod now.

The variant form (``gpusched whatif --pods trace.csv --nodes nodes.csv --seeds 42-46
--variant "plus 8 H100: --add-nodes 8xH100"``) replays the trace once per variant and seed
(``sim.whatif``), "as is" first, and prints one row per metric: the mean over seeds with its 95 %
t interval per variant and the paired difference from "as is" (``sim.whatif_report``); ``--out``
also writes CSVs and plots. Change options (``sim.variants``) given at the top level form one
variant (named by ``--name``); each ``--variant "NAME: OPTIONS"`` is another.

The single-pod form (``whatif pod -f job.yaml``): would this pod run on the cluster as it is now?

Prints one line per pod (``cluster.whatif_pod.PodAnswer.text``): fits now on a node with its
devices, fits after preempting named lower-priority pods, fits once named pods finish (when, on
the virtual clock), or does not fit (explain's reasons). ``-o json`` gives the same facts as
fields. Nothing is stored (``Cluster.whatif_pods`` rolls its transaction back).

Neighbours: ``cluster.whatif_pod`` (the answers), ``cli.commands`` (open_cluster, load),
``sim.whatif`` / ``sim.variants`` / ``sim.whatif_report`` (the variant form).
"""

from __future__ import annotations

import argparse
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from gpusched.cli.output import to_json
from gpusched.cli.replay import add_load_options


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from gpusched.sim.variants import add_change_options

    text = ("Compare variants of one trace replay over seeds (add or remove nodes, policy, profile, "
            "device-plugin config, MIG layout, quotas), or ask what would happen to one workload on "
            "the cluster as it is now (whatif pod)")
    parser = sub.add_parser("whatif", help=text, description=text, epilog=EXAMPLES,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_variant_options(parser)
    add_change_options(parser)
    parser.set_defaults(handler=cmd_whatif_variants)
    kinds = parser.add_subparsers(dest="whatif_kind", metavar="WHAT", required=False,
                                  parser_class=type(parser))
    pod_text = ("Would this pod (or each pod of a Deployment, ReplicaSet, StatefulSet, Job or "
                "DaemonSet template) fit now: where, on which devices, or what would have to be "
                "preempted or finish first, and when")
    p = kinds.add_parser("pod", help=pod_text, description=pod_text)
    p.add_argument("-f", "--filename", action="append", required=True, metavar="PATH",
                   help="Manifest file, directory or - for stdin (repeatable)")
    p.add_argument("-n", "--namespace", default=None,
                   help="The namespace for objects that name none (default: default)")
    p.add_argument("-o", "--output", choices=("json",), default=None)
    p.set_defaults(handler=cmd_whatif_pod)


EXAMPLES = """Examples:
  # the capacity-planning example of docs/capacity-planning.md: the trace as a burst
  gpusched whatif --load 0.95 --until 3 --sample-every 300 --seeds 42-44 --out results/capacity \\
      --variant "minus 10% V100: --remove-nodes 10%:V100" --variant "plus 8 H100: --add-nodes 8xH100"
  # one change against the trace as is
  gpusched whatif --policy fgd --name FGD --seeds 42-44
"""


TRACE_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "alibaba-gpu-v2023"
DEFAULT_NODES = TRACE_DIR / "openb_node_list_gpu_node.csv"
DEFAULT_PODS = TRACE_DIR / "openb_pod_list_default.csv"


def _add_variant_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", default=str(DEFAULT_NODES),
                        help="node list CSV (default: the openb GPU node list in ../shared/data)")
    parser.add_argument("--pods", default=str(DEFAULT_PODS),
                        help="pod list CSV with time columns (default: openb_pod_list_default.csv)")
    add_load_options(parser, " (docs/capacity-planning.md)")
    parser.add_argument("--first", type=int, default=None, metavar="N",
                        help="replay only the first N pods by arrival")
    parser.add_argument("--base-policy", default="default",
                        help="the policy of \"as is\" (and of variants that set none)")
    parser.add_argument("--until", type=float, default=None, metavar="HOURS",
                        help="stop the replay this many hours after the first arrival")
    parser.add_argument("--sample-every", type=float, default=3600.0, metavar="SECONDS",
                        help="time-series step (default 3600)")
    parser.add_argument("--variant", action="append", default=[], metavar='"NAME: OPTIONS"',
                        help="a variant: a name, a colon, then change options (repeatable)")
    parser.add_argument("--name", default=None, help="the name of the top-level changes' variant")
    parser.add_argument("--seeds", default="42-46", help="range or list (default 42-46)")
    parser.add_argument("--jobs", type=int, default=1, help="parallel runs (processes)")
    parser.add_argument("--out", default=None, help="folder for runs.csv, comparison.csv and plots")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def cmd_whatif_pod(args: argparse.Namespace) -> int:
    from gpusched.cli.commands import load, namespace_of, open_cluster

    manifests = load(args.filename)
    with open_cluster(args) as cluster:
        answers = cluster.whatif_pods(manifests, namespace_of(args))
    if args.output == "json":
        print(to_json({"pods": [a.to_json() for a in answers]}))
    else:
        print("\n".join(a.text for a in answers))
    return 0


def _checked_numbers(args: argparse.Namespace) -> list[int]:
    """The seeds, once --seeds, --jobs, --first, --sample-every and --until are in their bounds."""
    import os

    from gpusched.errors import UsageError
    from gpusched.sim.experiment import parse_seeds
    seeds = parse_seeds(args.seeds)
    if len(seeds) > MAX_SEEDS:
        raise UsageError(f"invalid --seeds {args.seeds}: at most {MAX_SEEDS} seeds")
    if not 1 <= args.jobs <= (os.cpu_count() or 1) * 4:
        raise UsageError(f"invalid --jobs {args.jobs}: must be 1..{(os.cpu_count() or 1) * 4}")
    if args.first is not None and args.first < 1:
        raise UsageError(f"invalid --first {args.first}: must be 1 or more")
    if not 60 <= args.sample_every <= 1e7:
        raise UsageError(f"invalid --sample-every {args.sample_every:g}: must be 60 to 1e7 seconds")
    if args.until is not None and not 0 < args.until <= 1e5:
        raise UsageError(f"invalid --until {args.until:g}: must be in (0, 100000] hours")
    return seeds


def cmd_whatif_variants(args: argparse.Namespace) -> int:
    from gpusched.errors import UsageError
    from gpusched.sim.replay import ReplayConfig
    from gpusched.sim.replay_output import check_out_folder
    from gpusched.sim.variants import build_variants, parse_policy
    from gpusched.sim.whatif import POLICIES, run_variants
    from gpusched.sim.whatif_trace import alibaba_trace

    import importlib.util

    for module in ("rich",) + (("matplotlib",) if args.out else ()):
        if importlib.util.find_spec(module) is None:
            raise UsageError(f"whatif needs {module}: pip install 'gpusched[experiments]'")
    check_out_folder(args.out)
    variants = build_variants(args, POLICIES)
    parse_policy(args.base_policy, POLICIES, "--base-policy")
    seeds = _checked_numbers(args)
    trace = alibaba_trace(args.nodes, args.pods, args.time_scale, args.first, args.load, args.loops)
    base = ReplayConfig(policy=args.base_policy, sample_every=args.sample_every,
                        until=None if args.until is None else args.until * 3600.0)
    with _bar(len(variants) * len(seeds), args.no_progress) as advance:
        runs = run_variants(trace, variants, seeds, base, args.jobs, advance)
    return _report(args, trace.source, variants, runs, Path(args.out) if args.out else None)


MAX_SEEDS = 100


@contextmanager
def _bar(total_runs: int, hidden: bool) -> Iterator[Callable[[float], None]]:
    """A progress bar over all runs that advances inside each run (per simulated hour)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    if hidden:
        yield lambda amount: None
        return
    columns = (TextColumn("whatif"), BarColumn(), TextColumn("{task.completed:.1f}/{task.total:.0f} runs"),
               TimeRemainingColumn())
    with Progress(*columns, transient=True) as progress:
        task = progress.add_task("runs", total=total_runs)
        yield lambda amount: progress.advance(task, amount)


def _report(args: argparse.Namespace, source: str, variants: Sequence[Any],
            runs: Mapping[str, Sequence[Any]], out: Path | None) -> int:
    from rich.console import Console

    from gpusched.sim.whatif import METRICS, SERIES
    from gpusched.sim.whatif_report import comparison_table, write_csvs, write_plots

    metrics = [m for m, _ in METRICS]
    title = f"whatif: {source}"
    console = Console()
    if not console.is_terminal:          # redirected: never squeeze, wrap or cut the columns
        console = Console(width=400)
    console.print(comparison_table(runs, metrics, title))
    for variant in variants:
        console.print(f"  {variant.name}: {variant.description}", highlight=False, soft_wrap=True)
    if out is not None:
        labels = {key: label for key, (label, _) in SERIES.items()}
        paths = write_csvs(runs, metrics, out) + write_plots(runs, metrics, labels, out, title)
        for path in paths:
            print(f"wrote {path}")
    return 0
