"""Compare three queue orders of the embedded scheduler on one seeded synthetic batch workload.

One command, byte-for-byte reproducible (no wall clock in the output)::

    .venv/bin/python scripts/backfill_compare.py [--seed 7] [--jobs 200] [--out docs/backfill.md]

Steps:

1. draw the workload from ``numpy.random.default_rng(seed)`` (:func:`workload`): Poisson
   arrivals, GPU counts 1/2/4/8, a time limit per job (Slurm's ``--time``) and a true run time
   at most the limit, a priority class of the lab (``high``/``normal``/``low``);
2. for each mode (``default`` = kube-scheduler, ``strict`` priority, ``backfill``), build the
   lab cluster (``examples/cluster.yaml``: 8x A100 on gpu-node-1, 4x V100, 2x T4, a CPU node)
   in a temporary state file and replay the jobs as bare Pods through the ``Cluster`` facade:
   ``advance`` to each arrival, ``apply`` the pods arriving then, finally ``advance`` until
   every pod has finished;
3. measure from the pods (``gpusched.io/start-time``): job completion time (finish - arrival),
   queueing delay (start - arrival, also for 1-4 GPU jobs and 8-GPU jobs), GPU utilization
   (GPU-seconds used / (14 GPUs x makespan)) and makespan;
4. write the markdown table between the ``backfill_compare`` markers of ``--out`` (the rest of
   the file is kept; a file without markers gets them appended) and print it.

The PriorityClasses carry the lab's names and values with ``preemptionPolicy: Never``:
Slurm's default is ``PreemptType=preempt/none``, and the comparison is about queue order only.

Neighbours: ``gpusched.cluster.cluster.Cluster`` (the embedded cluster),
``gpusched.cluster.scheduling.backfill`` (the modes); the result is documented in ``docs/backfill.md``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpusched.cluster.cluster import Cluster
from gpusched.objects.manifest import Manifest, load_manifests
from gpusched.sim.doc_table import command_line, header, metric_rows, write_block

REPO = Path(__file__).resolve().parents[1]
LAB = REPO / "examples" / "cluster.yaml"
BEGIN, END = "<!-- backfill_compare:begin -->", "<!-- backfill_compare:end -->"
MODES = (("default", "default (kube-scheduler)"), ("strict", "strict priority"),
         ("backfill", "backfill"))
TOTAL_GPUS = 14                                     # 8 A100 + 4 V100 + 2 T4
PRIORITIES = (("high", 100000, 0.2), ("normal", 1000, 0.5), ("low", 100, 0.3))
GPU_SIZES = ((1, 0.35), (2, 0.25), (4, 0.2), (8, 0.2))
LIMITS_MIN = (30, 60, 120, 240)                     # time limits to choose from, minutes
CPU_PER_GPU, MEM_GIB_PER_GPU = 6, 24
LOAD = 1.0     # offered GPU load while jobs arrive (mean GPU-seconds per second / 14 GPUs)


@dataclass(frozen=True, slots=True)
class Job:
    name: str
    arrival: int          # virtual seconds
    gpus: int
    limit: int            # seconds (the planner's knowledge)
    run: int              # true run time, <= limit
    priority_class: str


def workload(seed: int, jobs: int) -> list[Job]:
    """The seeded job list (see the module docstring); arrivals in whole seconds, ascending."""
    rng = np.random.default_rng(seed)
    sizes = np.array([s for s, _ in GPU_SIZES])
    size_p = np.array([p for _, p in GPU_SIZES])
    limits = np.array(LIMITS_MIN) * 60
    mean_run = float(np.mean(limits)) * 0.65
    mean_gap = float(sizes @ size_p) * mean_run / (LOAD * TOTAL_GPUS)
    gaps = rng.exponential(mean_gap, size=jobs)
    arrivals = np.floor(np.cumsum(gaps) - gaps[0]).astype(int)
    gpus = rng.choice(sizes, size=jobs, p=size_p)
    limit = rng.choice(limits, size=jobs)
    run = np.maximum(60, np.floor(limit * rng.uniform(0.3, 1.0, size=jobs))).astype(int)
    classes = rng.choice(len(PRIORITIES), size=jobs, p=[p for _, _, p in PRIORITIES])
    return [Job(f"job-{i:03d}", int(arrivals[i]), int(gpus[i]), int(limit[i]), int(run[i]),
                PRIORITIES[int(classes[i])][0]) for i in range(jobs)]


def pod_manifest(job: Job) -> Manifest:
    return Manifest("workload", 0, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": job.name, "namespace": "default", "annotations": {
            "gpusched.io/time-limit": str(job.limit), "gpusched.io/duration": f"{job.run}s"}},
        "spec": {"restartPolicy": "Never", "priorityClassName": job.priority_class,
                 "containers": [{"name": "train", "image": "train", "resources": {
                     "requests": {"cpu": str(CPU_PER_GPU * job.gpus),
                                  "memory": f"{MEM_GIB_PER_GPU * job.gpus}Gi"},
                     "limits": {"nvidia.com/gpu": job.gpus}}}]}})


def setup_manifests(mode: str) -> list[Manifest]:
    docs = list(load_manifests([str(LAB)]))
    docs += [Manifest("setup", 0, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                   "metadata": {"name": name}, "value": value,
                                   "preemptionPolicy": "Never"})
             for name, value, _ in PRIORITIES]
    if mode != "default":
        docs += [Manifest("setup", 0, {"apiVersion": "v1", "kind": "Namespace",
                                       "metadata": {"name": "kube-system"}}),
                 Manifest("setup", 0, {"apiVersion": "v1", "kind": "ConfigMap",
                                       "metadata": {"name": "gpusched-scheduler",
                                                    "namespace": "kube-system"},
                                       "data": {"mode": mode}})]
    return docs


def replay(mode: str, jobs: list[Job], state: str) -> dict[str, float]:
    """Run ``jobs`` in ``mode`` on a fresh cluster in ``state``; returns start time per job."""
    with Cluster.open(state) as cluster:
        cluster.apply(setup_manifests(mode))
        index = 0
        while index < len(jobs):
            arrival = jobs[index].arrival
            batch = [job for job in jobs[index:] if job.arrival == arrival]
            cluster.advance(arrival - cluster.now())
            cluster.apply([pod_manifest(job) for job in batch])
            index += len(batch)
        cluster.advance(sum(job.limit for job in jobs) + 1)
        starts = {}
        for pod in cluster.get("pods"):
            text = (pod["metadata"].get("annotations") or {}).get("gpusched.io/start-time")
            if pod["status"].get("phase") != "Succeeded" or text is None:
                raise SystemExit(f"{mode}: pod {pod['metadata']['name']} did not finish")
            starts[pod["metadata"]["name"]] = float(text)
    return starts


def measure(jobs: list[Job], starts: dict[str, float]) -> dict[str, float]:
    arrival = np.array([j.arrival for j in jobs], dtype=float)
    start = np.array([starts[j.name] for j in jobs])
    run = np.array([j.run for j in jobs], dtype=float)
    gpus = np.array([j.gpus for j in jobs])
    wait, jct = start - arrival, start + run - arrival
    makespan = float((start + run).max() - arrival.min())
    small, big = gpus < 8, gpus == 8
    return {"jobs": len(jobs), "jobs_small": int(small.sum()), "jobs_big": int(big.sum()),
            "jct_mean": jct.mean(), "jct_p95": np.percentile(jct, 95),
            "wait_mean": wait.mean(), "wait_p95": np.percentile(wait, 95),
            "wait_small_mean": wait[small].mean() if small.any() else 0.0,
            "wait_small_p95": np.percentile(wait[small], 95) if small.any() else 0.0,
            "wait_big_mean": wait[big].mean() if big.any() else 0.0,
            "wait_big_p95": np.percentile(wait[big], 95) if big.any() else 0.0,
            "utilization": float((gpus * run).sum()) / (TOTAL_GPUS * makespan),
            "makespan": makespan}


ROWS = (("mean job completion time (min)", "jct_mean", 60), ("p95 job completion time (min)",
        "jct_p95", 60), ("mean queueing delay (min)", "wait_mean", 60),
        ("p95 queueing delay (min)", "wait_p95", 60),
        ("mean queueing delay, 1-4 GPU jobs (min)", "wait_small_mean", 60),
        ("p95 queueing delay, 1-4 GPU jobs (min)", "wait_small_p95", 60),
        ("mean queueing delay, 8-GPU jobs (min)", "wait_big_mean", 60),
        ("p95 queueing delay, 8-GPU jobs (min)", "wait_big_p95", 60),
        ("GPU utilization until makespan (%)", "utilization", 0.01),
        ("makespan (h)", "makespan", 3600))


def table(args: argparse.Namespace, jobs: list[Job], results: dict[str, dict]) -> str:
    first = next(iter(results.values()))
    command = command_line("scripts/backfill_compare.py",
                           (("--seed", args.seed), ("--jobs", args.jobs), ("--out", args.out_text)))
    lines = [BEGIN, "", f"Generated by `{command}` (seed {args.seed}, {len(jobs)} jobs: "
             f"{first['jobs_small']} of 1-4 GPUs, {first['jobs_big']} of 8 GPUs; last arrival "
             f"at {jobs[-1].arrival / 3600:.2f} h).", "",
             *header("metric", [label for _, label in MODES])]
    lines += metric_rows(ROWS, results, [mode for mode, _ in MODES])
    return "\n".join(lines + ["", END])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--out", default="docs/backfill.md")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    args.out_text = args.out
    jobs = workload(args.seed, args.jobs)
    results = {}
    with tempfile.TemporaryDirectory(prefix="backfill-compare-") as tmp:
        for mode, _ in MODES:
            results[mode] = measure(jobs, replay(mode, jobs, str(Path(tmp) / f"{mode}.db")))
    block = table(args, jobs, results)
    write_block(Path(args.out), BEGIN, END, block)
    print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
