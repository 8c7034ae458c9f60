"""The VerticalPodAutoscaler recommender (``autoscaling.k8s.io/v1``), as kubernetes/autoscaler's
``vertical-pod-autoscaler/pkg/recommender`` computes it, plus gpusched's GPU observations.

Every ``RECOMMENDER_INTERVAL`` (``--recommender-interval``, 1 min) of virtual time each VPA
samples the Running pods of its target (``cluster.usage``, the HPA's source):

- CPU: one sample per container into a decaying exponential histogram
  (``util/histogram``: first bucket 0.01 cores, ratio 1.05, up to 1000 cores; half-life 24 h),
  weighted by ``max(request in cores, 0.1)`` (``minSampleWeight``);
- memory: the peak of each 24 h aggregation window (``MemoryAggregationInterval``), weight 1,
  into a histogram from 10 MB, ratio 1.05, to 1 TB, half-life 24 h; a larger sample in the window
  replaces the window's peak (``AddMemorySample``);
- GPU (gpusched's own): the peak GPU utilization and framebuffer per pod.

The recommendation (``logic/recommender.go``): target = p90, lower bound = p50, upper bound =
p95 of the histograms (``Percentile`` returns the end of the bucket), each + 15 %
(``--recommendation-margin-fraction``); the bounds scaled by the confidence
``min(lifespan in days, samples / 1440)``: upper x ``(1 + 1/confidence)``, lower x
``(1 + 0.001/confidence)^-2``; never below the pod minimum (``--pod-recommendation-min-cpu-
millicores`` 25, ``--pod-recommendation-min-memory-mb`` 250) split over the containers. It is
written to ``status.recommendation.containerRecommendations`` with the condition
``RecommendationProvided``. No updater runs: every mode behaves as ``Off`` (recommend only).

Neighbours: ``cluster.usage`` (samples), ``cluster.controllers.autoscaling.gpu_fit`` (the GPU
suggestion, for ``gpusched recommend``).
"""

from __future__ import annotations

from typing import Any

import copy
import math

from gpusched.cluster.apiserver import write
from gpusched.objects.assignment import held_by
from gpusched.cluster.usage import Usage
from gpusched.cluster.apiserver.view import View
from gpusched.objects.selectors import matches, selector_from_dict

COMPONENT = "vpa-recommender"
RECOMMENDER_INTERVAL = 60.0
HALF_LIFE = 24 * 3600.0
MEMORY_WINDOW = 24 * 3600.0
MIN_SAMPLE_WEIGHT = 0.1
EPSILON = 1e-4
MAX_DECAY_EXPONENT = 100
SAFETY_MARGIN = 0.15
POD_MIN_CPU_CORES = 0.025
POD_MIN_MEMORY = 250 * 1024 * 1024
TARGET, LOWER, UPPER = 0.9, 0.5, 0.95
# (max value, first bucket size, ratio): CPU in cores, memory in bytes
CPU_HISTOGRAM = (1000.0, 0.01, 1.05)
MEMORY_HISTOGRAM = (1e12, 1e7, 1.05)
TARGET_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job")


# ---- util/histogram: exponential buckets, decaying weights -------------------------------------

def num_buckets(options: tuple[float, float, float]) -> int:
    maximum, first, ratio = options
    return int(math.ceil(math.log(maximum * (ratio - 1) / first + 1) / math.log(ratio))) + 1


def find_bucket(options: tuple[float, float, float], value: float) -> int:
    """``exponentialHistogramOptions.FindBucket``."""
    _, first, ratio = options
    if value < first:
        return 0
    bucket = int(math.log(value * (ratio - 1) / first + 1) / math.log(ratio))
    return min(bucket, num_buckets(options) - 1)


def bucket_start(options: tuple[float, float, float], bucket: int) -> float:
    """``exponentialHistogramOptions.GetBucketStart``."""
    _, first, ratio = options
    if bucket == 0:
        return 0.0
    return first * (ratio ** bucket - 1) / (ratio - 1)


def new_histogram() -> dict[str, Any]:
    return {"ref": None, "buckets": {}}


def _factor(hist: dict[str, Any], t: float) -> float:
    result: float = 2.0 ** ((t - hist["ref"]) / HALF_LIFE)
    return result


def add_sample(hist: dict[str, Any], options: tuple[float, float, float], value: float, weight: float, t: float) -> None:
    """``decayingHistogram.AddSample``: weight x 2^((t - reference) / half-life); the reference
    moves forward (weights rescaled) when the exponent would exceed 100."""
    if hist["ref"] is None:
        hist["ref"] = math.floor(t / HALF_LIFE) * HALF_LIFE
    if (t - hist["ref"]) / HALF_LIFE > MAX_DECAY_EXPONENT:
        new_ref = math.floor(t / HALF_LIFE) * HALF_LIFE
        scale = 2.0 ** ((hist["ref"] - new_ref) / HALF_LIFE)
        hist["buckets"] = {k: w * scale for k, w in hist["buckets"].items()}
        hist["ref"] = new_ref
    key = str(find_bucket(options, value))
    hist["buckets"][key] = hist["buckets"].get(key, 0.0) + weight * _factor(hist, t)


def subtract_sample(hist: dict[str, Any], options: tuple[float, float, float], value: float, weight: float, t: float) -> None:
    key = str(find_bucket(options, value))
    left = hist["buckets"].get(key, 0.0) - weight * _factor(hist, t)
    if left <= 0:
        hist["buckets"].pop(key, None)
    else:
        hist["buckets"][key] = left


def percentile(hist: dict[str, Any], options: tuple[float, float, float], p: float) -> float:
    """``histogram.Percentile``: the end of the first bucket where the cumulative weight
    reaches ``p`` of the total (the start of the last bucket has no end)."""
    weights = {int(k): w for k, w in hist["buckets"].items() if w > 0}
    total = sum(weights.values())
    if not weights or total < EPSILON:
        return 0.0
    threshold, partial = p * total, 0.0
    buckets = sorted(weights)
    bucket = buckets[-1]
    for b in buckets:
        partial += weights[b]
        if partial >= threshold:
            bucket = b
            break
    if bucket < num_buckets(options) - 1:
        return bucket_start(options, bucket + 1)
    return bucket_start(options, bucket)


# ---- the recommender loop ---------------------------------------------------------------------

def _key(vpa: dict[str, Any]) -> str:
    meta = vpa["metadata"]
    return f"{meta.get('namespace', 'default')}/{meta['name']}"


def sample_due(view: View, vpa: dict[str, Any]) -> float | None:
    state = view.stats.get("vpa", {}).get(_key(vpa))
    if state is None or state.get("uid") != vpa["metadata"].get("uid"):
        return view.now()
    return float(state["lastSample"]) + RECOMMENDER_INTERVAL


def target_pods(view: View, vpa: dict[str, Any]) -> list[dict[str, Any]]:
    ref = (vpa.get("spec") or {}).get("targetRef") or {}
    ns = vpa["metadata"].get("namespace", "default")
    target = view.get(str(ref.get("kind", "")), str(ref.get("name", "")), ns) \
        if ref.get("kind") in TARGET_KINDS else None
    if target is None:
        return []
    selector = selector_from_dict((target.get("spec") or {}).get("selector"))
    if selector is None:
        return []
    return [p for p in view.list("Pod", ns)
            if matches(selector, (p.get("metadata") or {}).get("labels") or {})
            and (p.get("status") or {}).get("phase") == "Running"]


def reconcile(view: View) -> None:
    states = view.stats.setdefault("vpa", {})
    vpas = view.list("VerticalPodAutoscaler")
    for gone in sorted(set(states) - {_key(v) for v in vpas}):
        del states[gone]
    usage = None
    for vpa in vpas:
        key, uid = _key(vpa), vpa["metadata"].get("uid")
        state = states.get(key)
        if state is None or state.get("uid") != uid:
            state = states[key] = {"uid": uid, "lastSample": view.now() - RECOMMENDER_INTERVAL,
                                   "containers": {}, "gpu": {}}
        if view.now() < float(state["lastSample"]) + RECOMMENDER_INTERVAL:
            continue
        state["lastSample"] = view.now()
        usage = usage or Usage(view)
        for pod in target_pods(view, vpa):
            _sample(state, usage, pod, view.now())
        _write(view, vpa, state)
        view.touch(vpa)


def _sample(state: dict[str, Any], usage: Usage, pod: dict[str, Any], now: float) -> None:
    requests = {c.get("name", ""): c for c in (pod.get("spec") or {}).get("containers") or []}
    for name, cpu_m, memory in usage.container_usage(pod):
        container = state["containers"].setdefault(name, {
            "cpu": new_histogram(), "memory": new_histogram(), "samples": 0, "first": now,
            "last": now, "windowEnd": None, "peak": 0})
        request = _cpu_request_cores(requests.get(name) or {})
        add_sample(container["cpu"], CPU_HISTOGRAM, cpu_m / 1000.0, max(request, MIN_SAMPLE_WEIGHT), now)
        container["samples"] += 1
        container["last"] = now
        _memory_sample(container, float(memory), now)
    gpu = usage.pod_metric(pod, "gpu_utilization")
    if gpu is not None:
        name = pod["metadata"]["name"]
        entry = state["gpu"].setdefault(name, {"util": 0.0, "memory": 0.0, "node": "",
                                               "devices": 0})
        entry["util"] = max(entry["util"], gpu)
        entry["memory"] = max(entry["memory"], usage.pod_metric(pod, "gpu_memory_used") or 0.0)
        entry["node"] = (pod.get("spec") or {}).get("nodeName", "")
        entry["devices"] = len(held_by(pod).device_ids)


def _cpu_request_cores(container: dict[str, Any]) -> float:
    from gpusched.objects.quantity import QuantityError, canonical
    resources = container.get("resources") or {}
    raw = (resources.get("requests") or {}).get("cpu", (resources.get("limits") or {}).get("cpu"))
    try:
        return canonical("cpu", raw) / 1000.0 if raw is not None else 0.0
    except (QuantityError, ValueError):
        return 0.0


def _memory_sample(container: dict[str, Any], value: float, now: float) -> None:
    """``ContainerState.AddMemorySample``: one peak per aggregation window."""
    end = container["windowEnd"]
    if end is not None and now < end:
        if container["peak"] and value > container["peak"]:
            subtract_sample(container["memory"], MEMORY_HISTOGRAM, container["peak"], 1.0, end)
            add_sample(container["memory"], MEMORY_HISTOGRAM, value, 1.0, end)
            container["peak"] = value
        return
    end = now if end is None else end
    end += (now - end) // MEMORY_WINDOW * MEMORY_WINDOW + MEMORY_WINDOW
    container["windowEnd"] = end
    container["peak"] = value
    add_sample(container["memory"], MEMORY_HISTOGRAM, value, 1.0, end)


def recommend(container: dict[str, Any], containers: int) -> dict[str, tuple[float, float, float]]:
    """{"cpu": (lower, target, upper) cores, "memory": (...) bytes} for one container."""
    days = (container["last"] - container["first"]) / 86400.0
    confidence = min(days, container["samples"] / (60 * 24))
    out = {}
    for resource, options, minimum in (("cpu", CPU_HISTOGRAM, POD_MIN_CPU_CORES / containers),
                                       ("memory", MEMORY_HISTOGRAM, POD_MIN_MEMORY / containers)):
        hist = container[resource]
        target = percentile(hist, options, TARGET) * (1 + SAFETY_MARGIN)
        lower = percentile(hist, options, LOWER) * (1 + SAFETY_MARGIN)
        upper = percentile(hist, options, UPPER) * (1 + SAFETY_MARGIN)
        if confidence > 0:
            upper *= (1 + 1.0 / confidence) ** 1.0
            lower *= (1 + 0.001 / confidence) ** -2.0
        else:
            upper = math.inf
            lower = 0.0
        out[resource] = (max(minimum, lower), max(minimum, target), max(minimum, upper))
    return out


def _cpu_text(cores: float) -> str:
    if math.isinf(cores):
        return "100G"
    return f"{int(math.ceil(round(cores * 1000, 6)))}m"


def _memory_text(value: float) -> str:
    """Bytes as the recommender's Quantity prints them (decimal SI: ``262144k``)."""
    from gpusched.cluster.usage import format_milli
    if math.isinf(value):
        return "100T"
    return format_milli(int(math.ceil(round(value, 3))) * 1000)


def _write(view: View, vpa: dict[str, Any], state: dict[str, Any]) -> None:
    containers = state["containers"]
    recommendations = []
    for name in sorted(containers):
        rec = recommend(containers[name], len(containers))
        entry = {"containerName": name}
        for field, index in (("lowerBound", 0), ("target", 1), ("upperBound", 2)):
            entry[field] = {"cpu": _cpu_text(rec["cpu"][index]),
                            "memory": _memory_text(rec["memory"][index])}
        entry["uncappedTarget"] = dict(entry["target"])
        recommendations.append(entry)
    status = copy.deepcopy(vpa.get("status") or {})
    old = {c.get("type"): c for c in status.get("conditions") or []}
    provided = bool(recommendations)
    cond = {"type": "RecommendationProvided", "status": "True" if provided else "False",
            "lastTransitionTime": view.timestamp()}
    previous = old.get("RecommendationProvided")
    if previous is not None and previous.get("status") == cond["status"]:
        cond["lastTransitionTime"] = previous.get("lastTransitionTime", cond["lastTransitionTime"])
    if not provided:
        cond.update(reason="NoPodsMatched", message="No pods match this VPA object")
    new_status: dict[str, Any] = {"conditions": [cond]}
    if provided:
        new_status["recommendation"] = {"containerRecommendations": recommendations}
    if vpa.get("status") != new_status:
        new = copy.deepcopy(vpa)
        new["status"] = new_status
        write.update_status(view, new)
