"""Scheduler and cluster metrics as a ``prometheus_client`` collector over one cluster ``View``.

kube-scheduler's names, labels and buckets where it has them:

- ``scheduler_pending_pods{queue}``: pending pods by queue (``scheduler.queue.queue_of``): a
  failed pod no event has moved is ``unschedulable``, one moved but backing off ``backoff``, one
  never tried (or moved, back-off over) ``active``, one with ``spec.schedulingGates`` ``gated``.
- ``scheduler_schedule_attempts_total{result,profile}``,
  ``scheduler_scheduling_attempt_duration_seconds{result,profile}`` (real elapsed time of
  ``schedule_one``), ``scheduler_preemption_attempts_total``, ``scheduler_preemption_victims``:
  the counters ``cluster.scheduling.record_attempt`` persists in the store, so they add up over
  every CLI call and ``serve``.

gpusched's own (prefix ``gpusched_``): GPU resources allocatable/allocated per node, model and
resource (a fractional pod's ``gpusched.io/gpu-milli`` share counts as gpu-milli, and a GPU cut into
shares as one allocated ``nvidia.com/gpu``, as ``describe node`` counts them), allocated per
namespace; the allocated share of each physical GPU (``gpusched_gpu_allocated_ratio``, so a GPU
holding two 460m shares reads 0.92, never free); time-slice replicas and MIG instances (total and used) per
GPU; fragmentation (the share of free GPU capacity that sits on partially used GPUs); pending
GPU demand per namespace and the pending seconds of each pending GPU pod; ResourceQuota used
and hard per namespace and resource; GPU-hours and cost (``cost``); the virtual clock.

Kueue's per-queue gauges (prefix ``kueue_``, ``gpusched.kueue.metrics``) once a ClusterQueue
exists: pending workloads by status, admitted active workloads, usage, nominal quota, borrowing
and lending limits per flavor and resource, the weighted share; the admission attempts
(scheduling cycles) by result.

Neighbours: ``cluster_source`` (GPU states), ``cost``; ``exposition`` registers this collector.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, Iterator

from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily,
                                    Metric)

from gpusched.scheduler.queue import queue_of
from gpusched.cluster.scheduling.binder import ATTEMPT_BUCKETS, VICTIM_BUCKETS
from gpusched.cluster.scheduling.cache import build_snapshot
from gpusched.cluster.scheduling.profiles import pending_pods
from gpusched.cluster.apiserver.view import View
from gpusched.cluster.controllers.kueue.snapshot import condition, is_true, read_world
from gpusched.devices.node import gpu_uuid
from gpusched.devices.prices import DEFAULT_PRICES
from gpusched.kueue.metrics import ADMISSION_ATTEMPTS, ROLE
from gpusched.kueue.metrics import HELP as KUEUE_HELP
from gpusched.kueue.metrics import QueueCounts
from gpusched.kueue.metrics import samples as kueue_samples
from gpusched.metrics import cost
from gpusched.metrics.cluster_source import ClusterSource, seconds_of
from gpusched.objects.quantity import QuantityError, parse_quantity
from gpusched.objects.pod import requested_gpu_share
from gpusched.objects.types import RESOURCE_GPU_MILLI

if TYPE_CHECKING:
    from gpusched.devices.model import DeviceModel

PENDING_HELP = ("Number of pending pods, by the queue type. 'active' means number of pods in "
                "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number "
                "of pods in unschedulablePods that the scheduler attempted to schedule and failed; "
                "'gated' is the number of unschedulable pods that the scheduler never attempted to "
                "schedule because they are gated.")


def is_gpu_resource(name: str) -> bool:
    return name.startswith("nvidia.com/") or name == RESOURCE_GPU_MILLI


def _number(value: object) -> float:
    try:
        return float(parse_quantity(value))
    except (QuantityError, TypeError, ValueError):
        return 0.0


def _gpu_amount(resource: str, value: object) -> float:
    """GPU resources in devices; ``gpusched.io/gpu-milli`` in GPUs."""
    amount = _number(value)
    return amount / 1000 if resource == RESOURCE_GPU_MILLI else amount


def _requests(pod: dict[str, Any]) -> dict[str, float]:
    """Effective GPU requests of a pod (containers summed; limits when requests are absent)."""
    out: dict[str, float] = defaultdict(float)
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for name, value in merged.items():
            if is_gpu_resource(name):
                out[name] += _gpu_amount(name, value)
    milli = requested_gpu_share(pod)
    if milli:   # a share of one GPU, not a whole one (as the scheduler and describe node count it)
        out.pop("nvidia.com/gpu", None)
        out[RESOURCE_GPU_MILLI] = milli / 1000
    return dict(out)


def cut_gpus(devices: DeviceModel) -> int:
    """How many physical GPUs of a node hold milli-GPU shares: each is taken for whole-GPU pods."""
    return len({r.gpu_index for r in devices.rows() if r.holder and r.milli and r.milli < 1000})


def _histogram(name: str, help_text: str, labels: list[str], data: dict[str, Any],
               bounds: tuple[float, ...]) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, help_text, labels=labels)
    for key, entry in sorted(data.items()):
        running, buckets = 0, []
        for bound, count in zip((*bounds, float("inf")), entry["buckets"]):
            running += count
            buckets.append(("+Inf" if bound == float("inf") else repr(bound), running))
        family.add_metric(key.split("|") if labels else [], buckets, entry["sum"])
    return family


def _kueue_counts(view: View, world: Any) -> dict[str, QueueCounts]:
    """Per ClusterQueue: pending (active: not yet tried; inadmissible: QuotaReserved False), admitted."""
    counts: dict[str, list[int]] = {}
    for wl in view.list("Workload"):
        if is_true(wl, "Finished"):
            continue
        lq = (str(wl["metadata"].get("namespace", "default")), str((wl.get("spec") or {}).get("queueName", "")))
        cq = world.local_queues.get(lq)
        if cq is None:
            continue
        entry = counts.setdefault(cq, [0, 0, 0])
        if (wl.get("status") or {}).get("admission"):
            entry[2] += 1
        else:
            entry[1 if condition(wl, "QuotaReserved") else 0] += 1
    return {cq: QueueCounts(*values) for cq, values in counts.items()}


def kueue_metrics(view: View) -> Iterator[Metric]:
    """Kueue's per-queue gauges (``gpusched.kueue.metrics``), when there is a ClusterQueue."""
    if not view.list("ClusterQueue"):
        return
    world = read_world(view)
    families: dict[str, GaugeMetricFamily] = {}
    for name, labels, value in kueue_samples(world.snapshot.forest, _kueue_counts(view, world)):
        if name not in families:
            families[name] = GaugeMetricFamily(name, KUEUE_HELP[name], labels=[k for k, _ in labels])
        families[name].add_metric([v for _, v in labels], value)
    yield from families.values()
    attempts = CounterMetricFamily(ADMISSION_ATTEMPTS, KUEUE_HELP[ADMISSION_ATTEMPTS],
                                   labels=["result", "replica_role"])
    for result, count in sorted((view.stats.get(ADMISSION_ATTEMPTS) or {}).items()):
        attempts.add_metric([result, ROLE], count)
    yield attempts


class ClusterCollector:
    """Collects every metric above from ``view`` (a fresh one per scrape)."""

    def __init__(self, view: View, source: ClusterSource | None = None,
                 prices: dict[str, float] | None = None) -> None:
        self.view = view
        self.source = source or ClusterSource(view)
        self.prices = prices or DEFAULT_PRICES

    def collect(self) -> Iterator[Metric]:
        yield from self.scheduler_metrics()
        yield from self.allocation_metrics()
        yield from self.device_metrics()
        yield from self.pending_and_quota_metrics()
        yield from self.cost_metrics()
        yield from kueue_metrics(self.view)

    # ---- kube-scheduler ----------------------------------------------------------------------

    def scheduler_metrics(self) -> Iterator[Metric]:
        view, stats = self.view, self.view.stats
        queues = {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
        for pod in pending_pods(view):
            if (pod.get("spec") or {}).get("schedulingGates"):
                queues["gated"] += 1
            else:
                queues[queue_of(view, pod["metadata"]["uid"])] += 1
        pending = GaugeMetricFamily("scheduler_pending_pods", PENDING_HELP, labels=["queue"])
        for queue, count in queues.items():
            pending.add_metric([queue], count)
        yield pending
        attempts = CounterMetricFamily(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could "
            "not be scheduled, while 'error' means an internal scheduler problem.",
            labels=["result", "profile"])
        for key, count in sorted(stats.get("attempts", {}).items()):
            attempts.add_metric(key.split("|"), count)
        yield attempts
        yield _histogram("scheduler_scheduling_attempt_duration_seconds",
                         "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
                         ["result", "profile"], stats.get("attempt_seconds", {}), ATTEMPT_BUCKETS)
        victims = stats.get("victims", {}) or {
            "": {"buckets": [0] * (len(VICTIM_BUCKETS) + 1), "sum": 0.0, "count": 0}}
        yield _histogram("scheduler_preemption_victims", "Number of selected preemption victims",
                         [], victims, VICTIM_BUCKETS)
        yield CounterMetricFamily("scheduler_preemption_attempts",
                                  "Total preemption attempts in the cluster till now",
                                  value=stats.get("preemption_attempts", 0))

    # ---- allocation --------------------------------------------------------------------------

    def allocation_metrics(self) -> Iterator[Metric]:
        view = self.view
        labels = ["node", "model", "resource"]
        allocatable = GaugeMetricFamily("gpusched_gpus_allocatable",
                                        "GPU resources a node advertises (devices; gpu-milli in GPUs)",
                                        labels=labels)
        allocated = GaugeMetricFamily("gpusched_gpus_allocated",
                                      "GPU resources requested by the node's running pods "
                                      "(a GPU cut into gpu-milli shares counts as one nvidia.com/gpu)",
                                      labels=labels)
        by_ns = GaugeMetricFamily("gpusched_gpus_allocated_by_namespace",
                                  "GPU resources requested by running pods, by namespace",
                                  labels=["namespace", "resource"])
        models = _allocatable_by_node(view, allocatable)
        per_node, per_ns = _running_requests(view)
        snapshot, _ = build_snapshot(view)
        for row, devices in enumerate(snapshot.devices):
            if devices is not None and devices.gpu_count and cut_gpus(devices):
                per_node[(snapshot.names[row], "nvidia.com/gpu")] += cut_gpus(devices)
        for (node_name, resource), amount in sorted(per_node.items()):
            allocated.add_metric([node_name, models.get(node_name, ""), resource], amount)
        for (ns, resource), amount in sorted(per_ns.items()):
            by_ns.add_metric([ns, resource], amount)
        yield from (allocatable, allocated, by_ns)

    def device_metrics(self) -> Iterator[Metric]:
        """Time-slice replicas and MIG instances per GPU, and fragmentation."""
        snapshot, _ = build_snapshot(self.view)
        replicas = GaugeMetricFamily("gpusched_timeslice_replicas",
                                     "Time-slicing/MPS replicas of a shared GPU, by state",
                                     labels=["node", "gpu", "state"])
        mig = GaugeMetricFamily("gpusched_mig_instances", "MIG instances of a GPU, by state",
                                labels=["node", "gpu", "profile", "state"])
        held = GaugeMetricFamily("gpusched_gpu_allocated_ratio",
                                 "Share of each physical GPU held by pods: 1 held whole, the sum of "
                                 "its gpu-milli shares, its used time-slice replicas or MIG slices",
                                 labels=["node", "gpu", "UUID"])
        free_total = free_partial = 0.0
        for row, devices in enumerate(snapshot.devices):
            if devices is None or not devices.gpu_count:
                continue
            node = snapshot.names[row]
            free = _free_fractions(devices)
            for index, share in enumerate(free):
                held.add_metric([node, str(index), gpu_uuid(node, index)], round(1.0 - share, 6))
            free_total += sum(free)
            free_partial += sum(f for f in free if 0 < f < 1)
            counts: dict[tuple[Any, ...], int] = defaultdict(int)
            for dev in devices.rows():
                state = "used" if dev.holder else "free"
                if dev.replica >= 0:
                    counts[("r", dev.gpu_index, "", state)] += 1
                elif dev.profile:
                    counts[("m", dev.gpu_index, dev.profile, state)] += 1
            for (kind, gpu, profile, state), n in sorted(counts.items()):
                if kind == "r":
                    replicas.add_metric([node, str(gpu), state], n)
                else:
                    mig.add_metric([node, str(gpu), profile, state], n)
        fragmentation = GaugeMetricFamily(
            "gpusched_gpu_fragmentation_ratio",
            "Share of the free GPU capacity that lies on partially used GPUs (0 when none is free)",
            value=free_partial / free_total if free_total else 0.0)
        yield from (held, replicas, mig, fragmentation)

    # ---- pending and quota -------------------------------------------------------------------

    def pending_and_quota_metrics(self) -> Iterator[Metric]:
        view = self.view
        demand = GaugeMetricFamily("gpusched_pending_gpu_requests",
                                   "GPU resources requested by pending pods",
                                   labels=["namespace", "resource"])
        ages = GaugeMetricFamily("gpusched_pending_gpu_pod_seconds",
                                 "Virtual seconds each pending GPU pod has waited since creation",
                                 labels=["namespace", "pod"])
        totals: dict[tuple[str, str], float] = defaultdict(float)
        for pod in pending_pods(view):
            requests = _requests(pod)
            if not requests:
                continue
            meta = pod["metadata"]
            for resource, amount in requests.items():
                totals[(meta.get("namespace", "default"), resource)] += amount
            ages.add_metric([meta.get("namespace", "default"), meta["name"]],
                            max(0.0, view.now() - seconds_of(meta.get("creationTimestamp", ""))))
        for (ns, resource), amount in sorted(totals.items()):
            demand.add_metric([ns, resource], amount)
        used = GaugeMetricFamily("gpusched_quota_used", "ResourceQuota usage (status.used)",
                                 labels=["namespace", "quota", "resource"])
        hard = GaugeMetricFamily("gpusched_quota_hard", "ResourceQuota limit (status.hard)",
                                 labels=["namespace", "quota", "resource"])
        for quota in view.list("ResourceQuota"):
            meta, status = quota["metadata"], quota.get("status") or {}
            hard_values = status.get("hard") or (quota.get("spec") or {}).get("hard") or {}
            for resource, value in sorted(hard_values.items()):
                key = [meta.get("namespace", "default"), meta["name"], resource]
                hard.add_metric(key, _number(value))
                used.add_metric(key, _number((status.get("used") or {}).get(resource, 0)))
        yield from (demand, ages, used, hard)

    # ---- cost --------------------------------------------------------------------------------

    def cost_metrics(self) -> Iterator[Metric]:
        labels = ["namespace", "model", "priority_class"]
        hours = CounterMetricFamily("gpusched_gpu_hours",
                                    "GPU-hours used on the virtual clock (shares counted proportionally)",
                                    labels=labels)
        dollars = CounterMetricFamily("gpusched_gpu_cost_dollars",
                                      "Cost of the GPU-hours at the price table (USD)", labels=labels)
        for row in cost.usage(self.source.gpus(), self.view.now(), self.prices):
            key = [row.namespace, row.model, row.priority_class]
            hours.add_metric(key, row.gpu_hours)
            dollars.add_metric(key, row.dollars)
        yield from (hours, dollars)
        yield GaugeMetricFamily("gpusched_virtual_clock_seconds",
                                "The cluster's virtual clock (seconds since 2026-01-01T00:00:00Z)",
                                value=self.view.now())


def _free_fractions(devices: DeviceModel) -> list[float]:
    """Per physical GPU, the free share of its capacity (0..1).

    Whole GPU: 1 if free, else 0 (minus fractional shares: ``free_milli / 1000``); time-sliced:
    free replicas / replicas; MIG: free instances' compute slices / the GPU's compute slices.
    Example: 8 GPUs, one holding a 300-milli pod, two held whole: free = [0.7, 0, 0, 1, 1, 1, 1, 1]
    -> 5.7 free, 0.7 of it on a partially used GPU -> ratio 0.7 / 5.7 = 0.12.
    """
    rows = devices.rows()
    free_milli = devices.free_milli()
    out = []
    for index in range(devices.gpu_count):
        mine = [r for r in rows if r.gpu_index == index]
        if any(r.replica >= 0 for r in mine):
            out.append(sum(1 for r in mine if not r.holder) / len(mine))
        elif devices.mig_enabled(index):
            geometry = devices.gpu_model.mig
            assert geometry is not None     # NodeDevices.build enables MIG only on MIG models
            slices = sum(devices.mig_profile(r.profile)[1].compute_slices for r in mine
                         if r.profile and not r.holder)
            out.append(slices / geometry.compute_slices)
        else:
            out.append(int(free_milli[index]) / 1000)
    return out


def _allocatable_by_node(view: View, allocatable: GaugeMetricFamily) -> dict[str, str]:
    """Add each node's GPU resources to ``allocatable``; returns node -> GPU model label."""
    models = {}
    for node in view.list("Node"):
        meta = node["metadata"]
        model = ((meta.get("labels") or {}).get("gpusched.io/gpu-model")
                 or (meta.get("labels") or {}).get("nvidia.com/gpu.product", ""))
        models[meta["name"]] = model
        for resource, value in sorted(((node.get("status") or {}).get("allocatable") or {}).items()):
            if is_gpu_resource(resource):
                allocatable.add_metric([meta["name"], model, resource],
                                       _gpu_amount(resource, value))
    return models


def _running_requests(view: View) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], float]]:
    """GPU requests of bound, unfinished pods: per (node, resource) and per (namespace, resource)."""
    per_node: dict[tuple[str, str], float] = defaultdict(float)
    per_ns: dict[tuple[str, str], float] = defaultdict(float)
    for pod in view.list("Pod"):
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        for resource, amount in _requests(pod).items():
            per_node[(node_name, resource)] += amount
            per_ns[(pod["metadata"].get("namespace", "default"), resource)] += amount
    return per_node, per_ns
