"""Slurm commands: ``sbatch``/``squeue``/``scancel``/``sinfo`` on the embedded cluster, and
``slurm config|submit|jobs|cancel`` against a real Slurm controller.

Embedded cluster (``cluster.batch`` does the work):

- ``sbatch SCRIPT [--dry-run]`` prints ``Submitted batch job <id>`` (``--dry-run``: the Job
  manifest as YAML, nothing created);
- ``squeue`` prints Slurm's default columns with its field widths
  (``%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R``); USER is the namespace;
- ``scancel ID [ID ...]``; ``sinfo [-N]`` (``%#P %.5a %.10l %.6D %.6t %N``).

Real Slurm (``backends.slurm``): ``slurm config``, ``slurm submit``, ``slurm jobs [-o json]``
(jobs shown as pods), ``slurm cancel``; see ``docs/slurm.md``.

Neighbours: registered by ``cli.main`` through :func:`add_commands`; ``cli.commands``
(``open_cluster``); heavy modules are imported inside the handlers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Sequence

from gpusched.errors import UsageError

SQUEUE_WIDTHS = (18, 9, 8, 8, 2, 10, 6)
SQUEUE_HEADER = ("JOBID", "PARTITION", "NAME", "USER", "ST", "TIME", "NODES", "NODELIST(REASON)")


def add_commands(subparsers) -> None:
    p = subparsers.add_parser("sbatch", help="Submit an sbatch script to the embedded cluster")
    p.add_argument("script", help="sbatch script (#SBATCH lines, body with sleep N)")
    p.add_argument("--dry-run", action="store_true", help="print the Job, create nothing")
    p.set_defaults(handler=cmd_sbatch)
    p = subparsers.add_parser("squeue", help="Slurm-style queue of the embedded cluster")
    p.set_defaults(handler=cmd_squeue)
    p = subparsers.add_parser("scancel", help="Cancel sbatch jobs of the embedded cluster")
    p.add_argument("job_ids", nargs="+", metavar="ID")
    p.set_defaults(handler=cmd_scancel)
    p = subparsers.add_parser("sinfo", help="Slurm-style partitions and node states")
    p.add_argument("-N", "--Node", dest="per_node", action="store_true", help="one row per node")
    p.set_defaults(handler=cmd_sinfo)
    _add_slurm_group(subparsers)


def _read_script(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as err:
        raise UsageError(f"Unable to open file {path}: {err.strerror}") from None


def cmd_sbatch(args: argparse.Namespace) -> int:
    from gpusched.cli.commands import open_cluster
    from gpusched.cluster import batch
    from gpusched.objects.sbatch import parse_sbatch

    job = parse_sbatch(_read_script(args.script), args.script)
    with open_cluster(args) as cluster:
        if args.dry_run:
            from gpusched.cli.output import to_yaml
            with cluster._read() as view:     # read transaction: nothing is created
                print(to_yaml(batch.job_manifest(view, job, batch.next_job_id(view))).rstrip())
            return 0
        job_id = batch.submit(cluster, job)
    print(f"Submitted batch job {job_id}")
    return 0


def format_squeue(rows: Sequence) -> str:
    lines = [_fixed(SQUEUE_HEADER)]
    for row in rows:
        lines.append(_fixed((row.job_id, row.partition, row.name, row.user, row.state, row.time,
                             str(row.nodes), row.nodelist)))
    return "\n".join(lines)


def _fixed(cells: Sequence[str]) -> str:
    """Slurm's ``%.N`` fields: right-justified and truncated to N; the last one as is."""
    parts = [str(c)[:w].rjust(w) for c, w in zip(cells, SQUEUE_WIDTHS)]
    return " ".join(parts + [str(cells[-1])])


def cmd_squeue(args: argparse.Namespace) -> int:
    from gpusched.cli.commands import open_cluster
    from gpusched.cluster import batch

    with open_cluster(args) as cluster:
        with cluster._read() as view:
            rows = batch.squeue_rows(view)
    print(format_squeue(rows))
    return 0


def cmd_scancel(args: argparse.Namespace) -> int:
    from gpusched.cli.commands import open_cluster
    from gpusched.cluster import batch

    with open_cluster(args) as cluster:
        for job_id in args.job_ids:
            batch.cancel(cluster, job_id)
    return 0


def format_sinfo(rows: Sequence, per_node: bool = False) -> str:
    if per_node:       # sinfo -N: %#N %.6D %#P %6t
        node_w = max([len("NODELIST")] + [len(r.nodelist) for r in rows])
        part_w = max([len("PARTITION")] + [len(r.partition) for r in rows])
        lines = [f"{'NODELIST'.ljust(node_w)} {'NODES':>5} {'PARTITION'.ljust(part_w)} STATE"]
        lines += [f"{r.nodelist.ljust(node_w)} {r.nodes:>5} {r.partition.ljust(part_w)} {r.state}"
                  for r in rows]
        return "\n".join(lines)
    width = max([len("PARTITION")] + [len(r.partition) for r in rows])
    lines = [f"{'PARTITION'.ljust(width)} {'AVAIL':>5} {'TIMELIMIT':>10} {'NODES':>6} "
             f"{'STATE':>6} NODELIST"]
    for r in rows:
        lines.append(f"{r.partition.ljust(width)} {r.avail:>5} {r.timelimit:>10} {r.nodes:>6} "
                     f"{r.state:>6} {r.nodelist}")
    return "\n".join(lines)


def cmd_sinfo(args: argparse.Namespace) -> int:
    from gpusched.cli.commands import open_cluster
    from gpusched.cluster import batch

    with open_cluster(args) as cluster:
        with cluster._read() as view:
            rows = batch.sinfo_rows(view, per_node=args.per_node)
    print(format_sinfo(rows, args.per_node))
    return 0


def dump_json(document) -> str:
    return json.dumps(document, indent=2, sort_keys=True)


def slurm_conf_of(args: argparse.Namespace) -> str:
    conf = getattr(args, "slurm_conf", None) or os.environ.get("SLURM_CONF", "")
    if not conf:
        raise UsageError("no Slurm configuration: pass --slurm-conf PATH or set SLURM_CONF")
    return conf


def _add_slurm_group(subparsers) -> None:
    """``slurm config|submit|jobs|cancel`` (real Slurm; see docs/slurm.md)."""
