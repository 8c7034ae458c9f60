"""Scheduler throughput and memory benchmark (a script, not a test; ``make bench``).

Builds clusters of mixed GPU nodes (8x A100-40GB, 8x H100-80GB, 4x V100-16GB, 2x T4, equal
shares; 20% tainted ``dedicated=<team>:NoSchedule``; GFD-like labels) and schedules a pod stream
(60% one GPU, 15% 2-8 GPUs, 15% time-slice shares of one GPU, 10% CPU-only; 30% with a
nodeSelector or required node affinity on the GPU product, 20% tolerating a team taint) with the
default profile (which includes GpuDevices), one ``Scheduler.schedule_one`` per pod.

Prints per cluster size: pods/s over all attempts (wall clock, and "cpu p/s" over this process's
CPU time, which other work on a shared machine disturbs less), bound/s over the successful ones, p50/p99
time per scheduling attempt, mean time of a failed attempt (it includes the preemption dry run),
pods bound, peak RSS.

    python bench/bench_scheduler.py                          # 1,000 / 5,000 / 10,000 nodes, 20,000 pods
    python bench/bench_scheduler.py --nodes 10000 --pods 100000 --mix dense   # the memory run
    python bench/bench_scheduler.py --nodes 5000 --profile   # cProfile top functions
    python bench/bench_scheduler.py --nodes 5000 --priorities # 3 priority levels: real preemption dry runs

A preemption is acted on as the embedded cluster does: the victims leave the snapshot and the
preemptor's next attempt (its nominated node first) is part of the same timed step. Without
``--priorities`` every pod has priority 0, so nothing is ever preempted.

Wall-clock timing is the point here; the scheduler itself never reads it. Seeded, so every run
schedules the same pods the same way.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import sys
import time

import numpy as np

from gpusched.devices.catalog import lookup_model
from gpusched.devices.node import NodeDevices
from gpusched.objects.types import (NodeInfo, NodeSelectorTerm, PodInfo, Requirement, Taint,
                                    Toleration)
from gpusched.scheduler.profile import parse_config
from gpusched.scheduler.runner import Scheduler
from gpusched.scheduler.snapshot import Snapshot

GIB = 2**30
NODE_KINDS = (("A100-40GB", 8), ("H100-80GB", 8), ("V100-16GB", 4), ("T4", 2))
TEAMS = ("research", "prod")
ZONES = ("zone-a", "zone-b", "zone-c")


def build_snapshot(num_nodes: int, rng: np.random.Generator) -> Snapshot:
    snapshot = Snapshot()
    products = {name: lookup_model(name) for name, _ in NODE_KINDS}
    for i in range(num_nodes):
        model_name, gpus = NODE_KINDS[i % len(NODE_KINDS)]
        model = products[model_name]
        name = f"node-{i:05d}"
        devices = NodeDevices.build(name, model, gpus)
        allocatable = {"cpu": 96_000, "memory": 768 * GIB, "pods": 110,
                       "ephemeral-storage": 1000 * GIB, **devices.advertised}
        labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": ZONES[i % 3],
                  "nvidia.com/gpu.product": model.product, "nvidia.com/gpu.count": str(gpus),
                  "nvidia.com/gpu.memory": str(model.memory_mib), "nvidia.com/gpu.present": "true"}
        taints = (Taint("dedicated", TEAMS[i % 2], "NoSchedule"),) if rng.random() < 0.2 else ()
        info = NodeInfo(name, allocatable, dict(allocatable), labels, taints,
                        gpu_model=model_name, gpu_count=gpus)
        snapshot.add_node(info, devices)
    return snapshot


# (share of pods, kind): "gpu1" one GPU, "gpuN" 2-8 GPUs, "share" a time-slice share, "cpu".
MIXES = {
    "default": ((0.60, "gpu1"), (0.15, "gpuN"), (0.15, "share"), (0.10, "cpu")),
    # for the memory run: enough pods fit that 100,000 end up bound on 10,000 nodes
    "dense": ((0.20, "gpu1"), (0.50, "share"), (0.30, "cpu")),
}


# --priorities: (share of pods, priority); later pods of a higher level find lower-level victims.
PRIORITIES = ((0.6, 0), (0.3, 100), (0.1, 1000))


def make_pods(count: int, rng: np.random.Generator, start_seq: int = 0,
              mix: str = "default", priorities: bool = False) -> list[PodInfo]:
    products = [lookup_model(name).product for name, _ in NODE_KINDS]
    bounds = np.cumsum([share for share, _ in MIXES[mix]])
    kinds = [kind for _, kind in MIXES[mix]]
    pods = []
    for i in range(count):
        kind = kinds[min(int(np.searchsorted(bounds, rng.random(), side="right")), len(kinds) - 1)]
        requests = {"cpu": int(rng.integers(1, 9)) * 1000, "memory": int(rng.integers(4, 65)) * GIB}
        gpu_milli = 0
        if kind == "gpu1":
            requests["nvidia.com/gpu"] = 1
        elif kind == "gpuN":
            requests["nvidia.com/gpu"] = int(rng.choice([2, 4, 8]))
        elif kind == "share":
            gpu_milli = int(rng.choice([250, 500]) if mix == "default" else rng.choice([100, 250]))
        fields: dict = {}
        placement = rng.random()
        if placement < 0.15:
            fields["node_selector"] = {"nvidia.com/gpu.product": str(rng.choice(products[:2]))}
        elif placement < 0.30:
            fields["required_terms"] = (NodeSelectorTerm((Requirement(
                "nvidia.com/gpu.product", "In", tuple(products[:3])),)),)
        if rng.random() < 0.20:
            fields["tolerations"] = (Toleration("dedicated", "Equal", TEAMS[int(rng.integers(2))], "NoSchedule"),)
        if priorities:
            level = int(np.searchsorted(np.cumsum([s for s, _ in PRIORITIES]), rng.random(), side="right"))
            fields["priority"] = PRIORITIES[min(level, len(PRIORITIES) - 1)][1]
        name = f"pod-{start_seq + i:06d}"
        pods.append(PodInfo("bench", name, f"uid-{name}", requests, gpu_milli=gpu_milli,
                            creation_seq=start_seq + i, **fields))
    return pods


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024   # Linux: KiB


def run(num_nodes: int, num_pods: int, seed: int, profile: bool, mix: str = "default",
        preemption: bool = True, priorities: bool = False) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    snapshot = build_snapshot(num_nodes, rng)
    pods = make_pods(num_pods, rng, mix=mix, priorities=priorities)
    build_s = time.perf_counter() - t0
    profiles = None if preemption else parse_config(
        {"profiles": [{"plugins": {"postFilter": {"disabled": [{"name": "*"}]}}}]})
    scheduler = Scheduler(snapshot, profiles, np.random.default_rng(seed), lambda: 0.0)
    times = np.zeros(num_pods)
    ok = np.zeros(num_pods, dtype=bool)
    bound = evicted = 0
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    start, cpu_start = time.perf_counter(), time.process_time()
    for i, pod in enumerate(pods):
        t = time.perf_counter()
        result = scheduler.schedule_one(pod)
        if result.nominated_node:        # act as the cluster does: evict, then the next attempt
            for victim in result.victims:
                snapshot.remove_pod(victim.uid)
            evicted += len(result.victims)
            result = scheduler.schedule_one(pod)
        times[i] = time.perf_counter() - t
        ok[i] = result.scheduled
        bound += result.scheduled
    total = time.perf_counter() - start
    cpu_total = time.process_time() - cpu_start
    if profiler:
        profiler.disable()
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(25)
    return {"nodes": num_nodes, "pods": num_pods, "bound": bound, "evicted": evicted, "build_s": build_s,
            "pods_per_s": num_pods / total, "cpu_pods_per_s": num_pods / cpu_total, "p50_ms": float(np.percentile(times, 50) * 1e3),
            "p99_ms": float(np.percentile(times, 99) * 1e3), "per_pod_ms": total / num_pods * 1e3,
            "bound_per_s": ok.sum() / max(times[ok].sum(), 1e-9),
            "failed_ms": float(times[~ok].mean() * 1e3) if (~ok).any() else 0.0,
            "peak_rss_mib": peak_rss_mib()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="*", default=[1000, 5000, 10000])
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="print cProfile's top functions")
    parser.add_argument("--mix", choices=sorted(MIXES), default="default",
                        help="pod mix; 'dense' lets 100,000 pods fit on 10,000 nodes (memory run)")
    parser.add_argument("--no-preemption", action="store_true",
                        help="profile without PostFilter (failed attempts skip the preemption dry run)")
    parser.add_argument("--priorities", action="store_true",
                        help="pods at priorities 0/100/1000 (60/30/10%%): failed attempts run real "
                             "dry runs with victims")
    args = parser.parse_args(argv)
    print(f"{'nodes':>6} {'pods':>7} {'bound':>7} {'evicted':>7} {'pods/s':>8} {'cpu p/s':>8} {'bound/s':>8} {'p50 ms':>7} "
          f"{'p99 ms':>7} {'fail ms':>8} {'build s':>8} {'peak RSS MiB':>12}")
    for num_nodes in args.nodes:
        r = run(num_nodes, args.pods, args.seed, args.profile, args.mix, not args.no_preemption,
                args.priorities)
        print(f"{r['nodes']:>6} {r['pods']:>7} {r['bound']:>7} {r['evicted']:>7} {r['pods_per_s']:>8.0f} {r['cpu_pods_per_s']:>8.0f} "
              f"{r['bound_per_s']:>8.0f} {r['p50_ms']:>7.3f} {r['p99_ms']:>7.3f} {r['failed_ms']:>8.2f} "
              f"{r['build_s']:>8.1f} {r['peak_rss_mib']:>12.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
