"""Queue-heavy benchmark: Kueue's admission on the embedded cluster at scale (a script, not a test).

A cluster of ``--nodes`` 8-GPU nodes in two GPU flavors (half A100, half H100, told apart by
GFD's product label), ``--queues`` ClusterQueues in cohorts of five (each cohort under one root
cohort: a two-level tree), each with a nominal quota per flavor that adds up to the cluster and
room to borrow, one LocalQueue per ClusterQueue in its own namespace, then ``--jobs`` queued
batch/v1 Jobs spread round-robin over the queues (a mix of 1-GPU and 8-GPU pods, parallelism 1,
2 or 4, three priorities). Kueue makes a Workload of each and admits what quota allows; the
rest wait in their queues.

Measured (CPU time of this process; on a shared machine only CPU time compares):

- the apply of the Jobs in batches of ``--batch`` (each batch one ``Cluster.apply``: Kueue's
  controllers run their cycles in the settle after each write);
- admission cycles per CPU second: the scheduling cycles (one head per ClusterQueue each),
  read from ``/metrics`` as Kueue's ``kueue_admission_attempts_total`` (by result: ``success``
  when a cycle admitted a Workload, else ``inadmissible``), over the CPU the applies took;
- CPU per admitted Workload.

    python bench/bench_kueue.py                                  # 1,000 nodes, 50 queues, 20,000 Jobs
    python bench/bench_kueue.py --nodes 100 --queues 10 --jobs 2000   # a quick look
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from gpusched.cluster.cluster import Cluster
from gpusched.objects.manifest import load_text

FLAVORS = (("a100", "A100-80GB", "NVIDIA-A100-SXM4-80GB"), ("h100", "H100-80GB", "NVIDIA-H100-80GB-HBM3"))
KUEUE = "kueue.x-k8s.io/v1beta2"


def _docs(docs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)


def cluster_docs(nodes: int, queues: int) -> list[dict[str, Any]]:
    """NodePools, flavors, cohorts, ClusterQueues, namespaces and LocalQueues."""
    docs: list[dict[str, Any]] = []
    per_flavor = nodes // len(FLAVORS)
    for flavor, model, product in FLAVORS:
        docs.append({"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool", "metadata": {"name": flavor},
                     "spec": {"count": per_flavor, "gpu": {"model": model, "count": 8},
                              "cpu": "96", "memory": "1Ti"}})
        docs.append({"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": flavor},
                     "spec": {"nodeLabels": {"nvidia.com/gpu.product": product}}})
    docs.append({"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": "root"}})
    cohorts = max(1, queues // 5)
    for c in range(cohorts):
        docs.append({"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": f"cohort-{c:02d}"},
                     "spec": {"parentName": "root"}})
    gpus = per_flavor * 8 // queues
    for q in range(queues):
        name = f"team-{q:03d}"
        docs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        docs.append({"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
            "cohortName": f"cohort-{q % cohorts:02d}",
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}},
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
            "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
                {"name": flavor, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": gpus,
                                                "borrowingLimit": gpus}]}
                for flavor, _, _ in FLAVORS]}]}})
        docs.append({"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": "queue", "namespace": name},
                     "spec": {"clusterQueue": name}})
    for value, name in ((100, "low"), (1000, "normal"), (10000, "high")):
        docs.append({"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": name},
                     "value": value})
    return docs


def job(index: int, queues: int) -> dict[str, Any]:
    """The index-th Job: round-robin over the queues; 1 or 8 GPUs per pod, parallelism 1, 2 or 4."""
    gpus = 8 if index % 5 == 0 else 1
    parallelism = (1, 2, 4)[index % 3]
    priority = ("low", "normal", "high")[index % 7 % 3]
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"job-{index:05d}", "namespace": f"team-{index % queues:03d}",
                         "labels": {"kueue.x-k8s.io/queue-name": "queue",
                                    "kueue.x-k8s.io/priority-class": priority}},
            "spec": {"parallelism": parallelism, "completions": parallelism, "template": {
                "metadata": {"annotations": {"gpusched.io/duration": "24h"}},
                "spec": {"restartPolicy": "Never", "containers": [{
                    "name": "train", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                    "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}}}


def admitted_of(cluster: Cluster) -> tuple[int, int]:
    """(admitted, pending) Workloads."""
    workloads = cluster.get("workloads", all_namespaces=True)
    admitted = sum(1 for wl in workloads if (wl.get("status") or {}).get("admission"))
    return admitted, len(workloads) - admitted


def cycles_of(cluster: Cluster) -> dict[str, int]:
    """``kueue_admission_attempts_total`` by result, as ``/metrics`` reports it."""
    from prometheus_client.parser import text_string_to_metric_families

    from gpusched.metrics.exposition import render_cluster
    return {s.labels["result"]: int(s.value)
            for family in text_string_to_metric_families(render_cluster(cluster)[1].decode())
            for s in family.samples if s.name == "kueue_admission_attempts_total"}


def run(nodes: int, queues: int, jobs: int, batch: int) -> None:
    with tempfile.TemporaryDirectory() as folder, Cluster.open(str(Path(folder) / "state.db")) as cluster:
        cluster.apply(load_text(_docs(cluster_docs(nodes, queues)), "cluster.yaml"))
        batches = [load_text(_docs([job(i, queues) for i in range(start, min(jobs, start + batch))]),
                             f"jobs-{start}.yaml") for start in range(0, jobs, batch)]
        cpu_started, wall_started = time.process_time(), time.perf_counter()
        for manifest in batches:
            cluster.apply(manifest)
        cpu, wall = time.process_time() - cpu_started, time.perf_counter() - wall_started
        admitted, pending = admitted_of(cluster)
        cycles = cycles_of(cluster)
    total = sum(cycles.values())
    print(f"{nodes} nodes, {queues} ClusterQueues, {jobs} Jobs in batches of {batch}: "
          f"{admitted} admitted, {pending} pending")
    print(f"  CPU {cpu:.1f} s (wall {wall:.1f} s): {jobs / cpu:.0f} Jobs queued per CPU second, "
          f"{cpu * 1000 / max(1, admitted):.1f} ms CPU per admitted Workload")
    print(f"  {total} admission cycles ({cycles.get('success', 0)} success, {cycles.get('inadmissible', 0)} "
          f"inadmissible): {total / cpu:.0f} cycles per CPU second")
    print(f"load average {' '.join(f'{v:.1f}' for v in os.getloadavg())}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--queues", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args(argv)
    run(args.nodes, args.queues, args.jobs, args.batch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
