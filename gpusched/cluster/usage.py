"""The one source of pod, node, object and external metrics: what the HPA controller reads and
what ``serve``'s metrics APIs (``metrics.k8s.io``, ``custom.metrics.k8s.io``,
``external.metrics.k8s.io``) return, so both always agree.

Per Running pod, an *activity* share in [0, 1]:

1. the pod annotation ``gpusched.io/gpu-util`` (0-100) / 100, else
2. when its Deployment carries a load curve (``cluster.clock.load``): a ready pod serves
   ``rate(t) / ready pods`` requests/s, so its share is ``min(1, that / perPodRPS)``; an unready
   pod serves nothing, else
3. the workload default (``WORKLOAD_DEFAULTS``: training 90 %, inference 40 %, plain pod 60 %).

From it (values at the current virtual time, window 30 s as metrics-server reports):

=========================  =====================================================================
metric                     value
=========================  =====================================================================
cpu (metrics.k8s.io)       ``gpusched.io/cpu-usage`` if set, else CPU request x activity
                           (a container without a request counts 100m)
memory (metrics.k8s.io)    ``gpusched.io/memory-usage`` if set, else memory request x the
                           workload's memory share (80/30/50 %; 128Mi without a request)
gpu_utilization (custom)   activity x 100, only for pods holding GPU devices (as
                           ``DCGM_FI_DEV_GPU_UTIL`` of the exporter's model)
gpu_memory_used (custom)   bytes of framebuffer: ``gpusched.io/gpu-memory`` per device, else the
                           memory share x each held device's memory (MIG profile, time-slice
                           share or whole GPU), as the exporter's model
requests_per_second        a pod: its share of its Deployment's load; a Deployment (Object
(custom)                   metric): the curve's rate
pending_pods (external)    Pending, unbound pods of the namespace whose labels match the metric
                           selector (e.g. a queue label)
<any> (external)           a user-set value: key ``<metric>`` of the ConfigMap
                           ``gpusched-external-metrics`` in the namespace (a quantity)
=========================  =====================================================================

Node usage (``kubectl top nodes``) is the sum of its Running pods plus a system baseline of
100m CPU and 512Mi memory (kubelet, runtime), within allocatable.

A metric that does not exist raises :class:`MetricNotFound` with the custom metrics API
server's message (``the server could not find the metric X for pods``).

Neighbours: ``cluster.clock.load`` (curves), ``cluster.scheduling`` (node devices);
used by ``cluster.controllers.autoscaling.hpa``, ``server.metrics_api`` and ``metrics.gpu_model``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import math
from dataclasses import dataclass

from gpusched.cluster.kubelet.device_inputs import device_inputs, node_devices_for
from gpusched.cluster.clock.load import LoadCurve, load_of
from gpusched.cluster.apiserver.view import View
from gpusched.errors import GpuschedError
from gpusched.objects.assignment import held_by
from gpusched.objects.quantity import QuantityError, canonical
from gpusched.objects.selectors import matches, selector_from_dict

if TYPE_CHECKING:
    from gpusched.cluster.kubelet.device_inputs import DeviceInputs

ANN_GPU_UTIL = "gpusched.io/gpu-util"
ANN_GPU_MEMORY = "gpusched.io/gpu-memory"
ANN_CPU_USAGE = "gpusched.io/cpu-usage"
ANN_MEMORY_USAGE = "gpusched.io/memory-usage"
EXTERNAL_CONFIGMAP = "gpusched-external-metrics"
MIB = 1 << 20
WINDOW_S = 30
# (utilization %, memory share) by workload kind (documented in metrics.gpu_model too).
WORKLOAD_DEFAULTS = {"training": (90, 0.8), "inference": (40, 0.3), "pod": (60, 0.5)}
NO_REQUEST_CPU_M = 100
NO_REQUEST_MEMORY = 128 * MIB
NODE_BASE_CPU_M = 100
NODE_BASE_MEMORY = 512 * MIB
POD_METRICS = ("gpu_memory_used", "gpu_utilization", "requests_per_second")
OBJECT_METRICS = {"Deployment": ("gpu_utilization", "requests_per_second"),
                  "Pod": POD_METRICS}
EXTERNAL_BUILTIN = ("pending_pods",)


class MetricNotFound(GpuschedError):
    """The metric does not exist for that resource (the metrics API's 404)."""


def not_found(metric: str, resource: str) -> MetricNotFound:
    return MetricNotFound(f"the server could not find the metric {metric} for {resource}")


def workload_kind(pod: dict[str, Any]) -> str:
    """``training`` (owned by a Job), ``inference`` (owned by a ReplicaSet) or ``pod``."""
    kinds = {ref.get("kind") for ref in (pod.get("metadata") or {}).get("ownerReferences") or []}
    return "training" if "Job" in kinds else "inference" if "ReplicaSet" in kinds else "pod"


def _annotations(body: dict[str, Any]) -> dict[str, Any]:
    return (body.get("metadata") or {}).get("annotations") or {}


def _is_running(pod: dict[str, Any]) -> bool:
    return ((pod.get("status") or {}).get("phase") == "Running"
            and not (pod.get("metadata") or {}).get("deletionTimestamp"))


def _is_ready(pod: dict[str, Any]) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True" and _is_running(pod)
    return _is_running(pod)


def _requests(pod: dict[str, Any], resource: str) -> int | None:
    """Sum of the containers' requests (limits when only they are set); None when a container
    has neither."""
    total = 0
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        raw = (resources.get("requests") or {}).get(resource, (resources.get("limits") or {}).get(resource))
        if raw is None:
            return None
        try:
            total += canonical(resource, raw)
        except (QuantityError, ValueError):
            return None
    return total


def pod_requests(pod: dict[str, Any], resource: str) -> int | None:
    return _requests(pod, resource)


@dataclass(frozen=True, slots=True)
class PodValue:
    """One pod's value of one metric at ``timestamp`` (virtual seconds)."""

    namespace: str
    name: str
    value: float
    timestamp: float


class Usage:
    """Metrics of one view at its current time; build one per sync or request."""

    def __init__(self, view: View) -> None:
        self.view = view
        self.now = view.now()
        self._owner: dict[str, dict[str, Any] | None] = {}
        self._ready: dict[str, int] = {}
        self._inputs: DeviceInputs | None = None

    # ---- load ------------------------------------------------------------------------------

    def deployment_of(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        """The Deployment owning the pod's ReplicaSet (None for other pods)."""
        meta = pod.get("metadata") or {}
        ns = meta.get("namespace", "default")
        for ref in meta.get("ownerReferences") or []:
            if ref.get("kind") == "ReplicaSet" and ref.get("controller"):
                rs = self.view.get("ReplicaSet", ref.get("name", ""), ns)
                for rref in ((rs or {}).get("metadata") or {}).get("ownerReferences") or []:
                    if rref.get("kind") == "Deployment" and rref.get("controller"):
                        return self.view.get("Deployment", rref.get("name", ""), ns)
        return None

    def _ready_pods(self, deployment: dict[str, Any]) -> int:
        uid = deployment["metadata"].get("uid", "")
        if uid not in self._ready:
            ns = deployment["metadata"].get("namespace", "default")
            self._ready[uid] = sum(1 for p in self.view.list("Pod", ns)
                                   if _is_ready(p) and self._uid_of(p) == uid)
        return self._ready[uid]

    def _uid_of(self, pod: dict[str, Any]) -> str:
        key = (pod.get("metadata") or {}).get("uid", "")
        if key not in self._owner:
            self._owner[key] = self.deployment_of(pod)
        owner = self._owner[key]
        result: str = (owner or {}).get("metadata", {}).get("uid", "")
        return result

    def _curve(self, pod: dict[str, Any]) -> tuple[LoadCurve, dict[str, Any]] | None:
        key = (pod.get("metadata") or {}).get("uid", "")
        if key not in self._owner:
            self._owner[key] = self.deployment_of(pod)
        deployment = self._owner[key]
        if not deployment:
            return None
        curve = load_of(deployment)
        return (curve, deployment) if curve else None

    def pod_rps(self, pod: dict[str, Any]) -> float:
        found = self._curve(pod)
        if found is None or not _is_ready(pod):
            return 0.0
        curve, deployment = found
        return curve.rate(self.now) / max(1, self._ready_pods(deployment))

    def activity(self, pod: dict[str, Any]) -> float:
        raw = _annotations(pod).get(ANN_GPU_UTIL)
        if raw is not None:
            try:
                value = float(raw)
                if math.isfinite(value):
                    return min(1.0, max(0.0, value / 100.0))
            except ValueError:
                pass
        found = self._curve(pod)
        if found is not None:
            return min(1.0, self.pod_rps(pod) / found[0].per_pod_rps)
        return WORKLOAD_DEFAULTS[workload_kind(pod)][0] / 100.0

    # ---- resource metrics (metrics.k8s.io) -------------------------------------------------

    def pod_usage(self, pod: dict[str, Any]) -> dict[str, int] | None:
        """{"cpu": millicores, "memory": bytes} of a Running pod; None otherwise."""
        if not _is_running(pod):
            return None
        annotations = _annotations(pod)
        return {"cpu": self._fixed(annotations, ANN_CPU_USAGE, "cpu")
                if ANN_CPU_USAGE in annotations else self._cpu(pod),
                "memory": self._fixed(annotations, ANN_MEMORY_USAGE, "memory")
                if ANN_MEMORY_USAGE in annotations else self._memory(pod)}

    @staticmethod
    def _fixed(annotations: dict[str, Any], key: str, resource: str) -> int:
        try:
            return max(0, canonical(resource, annotations[key]))
        except (QuantityError, ValueError):
            return 0

    def container_usage(self, pod: dict[str, Any]) -> list[tuple[str, int, int]]:
        """(container, cpu millicores, memory bytes) per container, splitting the pod's usage
        by each container's share of the requests."""
        usage = self.pod_usage(pod) or {"cpu": 0, "memory": 0}
        containers = (pod.get("spec") or {}).get("containers") or []
        out = []
        for i, container in enumerate(containers):
            single = {"spec": {"containers": [container]}}
            cpu_share = _share(_requests(single, "cpu"), _requests(pod, "cpu"), len(containers))
            mem_share = _share(_requests(single, "memory"), _requests(pod, "memory"), len(containers))
            out.append((str(container.get("name", f"c{i}")), int(usage["cpu"] * cpu_share),
                        int(usage["memory"] * mem_share)))
        return out

    def _cpu(self, pod: dict[str, Any]) -> int:
        request = _requests(pod, "cpu")
        base = request if request else NO_REQUEST_CPU_M
        return max(1, int(base * self.activity(pod)))

    def _memory(self, pod: dict[str, Any]) -> int:
        request = _requests(pod, "memory")
        base = request if request else NO_REQUEST_MEMORY
        return int(base * WORKLOAD_DEFAULTS[workload_kind(pod)][1])

    def node_usage(self, node: dict[str, Any]) -> dict[str, int]:
        name = node["metadata"]["name"]
        cpu, memory = NODE_BASE_CPU_M, NODE_BASE_MEMORY
        for pod in self.view.list("Pod"):
            if (pod.get("spec") or {}).get("nodeName") == name:
                usage = self.pod_usage(pod)
                if usage:
                    cpu += usage["cpu"]
                    memory += usage["memory"]
        alloc = (node.get("status") or {}).get("allocatable") or {}
        try:
            cpu = min(cpu, canonical("cpu", alloc.get("cpu", cpu / 1000)))
            memory = min(memory, canonical("memory", alloc.get("memory", memory)))
        except (QuantityError, ValueError):
            pass
        return {"cpu": cpu, "memory": memory}

    # ---- custom metrics --------------------------------------------------------------------

    def pod_metric(self, pod: dict[str, Any], metric: str) -> float | None:
        """The pod's value of a custom metric; None when the pod has none (not Running, or no
        GPU for the GPU metrics). Raises :class:`MetricNotFound` for an unknown metric."""
        if metric not in POD_METRICS:
            raise not_found(metric, "pods")
        if not _is_running(pod):
            return None
        if metric == "requests_per_second":
            return self.pod_rps(pod) if self._curve(pod) else None
        devices = list(held_by(pod).device_ids)
        if not devices:
            return None
        if metric == "gpu_utilization":
            return round(self.activity(pod) * 100.0, 3)
        return float(self._framebuffer(pod, devices))

    def _framebuffer(self, pod: dict[str, Any], ids: list[str]) -> int:
        node = self.view.get("Node", (pod.get("spec") or {}).get("nodeName", ""))
        if node is None:
            return 0
        if self._inputs is None:
            self._inputs = device_inputs(self.view)
        devices = node_devices_for(node, self._inputs)
        if devices is None or devices.model is None:
            return 0
        by_id = {d.device_id: d for d in devices.devices}
        total = 0
        for device_id in ids:
            device = by_id.get(device_id)
            if device is None:
                continue
            if device.profile:
                size = devices.model.mig.find(device.profile).memory_mib
            else:
                replicas = sum(1 for d in devices.devices
                               if d.parent and d.parent == device.parent) or 1
                size = devices.model.memory_mib // replicas
            total += self._device_memory(pod, size)
        return total * MIB

    @staticmethod
    def _device_memory(pod: dict[str, Any], size_mib: int) -> int:
        raw = _annotations(pod).get(ANN_GPU_MEMORY)
        if raw is not None:
            try:
                return min(size_mib, canonical("memory", raw) // MIB)
            except (QuantityError, ValueError):
                pass
        return int(size_mib * WORKLOAD_DEFAULTS[workload_kind(pod)][1])

    def pods_metric(self, namespace: str | None, metric: str, selector: dict[str, Any] | None = None,
                    names: tuple[str, ...] = ()) -> list[PodValue]:
        """Values of ``metric`` for the pods of ``namespace`` (None: all) matching ``selector``
        (a LabelSelector dict) or named; pods without a value are left out."""
        if metric not in POD_METRICS:
            raise not_found(metric, "pods")
        parsed = selector_from_dict(selector) if selector else None
        out = []
        for pod in self.view.list("Pod", namespace):
            meta = pod.get("metadata") or {}
            if names and meta.get("name") not in names:
                continue
            if parsed is not None and not matches(parsed, meta.get("labels") or {}):
                continue
            value = self.pod_metric(pod, metric)
            if value is not None:
                out.append(PodValue(meta.get("namespace", "default"), meta.get("name", ""),
                                    value, self.now))
        return out

    def object_metric(self, kind: str, name: str, namespace: str, metric: str) -> float:
        """An Object metric (``describedObject``); :class:`MetricNotFound` when there is none."""
        plural = {"Deployment": "deployments.apps", "Pod": "pods"}.get(kind, f"{kind.lower()}s")
        if metric not in OBJECT_METRICS.get(kind, ()):
            raise not_found(metric, plural)
        body = self.view.get(kind, name, namespace)
        if body is None:
            raise MetricNotFound(f'{plural} "{name}" not found')
        if kind == "Pod":
            value = self.pod_metric(body, metric)
            if value is None:
                raise not_found(metric, plural)
            return value
        curve = load_of(body)
        if metric == "requests_per_second":
            if curve is None:
                raise not_found(metric, plural)
            return curve.rate(self.now)
        pods = [p for p in self.view.list("Pod", namespace) if self._uid_of(p) == body["metadata"].get("uid")]
        values = [v for v in (self.pod_metric(p, metric) for p in pods) if v is not None]
        if not values:
            raise not_found(metric, plural)
        return sum(values) / len(values)

    # ---- external metrics ------------------------------------------------------------------

    def external_metric(self, namespace: str, metric: str,
                        selector: dict[str, Any] | None = None) -> list[tuple[dict[str, Any], float]]:
        """(metricLabels, value) items of an external metric in ``namespace``."""
        parsed = selector_from_dict(selector) if selector else None
        if metric == "pending_pods":
            count = sum(1 for p in self.view.list("Pod", namespace)
                        if _waiting(p) and (parsed is None or matches(parsed, _labels(p))))
            labels = dict((selector or {}).get("matchLabels") or {})
            return [({"namespace": namespace, **labels}, float(count))]
        return [({}, self._configmap_metric(namespace, metric))]

    def _configmap_metric(self, namespace: str, metric: str) -> float:
        """An external metric's value from ConfigMap ``EXTERNAL_CONFIGMAP`` in ``namespace``."""
        cm = self.view.get("ConfigMap", EXTERNAL_CONFIGMAP, namespace)
        raw = ((cm or {}).get("data") or {}).get(metric)
        if raw is None:
            raise not_found(metric, "external metrics")
        try:
            return float(canonical("cpu", raw)) / 1000.0      # milli-precision, like Quantity
        except (QuantityError, ValueError):
            raise MetricNotFound(f"metric {metric} in ConfigMap {namespace}/{EXTERNAL_CONFIGMAP} "
                                 f"is not a quantity: {raw!r}") from None


def _waiting(pod: dict[str, Any]) -> bool:
    """Pending, not bound and not being deleted: what ``pending_pods`` counts."""
    return ((pod.get("status") or {}).get("phase") == "Pending"
            and not (pod.get("spec") or {}).get("nodeName")
            and not (pod.get("metadata") or {}).get("deletionTimestamp"))


def _labels(pod: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = (pod.get("metadata") or {}).get("labels") or {}
    return labels


def _share(part: int | None, whole: int | None, count: int) -> float:
    if part and whole:
        return part / whole
    return 1.0 / max(1, count)


def milli(value: float) -> int:
    """``resource.Quantity.MilliValue`` of a value (rounded up, as MilliValue rounds)."""
    return int(math.ceil(round(value * 1000.0, 6)))


def format_milli(value_m: int) -> str:
    """A milli-value as a DecimalSI Quantity string, as ``Quantity.String`` canonicalizes it:
    the largest SI suffix that keeps an integer (``450m``, ``45``, ``2G``, ``12884901888``)."""
    if value_m == 0:
        return "0"
    sign = "-" if value_m < 0 else ""
    amount, suffix = abs(value_m), "m"
    for next_suffix in ("", "k", "M", "G", "T", "P", "E"):
        if amount % 1000:
            break
        amount, suffix = amount // 1000, next_suffix
    return f"{sign}{amount}{suffix}"
