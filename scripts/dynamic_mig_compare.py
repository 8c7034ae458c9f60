"""Static ``all-balanced`` MIG layouts against dynamic MIG through DRA, on one seeded MIG-heavy
inference workload, on the virtual clock.

One command, byte-for-byte reproducible (no wall clock in the output)::

    .venv/bin/python scripts/dynamic_mig_compare.py [--seed 7] [--pods 240] [--out docs/dra.md]

Steps:

1. draw the workload from ``numpy.random.default_rng(seed)`` (:func:`workload`): Poisson
   arrivals over ``HOURS`` hours, each pod an inference server asking for one MIG device of a
   profile drawn from ``PROFILES`` (small profiles most often, some whole-GPU ``7g.40gb``), a
   run time drawn exponentially (mean ``MEAN_RUN_S``, at least a minute); the offered load is
   ``LOAD`` of the cluster's compute slices;
2. for each mode, build the cluster in a temporary state file: ``NODES`` NodePool nodes of
   8 A100-40GB whose GPUs NVIDIA's DRA driver publishes, ``static`` with the
   ``nvidia.com/mig.config: all-balanced`` layout (per GPU a 3g.20gb, a 2g.10gb and two
   1g.5gb, created once by mig-manager: ``spec.gpu.management: dra``) or ``dynamic`` with the
   driver's DynamicMIG (``dra-dynamic-mig``: every placement published, carved per claim);
   one ResourceClaimTemplate per profile (class ``mig.nvidia.com``, a CEL selector on
   ``profile``);
3. replay the pods through the ``Cluster`` facade: ``advance`` to each arrival, ``apply`` the
   pods arriving then, finally ``advance`` ``DRAIN_S`` past the last arrival; a pod that has not
   started by then was not served;
4. measure from the pods (``gpusched.io/start-time``): pods served (in all and per profile),
   pending time of the served pods (start - arrival: mean, p95), and GPU utilisation (compute
   slices held x time / (7 x GPUs x the time from the first arrival to the last), the busy
   period both modes share);
5. write the markdown table between the ``dynamic_mig_compare`` markers of ``--out`` (the rest
   of the file is kept) and print it.

A mode where the scheduler allocates no claim (no DynamicResources plugin) stops with an error
rather than report pods that ran without devices.

Neighbours: ``gpusched.cluster.cluster.Cluster`` (the embedded cluster),
``gpusched.devices.dra_slices`` (the devices), the DynamicResources scheduler plugin; the result
is documented in ``docs/dra.md``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpusched.cluster.cluster import Cluster
from gpusched.objects.manifest import Manifest
from gpusched.sim.doc_table import command_line, header, metric_rows, row, write_block

BEGIN, END = "<!-- dynamic_mig_compare:begin -->", "<!-- dynamic_mig_compare:end -->"
NODES, GPUS_PER_NODE = 2, 8
TOTAL_GPUS = NODES * GPUS_PER_NODE
# profile, compute slices, share of the pods (A100-40GB)
PROFILES = (("1g.5gb", 1, 0.40), ("2g.10gb", 2, 0.25), ("3g.20gb", 3, 0.20),
            ("4g.20gb", 4, 0.05), ("7g.40gb", 7, 0.10))
HOURS = 4.0
MEAN_RUN_S = 1800.0
LOAD = 1.0          # offered compute slices / the cluster's 7 x GPUs, while pods arrive
DRAIN_S = 2 * 3600
MODES = (("static", "static all-balanced", "dra"),
         ("dynamic", "dynamic MIG (DRA)", "dra-dynamic-mig"))


@dataclass(frozen=True, slots=True)
class Server:
    name: str
    arrival: int          # virtual seconds
    profile: str
    slices: int           # compute slices
    run: int              # seconds


def workload(seed: int, pods: int) -> list[Server]:
    """The seeded pod list (see the module docstring); arrivals in whole seconds, ascending."""
    rng = np.random.default_rng(seed)
    shares = np.array([p for _, _, p in PROFILES])
    mean_slices = float(np.array([s for _, s, _ in PROFILES]) @ shares)
    rate = LOAD * 7 * TOTAL_GPUS / (mean_slices * MEAN_RUN_S)      # pods per second
    gaps = rng.exponential(1 / rate, size=pods)
    arrivals = np.floor(np.cumsum(gaps) - gaps[0]).astype(int)
    kinds = rng.choice(len(PROFILES), size=pods, p=shares)
    runs = np.maximum(60, np.floor(rng.exponential(MEAN_RUN_S, size=pods))).astype(int)
    return [Server(f"infer-{i:03d}", int(arrivals[i]), PROFILES[int(kinds[i])][0],
                   PROFILES[int(kinds[i])][1], int(runs[i])) for i in range(pods)]


def template_name(profile: str) -> str:
    return "mig-" + profile.replace(".", "-")


def setup_manifests(management: str) -> list[Manifest]:
    spec = {"count": NODES, "cpu": "128", "memory": "1Ti",
            "gpu": {"model": "A100-40GB", "count": GPUS_PER_NODE, "management": management}}
    if management == "dra":
        spec["migConfig"] = "all-balanced"
    docs = [Manifest("setup", 0, {"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool",
                                  "metadata": {"name": "a100"}, "spec": spec})]
    for profile, _, _ in PROFILES:
        selector = {"cel": {"expression": f"device.attributes['gpu.nvidia.com'].profile == "
                                          f"'{profile}'"}}
        docs.append(Manifest("setup", 0, {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": template_name(profile), "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "mig", "exactly": {
                "deviceClassName": "mig.nvidia.com", "selectors": [selector]}}]}}}}))
    return docs


def pod_manifest(server: Server) -> Manifest:
    return Manifest("workload", 0, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": server.name, "namespace": "default",
                     "annotations": {"gpusched.io/duration": f"{server.run}s"}},
        "spec": {"restartPolicy": "Never",
                 "containers": [{"name": "server", "image": "vllm", "resources": {
                     "requests": {"cpu": "2", "memory": "8Gi"},
                     "claims": [{"name": "mig"}]}}],
                 "resourceClaims": [{"name": "mig",
                                     "resourceClaimTemplateName": template_name(server.profile)}]}})


def replay(management: str, servers: list[Server], state: str) -> dict[str, float]:
    """Run ``servers`` on a fresh cluster in ``state``; returns the start time per pod."""
    with Cluster.open(state) as cluster:
        cluster.apply(setup_manifests(management))
        index, checked = 0, False
        while index < len(servers):
            arrival = servers[index].arrival
            batch = [s for s in servers[index:] if s.arrival == arrival]
            cluster.advance(arrival - cluster.now())
            checked = checked or _claims_allocated(cluster, management)
            cluster.apply([pod_manifest(s) for s in batch])
            index += len(batch)
        cluster.advance(servers[-1].arrival + DRAIN_S - cluster.now())
        starts = {}
        for pod in cluster.get("pods"):
            text = (pod["metadata"].get("annotations") or {}).get("gpusched.io/start-time")
            if text is not None:
                starts[pod["metadata"]["name"]] = float(text)
    if not checked:
        raise SystemExit(f"{management}: no pod ran with its ResourceClaim allocated "
                         "(is the DynamicResources scheduler plugin there?)")
    return starts


def _claims_allocated(cluster: Cluster, management: str) -> bool:
    """True once a running pod's claim is allocated; a running pod whose claims are not stops
    the run (no DynamicResources plugin: the pods would run without devices)."""
    running = [p for p in cluster.get("pods") if p["status"].get("phase") == "Running"]
    if not running:
        return False
    if any((c.get("status") or {}).get("allocation") for c in cluster.get("resourceclaims")):
        return True
    raise SystemExit(f"{management}: pods run but no ResourceClaim is allocated "
                     "(is the DynamicResources scheduler plugin there?)")


def measure(servers: list[Server], starts: dict[str, float]) -> dict[str, float]:
    first, last = servers[0].arrival, servers[-1].arrival
    served = [s for s in servers if s.name in starts]
    waits = np.array([starts[s.name] - s.arrival for s in served]) if served else np.zeros(1)
    held = sum(s.slices * max(0.0, min(last, starts[s.name] + s.run) - max(first, starts[s.name]))
               for s in served)
    out = {"pods": len(servers), "served": len(served),
           "wait_mean": float(waits.mean()), "wait_p95": float(np.percentile(waits, 95)),
           "utilization": held / (7 * TOTAL_GPUS * max(1, last - first))}
    for profile, _, _ in PROFILES:
        wanted = [s for s in servers if s.profile == profile]
        out[f"served {profile}"] = sum(1 for s in wanted if s.name in starts)
        out[f"asked {profile}"] = len(wanted)
    return out


def table(args: argparse.Namespace, servers: list[Server], results: dict[str, dict]) -> str:
    command = command_line("scripts/dynamic_mig_compare.py",
                           (("--seed", args.seed), ("--pods", args.pods), ("--out", args.out)))
    first = next(iter(results.values()))
    lines = [BEGIN, "", f"Generated by `{command}` (seed {args.seed}, {len(servers)} pods over "
             f"{servers[-1].arrival / 3600:.2f} h on {NODES} nodes of {GPUS_PER_NODE} A100-40GB, "
             f"offered load {LOAD:.0%} of their compute slices; a pod not started "
             f"{DRAIN_S / 3600:.0f} h after the last arrival was not served).", "",
             *header("metric", [label for _, label, _ in MODES]),
             row("pods served", [f"{results[m]['served']} of {first['pods']}" for m, _, _ in MODES])]
    for profile, _, _ in PROFILES:
        lines.append(row(f"served, {profile}", [f"{results[m][f'served {profile}']} of {first[f'asked {profile}']}"
                                                for m, _, _ in MODES]))
    lines += metric_rows((("mean pending time of served pods (min)", "wait_mean", 60),
                          ("p95 pending time of served pods (min)", "wait_p95", 60),
                          ("GPU utilisation (compute slices held, %)", "utilization", 0.01)),
                         results, [m for m, _, _ in MODES])
    return "\n".join(lines + ["", END])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pods", type=int, default=240)
    parser.add_argument("--out", default="docs/dra.md")
    args = parser.parse_args(argv)
    if args.pods < 1:
        parser.error("--pods must be at least 1")
    servers = workload(args.seed, args.pods)
    results = {}
    with tempfile.TemporaryDirectory(prefix="dynamic-mig-compare-") as tmp:
        for mode, _, management in MODES:
            results[mode] = measure(servers, replay(management, servers,
                                                    str(Path(tmp) / f"{mode}.db")))
    block = table(args, servers, results)
    write_block(Path(args.out), BEGIN, END, block)
    print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
