"""``advance`` benchmark: how long moving the virtual clock takes (a script, not a test).

Builds an embedded cluster in a temporary SQLite file: ``--nodes`` nodes of 8x A100-40GB
(NodePool), ``--pods`` bare pods (30% one GPU, 70% CPU-only, 250m cpu / 1Gi), each with a run
time (``gpusched.io/duration``) drawn from a seeded generator between 1 h and ``--max-days``
days, so part of them finish inside the window. Then it times ``Cluster.advance(--days)``:
wall and CPU seconds, and the events inside the window (pod completions), so the cost per
event can be compared between versions; the load average is printed with them (on a shared
machine only the CPU seconds compare).

    python bench/bench_advance.py                              # 1,000 nodes, 20,000 pods, 30 d
    python bench/bench_advance.py --nodes 100 --pods 2000      # smaller, for a quick comparison
    python bench/bench_advance.py --profile                    # cProfile top functions

It uses only ``Cluster`` (``open``, ``apply``, ``advance``, ``get``), so the same script runs
against older checkouts for the "before" numbers in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from gpusched.cluster.cluster import Cluster
from gpusched.objects.manifest import Manifest

DAY = 86_400


def nodepool(nodes: int) -> dict:
    return {"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool",
            "metadata": {"name": "a100"},
            "spec": {"count": nodes, "namePrefix": "node", "gpu": {"model": "A100-40GB", "count": 8},
                     "cpu": "96", "memory": "1Ti"}}


def pod(i: int, rng: np.random.Generator, max_days: float) -> dict:
    seconds = int(rng.uniform(3600, max_days * DAY))
    resources: dict = {"requests": {"cpu": "250m", "memory": "1Gi"}}
    if rng.random() < 0.3:
        resources["limits"] = {"nvidia.com/gpu": "1"}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"p-{i:06d}", "namespace": "default",
                         "annotations": {"gpusched.io/duration": f"{seconds}s"}},
            "spec": {"containers": [{"name": "main", "image": "busybox", "resources": resources}]}}


def build(cluster: Cluster, nodes: int, pods: int, max_days: float, batch: int) -> None:
    rng = np.random.default_rng(7)
    cluster.apply([Manifest("bench", 0, nodepool(nodes))])
    for start in range(0, pods, batch):
        docs = [Manifest("bench", i, pod(i, rng, max_days))
                for i in range(start, min(pods, start + batch))]
        cluster.apply(docs)


def phases(cluster: Cluster) -> dict[str, int]:
    counts: dict[str, int] = {}
    for body in cluster.get("Pod", all_namespaces=True):
        phase = (body.get("status") or {}).get("phase", "Pending")
        counts[phase] = counts.get(phase, 0) + 1
    return counts


def _load(values: tuple[float, float, float]) -> str:
    return " ".join(f"{v:.1f}" for v in values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=20_000)
    parser.add_argument("--days", type=float, default=30.0, help="how far to advance")
    parser.add_argument("--max-days", type=float, default=60.0, help="longest pod run time")
    parser.add_argument("--batch", type=int, default=2000, help="pods per apply")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        with Cluster.open(str(Path(tmp) / "bench.db")) as cluster:
            started = time.perf_counter()
            build(cluster, args.nodes, args.pods, args.max_days, args.batch)
            built = time.perf_counter() - started
            before = phases(cluster)
            profiler = cProfile.Profile() if args.profile else None
            wall, cpu = time.perf_counter(), time.process_time()
            if profiler:
                profiler.enable()
            cluster.advance(args.days * DAY)
            if profiler:
                profiler.disable()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            after = phases(cluster)
    events = after.get("Succeeded", 0) - before.get("Succeeded", 0)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("| nodes | pods | running before | events in window | advance wall s | advance cpu s "
          "| ms/event (cpu) | build s | peak RSS MiB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    per_event = 1000 * cpu / events if events else float("nan")
    print(f"| {args.nodes:,} | {args.pods:,} | {before.get('Running', 0):,} | {events:,} | "
          f"{wall:.1f} | {cpu:.1f} | {per_event:.2f} | {built:.0f} | {rss:.0f} |")
    print(f"load average (1, 5, 15 min) at start {_load(load_start)}, at end {_load(os.getloadavg())}; "
          f"{os.cpu_count()} CPUs")
    if profiler:
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
