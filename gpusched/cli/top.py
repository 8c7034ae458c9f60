"""``gpusched top nodes``: GPU, CPU and memory allocation per node, then a summary per GPU model.

Allocation is what bound, non-terminated pods request against what the node advertises
(allocatable), split by how the GPUs are exposed:

- WHOLE: ``nvidia.com/gpu`` on nodes without sharing;
- SHARED: ``nvidia.com/gpu`` under time-slicing/MPS (label ``nvidia.com/gpu.sharing-strategy``),
  ``nvidia.com/gpu.shared`` (``renameByDefault``), and ``gpusched.io/gpu-milli`` shares (in GPUs,
  out of the GPUs holding shares; those GPUs also count as taken in WHOLE, never as free);
- MIG: ``nvidia.com/mig-*`` (mixed strategy) and ``nvidia.com/gpu`` on single-strategy MIG nodes.

Cells read ``allocated/total (percent)``; ``-`` where the node advertises nothing of that class.

Neighbours: ``cli.parser`` registers ``cmd_top``; ``cli.describe.pod_resources`` sums pod requests.
"""

from __future__ import annotations

from typing import Any

import argparse
import sys
from collections import defaultdict
from dataclasses import dataclass, field

from gpusched.objects.assignment import assignment_of
from gpusched.cli.commands import open_cluster
from gpusched.cli.describe import pod_resources
from gpusched.cli.output import render_table
from gpusched.objects.quantity import QuantityError, canonical, format_quantity
from gpusched.objects.types import ANN_GPU_MODEL, RESOURCE_GPU_MILLI

CLASSES = ("whole", "shared", "mig")


@dataclass
class Usage:
    """Allocated and total per class, in units of the class (GPUs, replicas, MIG instances)."""

    used: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    total: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    def add(self, other: "Usage") -> None:
        for cls in CLASSES:
            self.used[cls] += other.used[cls]
            self.total[cls] += other.total[cls]

    def cell(self, cls: str) -> str:
        return ratio_cell(self.used[cls], self.total[cls]) if self.total[cls] else "-"


def ratio_cell(used: float, total: float) -> str:
    """``3/8 (37%)``; fractional GPUs (from milli-GPU shares) print with one decimal."""
    def num(x: float) -> str:
        return str(int(x)) if float(x).is_integer() else f"{x:.1f}"
    percent = int(used * 100 // total) if total else 0
    return f"{num(used)}/{num(total)} ({percent}%)"


def gpu_class(resource: str, labels: dict[str, str]) -> str | None:
    """Which column a GPU resource counts in, or None for non-GPU resources."""
    if resource.startswith("nvidia.com/mig-"):
        return "mig"
    if resource == "nvidia.com/gpu.shared" or resource == RESOURCE_GPU_MILLI:
        return "shared"
    if resource == "nvidia.com/gpu":
        if labels.get("nvidia.com/gpu.sharing-strategy") in ("time-slicing", "mps"):
            return "shared"
        if labels.get("nvidia.com/mig.strategy") == "single" and "-MIG-" in labels.get("nvidia.com/gpu.product", ""):
            return "mig"
        return "whole"
    return None


def _amount(resource: str, value: object) -> float:
    try:
        amount = canonical(resource, value)
    except (QuantityError, TypeError, ValueError):
        return 0.0
    return amount / 1000 if resource == RESOURCE_GPU_MILLI else float(amount)


def node_usage(node: dict[str, Any], pods: list[dict[str, Any]]) -> tuple[Usage, dict[str, int], dict[str, int]]:
    labels = (node.get("metadata") or {}).get("labels") or {}
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    usage = Usage()
    for res, value in allocatable.items():
        cls = gpu_class(res, labels)
        if cls:
            usage.total[cls] += _amount(res, value)
    requested, shared_gpus = _pods_requests(pods)
    for res, amount in requested.items():
        cls = gpu_class(res, labels)
        if cls:
            usage.used[cls] += amount / 1000 if res == RESOURCE_GPU_MILLI else amount
    if shared_gpus:   # GPUs cut into shares: taken for whole-GPU pods, and the SHARED total
        usage.used["whole"] += len(shared_gpus)
        usage.total["shared"] += len(shared_gpus)
    totals = {res: int(_amount(res, allocatable.get(res, 0))) for res in ("cpu", "memory")}
    return usage, dict(requested), totals


def _pods_requests(pods: list[dict[str, Any]]) -> tuple[dict[str, int], set[str]]:
    """The pods' summed requests, and the GPUs holding milli-GPU shares among them."""
    requested: dict[str, int] = defaultdict(int)
    shared_gpus: set[str] = set()
    for pod in pods:
        for res, amount in pod_resources(pod, "requests").items():
            requested[res] += amount
        held = assignment_of(pod)
        if held.resource == RESOURCE_GPU_MILLI:
            shared_gpus.update(str(g) for g in held.gpu_indices)
    return requested, shared_gpus


def gpu_model(node: dict[str, Any]) -> str:
    meta = node.get("metadata") or {}
    return ((meta.get("annotations") or {}).get(ANN_GPU_MODEL)
            or (meta.get("labels") or {}).get("nvidia.com/gpu.product") or "-")


def top_nodes(nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
              gpu_use: dict[str, tuple[float, int, int]] | None = None) -> str:
    """``gpu_use``: node -> (GPU util %, framebuffer used MiB, total MiB), from
    ``cli.monitor.node_gpu_use``; adds the GPU-UTIL and GPU-MEM columns."""
    by_node = _running_by_node(pods)
    rows: list[list[Any]] = []
    per_model: dict[str, list[Any]] = {}     # model -> [nodes, GPUs, Usage]
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        labels = node["metadata"].get("labels") or {}
        usage, requested, totals = node_usage(node, by_node.get(name, []))
        model, count = gpu_model(node), int(labels.get("nvidia.com/gpu.count", 0) or 0)
        rows.append([name, model, count or "-", *(usage.cell(c) for c in CLASSES),
                     _resource_cell("cpu", requested.get("cpu", 0), totals["cpu"]),
                     _resource_cell("memory", requested.get("memory", 0), totals["memory"])])
        if gpu_use is not None:
            rows[-1] += _gpu_use_cells(gpu_use.get(name, (0.0, 0, 0)))
        if model != "-":
            nodes_, gpus, total = per_model.setdefault(model, [0, 0, Usage()])
            per_model[model] = [nodes_ + 1, gpus + count, total]
            total.add(usage)
    header = ["NAME", "GPU-MODEL", "GPUS", "WHOLE", "SHARED", "MIG", "CPU", "MEMORY"]
    text = render_table(header + (["GPU-UTIL", "GPU-MEM"] if gpu_use is not None else []), rows)
    if per_model:
        summary = [[model, n, g, *(u.cell(c) for c in CLASSES)]
                   for model, (n, g, u) in sorted(per_model.items())]
        text += "\n\n" + render_table(["GPU-MODEL", "NODES", "GPUS", "WHOLE", "SHARED", "MIG"], summary)
    return text


def _running_by_node(pods: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The bound pods that have not finished, by node name."""
    by_node: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for pod in pods:
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            by_node[node_name].append(pod)
    return by_node


def _gpu_use_cells(use: tuple[float, int, int]) -> list[str]:
    """The GPU-UTIL and GPU-MEM cells of one node, ``-`` without framebuffer figures."""
    util, used, total = use
    if not total:
        return ["-", "-"]
    return [f"{util:.0f}%", f"{used / 1024:.1f}/{total / 1024:.0f}Gi ({used * 100 // total}%)"]


def _resource_cell(resource: str, used: int, total: int) -> str:
    percent = used * 100 // total if total else 0
    return f"{format_quantity(resource, used)}/{format_quantity(resource, total)} ({percent}%)"


def cmd_top(args: argparse.Namespace) -> int:
    from gpusched.cli.monitor import cmd_top_pods, node_gpu_use
    if args.what in ("pods", "pod", "po"):
        return cmd_top_pods(args)
    with open_cluster(args) as cluster:
        nodes = cluster.get("Node")
        pods = cluster.get("Pod", all_namespaces=True)
        gpu_use = node_gpu_use(cluster.view())
    if not nodes:
        print("No resources found", file=sys.stderr)
        return 0
    print(top_nodes(nodes, pods, gpu_use))
    return 0
