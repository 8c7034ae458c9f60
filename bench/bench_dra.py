"""DRA scheduling throughput (a script, not a test): the DynamicResources plugin with
``gpusched.dra``'s allocator on a dynamic-MIG cluster.

1,000 nodes of 8x H100-80GB whose GPUs NVIDIA's DRA driver publishes under DynamicMIG
(``devices.dra_slices``: per GPU one counter set, the whole GPU and every legal placement of
every MIG profile as devices consuming its counters; 26 devices per GPU, 9 slices per node), the
driver's DeviceClasses ``gpu.nvidia.com`` / ``mig.nvidia.com``, and a stream of pods each with
one ResourceClaim: 15% a whole GPU, 85% one MIG device chosen by a CEL selector on its
``profile`` (``1g.10gb`` 50%, ``2g.20gb`` 30%, ``3g.40gb`` 20%). The default profile schedules
one pod at a time (``Scheduler.schedule_one``); a scheduled pod's PreBind claim writes are
applied as the embedded cluster applies them (the plugin gets the stored claim back), so the
next pod sees the devices in use and the counters they consumed.

Prints pods/s over all attempts (wall clock, and over this process's CPU time, which other work
on a shared machine disturbs less), p50/p99 of one attempt, pods bound, allocator calls and the
time of the first pass (every node seen once per claim shape).

    python bench/bench_dra.py                      # 1,000 nodes, 20,000 claims
    python bench/bench_dra.py --nodes 100 --pods 2000 --profile
    python bench/bench_dra.py --nodes 200 --pods 200 --everywhere   # upstream's cost model

Seeded: every run schedules the same pods the same way.
"""

from __future__ import annotations

import argparse
import cProfile
import copy
import json
import pstats
import time
from typing import Any

import numpy as np

from gpusched.devices.catalog import lookup_model
from gpusched.devices.dra_classes import device_classes
from gpusched.devices.dra_slices import NodeGpus, node_slices
from gpusched.objects.pod import pod_info
from gpusched.objects.types import NodeInfo
from gpusched.scheduler.plugins.dynamic_resources import DynamicResources
from gpusched.scheduler.plugins.helper.dra_manager import DraObjects, claim_key
from gpusched.scheduler.runner import Scheduler
from gpusched.scheduler.snapshot import Snapshot

GIB = 2**30
MODEL = "H100-80GB"
TEMPLATE_NODE = "template-node-name"
DRIVER_VERSION = "550.54.15"
SHAPES = (("gpu", None, 0.15), ("mig", "1g.10gb", 0.425), ("mig", "2g.20gb", 0.255),
          ("mig", "3g.40gb", 0.17))


def build_cluster(nodes: int) -> tuple[Snapshot, list[dict[str, Any]]]:
    """The nodes, and their slices: one node's as the driver publishes them, the others the
    same with their own node name (building every node's from the catalog takes minutes; the
    GPU UUIDs then repeat across nodes, which no selector here reads)."""
    snapshot, slices = Snapshot(), []
    template = json.dumps(node_slices(NodeGpus(TEMPLATE_NODE, lookup_model(MODEL), 8,
                                               DRIVER_VERSION, dynamic_mig=True)))
    for i in range(nodes):
        name = f"node-{i:05d}"
        snapshot.add_node(NodeInfo(name, {"cpu": 96_000, "memory": 768 * GIB, "pods": 110},
                                   {"cpu": 96_000, "memory": 768 * GIB, "pods": 110},
                                   {"kubernetes.io/hostname": name}))
        for position, body in enumerate(json.loads(template.replace(TEMPLATE_NODE, name))):
            body["metadata"]["resourceVersion"] = "1"
            body["metadata"]["uid"] = f"{name}-slice-{position}"
            slices.append(body)
    return snapshot, slices


def make_claims(count: int, rng: np.random.Generator) -> list[dict[str, Any]]:
    weights = np.array([w for *_, w in SHAPES])
    picks = rng.choice(len(SHAPES), size=count, p=weights / weights.sum())
    claims = []
    for i, pick in enumerate(picks):
        kind, profile, _ = SHAPES[int(pick)]
        exactly: dict[str, Any] = {"deviceClassName": f"{kind}.nvidia.com",
                                   "allocationMode": "ExactCount", "count": 1}
        if profile:
            exactly["selectors"] = [{"cel": {"expression":
                                             f"device.attributes['gpu.nvidia.com'].profile == '{profile}'"}}]
        claims.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                       "metadata": {"name": f"claim-{i:05d}", "namespace": "default",
                                    "uid": f"claim-uid-{i}", "resourceVersion": "1"},
                       "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}})
    return claims


def pod_body(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"pod-{i:05d}", "namespace": "default", "uid": f"pod-uid-{i}"},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {
                "requests": {"cpu": "1", "memory": "1Gi"}, "claims": [{"name": "gpu"}]}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": f"claim-{i:05d}"}]}}


def allocate_everywhere(plugin: DynamicResources) -> None:
    """Upstream's cost model for comparison: the allocator on every node for every pod (no
    kept outcome, no kept rows); the decisions are the same (tests/scheduler/test_dra_reuse.py)."""
    memo, rows = plugin.memo, plugin.rows
    memo.outcome = lambda node, labels, claims, signature: memo._allocate(node, labels, claims)  # type: ignore[method-assign]
    fits = rows.fits

    def every_row(*args: Any) -> Any:
        rows._shapes.clear()
        return fits(*args)
    rows.fits = every_row  # type: ignore[method-assign]


def run(nodes: int, pods: int, seed: int, everywhere: bool = False) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    snapshot, slices = build_cluster(nodes)
    claims = make_claims(pods, rng)
    classes = {c["metadata"]["name"]: {**c, "metadata": {**c["metadata"], "resourceVersion": "1"}}
               for c in device_classes()}
    scheduler = Scheduler(snapshot, None, np.random.default_rng(seed), lambda: 0.0)
    plugin = scheduler.frameworks["default-scheduler"].plugins["DynamicResources"]
    assert isinstance(plugin, DynamicResources)
    if everywhere:
        allocate_everywhere(plugin)
    plugin.set_objects(DraObjects({claim_key(c): c for c in claims}, slices, classes))
    infos = [pod_info(pod_body(i), i) for i in range(pods)]
    times, bound, version = [], 0, 1
    first_pass = 0.0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for i, info in enumerate(infos):
        started = time.perf_counter()
        result = scheduler.schedule_one(info)
        if result.scheduled:
            bound += 1
            for write in plugin.pre_bind(info, result.node):
                version += 1
                stored = copy.deepcopy(write.body)
                stored["metadata"]["resourceVersion"] = str(version)
                plugin.assumed(write, stored)
        times.append(time.perf_counter() - started)
        if i < len(SHAPES) * 4:
            first_pass += times[-1]
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    attempts = np.array(times)
    return {"nodes": nodes, "pods": pods, "bound": bound, "wall_pods_s": pods / wall,
            "cpu_pods_s": pods / cpu, "p50_ms": float(np.percentile(attempts, 50)) * 1e3,
            "p99_ms": float(np.percentile(attempts, 99)) * 1e3, "max_ms": float(attempts.max()) * 1e3,
            "allocator_calls": plugin.memo.allocator_calls, "first_pass_s": first_pass,
            "wall_s": wall, "cpu_s": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="cProfile's top functions")
    parser.add_argument("--everywhere", action="store_true",
                        help="run the allocator on every node for every pod (upstream's Filter)")
    args = parser.parse_args()
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
    got = run(args.nodes, args.pods, args.seed, args.everywhere)
    if args.profile:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    print(f"{got['nodes']} nodes x 8 {MODEL} (DynamicMIG), {got['pods']} claims: "
          f"{got['wall_pods_s']:.0f} pods/s wall, {got['cpu_pods_s']:.0f} pods/s CPU, "
          f"attempt p50 {got['p50_ms']:.2f} ms p99 {got['p99_ms']:.2f} ms max {got['max_ms']:.0f} ms, "
          f"{got['bound']} bound, {got['allocator_calls']} allocator calls, first pass "
          f"{got['first_pass_s']:.1f} s, {got['cpu_s']:.1f} CPU-s")


if __name__ == "__main__":
    main()
