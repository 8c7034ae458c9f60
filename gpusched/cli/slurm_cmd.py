"""Slurm commands: ``sbatch``/``squeue``/``scancel``/``sinfo`` on the embedded cluster, and
``slurm config|submit|jobs|cancel`` against a real Slurm controller.

Embedded cluster (``slurm.embedded`` submits and cancels, ``slurm.reports`` lists,
``slurm.output`` writes the job output files):

- ``sbatch SCRIPT [--dry-run]`` prints ``Submitted batch job <id>`` (``--dry-run``: the Job
  manifest as YAML, nothing created);
- ``squeue`` prints Slurm's default columns with its field widths
  (``%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R``); USER is the namespace;
- ``scancel ID [ID ...]``; ``sinfo [-N]`` (``%#P %.5a %.10l %.6D %.6t %N``).

Real Slurm (``slurm.config``, ``slurm.translate``, ``slurm.client``): ``slurm config``, ``slurm submit``, ``slurm jobs [-o json]``
(jobs shown as pods), ``slurm cancel``; see ``docs/slurm.md``.

Neighbours: registered by ``cli.parser`` through :func:`add_commands` (which fills the sbatch
controller's slot for every command); ``cli.commands`` (``open_cluster``); heavy modules are
imported inside the handlers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any, Sequence

from gpusched.cli.job_outputs import write_job_outputs
from gpusched.errors import UsageError

if TYPE_CHECKING:
    from gpusched.cluster.cluster import Cluster

SQUEUE_WIDTHS = (18, 9, 8, 8, 2, 10, 6)
SQUEUE_HEADER = ("JOBID", "PARTITION", "NAME", "USER", "ST", "TIME", "NODES", "NODELIST(REASON)")


def add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("sbatch", help="Submit an sbatch script to the embedded cluster")
    p.add_argument("script", help="sbatch script (#SBATCH lines, body with sleep N)")
    p.add_argument("--dry-run", action="store_true", help="print the Job, create nothing")
    p.set_defaults(handler=cmd_sbatch)
    p = subparsers.add_parser("squeue", help="Slurm-style queue of the embedded cluster")
    p.add_argument("-u", "--user", default="", help="users (namespaces), comma-separated")
    p.add_argument("--me", action="store_true", help="jobs of the current user (namespace default)")
    p.add_argument("-p", "--partition", default="", help="partitions, comma-separated")
    p.add_argument("-t", "--states", default="", help="states: PD,R,CD,TO,F or names, or all")
    p.set_defaults(handler=cmd_squeue)
    p = subparsers.add_parser("sacct", help="Slurm-style accounting of the embedded cluster's "
                                            "sbatch jobs (COMPLETED, TIMEOUT, FAILED ...)")
    p.set_defaults(handler=cmd_sacct)
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
    from gpusched.slurm import embedded
    from gpusched.slurm.sbatch import parse_sbatch

    job = parse_sbatch(_read_script(args.script), args.script)
    workdir = os.path.abspath(job.chdir or os.getcwd())
    with open_cluster(args) as cluster:
        if args.dry_run:
            from gpusched.cli.output import to_yaml
            with cluster.reading() as view:     # read transaction: nothing is created
                print(to_yaml(embedded.job_manifest(view, job, embedded.next_job_id(view))).rstrip())
            return 0
        job_id = embedded.submit(cluster, job, workdir=workdir)
        write_job_outputs(cluster)
    print(f"Submitted batch job {job_id}")
    return 0


def format_squeue(rows: Sequence[Any]) -> str:
    lines = [_fixed(SQUEUE_HEADER)]
    for row in rows:
        lines.append(_fixed((row.job_id, row.partition, row.name, row.user, row.state, row.time,
                             str(row.nodes), row.nodelist)))
    return "\n".join(lines)


def _fixed(cells: Sequence[str]) -> str:
    """Slurm's ``%.N`` fields: right-justified and truncated to N; the last one as is."""
    parts = [str(c)[:w].rjust(w) for c, w in zip(cells, SQUEUE_WIDTHS)]
    return " ".join(parts + [str(cells[-1])])


STATE_NAMES = {"PD": "PENDING", "R": "RUNNING", "CD": "COMPLETED", "TO": "TIMEOUT",
               "F": "FAILED", "CA": "CANCELLED"}
DEFAULT_STATES = ("PD", "R")


def _states(text: str) -> set[str]:
    """``-t``: short codes or names, comma-separated, or ``all`` (squeue's ``--states``)."""
    if not text:
        return set(DEFAULT_STATES)
    wanted = set()
    by_name = {v: k for k, v in STATE_NAMES.items()}
    for item in (i.strip().upper() for i in text.split(",") if i.strip()):
        if item == "ALL":
            return set(STATE_NAMES)
        if item in STATE_NAMES:
            wanted.add(item)
        elif item in by_name:
            wanted.add(by_name[item])
        else:
            raise UsageError(f"Invalid job state specified: {item} (valid: "
                             f"{', '.join(f'{k} ({v})' for k, v in STATE_NAMES.items())}, all)")
    return wanted


def cmd_squeue(args: argparse.Namespace) -> int:
    from gpusched.cli.commands import open_cluster
    from gpusched.slurm import reports

    states = _states(args.states)
    users = {u for u in args.user.split(",") if u} | ({"default"} if args.me else set())
    partitions = {p for p in args.partition.split(",") if p}
    with open_cluster(args) as cluster:
        write_job_outputs(cluster)
        with cluster.reading() as view:
            rows = reports.squeue_rows(view, finished=bool(states - set(DEFAULT_STATES)))
    rows = [r for r in rows if r.state in states and (not users or r.user in users)
            and (not partitions or r.partition in partitions)]
    print(format_squeue(rows))
    return 0


SACCT_HEADER = ("JobID", "JobName", "Partition", "Account", "AllocCPUS", "State", "ExitCode")
SACCT_WIDTHS = (12, 10, 10, 10, 10, 10, 8)


def format_sacct(rows: Sequence[Any]) -> str:
    """sacct's default format: JobID left-aligned, the rest right-aligned, each cell cut to its
    width (sacct marks a cut with ``+``), a dashed rule under the header."""
    def cell(value: str, width: int, left: bool) -> str:
        text = value if len(value) <= width else value[:width - 1] + "+"
        return text.ljust(width) if left else text.rjust(width)

    def line(values: Sequence[str]) -> str:
        return " ".join(cell(str(v), w, i == 0) for i, (v, w) in
                        enumerate(zip(values, SACCT_WIDTHS))) + " "

    out = [line(SACCT_HEADER), " ".join("-" * w for w in SACCT_WIDTHS) + " "]
    out += [line((r.job_id, r.job_name, r.partition, r.account, str(r.alloc_cpus), r.state,
                  r.exit_code)) for r in rows]
    return "\n".join(out)


def cmd_sacct(args: argparse.Namespace) -> int:
    from gpusched.cli.commands import open_cluster
    from gpusched.slurm import reports

    with open_cluster(args) as cluster:
        write_job_outputs(cluster)
        with cluster.reading() as view:
            rows = reports.sacct_rows(view)
    print(format_sacct(rows))
    return 0


def cmd_scancel(args: argparse.Namespace) -> int:
    from gpusched.cli.commands import open_cluster
    from gpusched.slurm import embedded

    with open_cluster(args) as cluster:
        for job_id in args.job_ids:
            embedded.cancel(cluster, job_id)
    return 0


def format_sinfo(rows: Sequence[Any], per_node: bool = False) -> str:
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
    from gpusched.slurm import reports

    with open_cluster(args) as cluster:
        with cluster.reading() as view:
            rows = reports.sinfo_rows(view, per_node=args.per_node)
    print(format_sinfo(rows, args.per_node))
    return 0


def dump_json(document: Any) -> str:
    return json.dumps(document, indent=2, sort_keys=True)


def slurm_conf_of(args: argparse.Namespace) -> str:
    conf = getattr(args, "slurm_conf", None) or os.environ.get("SLURM_CONF", "")
    if not conf:
        raise UsageError("no Slurm configuration: pass --slurm-conf PATH or set SLURM_CONF")
    return conf


def _add_slurm_group(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``slurm config|submit|jobs|cancel`` (real Slurm; see docs/slurm.md)."""
    slurm = subparsers.add_parser("slurm", help="Slurm: config from the cluster, real jobs")
    sub = slurm.add_subparsers(dest="slurm_command", metavar="COMMAND", required=True)
    p = sub.add_parser("config", help="write slurm.conf and gres.conf from Nodes/NodePools")
    p.add_argument("-f", "--filename", action="append", default=[], metavar="PATH",
                   help="manifests with NodePools/Nodes/PriorityClasses (default: the cluster state)")
    p.add_argument("--out", default=".", help="folder for slurm.conf and gres.conf")
    p.add_argument("--cluster-name", default="gpusched")
    p.add_argument("--controller", default="slurmctld", help="SlurmctldHost (production)")
    p.add_argument("--test-harness", metavar="DIR", default=None,
                   help="local test settings: auth/none, free loopback ports, paths and fake "
                        "GPU devices under DIR")
    p.set_defaults(handler=cmd_slurm_config)
    p = sub.add_parser("submit", help="submit a Job/Pod manifest or an sbatch script to Slurm")
    p.add_argument("script", nargs="?", help="an sbatch script, passed through")
    p.add_argument("-f", "--filename", action="append", default=[], metavar="PATH",
                   help="Job or Pod manifests (PriorityClasses in them give --priority values)")
    p.add_argument("--chdir", default=None, help="working folder of the job (its output files)")
    p.add_argument("--slurm-conf", default=None, help="slurm.conf (default: $SLURM_CONF)")
    p.set_defaults(handler=cmd_slurm_submit)
    p = sub.add_parser("jobs", help="Slurm jobs shown as pods (NAME READY STATUS NODE GPUS)")
    p.add_argument("-o", "--output", choices=("json",), default=None)
    p.add_argument("--slurm-conf", default=None)
    p.set_defaults(handler=cmd_slurm_jobs)
    p = sub.add_parser("cancel", help="scancel Slurm jobs")
    p.add_argument("job_ids", nargs="+", metavar="ID")
    p.add_argument("--slurm-conf", default=None)
    p.set_defaults(handler=cmd_slurm_cancel)


def cmd_slurm_config(args: argparse.Namespace) -> int:
    from gpusched.slurm import config

    if args.filename:
        from gpusched.cli.commands import load
        nodes, classes = config.inventory([m.obj for m in load(args.filename)])
    else:
        from gpusched.cli.commands import open_cluster
        with open_cluster(args) as cluster:
            nodes = cluster.get("nodes")
            classes = cluster.get("priorityclasses")
    if not nodes:
        raise UsageError("no Nodes or NodePools: give manifests with -f or apply them first")
    harness = None
    if args.test_harness:
        root = os.path.abspath(args.test_harness)
        names = sorted(n["metadata"]["name"] for n in nodes)
        ports = config.free_ports(2 + len(names))
        harness = config.Harness(root, ports[0], ports[1], dict(zip(names, ports[2:])))
    generated = config.generate(nodes, classes, args.cluster_name, harness, args.controller)
    for path in config.write(generated, args.out, harness):
        print(f"wrote {path}")
    return 0


def cmd_slurm_submit(args: argparse.Namespace) -> int:
    from gpusched.slurm import client, translate

    conf = slurm_conf_of(args)
    if args.script and args.filename:
        raise UsageError("give either an sbatch script or -f manifests, not both")
    if args.script:
        print(client.submit_file(args.script, conf, args.chdir))
        return 0
    if not args.filename:
        raise UsageError("nothing to submit: give an sbatch script or -f job.yaml")
    from gpusched.cli.commands import load
    objects = [m.obj for m in load(args.filename)]
    values = {pc["metadata"]["name"]: int(pc.get("value", 0))
              for pc in objects if pc.get("kind") == "PriorityClass"}
    for obj in objects:
        if obj.get("kind") not in ("Job", "Pod"):
            continue
        request = translate.translate(obj, values)
        for warning in request.warnings:
            print(f"warning: {request.name}: {warning}", file=sys.stderr)
        job_id = client.submit(request.options, request.script, conf, args.chdir)
        print(f"Submitted batch job {job_id} ({obj['kind'].lower()}/{request.name})")
    return 0


def cmd_slurm_jobs(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from gpusched.slurm import client
    from gpusched.cli.output import render_table

    found = client.jobs(slurm_conf_of(args))
    if args.output == "json":
        print(dump_json([asdict(j) for j in found]))
        return 0
    rows = [(f"{j.name}-{j.job_id}", "1/1" if j.phase == "Running" else "0/1",
             j.reason if j.phase == "Failed" else j.phase, j.node or "<none>", j.gpus or "-")
            for j in found]
    print(render_table(("NAME", "READY", "STATUS", "NODE", "GPUS"), rows))
    return 0


def cmd_slurm_cancel(args: argparse.Namespace) -> int:
    from gpusched.slurm import client

    client.cancel(args.job_ids, slurm_conf_of(args))
    return 0
