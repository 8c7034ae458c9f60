"""Replay a trace over virtual time through the embedded cluster: ``replay(trace, config)``.

There is no separate simulator. ``replay`` builds an in-memory embedded cluster (``Cluster`` on
a ``:memory:`` SQLite store, one write transaction rolled back at the end), creates the trace's
Nodes, the QoS PriorityClasses (``QOS_PRIORITY_CLASSES``) and the caller's extra objects, then
steps the virtual clock with ``cluster.clock.arrivals.feed``: each job's Pod (or the user's own Pod or
Job manifest) is applied at its arrival time, runs for its run time (``gpusched.io/duration``),
and everything else - kubelet admission, pod lifecycle, the scheduling queue and its retries,
preemption and graceful termination, Jobs recreating pods - is what the cluster's own
controllers and scheduler do. ``sim.replay_record.Recorder`` reads the outcome from the pods'
own state as each step changes them.

The scheduler runs the default profile (``policy="default"``), or one of the FGD study's
policies (``sim.experiment.POLICIES``: fgd, bestfit, packing ...) as a full profile: the
default filters and DefaultPreemption, scored by the policy plus the per-seed NodeOrder tie
break (``sim.replay_profile``), given to the embedded scheduler as a kube-scheduler ``--config``
would be (``cluster.scheduling.use_profiles``).

Stable API (``whatif`` builds variants on it): ``ReplayJob``, ``ReplayTrace``, ``ReplayConfig``,
``replay`` -> ``ReplayResult`` (``samples``, ``pods``, ``summary``: ``sim.replay_record``).
Times in results are seconds since the trace's first arrival. Deterministic for a config.

Neighbours: ``cluster.clock.arrivals`` (the clock), ``sim.replay_record`` (what is measured),
``sim.replay_input`` (readers), ``sim.replay_profile``; used by ``cli.replay`` and ``sim.whatif``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from gpusched.cluster.cluster import Cluster
from gpusched.cluster.clock.arrivals import Arrival, feed
from gpusched.cluster.apiserver.store import Store
from gpusched.cluster.apiserver import write
from gpusched.cluster.controllers.nodes import bootstrap
from gpusched.cluster.apiserver.view import Key, View
from gpusched.errors import UsageError
from gpusched.objects.manifest import Manifest
from gpusched.objects.types import ANN_DURATION, ANN_GPU_MILLI, ANN_GPU_MODEL
from gpusched.sim.alibaba import GPU_RESOURCE, MIB, TraceNode, node_manifest
from gpusched.sim.replay_record import (JOB_LABEL, PodRecord, Recorder, Sample, Summary,
                                        summarize)

# Alibaba QoS class -> (PriorityClass, value, preemptionPolicy); docs/replay.md explains why.
QOS_PRIORITY_CLASSES: dict[str, tuple[str, int, str]] = {
    "Guaranteed": ("replay-guaranteed", 3000, "PreemptLowerPriority"),
    "LS": ("replay-latency-sensitive", 2000, "PreemptLowerPriority"),
    "Burstable": ("replay-burstable", 1000, "PreemptLowerPriority"),
    "BE": ("replay-best-effort", 0, "Never"),
}
HOUR = 3600.0
MAX_SAMPLES = 1_000_000


@dataclass(frozen=True, slots=True)
class ReplayJob:
    """One arrival. Without ``manifest``, a bare Pod is made from the fields; with it, that
    Pod or Job document (a dict) is applied as is at ``arrival``."""

    name: str
    arrival: float                       # seconds since the trace origin, >= 0
    run_time: float | None = None        # seconds; None: runs until the replay ends
    cpu_milli: int = 0
    memory: int = 0                      # bytes
    num_gpu: int = 0
    gpu_milli: int = 0                   # per GPU: 1..999 a share, 1000 whole GPUs, 0 none
    gpu_models: tuple[str, ...] = ()
    qos: str = ""                        # a key of QOS_PRIORITY_CLASSES, or "" (no class)
    namespace: str = "default"
    manifest: dict[str, Any] | None = None

    @property
    def gpus(self) -> float:
        return self.num_gpu * self.gpu_milli / 1000.0


@dataclass(frozen=True)
class ReplayTrace:
    """Nodes and jobs (jobs sorted by arrival); ``source`` names the input for messages."""

    nodes: tuple[TraceNode, ...]
    jobs: tuple[ReplayJob, ...]
    source: str = "trace"
    extra: tuple[dict[str, Any], ...] = ()   # objects to create first (ConfigMaps, quotas ...)


@dataclass(frozen=True)
class ReplayConfig:
    policy: str = "default"              # "default" or a key of sim.experiment.POLICIES
    seed: int = 0
    sample_every: float = HOUR           # time-series step, seconds
    until: float | None = None           # stop the clock here (seconds since origin)
    extra: tuple[dict[str, Any], ...] = ()   # more objects to create first (a variant's)


@dataclass(frozen=True)
class ReplayResult:
    samples: tuple[Sample, ...]
    pods: tuple[PodRecord, ...]
    summary: Summary
    config: ReplayConfig = field(default_factory=ReplayConfig)


Progress = Callable[[float, float], None]     # (simulated seconds done, total expected)


def replay(trace: ReplayTrace, config: ReplayConfig = ReplayConfig(),
           progress: Progress | None = None) -> ReplayResult:
    """Run ``trace`` through a fresh in-memory cluster; see the module docstring."""
    if not trace.nodes:
        raise UsageError(f"{trace.source}: no nodes")
    _check_samples(trace, config)
    from gpusched.cluster.scheduling.profiles import use_profiles
    from gpusched.sim.replay_profile import replay_profiles
    profiles = replay_profiles(trace, config.policy, config.seed)
    cluster = Cluster(Store(":memory:"))
    cluster.dry_run = True            # nothing is written back: the result is read on the way
    holder: list[ReplayResult] = []
    with cluster.writing(settle=False) as view:
        view.seed = config.seed
        if profiles is not None:
            use_profiles(view, profiles)
        bootstrap.reconcile(view)
        origin = view.clock
        setup = [_priority_class(*v) for v in QOS_PRIORITY_CLASSES.values()]
        setup += [node_manifest(n) for n in trace.nodes]
        setup += _namespaces(trace)
        setup += list(trace.extra) + list(config.extra)
        created = _apply_all(view, [d for d in setup if d], trace.source)
        recorder = Recorder(view, origin, trace, config.sample_every, progress)
        feed(view, _arrivals(trace, origin), recorder, created=created,
             until=None if config.until is None else origin + config.until)
        samples, records = recorder.finish(view)
        holder.append(ReplayResult(samples, records, summarize(recorder, records), config))
    return holder[0]


def _check_samples(trace: ReplayTrace, config: ReplayConfig) -> None:
    """Bound the time series: at most ``MAX_SAMPLES`` rows over the trace's expected span."""
    if not config.sample_every > 0:
        raise UsageError(f"sample_every: must be more than 0 seconds, got {config.sample_every:g}")
    span = config.until if config.until is not None else max(
        (j.arrival + (j.run_time or 0.0) for j in trace.jobs), default=0.0)
    if span / config.sample_every > MAX_SAMPLES:
        raise UsageError(f"sample_every: {config.sample_every:g} s gives more than {MAX_SAMPLES:,} "
                         f"samples over the {span:,.0f} s of {trace.source}")


def _apply_all(view: View, docs: list[dict[str, Any]], source: str) -> set[Key]:
    keys = set()
    for index, doc in enumerate(docs):
        kind, name, namespace, _action, _warnings = write.apply(view, Manifest(source, index, doc))
        keys.add((kind, namespace, name))
    return keys


def _namespaces(trace: ReplayTrace) -> list[dict[str, Any]]:
    names = sorted({j.namespace for j in trace.jobs} - {"default", "kube-system", "kube-public"})
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in names]


def _priority_class(name: str, value: int, policy: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "preemptionPolicy": policy,
            "description": "gpusched replay: an Alibaba trace QoS class (docs/replay.md)"}


def _arrivals(trace: ReplayTrace, origin: float) -> Iterator[Arrival]:
    for index, job in enumerate(trace.jobs):
        doc = labelled(job.manifest, job.name) if job.manifest is not None else job_pod(job)
        yield Arrival(origin + job.arrival, (Manifest(trace.source, index, doc),))


def labelled(manifest: dict[str, Any], name: str) -> dict[str, Any]:
    """A copy of a user's Pod or Job whose pods carry the replay-job label ``name``."""
    doc = copy.deepcopy(manifest)
    target = doc
    if doc.get("kind") == "Job":
        target = doc.setdefault("spec", {}).setdefault("template", {})
    meta = target.setdefault("metadata", {})
    if isinstance(meta, dict):
        labels = meta.setdefault("labels", {})
        if isinstance(labels, dict):
            labels[JOB_LABEL] = name
    return doc


def job_pod(job: ReplayJob) -> dict[str, Any]:
    """The bare Pod of a job: requests, GPU share/model annotations, run time, QoS class."""
    requests: dict[str, str] = {"cpu": f"{job.cpu_milli}m", "memory": f"{job.memory // MIB}Mi"}
    annotations: dict[str, str] = {}
    if job.run_time is not None:
        annotations[ANN_DURATION] = f"{job.run_time:.3f}s"
    resources: dict[str, Any] = {"requests": requests}
    if job.num_gpu and job.gpu_milli >= 1000:
        requests[GPU_RESOURCE] = str(job.num_gpu)
        resources["limits"] = {GPU_RESOURCE: str(job.num_gpu)}
    elif job.num_gpu and job.gpu_milli:
        annotations[ANN_GPU_MILLI] = str(job.gpu_milli)
    if job.gpu_models:
        annotations[ANN_GPU_MODEL] = "|".join(job.gpu_models)
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "replay", "resources": resources}]}
    if job.qos:
        spec["priorityClassName"] = QOS_PRIORITY_CLASSES[job.qos][0]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": job.name, "namespace": job.namespace,
                         "labels": {JOB_LABEL: job.name}, "annotations": annotations},
            "spec": spec}
