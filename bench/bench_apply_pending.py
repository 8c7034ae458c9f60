"""Apply benchmark: the CPU cost of one write while many pods wait unschedulable (a script, not
a test).

``--pods`` one-GPU pods (500m, 1Gi) are applied one write at a time (``Cluster.apply`` of one
manifest, as a kubectl apply per pod against a kept cluster) onto ``--nodes`` 8-GPU nodes
that either fit them (``fit``) or have less cpu than any pod asks (``nofit``: every pod stays
Pending, rejected by NodeResourcesFit). kube-scheduler's queueing hints leave the waiting pods
alone on a pod add that cannot help them, so both cases should cost about the same per pod
(issue 28: 52 ms against 7.9 ms before the one scheduling queue). Prints CPU ms per pod and
the load average (on a shared machine only CPU time compares).

    python bench/bench_apply_pending.py                 # 2,000 pods, both cases
    python bench/bench_apply_pending.py --pods 500 --case nofit
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import yaml

from gpusched.cluster.cluster import Cluster
from gpusched.objects.manifest import load_text


def _pool(count: int, cpu: str) -> str:
    return yaml.safe_dump({"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool",
                           "metadata": {"name": "gpu"},
                           "spec": {"count": count, "cpu": cpu, "memory": "256Gi",
                                    "gpu": {"model": "A100-40GB", "count": 8}}})


def _pod(index: int) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": f"p-{index:05d}", "namespace": "default"},
                           "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {
                               "limits": {"nvidia.com/gpu": 1, "cpu": "500m", "memory": "1Gi"}}}]}})


def run_case(case: str, pods: int, nodes: int) -> float:
    """CPU ms per applied pod for one case."""
    with tempfile.TemporaryDirectory() as folder, \
            Cluster.open(str(Path(folder) / "state.db")) as cluster:
        cluster.apply(load_text(_pool(nodes, "64" if case == "fit" else "100m"), "pool.yaml"))
        manifests = [load_text(_pod(i), f"pod-{i}.yaml") for i in range(pods)]
        started = time.process_time()
        for manifest in manifests:
            cluster.apply(manifest)
        cpu = time.process_time() - started
        pending = sum(1 for p in cluster.get("pods", namespace="default")
                      if not p["spec"].get("nodeName"))
    print(f"{case:5s}: {pods} pods onto {nodes} nodes, {pending} pending: "
          f"{cpu * 1000 / pods:.1f} ms CPU per pod ({cpu:.1f} s)")
    return cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--nodes", type=int, default=250)
    parser.add_argument("--case", choices=("fit", "nofit", "both"), default="both")
    args = parser.parse_args(argv)
    for case in (("fit", "nofit") if args.case == "both" else (args.case,)):
        run_case(case, args.pods, args.nodes)
    print(f"load average {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
