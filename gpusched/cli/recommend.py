"""``gpusched recommend``: the VerticalPodAutoscalers' CPU/memory recommendations (as the VPA
recommender computes them, ``cluster.controllers.autoscaling.vpa``) and gpusched's GPU right-sizing
of the pods they watch (``cluster.controllers.autoscaling.gpu_fit``): the smallest MIG profile or
time-slicing share fitting the observed peak, with the GPU-hours and dollars it would save per day.

Neighbours: ``cli.main`` registers it; data from the ``Cluster`` facade.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import argparse
import sys

from gpusched.cli.commands import namespace_of, open_cluster
from gpusched.cli.output import render_table

if TYPE_CHECKING:
    from gpusched.cluster.apiserver.view import View

CPU_HEADER = ["NAMESPACE", "VPA", "CONTAINER", "CPU LOWER", "CPU TARGET", "CPU UPPER",
              "MEM LOWER", "MEM TARGET", "MEM UPPER"]
GPU_HEADER = ["NAMESPACE", "VPA", "POD", "GPU", "PEAK UTIL", "PEAK MEMORY", "SUGGESTION",
              "GPU-HOURS SAVED/DAY", "USD SAVED/DAY"]


def add_command(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                namespace_options: Callable[[argparse.ArgumentParser], None]) -> None:
    p = sub.add_parser("recommend", help="Right-sizing: VPA CPU/memory recommendations and GPU "
                                         "(MIG / time-slicing) suggestions with their savings",
                       description="Right-sizing: VPA CPU/memory recommendations and GPU "
                                   "(MIG / time-slicing) suggestions with their savings")
    namespace_options(p)
    p.add_argument("--prices", default=None, metavar="PATH",
                   help="GPU prices per hour (YAML/JSON model: USD), as for gpusched cost")
    p.set_defaults(handler=cmd_recommend)


def _rows(view: View, namespace: str | None,
          prices: dict[str, float] | None) -> tuple[list[list[Any]], list[list[Any]]]:
    from gpusched.cluster.controllers.autoscaling.vpa import _key
    from gpusched.cluster.controllers.autoscaling.gpu_fit import fit
    from gpusched.cluster.kubelet.device_inputs import device_inputs, node_devices_for
    inputs = device_inputs(view)
    cpu, gpu = [], []
    states = view.stats.get("vpa", {})
    for vpa in view.list("VerticalPodAutoscaler", namespace):
        meta = vpa["metadata"]
        ns, name = meta.get("namespace", "default"), meta["name"]
        for rec in ((vpa.get("status") or {}).get("recommendation") or {}).get(
                "containerRecommendations") or []:
            cells = [rec.get(f, {}) for f in ("lowerBound", "target", "upperBound")]
            cpu.append([ns, name, rec.get("containerName", ""), *(c.get("cpu", "") for c in cells),
                        *(c.get("memory", "") for c in cells)])
        for pod, peak in sorted((states.get(_key(vpa)) or {}).get("gpu", {}).items()):
            node = view.get("Node", peak.get("node", ""))
            devices = node_devices_for(node, inputs) if node else None
            model = devices.model.name if devices is not None and devices.model else ""
            suggestion = fit(model, peak["util"], peak["memory"], int(peak.get("devices", 1)), prices)
            gpu.append([ns, name, pod, model, f"{peak['util']:.0f}%",
                        f"{peak['memory'] / (1 << 30):.1f}Gi", suggestion.what,
                        f"{suggestion.gpu_hours_saved_per_day:.2f}",
                        f"{suggestion.usd_saved_per_day:.2f}"])
    return cpu, gpu


def cmd_recommend(args: argparse.Namespace) -> int:
    from gpusched.metrics.cost import load_prices
    prices = load_prices(args.prices) if args.prices else None
    namespace = None if getattr(args, "all_namespaces", False) else namespace_of(args)
    with open_cluster(args) as cluster:
        cpu, gpu = cluster.read(lambda view: _rows(view, namespace, prices))
    if not cpu and not gpu:
        print("No recommendations yet (no VerticalPodAutoscaler has sampled a running pod)",
              file=sys.stderr)
        return 0
    if cpu:
        print(render_table(CPU_HEADER, cpu))
    if gpu:
        if cpu:
            print()
        print(render_table(GPU_HEADER, gpu))
    return 0
