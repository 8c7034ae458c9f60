"""Monitoring commands: ``exporter`` (this host's GPUs), ``cost``, ``top pods``; and the GPU
utilization columns ``top nodes`` shows.

- ``gpusched exporter [--port 9400] [--host 127.0.0.1]``: dcgm-exporter-compatible metrics of the
  real GPUs via NVML; prints ``serving http://HOST:PORT/metrics`` once listening; SIGTERM exits 0.
- ``gpusched cost [--by namespace|model|priority-class|nodepool] [--since DURATION] [--prices FILE]``:
  GPU-hours and USD on the virtual clock (``metrics.cost``); ``--by nodepool``: node-hours of
  every NodePool's nodes from creation to removal, used or not.
- ``gpusched top pods [-n NS | -A]``: per running GPU pod: node, devices, GPUs held (shares as
  fractions), utilization and framebuffer from the cluster's GPU model (``metrics.cluster_source``).

Neighbours: ``cli.parser`` registers ``add_commands``; ``cli.top`` calls :func:`node_gpu_use`;
``gpusched.metrics`` does the work (imported inside the commands: it pulls in NumPy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import argparse
import sys
from collections import defaultdict

from gpusched.cli.commands import open_cluster
from gpusched.cli.output import render_table

if TYPE_CHECKING:
    from gpusched.cluster.apiserver.view import View
    from gpusched.metrics.cluster_source import GpuState
    from gpusched.metrics.cost import NodeUsage


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("exporter", help="Serve this host's GPU metrics (NVML, DCGM names)",
                       description="Serve this host's GPU metrics (NVML) in dcgm-exporter's format")
    p.add_argument("--port", type=int, default=9400, help="port (default 9400; 0 = any free port)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.set_defaults(handler=cmd_exporter)
    p = sub.add_parser("cost", help="GPU-hours and cost by namespace, model or priority class",
                       description="GPU-hours and cost on the virtual clock")
    p.add_argument("--by", choices=("namespace", "model", "priority-class", "nodepool"),
                   default="namespace",
                   help="group pods' GPU-hours, or 'nodepool': node-hours of each NodePool's "
                        "nodes from creation to removal, used or not (autoscaled pools too)")
    p.add_argument("--since", default=None, metavar="DURATION",
                   help="only the last DURATION of virtual time (e.g. 1h)")
    p.add_argument("--prices", default=None, metavar="FILE",
                   help="YAML/JSON mapping GPU model -> USD per GPU-hour (overrides defaults)")
    p.set_defaults(handler=cmd_cost)


def cmd_exporter(args: argparse.Namespace) -> int:
    from gpusched.metrics.exporter import serve
    from gpusched.metrics.nvml_source import NvmlSource

    source = NvmlSource()
    if not source.available:
        print(f"warning: {source.message}; serving the exporter's own metrics only",
              file=sys.stderr, flush=True)

    def ready(port: int) -> None:
        print(f"serving http://{args.host}:{port}/metrics", flush=True)
    return serve(args.host, args.port, source, source.available, ready)


def cmd_cost(args: argparse.Namespace) -> int:
    from gpusched.metrics import cost
    from gpusched.metrics.cluster_source import ClusterSource
    from gpusched.objects.duration import parse_duration

    prices = cost.load_prices(args.prices)
    with open_cluster(args) as cluster:
        view = cluster.view()
        now = view.now()
        since = max(0.0, now - parse_duration(args.since)) if args.since else 0.0
        if args.by == "nodepool":
            return _print_node_cost(cost.node_usage(view.list("NodePool"), view.list("Node"),
                                                    now, prices, since))
        rows = cost.grouped(cost.usage(ClusterSource(view).gpus(), now, prices, since), args.by)
    if not rows:
        print("No GPU usage found", file=sys.stderr)
        return 0
    header = args.by.upper()
    table = [[key, f"{hours:.2f}", f"{dollars:.2f}"] for key, hours, dollars in rows]
    table.append(["TOTAL", f"{sum(r[1] for r in rows):.2f}", f"{sum(r[2] for r in rows):.2f}"])
    print(render_table([header, "GPU-HOURS", "COST(USD)"], table))
    return 0


def _print_node_cost(rows: list[NodeUsage]) -> int:
    if not rows:
        print("No NodePools found", file=sys.stderr)
        return 0
    table = [[r.pool, r.model, str(r.nodes_now), f"{r.node_hours:.2f}", f"{r.gpu_hours:.2f}",
              f"{r.dollars:.2f}"] for r in rows]
    table.append(["TOTAL", "", str(sum(r.nodes_now for r in rows)),
                  f"{sum(r.node_hours for r in rows):.2f}", f"{sum(r.gpu_hours for r in rows):.2f}",
                  f"{sum(r.dollars for r in rows):.2f}"])
    print(render_table(["NODEPOOL", "MODEL", "NODES", "NODE-HOURS", "GPU-HOURS", "COST(USD)"],
                       table))
    return 0


def pod_gpu_use(gpus: list[GpuState]) -> dict[tuple[str, str], dict[str, Any]]:
    """(namespace, pod) -> node, devices, GPUs, util %, memory MiB, from ``GpuState`` rows.

    A pod's utilization is its demand scaled down when its GPU is oversubscribed (time-sliced
    pods asking 4 x 60 % get 25 % each), averaged over its GPUs.
    """
    use: dict[tuple[str, str], dict[str, Any]] = {}
    for gpu in gpus:
        live = gpu.live
        demand = sum(h.util * h.gpu_share for h in live)
        scale = min(1.0, 100.0 / demand) if demand else 1.0
        for h in live:
            entry = use.setdefault((h.pod.namespace, h.pod.pod), {
                "node": gpu.node, "devices": [], "gpus": 0.0, "util": [], "memory": 0})
            entry["devices"].append(f"{gpu.gpu}" + (f"/{h.instance[:12]}" if h.instance else ""))
            entry["gpus"] += h.fraction
            entry["util"].append(h.util * (scale if not h.instance else 1.0))
            entry["memory"] += h.memory_mib
    return use


def node_gpu_use(view: View) -> dict[str, tuple[float, int, int]]:
    """node -> (mean GPU utilization %, framebuffer used MiB, framebuffer total MiB)."""
    from gpusched.metrics.cluster_source import ClusterSource

    per: dict[str, list[Any]] = defaultdict(lambda: [0.0, 0, 0, 0])
    for gpu in ClusterSource(view).gpus():
        entry = per[gpu.node]
        entry[0] += gpu.util
        entry[1] += gpu.fb_used_mib
        entry[2] += gpu.fb_total_mib
        entry[3] += 1
    return {node: (u / n, used, total) for node, (u, used, total, n) in per.items()}


def cmd_top_pods(args: argparse.Namespace) -> int:
    from gpusched.metrics.cluster_source import ClusterSource

    with open_cluster(args) as cluster:
        use = pod_gpu_use(ClusterSource(cluster.view()).gpus())
    namespace = None if getattr(args, "all_namespaces", False) else (
        getattr(args, "namespace", None) or "default")
    rows = []
    for (ns, name), entry in sorted(use.items()):
        if namespace is not None and ns != namespace:
            continue
        util = sum(entry["util"]) / len(entry["util"])
        gpus = entry["gpus"]
        rows.append(([ns] if namespace is None else []) + [
            name, entry["node"], ",".join(entry["devices"]),
            str(int(gpus)) if float(gpus).is_integer() else f"{gpus:.2f}",
            f"{util:.0f}%", f"{entry['memory']}Mi"])
    if not rows:
        print("No resources found" + (f" in {namespace} namespace." if namespace else ""),
              file=sys.stderr)
        return 0
    header = (["NAMESPACE"] if namespace is None else []) + [
        "NAME", "NODE", "DEVICES", "GPUS", "GPU-UTIL", "GPU-MEMORY"]
    print(render_table(header, rows))
    return 0
