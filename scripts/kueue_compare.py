"""Why queues matter: one seeded multi-team GPU workload replayed under four set-ups.

One command, byte-for-byte reproducible (no wall clock in the output)::

    .venv/bin/python scripts/kueue_compare.py [--quick] [--seed 7] [--out docs/kueue-experiment.md]
                                             [--plots results/kueue-compare]

Steps:

1. draw the workload from ``numpy.random.default_rng(seed)`` (:func:`workload`): Poisson
   arrivals over ``hours``; each job a single-GPU Job or a 4 x 8-GPU gang (an Indexed Job of
   4 pods), of one of three teams (team-c arrives only in the second half, so at first its
   quota is idle and the others may borrow it), with a PriorityClass (``high`` or ``low``) and
   a run time (``gpusched.io/duration``);
2. for each set-up (:data:`SETUPS`), build the cluster in a temporary state file through the
   ``Cluster`` facade: 14 nodes of 8 GPUs in four racks (two A100 racks of 4 nodes, an H100
   rack of 4 and one of 2, racks and blocks as node labels), and the set-up's objects:

   - ``plain``: nothing more (kube-scheduler alone);
   - ``quota``: a ResourceQuota per team namespace, ``requests.nvidia.com/gpu`` = the team's
     share of the GPUs (a quota cannot say which GPU model);
   - ``kueue``: a ClusterQueue per team with a nominal quota per flavor (a100, h100) in one
     cohort, borrowing without limit, ``reclaimWithinCohort: Any`` and ``withinClusterQueue:
     LowerPriority``; waitForPodsReady off;
   - ``gangs``: the same, plus Kueue's waitForPodsReady (its defaults: 30 minutes) and
     topology-aware flavors (Topology block/rack/hostname): a gang requires one rack
     (``kueue.x-k8s.io/podset-required-topology``);

3. replay the jobs: ``advance`` to each arrival (in steps of at most ``SAMPLE_S``, reading the
   pods after each step), ``apply`` the Jobs arriving then; after the last arrival, advance
   until every Job finished or ``drain`` hours passed;
4. measure from the pods seen (:func:`measure`): each pod's run interval (start: the
   ``gpusched.io/start-time`` annotation; end: its start plus run time when it succeeded, else
   its deletion as first seen), and from these the GPU utilisation, each team's GPU-hours, the
   wait of each job until all its pods run at once, the gangs that ran half-placed (some pods
   running while siblings wait; the GPU-hours those pods held), the gangs never running whole,
   and the gangs that ran across racks;
5. write the markdown tables between the ``kueue_compare`` markers of ``--out`` (the rest of
   the file is kept) and the plots (matplotlib PNGs) into ``--plots``, and print the tables.

A note on the model: a pod runs for its ``gpusched.io/duration`` from its own start, also when
its gang's other pods wait; a real distributed job makes no progress until every rank has
joined, so the GPU-hours a half-placed gang holds are lost work, and a gang whose pods never ran
together would not have finished at all. The table counts both.

Neighbours: ``gpusched.cluster.cluster.Cluster`` (the embedded cluster), the Kueue controllers
(``gpusched.cluster.controllers.kueue``); the result is documented in
``docs/kueue-experiment.md``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from gpusched.cluster.apiserver.store import seconds_of
from gpusched.cluster.cluster import Cluster
from gpusched.objects.duration import parse_duration
from gpusched.sim.doc_table import command_line, header, row, write_block
from gpusched.objects.manifest import Manifest

BEGIN, END = "<!-- kueue_compare:begin -->", "<!-- kueue_compare:end -->"
BLOCK_LABEL = "cloud.provider.com/topology-block"
RACK_LABEL = "cloud.provider.com/topology-rack"
# rack, block, flavor, nodes of 8 GPUs
RACKS = (("r1", "b1", "a100", 4), ("r2", "b1", "a100", 4), ("r3", "b2", "h100", 4),
         ("r4", "b2", "h100", 2))
MODELS = {"a100": ("A100-80GB", "NVIDIA-A100-SXM4-80GB"), "h100": ("H100-80GB", "NVIDIA-H100-80GB-HBM3")}
GPUS_PER_NODE = 8
FLAVOR_OF = {rack: flavor for rack, _, flavor, _ in RACKS}
TOTAL_GPUS = GPUS_PER_NODE * sum(nodes for *_, nodes in RACKS)
# team -> nominal GPUs per flavor (they add up to the cluster's GPUs)
QUOTAS = {"team-a": {"a100": 32, "h100": 16}, "team-b": {"a100": 16, "h100": 16},
          "team-c": {"a100": 16, "h100": 16}}
# arrival mix: share of each team in the first and second half of the arrival window
TEAM_MIX = ((0.55, 0.45, 0.0), (0.35, 0.25, 0.40))
GANG_SHARE, GANG_PODS, GANG_GPUS = 0.06, 4, 8
SINGLE_RUN_H, GANG_RUN_H = (1.0, 4.0), (2.0, 6.0)      # run time, uniform, hours
PRIORITIES = (("high", 1000, 0.3), ("low", 100, 0.7))
LOAD = 1.0      # offered GPU-hours per hour / the cluster's GPUs, while jobs arrive
SAMPLE_S = 300
SETUPS = (("plain", "(a) kube-scheduler"), ("quota", "(b) ResourceQuota"),
          ("kueue", "(c) Kueue, borrowing"), ("gangs", "(d) Kueue + gangs + TAS"))
FULL = {"hours": 24.0, "drain": 36.0}
QUICK = {"hours": 5.0, "drain": 12.0}


@dataclass(frozen=True, slots=True)
class Job:
    name: str
    team: str
    arrival: int          # virtual seconds
    pods: int
    gpus: int             # per pod
    run: int              # seconds
    priority: str


@dataclass
class PodRun:
    """One pod's run as seen from the samples: ``end`` None while it runs."""

    job: str
    rack: str
    gpus: int
    start: float
    end: float | None = None


@dataclass
class Replay:
    """What one set-up's replay saw: pod runs by uid, GPUs running at each sample."""

    rack_of: dict[str, str] = field(default_factory=dict)       # node -> rack
    runs: dict[str, PodRun] = field(default_factory=dict)
    samples: list[tuple[float, int]] = field(default_factory=list)
    half_placed_at_end: int = 0
    end: float = 0.0


def workload(seed: int, hours: float) -> list[Job]:
    """The seeded job list (see the module docstring); arrivals in whole seconds, ascending."""
    rng = np.random.default_rng(seed)
    mean_single = float(np.mean(SINGLE_RUN_H)) * 3600
    mean_gang = float(np.mean(GANG_RUN_H)) * 3600 * GANG_PODS * GANG_GPUS
    mean_gpu_s = GANG_SHARE * mean_gang + (1 - GANG_SHARE) * mean_single
    mean_gap = mean_gpu_s / (LOAD * TOTAL_GPUS)
    jobs: list[Job] = []
    t = 0.0
    while t < hours * 3600:
        mix = TEAM_MIX[0] if t < hours * 1800 else TEAM_MIX[1]
        team = list(QUOTAS)[int(rng.choice(len(QUOTAS), p=mix))]
        gang = bool(rng.random() < GANG_SHARE)
        low, high = GANG_RUN_H if gang else SINGLE_RUN_H
        run = int(rng.uniform(low, high) * 3600)
        priority = PRIORITIES[int(rng.choice(len(PRIORITIES), p=[p for *_, p in PRIORITIES]))][0]
        kind = "gang" if gang else "one"
        jobs.append(Job(f"{kind}-{len(jobs):03d}", team, int(t), GANG_PODS if gang else 1,
                        GANG_GPUS if gang else 1, run, priority))
        t += float(rng.exponential(mean_gap))
    return jobs


# ---- manifests ---------------------------------------------------------------------------------

def _doc(body: dict[str, Any]) -> Manifest:
    return Manifest("kueue-compare", 0, body)


def node_pools() -> list[Manifest]:
    return [_doc({"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool",
                  "metadata": {"name": f"{flavor}-{rack}"},
                  "spec": {"count": nodes, "cpu": "96", "memory": "1Ti",
                           "gpu": {"model": MODELS[flavor][0], "count": GPUS_PER_NODE},
                           "labels": {BLOCK_LABEL: block, RACK_LABEL: rack}}})
            for rack, block, flavor, nodes in RACKS]


def common() -> list[Manifest]:
    docs = node_pools()
    docs += [_doc({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": team}})
             for team in QUOTAS]
    docs += [_doc({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                   "metadata": {"name": name}, "value": value}) for name, value, _ in PRIORITIES]
    return docs


def quotas() -> list[Manifest]:
    return [_doc({"apiVersion": "v1", "kind": "ResourceQuota",
                  "metadata": {"name": "gpus", "namespace": team},
                  "spec": {"hard": {"requests.nvidia.com/gpu": str(sum(per_flavor.values()))}}})
            for team, per_flavor in QUOTAS.items()]


def kueue_objects(tas: bool) -> list[Manifest]:
    v1b2 = "kueue.x-k8s.io/v1beta2"
    docs = [_doc({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kueue-system"}}),
            _doc(kueue_config(tas)), _doc({"apiVersion": v1b2, "kind": "Cohort",
                                           "metadata": {"name": "gpu-pool"}})]
    if tas:
        docs.append(_doc({"apiVersion": v1b2, "kind": "Topology", "metadata": {"name": "racks"},
                          "spec": {"levels": [{"nodeLabel": BLOCK_LABEL}, {"nodeLabel": RACK_LABEL},
                                              {"nodeLabel": "kubernetes.io/hostname"}]}}))
    for flavor, (_, product) in MODELS.items():
        spec: dict[str, Any] = {"nodeLabels": {"nvidia.com/gpu.product": product}}
        if tas:
            spec["topologyName"] = "racks"
        docs.append(_doc({"apiVersion": v1b2, "kind": "ResourceFlavor",
                          "metadata": {"name": flavor}, "spec": spec}))
    for team, per_flavor in QUOTAS.items():
        docs.append(_doc({"apiVersion": v1b2, "kind": "ClusterQueue", "metadata": {"name": team},
                          "spec": cluster_queue_spec(team, per_flavor)}))
        docs.append(_doc({"apiVersion": v1b2, "kind": "LocalQueue",
                          "metadata": {"name": "team-queue", "namespace": team},
                          "spec": {"clusterQueue": team}}))
    return docs


def cluster_queue_spec(team: str, per_flavor: dict[str, int]) -> dict[str, Any]:
    return {"cohortName": "gpu-pool",
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": team}},
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
            "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
                {"name": flavor, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": gpus}]}
                for flavor, gpus in per_flavor.items()]}]}


def kueue_config(wait_for_pods_ready: bool) -> dict[str, Any]:
    """Kueue's Configuration: waitForPodsReady with its defaults, or null (off)."""
    config: dict[str, Any] = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"}
    config["waitForPodsReady"] = {} if wait_for_pods_ready else None
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
            "data": {"controller_manager_config.yaml": yaml.safe_dump(config)}}


def setup_manifests(setup: str) -> list[Manifest]:
    docs = common()
    if setup == "quota":
        docs += quotas()
    elif setup in ("kueue", "gangs"):
        docs += kueue_objects(tas=setup == "gangs")
    return docs


def job_manifest(job: Job, setup: str) -> Manifest:
    """A batch/v1 Job: one pod, or an Indexed gang; queued in the Kueue set-ups. Preempted pods
    are replaced without counting as failures (podFailurePolicy on DisruptionTarget)."""
    meta: dict[str, Any] = {"name": job.name, "namespace": job.team}
    annotations = {"gpusched.io/duration": f"{job.run}s"}
    if setup in ("kueue", "gangs"):
        meta["labels"] = {"kueue.x-k8s.io/queue-name": "team-queue"}
    if setup == "gangs" and job.pods > 1:
        annotations["kueue.x-k8s.io/podset-required-topology"] = RACK_LABEL
    spec: dict[str, Any] = {
        "parallelism": job.pods, "completions": job.pods, "backoffLimit": 6,
        "podFailurePolicy": {"rules": [{"action": "Ignore",
                                        "onPodConditions": [{"type": "DisruptionTarget"}]}]},
        "template": {"metadata": {"annotations": annotations}, "spec": {
            "restartPolicy": "Never", "priorityClassName": job.priority,
            "containers": [{"name": "train", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                            "resources": {"limits": {"nvidia.com/gpu": job.gpus}}}]}}}
    if job.pods > 1:
        spec["completionMode"] = "Indexed"
    return _doc({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec})


# ---- the replay --------------------------------------------------------------------------------

def replay(setup: str, jobs: list[Job], hours: float, drain: float, state: str) -> Replay:
    """Run ``jobs`` under ``setup`` on a fresh cluster in ``state``; see the module docstring."""
    seen = Replay()
    with Cluster.open(state) as cluster:
        cluster.apply(setup_manifests(setup))
        seen.rack_of = {n["metadata"]["name"]: n["metadata"]["labels"][RACK_LABEL]
                        for n in cluster.get("nodes")}
        for job in jobs:
            _advance_to(cluster, seen, job.arrival)
            cluster.apply([job_manifest(job, setup)])
        stop = hours * 3600 + drain * 3600
        while cluster.now() < stop and not _all_finished(cluster):
            _advance_to(cluster, seen, min(stop, cluster.now() + SAMPLE_S))
        seen.end = cluster.now()
        seen.half_placed_at_end = _half_placed_now(cluster)
    return seen


def _advance_to(cluster: Cluster, seen: Replay, at: float) -> None:
    """Advance to ``at`` in steps that end on multiples of ``SAMPLE_S``, observing after each."""
    while cluster.now() < at:
        boundary = (cluster.now() // SAMPLE_S + 1) * SAMPLE_S
        cluster.advance(min(at, boundary) - cluster.now())
        _observe(cluster, seen)


@dataclass(frozen=True, slots=True)
class PodFacts:
    """What a read keeps of a pod that started on a node."""

    uid: str
    job: str
    node: str
    gpus: int
    start: float
    phase: str
    deleted_at: float | None
    run: float


def _pod_facts(pod: dict[str, Any]) -> PodFacts | None:
    meta, spec = pod["metadata"], pod["spec"]
    annotations = meta.get("annotations") or {}
    started = annotations.get("gpusched.io/start-time")
    if started is None or not spec.get("nodeName"):
        return None
    deleted = meta.get("deletionTimestamp")
    gpus = sum(int((c.get("resources") or {}).get("limits", {}).get("nvidia.com/gpu", 0))
               for c in spec["containers"])
    return PodFacts(meta["uid"], meta["labels"]["job-name"], spec["nodeName"], gpus,
                    float(started), (pod.get("status") or {}).get("phase", ""),
                    None if deleted is None else seconds_of(deleted),
                    parse_duration(annotations["gpusched.io/duration"]))


def _started_pods(cluster: Cluster) -> list[PodFacts]:
    """Every pod that started, read without copying the store's objects."""
    def facts(view: Any) -> list[PodFacts]:
        return [f for f in map(_pod_facts, view.list("Pod")) if f is not None]
    return list(cluster.read(facts))


def _observe(cluster: Cluster, seen: Replay) -> None:
    now = cluster.now()
    present: set[str] = set()
    busy = 0
    for pod in _started_pods(cluster):
        run = seen.runs.get(pod.uid)
        if run is None:
            run = seen.runs[pod.uid] = PodRun(pod.job, seen.rack_of[pod.node], pod.gpus, pod.start)
        if run.end is not None:
            continue
        present.add(pod.uid)
        if pod.phase == "Succeeded":
            run.end = run.start + pod.run
        elif pod.phase == "Failed":
            run.end = now
        elif pod.deleted_at is not None:
            run.end = min(now, pod.deleted_at)
        else:
            busy += run.gpus
    for uid, run in seen.runs.items():
        if run.end is None and uid not in present:
            run.end = now                        # gone between two samples
    seen.samples.append((now, busy))


def _all_finished(cluster: Cluster) -> bool:
    def finished(view: Any) -> bool:
        return all(any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                       for c in (job.get("status") or {}).get("conditions") or [])
                   for job in view.list("Job"))
    return bool(cluster.read(finished))


def _half_placed_now(cluster: Cluster) -> int:
    """Gangs with some, not all, of their pods running now."""
    running: dict[str, int] = {}
    for pod in _started_pods(cluster):
        if pod.phase == "Running" and pod.deleted_at is None:
            running[pod.job] = running.get(pod.job, 0) + 1
    return sum(1 for name, count in running.items() if name.startswith("gang-")
               and 0 < count < GANG_PODS)


# ---- measures ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class JobOutcome:
    """One job's fate: when all its pods first ran at once (None: never), the GPU-seconds its
    pods held while some of its pods waited, and how many racks it ran in."""

    whole_at: float | None
    idle_gpu_s: float
    racks: frozenset[str]


def job_outcome(job: Job, runs: list[PodRun], end: float) -> JobOutcome:
    """Sweep the pods' starts and ends (an end before a start at the same time: a replaced pod
    does not make a gang whole)."""
    events = sorted([(r.start, 1, r.gpus) for r in runs] +
                    [(r.end if r.end is not None else end, -1, -r.gpus) for r in runs],
                    key=lambda e: (e[0], e[1]))
    count = gpus = 0
    whole_at: float | None = None
    idle = 0.0
    last = 0.0
    for at, step, gpu_step in events:
        if 0 < count < job.pods:
            idle += gpus * (at - last)
        count, gpus, last = count + step, gpus + gpu_step, at
        if whole_at is None and count >= job.pods:
            whole_at = at
    if whole_at is None:
        racks = {r.rack for r in runs}
    else:
        racks = {r.rack for r in runs if r.start <= whole_at < (r.end if r.end is not None else end)}
    return JobOutcome(whole_at, idle, frozenset(racks))


def measure(jobs: list[Job], seen: Replay, hours: float) -> dict[str, Any]:
    """The measures of one replay (see the module docstring), keyed as ``ROWS`` reads them."""
    by_job: dict[str, list[PodRun]] = {job.name: [] for job in jobs}
    for run in seen.runs.values():
        by_job[run.job].append(run)
    outcomes = {job.name: job_outcome(job, by_job[job.name], seen.end) for job in jobs}
    window = hours * 3600
    team_of = {job.name: job.team for job in jobs}
    gangs = [job for job in jobs if job.pods > 1]
    out: dict[str, Any] = {
        "utilisation": _mean_busy(seen.samples, 0, window) / TOTAL_GPUS,
        "utilisation_quarters": [_mean_busy(seen.samples, window * q / 4, window * (q + 1) / 4)
                                 / TOTAL_GPUS for q in range(4)],
        "team_gpu_hours": _team_gpu_hours(seen, team_of, 0, window),
        "team_gpu_hours_late": _team_gpu_hours(seen, team_of, window / 2, window),
        "gangs": len(gangs), "singles": len(jobs) - len(gangs),
        "gangs_half_placed_at_end": seen.half_placed_at_end,
        "end_hours": seen.end / 3600, "hours": hours, "gpus": TOTAL_GPUS,
        "quota_gpus": {team: sum(per_flavor.values()) for team, per_flavor in QUOTAS.items()},
        "samples": seen.samples,
    }
    out.update(_gang_measures([(outcomes[j.name], bool(by_job[j.name])) for j in gangs]))
    out.update(_stopped_measures(jobs, seen))
    for kind, members in (("single", [j for j in jobs if j.pods == 1]), ("gang", gangs)):
        out.update(_wait_measures(kind, [(j, outcomes[j.name]) for j in members], seen.end))
    return out


def _gang_measures(gangs: list[tuple[JobOutcome, bool]]) -> dict[str, Any]:
    """Half-placed, never whole, across racks, across GPU models; ``bool``: any pod ran."""
    return {
        "gangs_half_placed": sum(1 for o, _ in gangs if o.idle_gpu_s > 0),
        "half_placed_gpu_hours": sum(o.idle_gpu_s for o, _ in gangs) / 3600,
        "gangs_never_whole_but_ran": sum(1 for o, ran in gangs if o.whole_at is None and ran),
        "gangs_cross_rack": sum(1 for o, _ in gangs if len(o.racks) > 1),
        "gangs_mixed_models": sum(1 for o, _ in gangs if len({FLAVOR_OF[r] for r in o.racks}) > 1),
    }


def _stopped_measures(jobs: list[Job], seen: Replay) -> dict[str, Any]:
    """Pods preempted or evicted before their end, and the GPU-hours they had run."""
    run_time = {job.name: job.run for job in jobs}
    stopped = [r for r in seen.runs.values()
               if r.end is not None and r.end < r.start + run_time[r.job] - 1]
    return {"pods_stopped": len(stopped),
            "lost_gpu_hours": sum(r.gpus * (_or(r.end, r.start) - r.start) for r in stopped) / 3600}


def _wait_measures(kind: str, members: list[tuple[Job, JobOutcome]], end: float) -> dict[str, Any]:
    """p50/p95 wait until a job first ran whole (one never whole: until ``end``), in minutes."""
    waits = [_or(outcome.whole_at, end) - job.arrival for job, outcome in members]
    return {f"{kind}_not_whole": sum(1 for _, outcome in members if outcome.whole_at is None),
            f"{kind}_wait_p50": float(np.percentile(waits, 50)) / 60 if waits else 0.0,
            f"{kind}_wait_p95": float(np.percentile(waits, 95)) / 60 if waits else 0.0}


def _team_gpu_hours(seen: Replay, team_of: dict[str, str], start: float,
                    stop: float) -> dict[str, float]:
    """Each team's GPU-hours between ``start`` and ``stop``."""
    gpu_s = {team: 0.0 for team in QUOTAS}
    for run in seen.runs.values():
        end = _or(run.end, seen.end)
        gpu_s[team_of[run.job]] += run.gpus * max(0.0, min(end, stop) - max(run.start, start))
    return {team: value / 3600 for team, value in gpu_s.items()}


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def _mean_busy(samples: list[tuple[float, int]], start: float, stop: float) -> float:
    """Mean GPUs busy over (start, stop], each sample standing for the step before it."""
    total = covered = 0.0
    previous = 0.0
    for at, busy in samples:
        low, high = max(previous, start), min(at, stop)
        if high > low:
            total += busy * (high - low)
            covered += high - low
        previous = at
    return total / covered if covered else 0.0


# ---- the report --------------------------------------------------------------------------------

ROWS = (("GPU utilisation while jobs arrive (%)", "utilisation", 0.01, 1),
        ("p50 wait, 1-GPU jobs (min)", "single_wait_p50", 1, 0),
        ("p95 wait, 1-GPU jobs (min)", "single_wait_p95", 1, 0),
        ("p50 wait, 32-GPU gangs (min)", "gang_wait_p50", 1, 0),
        ("p95 wait, 32-GPU gangs (min)", "gang_wait_p95", 1, 0),
        ("gangs never running whole by the end", "gang_not_whole", 1, 0),
        ("gangs that ran half-placed", "gangs_half_placed", 1, 0),
        ("GPU-hours held by half-placed gangs", "half_placed_gpu_hours", 1, 0),
        ("gangs half-placed at the end", "gangs_half_placed_at_end", 1, 0),
        ("gangs whose pods ran but never all at once (deadlock)", "gangs_never_whole_but_ran", 1, 0),
        ("gangs placed across racks", "gangs_cross_rack", 1, 0),
        ("gangs mixing A100 and H100 nodes", "gangs_mixed_models", 1, 0),
        ("pods stopped before their end (preempted, evicted)", "pods_stopped", 1, 0),
        ("GPU-hours those stopped pods had run (lost work)", "lost_gpu_hours", 1, 0),
        ("hours until every job finished (or the end)", "end_hours", 1, 1))


def quota_share(team: str) -> float:
    return sum(QUOTAS[team].values()) / TOTAL_GPUS


def _share(gpu_hours: dict[str, float], team: str) -> float:
    return gpu_hours[team] / max(sum(gpu_hours.values()), 1e-9)


def table(args: argparse.Namespace, jobs: list[Job], results: dict[str, dict[str, Any]]) -> str:
    first = next(iter(results.values()))
    command = command_line("scripts/kueue_compare.py", [
        *([("--quick", None)] if args.quick else []), ("--seed", args.seed), ("--out", args.out)])
    head = header("metric", [label for _, label in SETUPS])
    lines = [BEGIN, "", f"Generated by `{command}` (seed {args.seed}, "
             f"{len(jobs)} jobs over {args.hours:g} h: {first['singles']} of 1 GPU, "
             f"{first['gangs']} gangs of {GANG_PODS} x {GANG_GPUS} GPUs; {TOTAL_GPUS} GPUs; "
             f"the run stops when every job finished or {args.drain:g} h after the window).",
             "", *head]
    for label, key, unit, digits in ROWS:
        lines.append(row(label, [f"{results[s][key] / unit:.{digits}f}" for s, _ in SETUPS]))
    for key, when in (("team_gpu_hours", "while jobs arrive"),
                      ("team_gpu_hours_late", "in the second half of the arrival window, when "
                                              "all three teams submit")):
        lines += ["", f"Each team's share (%) of the GPU-hours used {when}, against its share "
                  "of the quota:", "", *head]
        for team in QUOTAS:
            lines.append(row(f"{team} (quota {100 * quota_share(team):.0f} %)", [
                f"{100 * _share(results[setup][key], team):.0f}" for setup, _ in SETUPS]))
    lines += ["", "GPU utilisation (%) in each quarter of the arrival window:", "", *head]
    for quarter in range(4):
        lines.append(row(f"quarter {quarter + 1}", [
            f"{100 * results[s]['utilisation_quarters'][quarter]:.0f}" for s, _ in SETUPS]))
    return "\n".join(lines + ["", END])


def plot(results: dict[str, dict[str, Any]], folder: Path) -> list[Path]:
    """utilisation.png (GPUs busy over time) and teams.png (GPU-hours share against quota)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    folder.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(9, 4))
    for (setup, label), style in zip(SETUPS, ("-", "--", "-.", ":")):
        samples = results[setup]["samples"]
        ax.step([t / 3600 for t, _ in samples], [100 * b / TOTAL_GPUS for _, b in samples],
                where="pre", label=label, linewidth=1.2, linestyle=style)
    ax.set(xlabel="hours", ylabel="GPUs busy (%)", ylim=(0, 105), title="GPU utilisation")
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    fig.savefig(folder / "utilisation.png", dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / (len(SETUPS) + 1)
    teams = list(QUOTAS)
    xs = np.arange(len(teams))
    ax.bar(xs, [100 * quota_share(t) for t in teams], width, label="quota share", color="grey")
    for i, (setup, label) in enumerate(SETUPS, start=1):
        hours = results[setup]["team_gpu_hours_late"]
        ax.bar(xs + i * width, [100 * _share(hours, t) for t in teams], width, label=label)
    ax.set_xticks(xs + width * len(SETUPS) / 2, teams)
    ax.set(ylabel="share of GPU-hours (%)",
           title="Each team's GPU-hours against its quota (second half of the arrivals)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(folder / "teams.png", dpi=110)
    plt.close(fig)
    return [folder / "utilisation.png", folder / "teams.png"]


def arguments(argv: list[str] | None) -> argparse.Namespace:
    """The command line; ``setups`` becomes the list chosen, ``hours``/``drain`` the form's."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"the small form: {QUICK['hours']:g} h of arrivals (full: {FULL['hours']:g} h)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default="docs/kueue-experiment.md",
                        help="markdown file whose kueue_compare block is rewritten")
    parser.add_argument("--plots", default="results/kueue-compare", help="folder for the PNGs")
    parser.add_argument("--json", default="", help="also write the measures to this JSON file")
    parser.add_argument("--setups", default=",".join(s for s, _ in SETUPS),
                        help="comma-separated subset of " + ", ".join(s for s, _ in SETUPS))
    args = parser.parse_args(argv)
    chosen = [s for s in args.setups.split(",") if s]
    unknown = [s for s in chosen if s not in dict(SETUPS)]
    if unknown or not chosen:
        parser.error(f"--setups: unknown set-up {unknown[0] if unknown else '(none)'!r} "
                     f"(one of {', '.join(s for s, _ in SETUPS)})")
    args.hours, args.drain = (QUICK if args.quick else FULL).values()
    args.setups = chosen
    return args


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    jobs = workload(args.seed, args.hours)
    results = {}
    with tempfile.TemporaryDirectory(prefix="kueue-compare-") as tmp:
        for setup in args.setups:
            seen = replay(setup, jobs, args.hours, args.drain, str(Path(tmp) / f"{setup}.db"))
            results[setup] = measure(jobs, seen, args.hours)
    if args.json:
        import json
        Path(args.json).write_text(json.dumps(results, indent=1, sort_keys=True))
    if len(args.setups) < len(SETUPS):
        return 0                     # a subset: the measures only, no table
    block = table(args, jobs, results)
    write_block(Path(args.out), BEGIN, END, block)
    for png in plot(results, Path(args.plots)):
        print(f"wrote {png}", file=sys.stderr)
    print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
