"""CLI commands of the sim layer: ``experiment fgd``, ``sweep`` and ``import alibaba``.

``add_commands(subparsers)`` registers both on the CLI's top-level subparsers (``cli.parser``
wires it in); each subparser's ``handler`` takes the argparse namespace and returns an exit code.
NumPy, the scheduler and rich are imported only when a command runs, so ``gpusched --help``
stays fast.
User mistakes raise ``gpusched.errors`` types (the CLI prints their one-line message).

Neighbours: ``sim.experiment``, ``sim.report``, ``sim.alibaba``; called from ``cli.parser``.
"""

from __future__ import annotations

from typing import Any

import argparse
import os
from pathlib import Path

from gpusched.errors import UsageError
from gpusched.extras import require

DEFAULT_POLICIES = "random,dotprod,clustering,packing,bestfit,fgd"
PUBLISHED_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "fgd-published"


def add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    experiment = subparsers.add_parser("experiment", help="run trace-driven experiments")
    kinds = experiment.add_subparsers(dest="experiment_kind", required=True)
    fgd = kinds.add_parser("fgd", help="the FGD (ATC '23) protocol on an Alibaba GPU trace")
    fgd.add_argument("--nodes", required=True, help="node list CSV (openb_node_list_gpu_node.csv)")
    fgd.add_argument("--pods", required=True, help="pod list CSV (openb_pod_list_*.csv)")
    fgd.add_argument("--policies", default=DEFAULT_POLICIES,
                     help=f"comma-separated (default {DEFAULT_POLICIES}; gpusched's own: fgdsat, fgdfill)")
    fgd.add_argument("--seeds", default="42-51", help="range or list (default 42-51)")
    fgd.add_argument("--tune", type=float, default=1.3, help="target GPU request / capacity")
    fgd.add_argument("--jobs", type=int, default=1, help="parallel runs (processes)")
    fgd.add_argument("--published", default=str(PUBLISHED_DIR), help="folder of published tables")
    fgd.add_argument("--no-progress", action="store_true", help="no progress bar")
    fgd.add_argument("--out", required=True, help="output folder")
    fgd.set_defaults(handler=run_experiment_fgd)

    sweep = subparsers.add_parser(
        "sweep", help="run a sweep file (workloads x policies x seeds x variants) locally or on Ray",
        description="Run every run of a sweep file (see docs/experiments.md), reusing cached results.",
        epilog="Examples:\n  gpusched sweep sweep.yaml --out results/sweep --jobs 2\n"
               "  gpusched sweep sweep.yaml --out results/sweep --executor ray --address 10.0.0.5:6379",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sweep.add_argument("file", help="sweep YAML file")
    sweep.add_argument("--out", required=True, help="output folder (CSVs, plots)")
    sweep.add_argument("--executor", default="local", choices=("local", "ray"),
                       help="local process pool (default) or a Ray cluster")
    sweep.add_argument("--jobs", type=int, default=1, help="local executor: parallel processes")
    sweep.add_argument("--address", default=None,
                       help="ray executor: address of a running cluster (host:port or auto); "
                            "default: a private local Ray instance")
    sweep.add_argument("--cache", default=None,
                       help="result cache folder (default OUT/cache); --cache '' disables it")
    sweep.add_argument("--published", default=str(PUBLISHED_DIR), help="folder of published tables")
    sweep.add_argument("--no-progress", action="store_true", help="no progress bar")
    sweep.set_defaults(handler=run_sweep_file)

    importer = subparsers.add_parser("import", help="convert traces to manifests")
    sources = importer.add_subparsers(dest="import_kind", required=True)
    ali = sources.add_parser("alibaba", help="Alibaba GPU trace CSVs -> Node and Pod manifests")
    ali.add_argument("nodes", help="node list CSV")
    ali.add_argument("pods", help="pod list CSV")
    ali.add_argument("--out", required=True, help="output folder (nodes.yaml, pods.yaml)")
    ali.set_defaults(handler=run_import_alibaba)


def run_experiment_fgd(args: argparse.Namespace) -> int:
    from gpusched.sim.experiment import RunSpec, check_inputs, parse_policies, parse_seeds
    from gpusched.sim.replay_output import check_out_folder
    from gpusched.sim.report import run_all

    require("experiments", "gpusched experiment")
    check_inputs(args.nodes, args.pods)
    check_out_folder(args.out)
    if args.jobs < 1 or args.jobs > (os.cpu_count() or 1) * 4:
        raise UsageError(f"invalid --jobs {args.jobs}: must be 1..{(os.cpu_count() or 1) * 4}")
    if not 0 < args.tune <= 10:
        raise UsageError(f"invalid --tune {args.tune}: must be in (0, 10]")
    specs = [RunSpec(str(args.nodes), str(args.pods), policy, seed, args.tune)
             for policy in parse_policies(args.policies) for seed in parse_seeds(args.seeds)]
    results = run_all(specs, jobs=args.jobs, progress=not args.no_progress)
    return _report(results, Path(args.out), args.published)


def run_sweep_file(args: argparse.Namespace) -> int:
    from gpusched.sim.replay_output import check_out_folder
    from gpusched.sim.sweep import load_sweep, run_sweep

    require("experiments", "gpusched sweep")
    if args.jobs < 1 or args.jobs > (os.cpu_count() or 1) * 4:
        raise UsageError(f"invalid --jobs {args.jobs}: must be 1..{(os.cpu_count() or 1) * 4}")
    runs = load_sweep(args.file)
    check_out_folder(args.out)
    out = Path(args.out)
    cache = out / "cache" if args.cache is None else (args.cache or None)
    results = run_sweep(runs, args.executor, args.jobs, args.address, cache, not args.no_progress)
    return _report(results, out, args.published)


def _report(results: list[Any], out: Path, published: str) -> int:
    """CSVs, plots and the summary table of a finished experiment or sweep."""
    from gpusched.sim.report import load_published, print_summary, summary_rows, write_csvs, write_plots

    paths = write_csvs(results, out) + write_plots(results, out, published)
    print_summary(summary_rows(results, load_published(published)))
    for path in paths:
        print(f"wrote {path}")
    return 0


def run_import_alibaba(args: argparse.Namespace) -> int:
    from gpusched.sim import alibaba
    from gpusched.sim.experiment import check_inputs
    from gpusched.sim.replay_output import check_out_folder

    check_inputs(args.nodes, args.pods)
    check_out_folder(args.out)
    nodes = alibaba.load_nodes(args.nodes, gpu_only=False)
    pods = alibaba.load_pods(args.pods)
    node_path, pod_path = alibaba.write_manifests(nodes, pods, args.out)
    print(f"wrote {node_path} ({len(nodes)} nodes)")
    print(f"wrote {pod_path} ({len(pods)} pods)")
    return 0
