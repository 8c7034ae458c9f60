"""DRA allocator micro-benchmark: the cost of one ``gpusched.dra.allocator.allocate`` call on a
dynamic-MIG node (a script, not a test).

Each node has 8 A100-80GB-shaped GPUs published as NVIDIA's driver does with dynamic MIG: per
GPU one counter set (eight memory slices and seven compute slices) and 19 devices consuming it:
the whole GPU and every placement of 1g.10gb (7), 1g.20gb (4), 2g.20gb (3), 3g.40gb (2), 4g.40gb
and 7g.80gb. Claims ask for one device through the ``gpu.nvidia.com`` or ``mig.nvidia.com``
class plus a profile selector, 30% whole GPUs and 70% MIG profiles (seeded).

It fills ``--nodes`` nodes claim by claim, first fit over the nodes in order (so most calls are
the "does not fit here" answer the scheduler's Filter gives on a full node), and reports the
calls, the successful ones, CPU microseconds per call, the first call per node (pool gathering
and each device's first CEL evaluation), then microseconds per call on the full nodes.

    python bench/bench_dra_allocator.py                  # 20 nodes
    python bench/bench_dra_allocator.py --nodes 50 --profile
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
from typing import Any

import numpy as np

from gpusched.dra.allocator import Allocated, InUse, NodeFacts, SliceSet, allocate
from gpusched.dra.model import Claim, DeviceClass, Slice

DRIVER = "gpu.nvidia.com"
PLACEMENTS = {"1g.10gb": (1, 1, range(7)), "1g.20gb": (1, 2, range(0, 8, 2)), "2g.20gb": (2, 2, range(0, 6, 2)),
              "3g.40gb": (3, 4, range(0, 8, 4)), "4g.40gb": (4, 4, range(1)), "7g.80gb": (7, 8, range(1))}


def _mig(gpu: int, profile: str, compute: int, memory: int, start: int) -> dict[str, Any]:
    slices = {f"memory-slice-{i}": {"value": "1"} for i in range(start, start + memory)}
    return {"name": f"gpu-{gpu}-mig-{profile.replace('.', '')}-{start}",
            "attributes": {"type": {"string": "mig"}, "profile": {"string": profile},
                           "productName": {"string": "NVIDIA A100-SXM4-80GB"}},
            "capacity": {"memory": {"value": f"{memory * 10}Gi"}},
            "consumesCounters": [{"counterSet": f"gpu-{gpu}-counter-set",
                                  "counters": {"multiprocessors": {"value": str(compute * 14)}, **slices}}]}


def _gpu(gpu: int) -> list[dict[str, Any]]:
    whole = {"name": f"gpu-{gpu}", "attributes": {"type": {"string": "gpu"},
                                                  "productName": {"string": "NVIDIA A100-SXM4-80GB"}},
             "capacity": {"memory": {"value": "80Gi"}},
             "consumesCounters": [{"counterSet": f"gpu-{gpu}-counter-set",
                                   "counters": {"multiprocessors": {"value": "98"},
                                                **{f"memory-slice-{i}": {"value": "1"} for i in range(8)}}}]}
    return [whole] + [_mig(gpu, p, c, m, s) for p, (c, m, starts) in PLACEMENTS.items() for s in starts]


def node_slices(node: str) -> list[Slice]:
    pool = {"name": node, "generation": 1, "resourceSliceCount": 9}
    counters = [{"name": f"gpu-{g}-counter-set",
                 "counters": {"multiprocessors": {"value": "98"}, **{f"memory-slice-{i}": {"value": "1"} for i in range(8)}}}
                for g in range(8)]
    bodies = [{"metadata": {"name": f"{node}-counters"}, "spec": {"driver": DRIVER, "pool": pool, "nodeName": node,
                                                                 "sharedCounters": counters}}]
    bodies += [{"metadata": {"name": f"{node}-gpu-{g}"}, "spec": {"driver": DRIVER, "pool": pool, "nodeName": node,
                                                                 "devices": _gpu(g)}} for g in range(8)]
    return [Slice.from_object(b) for b in bodies]


CLASSES = {name: DeviceClass.from_object({"metadata": {"name": name}, "spec": {"selectors": [{"cel": {"expression":
           f"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '{kind}'"}}]}})
           for name, kind in (("gpu.nvidia.com", "gpu"), ("mig.nvidia.com", "mig"))}


def make_claim(index: int, rng: np.random.Generator) -> Claim:
    if rng.random() < 0.3:
        exactly: dict[str, Any] = {"deviceClassName": "gpu.nvidia.com"}
    else:
        profile = str(rng.choice(["1g.10gb", "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb"]))
        exactly = {"deviceClassName": "mig.nvidia.com",
                   "selectors": [{"cel": {"expression": f"device.attributes['gpu.nvidia.com'].profile == '{profile}'"}}]}
    return Claim.from_object({"metadata": {"namespace": "default", "name": f"c{index}", "uid": f"u{index}"},
                              "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}})


def run(nodes: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    slices = SliceSet(s for n in range(nodes) for s in node_slices(f"node-{n}"))
    facts = [NodeFacts(f"node-{n}", {}) for n in range(nodes)]
    held: dict[str, list[Claim]] = {f.name: [] for f in facts}
    in_use = {f.name: InUse() for f in facts}
    full: set[str] = set()
    calls = fits = 0
    cold = 0.0
    start = time.process_time()
    index = 0
    while len(full) < nodes:
        claim = make_claim(index, rng)
        index += 1
        placed = False
        for fact in facts:
            t0 = time.process_time()
            got = allocate([claim], fact, slices, CLASSES, in_use[fact.name])
            if calls < nodes:
                cold += time.process_time() - t0
            calls += 1
            if isinstance(got, Allocated):
                fits += 1
                done = Claim.from_object({"metadata": {"name": claim.name}, "spec": {},
                                          "status": {"allocation": got.allocations[0]}})
                held[fact.name].append(done)
                in_use[fact.name] = InUse.from_claims(held[fact.name])
                placed = True
                break
        if not placed:
            full.update(f.name for f in facts)
    cpu = time.process_time() - start
    warm = time.process_time()
    rounds = 0
    for _ in range(20):                     # full nodes, warm caches: the Filter's common answer
        claim = make_claim(index, rng)
        index += 1
        for fact in facts:
            allocate([claim], fact, slices, CLASSES, in_use[fact.name])
            rounds += 1
    warm = time.process_time() - warm
    return {"calls": calls, "fits": fits, "cpu_s": cpu, "us_per_call": cpu / calls * 1e6,
            "first_calls_cpu_s": cold, "full_node_calls": rounds, "us_per_full_node_call": warm / rounds * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(run, args.nodes, args.seed)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
        return
    result = run(args.nodes, args.seed)
    print(", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in result.items()))


if __name__ == "__main__":
    main()
