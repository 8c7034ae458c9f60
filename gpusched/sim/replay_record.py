"""What a replay measures, read from the pods' own state as the cluster changes them.

``Recorder`` is the ``cluster.clock.arrivals`` observer of ``sim.replay``. After each step it looks at
the pods that step changed (created, bound, started, finished, preempted, deleted) and keeps:

- one ``PodRecord`` per pod: arrival (``creationTimestamp``), start (``gpusched.io/start-time``,
  set by the kubelet when it starts the pod), end (the step at which it stopped holding its node:
  Succeeded, Failed, or gone), node, devices (``gpusched.io/assigned-*``), whether the scheduler
  preempted it (condition ``DisruptionTarget`` reason ``PreemptionByScheduler``), outcome;
- what the running pods hold: GPU milli, pods per namespace, pending pods; integrated over time
  between steps into GPU-seconds used (exact: the state is constant between steps);
- ``Sample`` rows every ``sample_every`` seconds (state at that instant), with the fragmentation
  amount of the FGD measure (``sim.fragmentation``, target workload = the trace's job shapes)
  read from the scheduler's own snapshot (``cluster.scheduling.cache``).

A pod *holds* its node from its start until it is Succeeded, Failed or deleted (a preempted
pod holds it through its grace period). ``gpu_seconds`` equals the sum over pods of GPUs x
(end - start): the property tests in ``tests/sim/test_replay_properties.py`` check it.

Neighbours: ``sim.replay`` (drives it), ``cluster.clock.arrivals`` (calls it), ``sim.fragmentation``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from gpusched.cluster.apiserver.store import seconds_of
from gpusched.cluster.apiserver.view import Key, View
from gpusched.objects.assignment import held_by
from gpusched.objects.manifest import Manifest
from gpusched.objects.types import ANN_GPU_MILLI, ANN_START_TIME

if TYPE_CHECKING:
    from gpusched.sim.replay import ReplayTrace

JOB_LABEL = "gpusched.io/replay-job"
SYSTEM_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease", "gpu-operator"})
GPU = "nvidia.com/gpu"


@dataclass(frozen=True, slots=True)
class Sample:
    time: float                          # seconds since origin
    gpu_milli_allocated: int
    gpu_milli_capacity: int
    fragmentation_milli: float           # FGD's amount (sum over nodes of F_n(M))
    pending: int
    running: int
    running_by_namespace: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class PodRecord:
    namespace: str
    name: str
    job: str                             # the replay job (label), "" for other pods
    gpus: float                          # GPUs held while running (0.47 for a share)
    arrival: float
    start: float | None
    end: float | None
    node: str
    devices: str
    preempted: bool
    outcome: str                         # Succeeded | Failed | Preempted | Deleted | Running | Pending | Refused

    @property
    def wait(self) -> float | None:
        return None if self.start is None else self.start - self.arrival


@dataclass(frozen=True, slots=True)
class WaitStats:
    size: str                            # "0", "<1" (share), "1", "2", "4", "8", ...
    pods: int
    started: int
    mean: float
    p50: float
    p95: float
    p99: float


@dataclass(frozen=True, slots=True)
class Summary:
    pods: int
    started: int
    finished: int
    never_started: int
    refused: int
    preemptions: int
    span_seconds: float
    gpu_hours_used: float
    gpu_hours_idle: float
    wait_by_size: tuple[WaitStats, ...]


@dataclass
class _Pod:
    namespace: str
    name: str
    job: str
    gpu_milli: int
    arrival: float
    start: float | None = None
    end: float | None = None
    node: str = ""
    devices: str = ""
    preempted: bool = False
    outcome: str = "Pending"
    holding: bool = False
    pending: bool = True


def gpu_milli_of(pod: dict[str, Any]) -> int:
    """The pod's GPU request in milli-GPU (a share annotation, else nvidia.com/gpu x 1000)."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if annotations.get(ANN_GPU_MILLI):
        return int(annotations[ANN_GPU_MILLI])
    total = 0
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        amount = (resources.get("limits") or {}).get(GPU) or (resources.get("requests") or {}).get(GPU)
        total += int(amount or 0) * 1000
    return total


class Recorder:
    """The feed observer; see the module docstring."""

    def __init__(self, view: View, origin: float, trace: "ReplayTrace", sample_every: float,
                 progress: Callable[[float, float], None] | None) -> None:
        from gpusched.sim.replay_metrics import FragmentationProbe
        self.origin, self.every, self.progress = origin, float(sample_every), progress
        self.pods: dict[str, _Pod] = {}
        self.refusals: list[tuple[str, str, float, str]] = []
        self.capacity = sum(n.gpus for n in trace.nodes) * 1000
        self.allocated = 0
        self.running: dict[str, int] = {}
        self.pending = 0
        self.gpu_seconds = 0.0
        self.last = origin
        self.next_sample = origin
        self.samples: list[Sample] = []
        self.expected = max((j.arrival for j in trace.jobs), default=0.0)
        self.hour = 0
        self.probe = FragmentationProbe(trace)

    # ---- feed observer -----------------------------------------------------------------------

    def before(self, view: View, t: float) -> None:
        while self.next_sample < t:
            self._sample(view, self.next_sample)
            self.next_sample += self.every
        self.gpu_seconds += self.allocated * (t - self.last) / 1000.0
        self.last = t
        self._tick(t)

    def after(self, view: View, t: float, keys: set[Key]) -> None:
        for key in sorted(keys):
            if key[0] != "Pod" or key[1] in SYSTEM_NAMESPACES:
                continue
            body = view.objects.get(key)
            self._observe(body if body is not None else view.gone(key), body is None, t)

    def refused(self, view: View, t: float, manifest: Manifest, message: str) -> None:
        meta = manifest.obj.get("metadata") or {}
        self.refusals.append((str(meta.get("namespace") or "default"), str(meta.get("name") or ""),
                             t - self.origin, message))

    # ---- per pod -----------------------------------------------------------------------------

    def _observe(self, body: dict[str, Any] | None, gone: bool, t: float) -> None:
        if body is None:
            return
        meta = body["metadata"]
        uid = meta["uid"]
        pod = self.pods.get(uid)
        if pod is None:
            pod = _Pod(meta["namespace"], meta["name"], (meta.get("labels") or {}).get(JOB_LABEL, ""),
                       gpu_milli_of(body), seconds_of(meta["creationTimestamp"]) - self.origin)
            self.pods[uid] = pod
            self.pending += 1
        self._update(pod, body, gone, t)

    def _update(self, pod: _Pod, body: dict[str, Any], gone: bool, t: float) -> None:
        annotations = body["metadata"].get("annotations") or {}
        status = body.get("status") or {}
        phase = status.get("phase", "Pending")
        pod.preempted = pod.preempted or _preempted(status)
        node = (body.get("spec") or {}).get("nodeName") or ""
        if node and pod.pending:
            self._set_pending(pod, False)
        if ANN_START_TIME in annotations and pod.start is None:
            pod.start = float(annotations[ANN_START_TIME]) - self.origin
            pod.node = node
            self._set_holding(pod, True)
        if pod.holding:
            pod.devices = _devices(body)
        if gone or phase in ("Succeeded", "Failed"):
            self._end(pod, phase, t)
        else:
            pod.outcome = "Running" if pod.holding else "Pending"

    def _end(self, pod: _Pod, phase: str, t: float) -> None:
        if pod.end is not None:
            return
        if pod.holding:
            self._set_holding(pod, False)
        if pod.pending:
            self._set_pending(pod, False)
        pod.end = t - self.origin
        pod.outcome = ("Preempted" if pod.preempted else phase if phase in ("Succeeded", "Failed")
                       else "Deleted")

    def _set_holding(self, pod: _Pod, on: bool) -> None:
        sign = 1 if on else -1
        pod.holding = on
        self.allocated += sign * pod.gpu_milli
        self.running[pod.namespace] = self.running.get(pod.namespace, 0) + sign

    def _set_pending(self, pod: _Pod, on: bool) -> None:
        pod.pending = on
        self.pending += 1 if on else -1

    # ---- time --------------------------------------------------------------------------------

    def _sample(self, view: View, at: float) -> None:
        running = tuple(sorted((ns, n) for ns, n in self.running.items() if n))
        self.samples.append(Sample(at - self.origin, self.allocated, self.capacity,
                                   self.probe.amount(view), self.pending,
                                   sum(n for _ns, n in running), running))

    def _tick(self, t: float) -> None:
        hour = int((t - self.origin) // 3600.0)
        if self.progress is not None and hour > self.hour:
            self.progress(t - self.origin, self.expected)
        self.hour = max(self.hour, hour)

    def finish(self, view: View) -> tuple[tuple[Sample, ...], tuple["PodRecord", ...]]:
        self.before(view, view.clock)
        self._sample(view, view.clock)
        records = [PodRecord(p.namespace, p.name, p.job, p.gpu_milli / 1000.0, p.arrival, p.start,
                             p.end, p.node, p.devices, p.preempted, p.outcome)
                   for p in self.pods.values()]
        records += [PodRecord(ns, name, name, 0.0, at, None, None, "", "", False, "Refused")
                    for ns, name, at, _message in self.refusals]
        records.sort(key=lambda r: (r.arrival, r.namespace, r.name))
        return tuple(self.samples), tuple(records)


def _preempted(status: dict[str, Any]) -> bool:
    return any(c.get("type") == "DisruptionTarget" and c.get("reason") == "PreemptionByScheduler"
               for c in status.get("conditions") or [])


def _devices(pod: dict[str, Any]) -> str:
    """The device IDs the pod holds (its GPU indices when the record names no IDs)."""
    held = held_by(pod)
    return ",".join(held.device_ids) or ",".join(str(index) for index in held.gpu_indices)


def size_class(gpus: float) -> str:
    """``0`` CPU-only, ``<1`` a GPU share, else the whole-GPU count."""
    if gpus <= 0:
        return "0"
    return "<1" if gpus < 1 else f"{gpus:g}"


def summarize(recorder: Recorder, records: tuple[PodRecord, ...]) -> Summary:
    """Waits by job size, GPU-hours used and idle, preemptions, counts."""
    span = recorder.last - recorder.origin
    used = recorder.gpu_seconds / 3600.0
    by_size: dict[str, list[PodRecord]] = {}
    for record in records:
        if record.outcome != "Refused":
            by_size.setdefault(size_class(record.gpus), []).append(record)
    stats = [_wait_stats(size, rows) for size, rows in by_size.items()]
    stats.sort(key=lambda s: (-1.0 if s.size == "<1" else float(s.size)))
    return Summary(
        pods=len(records), started=sum(r.start is not None for r in records),
        finished=sum(r.outcome in ("Succeeded", "Failed") for r in records),
        never_started=sum(r.start is None and r.outcome != "Refused" for r in records),
        refused=sum(r.outcome == "Refused" for r in records),
        preemptions=sum(r.preempted for r in records), span_seconds=span,
        gpu_hours_used=used, gpu_hours_idle=recorder.capacity / 1000.0 * span / 3600.0 - used,
        wait_by_size=tuple(stats))


def _wait_stats(size: str, rows: list[PodRecord]) -> WaitStats:
    waits = np.array([r.wait for r in rows if r.wait is not None], dtype=float)
    if not len(waits):
        return WaitStats(size, len(rows), 0, float("nan"), float("nan"), float("nan"), float("nan"))
    p50, p95, p99 = np.percentile(waits, [50, 95, 99])
    return WaitStats(size, len(rows), len(waits), float(waits.mean()), float(p50), float(p95),
                     float(p99))
