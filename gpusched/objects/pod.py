"""``pod_info``: the typed, canonical-unit view of a Pod dict that the scheduler reads.

Effective requests are computed as kube-scheduler's ``resource.PodRequests`` does:

1. each container's requests, where a resource given only as a limit counts as its request
   (API defaulting copies it; ``container_requests``);
2. summed over ``spec.containers``;
3. init containers run one at a time, so the pod needs ``max(sum, each init container)``;
   restartable ("sidecar", ``restartPolicy: Always``) init containers keep running, so they add
   to the sum and to every later init container;
4. plus ``spec.overhead``.

Worked example: containers {cpu 1, cpu 500m}, init container {cpu 2}, overhead {cpu 100m}:
max(1500m, 2000m) + 100m = 2100m.

The pod count (``pods: 1``) is *not* included; the scheduler adds it itself. Zero amounts are
dropped.

GPU shares (gpusched's fractional GPUs, as in the Alibaba trace): the annotation
``gpusched.io/gpu-milli: "470"`` or, alternatively, the extended resource
``gpusched.io/gpu-milli: 470`` in a container's limits/requests (the annotation wins when both are
given). A value 1..999 sets ``PodInfo.gpu_milli`` and removes ``nvidia.com/gpu`` (and the
``gpusched.io/gpu-milli`` resource) from the requests, since the share is placed by the devices
layer, not counted as a node resource. 1000 means one whole GPU: ``nvidia.com/gpu: 1``.
``gpusched.io/gpu-model: "V100M16|V100M32"`` restricts the GPU models (duplicates dropped, order
kept).

Bad input that validation would have refused (a bad quantity, a bad share) raises
``InvalidError`` with the field path; everything else is read leniently, since objects reaching
here have been validated. ``pod_gpu_share`` (and ``requested_gpu_share``, 0 instead of the
error) is the share by the same rule, for readers that need nothing else of the pod.

The stored dict is read through the generated TypedDict views of ``objects.typed_views`` (a
``cast``, no copy), so the type checker knows each field read.

Neighbours: types (PodInfo ...), typed_views, quantity, selectors (label selectors); used by the scheduler
snapshot and runner, cluster admission and controllers, trace loaders.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Mapping, TypeVar, cast

from gpusched.errors import FieldError, InvalidError
from gpusched.objects.pod_claims import pod_claims
from gpusched.objects.quantity import QuantityError, canonical
from gpusched.objects.selectors import selector_from_dict, term_from_dict
from gpusched.objects.types import (
    ANN_GPU_MILLI, ANN_GPU_MODEL, ANN_START_TIME, RESOURCE_GPU_MILLI, NodeSelectorTerm, PodAffinityTerm,
    PodInfo, PreferredTerm, Toleration, TopologySpreadConstraint, WeightedPodAffinityTerm,
)

if TYPE_CHECKING:     # TypedDicts for the type checker alone (casts name them as strings)
    from gpusched.objects import typed_views as k8s

GPU = "nvidia.com/gpu"
# Read-only stand-ins for an absent part of a body (never written to).
_NO_META: k8s.ObjectMeta = {}
_NO_SPEC: k8s.PodSpec = {}
_NO_STATUS: k8s.PodStatus = {}
_NO_AFFINITY: k8s.Affinity = {}
_NO_STRINGS: Mapping[str, str] = {}
_T = TypeVar("_T")


class _BadQuantity(Exception):
    def __init__(self, path: str, value: Any, detail: str) -> None:
        super().__init__(path)
        self.path, self.value, self.detail = path, value, detail


@lru_cache(maxsize=8192)
def _canonical_text(resource: str, text: str) -> int:
    # Pure function of its arguments: caching it cannot change a result, only skip re-parsing.
    return canonical(resource, text)


def _amount(resource: str, value: k8s.Quantity, path: str) -> int:
    try:
        if isinstance(value, str):
            return _canonical_text(resource, value)
        if type(value) is int:
            return value * 1000 if resource == "cpu" else value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return canonical(resource, value)
        raise QuantityError("quantities must match the regular expression "
                            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    except QuantityError as exc:
        raise _BadQuantity(f"{path}[{resource}]", value, str(exc)) from None


def _resource_list(raw: Mapping[str, k8s.Quantity] | None, path: str) -> dict[str, int]:
    if not isinstance(raw, dict):
        return {}
    return {str(name): _amount(str(name), value, path) for name, value in raw.items()}


def _container_requests(container: k8s.Container, path: str) -> dict[str, int]:
    if not isinstance(container, dict):
        return {}
    resources = container.get("resources")
    if not isinstance(resources, dict):
        return {}
    requests = _resource_list(resources.get("requests"), f"{path}.resources.requests")
    limits = resources.get("limits")
    if isinstance(limits, dict):
        for name, value in limits.items():
            if name not in requests:
                requests[str(name)] = _amount(str(name), value, f"{path}.resources.limits")
    return requests


def _list(value: list[_T] | None) -> list[_T]:
    return value if isinstance(value, list) else []


def _add(into: dict[str, int], other: Mapping[str, int]) -> None:
    for name, amount in other.items():
        into[name] = into.get(name, 0) + amount


def _max(into: dict[str, int], other: Mapping[str, int]) -> None:
    for name, amount in other.items():
        if amount > into.get(name, 0):
            into[name] = amount


def container_requests(container: Mapping[str, Any]) -> dict[str, int]:
    """One container's requests in canonical units; a limit-only resource counts as requested."""
    body = cast("k8s.Container", container)
    return _checked("Container", str(body.get("name", "")) if isinstance(body, dict) else "",
                    lambda: _container_requests(body, "resources"))


def _container_limits(container: k8s.Container, path: str) -> dict[str, int]:
    resources = container.get("resources") if isinstance(container, dict) else None
    return _resource_list(resources.get("limits"), f"{path}.resources.limits") \
        if isinstance(resources, dict) else {}


def _containers_total(spec: k8s.PodSpec,
                      per_container: Callable[[k8s.Container, str], dict[str, int]]) -> dict[str, int]:
    """kube-scheduler's rule over ``per_container(container, path)`` amounts: the sum over
    containers and restartable (sidecar) init containers, then the max with each regular init
    container plus the sidecars started before it. Overhead is left to the caller."""
    total: dict[str, int] = {}
    for i, container in enumerate(_list(spec.get("containers"))):
        _add(total, per_container(container, f"spec.containers[{i}]"))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for i, container in enumerate(_list(spec.get("initContainers"))):
        amounts = per_container(container, f"spec.initContainers[{i}]")
        if isinstance(container, dict) and container.get("restartPolicy") == "Always":
            _add(total, amounts)
            _add(sidecars, amounts)
            amounts = dict(sidecars)
        else:
            _add(amounts, sidecars)
        _max(init_peak, amounts)
    _max(total, init_peak)
    return total


def _pod_totals(spec: k8s.PodSpec, limits: bool, overhead: bool, keep_zero: bool) -> dict[str, int]:
    """``resourcehelper.PodRequests`` / ``PodLimits`` (pkg/api/v1/resource/helpers.go): the
    containers/sidecars/init rule, then ``spec.overhead`` (added to every request; to a limit
    only where the pod has that limit). ``keep_zero`` keeps zero amounts, as those helpers do."""
    total = _containers_total(spec, _container_limits if limits else _container_requests)
    if overhead and spec.get("overhead"):
        for name, amount in _resource_list(spec.get("overhead"), "spec.overhead").items():
            if not limits or name in total:
                total[name] = total.get(name, 0) + amount
    return total if keep_zero else {name: amount for name, amount in total.items() if amount}


def _pod_requests(spec: k8s.PodSpec) -> dict[str, int]:
    return _pod_totals(spec, limits=False, overhead=True, keep_zero=False)


def _checked(kind: str, name: str, compute: Callable[[], dict[str, int]]) -> dict[str, int]:
    try:
        return compute()
    except _BadQuantity as bad:
        raise InvalidError(kind, name, [FieldError(bad.path, "Invalid value", str(bad.value), bad.detail)]) from None


def _name(pod: Mapping[str, Any]) -> str:
    meta = cast("k8s.Pod", pod).get("metadata")
    return str(meta.get("name", "")) if isinstance(meta, dict) else ""


def _spec(pod: Mapping[str, Any]) -> k8s.PodSpec:
    return cast("k8s.Pod", pod).get("spec") or _NO_SPEC


def pod_resource_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """Effective pod requests (module doc), as quota and LimitRange (type Pod) count them."""
    return _checked("Pod", _name(pod), lambda: _pod_requests(_spec(pod)))


def pod_resource_limits(pod: Mapping[str, Any]) -> dict[str, int]:
    """Effective pod limits: the same rule over limits only; overhead adds where a limit exists."""
    return pod_resource_totals(pod, limits=True)


def pod_resource_totals(pod: Mapping[str, Any], limits: bool = False, overhead: bool = True,
                        keep_zero: bool = False) -> dict[str, int]:
    """The pod's requests (or ``limits``) by the containers/sidecars/init rule.

    - quota (``pkg/quota/v1/evaluator/core/pods.go`` ``PodUsageFunc``): ``overhead=True,
      keep_zero=True`` (a zero request is still a request);
    - LimitRanger type Pod (``plugin/pkg/admission/limitranger/limitranger.go`` ``podRequests``,
      ``podLimits``): ``overhead=False, keep_zero=True``;
    - the scheduler: ``overhead=True, keep_zero=False`` (``pod_resource_requests``).
    """
    return _checked("Pod", _name(pod), lambda: _pod_totals(_spec(pod), limits, overhead, keep_zero))


# ----------------------------------------------------------------------------------------------
# Scheduling constraints


def _tolerations(raw: list[k8s.Toleration] | None) -> tuple[Toleration, ...]:
    out = []
    for t in raw or ():
        seconds = t.get("tolerationSeconds")
        out.append(Toleration(
            key=str(t.get("key") or ""),
            operator=str(t.get("operator") or "Equal"),
            value=str(t.get("value") or ""),
            effect=str(t.get("effect") or ""),
            toleration_seconds=int(seconds) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
            else None,
        ))
    return tuple(out)


def _pod_affinity_term(raw: k8s.PodAffinityTerm) -> PodAffinityTerm:
    return PodAffinityTerm(
        label_selector=selector_from_dict(raw.get("labelSelector")),
        topology_key=str(raw.get("topologyKey") or ""),
        namespaces=tuple(str(ns) for ns in raw.get("namespaces") or ()),
    )


def _pod_affinity(raw: k8s.PodAffinity | k8s.PodAntiAffinity | None
                  ) -> tuple[tuple[PodAffinityTerm, ...], tuple[WeightedPodAffinityTerm, ...]]:
    if not isinstance(raw, dict):
        return (), ()
    required = tuple(_pod_affinity_term(t) for t in raw.get("requiredDuringSchedulingIgnoredDuringExecution") or ())
    preferred = tuple(
        WeightedPodAffinityTerm(int(t.get("weight") or 0), _pod_affinity_term(t.get("podAffinityTerm") or {}))
        for t in raw.get("preferredDuringSchedulingIgnoredDuringExecution") or ())
    return required, preferred


def _node_affinity(raw: k8s.NodeAffinity | None
                   ) -> tuple[tuple[NodeSelectorTerm, ...] | None, tuple[PreferredTerm, ...]]:
    if not isinstance(raw, dict):
        return None, ()
    required_raw = raw.get("requiredDuringSchedulingIgnoredDuringExecution")
    required = None
    if isinstance(required_raw, dict):
        required = tuple(term_from_dict(t) for t in required_raw.get("nodeSelectorTerms") or ())
    preferred = tuple(
        PreferredTerm(int(p.get("weight") or 0), term_from_dict(p.get("preference") or {}))
        for p in raw.get("preferredDuringSchedulingIgnoredDuringExecution") or ())
    return required, preferred


def _topology_spread(raw: list[k8s.TopologySpreadConstraint] | None
                     ) -> tuple[TopologySpreadConstraint, ...]:
    out = []
    for c in raw or ():
        min_domains = c.get("minDomains")
        out.append(TopologySpreadConstraint(
            max_skew=int(c.get("maxSkew") or 0),
            topology_key=str(c.get("topologyKey") or ""),
            when_unsatisfiable=str(c.get("whenUnsatisfiable") or "DoNotSchedule"),
            label_selector=selector_from_dict(c.get("labelSelector")),
            min_domains=int(min_domains) if isinstance(min_domains, int) else None,
        ))
    return tuple(out)


def _gpu_models(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(part.strip() for part in text.split("|") if part.strip()))


def _gpu_milli(name: str, annotations: Mapping[str, str], requests: dict[str, int]) -> int:
    """Apply the gpusched GPU share to ``requests`` (in place); return the share (0 when none)."""
    from_resource = requests.pop(RESOURCE_GPU_MILLI, None)
    text = annotations.get(ANN_GPU_MILLI)
    if text is not None:
        path, raw = f"metadata.annotations[{ANN_GPU_MILLI}]", str(text)
        try:
            milli = int(raw.strip())
        except ValueError:
            milli = -1
    elif from_resource is not None:
        path, raw, milli = f"spec.containers[*].resources.limits[{RESOURCE_GPU_MILLI}]", str(from_resource), from_resource
    else:
        return 0
    if not 1 <= milli <= 1000:
        raise InvalidError("Pod", name, [FieldError(path, "Invalid value", raw, "must be an integer between 1 and 1000")])
    if milli == 1000:
        requests[GPU] = max(requests.get(GPU, 0), 1)
        return 0
    requests.pop(GPU, None)
    return milli


def _owner(meta: k8s.ObjectMeta) -> tuple[str, str]:
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            return str(ref.get("kind") or ""), str(ref.get("name") or "")
    return "", ""


def _share_request(container: k8s.Container, path: str) -> dict[str, int]:
    """``_container_requests`` narrowed to the share resource (a request, else a limit)."""
    resources = container.get("resources") if isinstance(container, dict) else None
    for part in ("requests", "limits"):
        amounts = resources.get(part) if isinstance(resources, dict) else None
        if isinstance(amounts, dict) and RESOURCE_GPU_MILLI in amounts:
            return {RESOURCE_GPU_MILLI: _amount(RESOURCE_GPU_MILLI, amounts[RESOURCE_GPU_MILLI],
                                                f"{path}.resources.{part}")}
    return {}


def pod_gpu_share(pod: Mapping[str, Any]) -> int:
    """``pod_info(pod).gpu_milli`` without the rest of ``pod_info``: the pod's fractional share
    (1..999), 0 for none or a whole GPU (1000). The same rule (the annotation wins, else the
    extended resource summed by the containers/init/overhead rule) and the same ``InvalidError``,
    read for one resource only, so a reader that needs only the share does not parse the pod.

    >>> pod_gpu_share({"metadata": {"annotations": {"gpusched.io/gpu-milli": "470"}}})
    470
    """
    spec, name = _spec(pod), _name(pod)

    def share_requests() -> dict[str, int]:
        total = _containers_total(spec, _share_request)
        overhead = _resource_list(spec.get("overhead"), "spec.overhead").get(RESOURCE_GPU_MILLI)
        if overhead:
            total[RESOURCE_GPU_MILLI] = total.get(RESOURCE_GPU_MILLI, 0) + overhead
        return {resource: amount for resource, amount in total.items() if amount}

    meta = cast("k8s.Pod", pod).get("metadata") or _NO_META
    return _gpu_milli(name, meta.get("annotations") or _NO_STRINGS, _checked("Pod", name, share_requests))


def requested_gpu_share(pod: Mapping[str, Any]) -> int:
    """:func:`pod_gpu_share` for readers that must not fail on a stored pod (``describe``,
    ``top``, ``/metrics``): 0 for a share validation would refuse."""
    try:
        return pod_gpu_share(pod)
    except InvalidError:
        return 0


def annotation_seconds(pod: Mapping[str, Any], key: str) -> float | None:
    """A virtual-clock time the cluster wrote on ``pod`` (``gpusched.io/start-time``,
    ``gpusched.io/restart-at``); None when absent or unreadable (only a hand-edited state file
    holds such a value: it makes that pod's time unknown, never fails a pass)."""
    annotations = (cast("k8s.Pod", pod).get("metadata") or _NO_META).get("annotations") or _NO_STRINGS
    text = annotations.get(key) if isinstance(annotations, Mapping) else None
    try:
        value = float(text) if text is not None else None
    except (TypeError, ValueError):
        return None
    return value if value is not None and math.isfinite(value) else None


def _start_time(annotations: Mapping[str, str], status: k8s.PodStatus) -> float | None:
    if annotations.get(ANN_START_TIME) is not None:
        return annotation_seconds({"metadata": {"annotations": annotations}}, ANN_START_TIME)
    value: object = status.get("startTime")    # an RFC 3339 string; a trace loader may hand a number
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _disruption_reason(status: k8s.PodStatus) -> str:
    for cond in status.get("conditions") or ():
        if isinstance(cond, dict) and cond.get("type") == "DisruptionTarget" and cond.get("status") == "True":
            return str(cond.get("reason") or "")
    return ""


def _host_ports(spec: k8s.PodSpec) -> tuple[tuple[str, str, int], ...]:
    """The (hostIP, protocol, hostPort) of the containers' ports with a hostPort > 0 (upstream
    NodePorts ``getContainerPorts``: regular containers only; hostIP defaults to 0.0.0.0 and
    protocol to TCP)."""
    found = []
    for container in spec.get("containers") or ():
        for port in (container.get("ports") or ()) if isinstance(container, dict) else ():
            host_port = port.get("hostPort") if isinstance(port, dict) else None
            if isinstance(host_port, int) and not isinstance(host_port, bool) and host_port > 0:
                found.append((str(port.get("hostIP") or "0.0.0.0"), str(port.get("protocol") or "TCP"),
                              host_port))
    return tuple(found)


def _pvc_names(spec: k8s.PodSpec) -> tuple[str, ...]:
    """The claim names of the pod's persistentVolumeClaim volumes, in order."""
    return tuple(str(claim.get("claimName") or "")
                 for v in spec.get("volumes") or () if isinstance(v, dict)
                 for claim in (v.get("persistentVolumeClaim"),) if isinstance(claim, dict))


def _text(value: str | None, default: str = "") -> str:
    """A string field's value, ``default`` when unset or empty."""
    return str(value or default)


def pod_info(pod: Mapping[str, Any], seq: int = 0) -> PodInfo:
    """Build the scheduler's view of a (validated) Pod dict; ``seq`` is its creation order."""
    body = cast("k8s.Pod", pod)
    meta = body.get("metadata") or _NO_META
    spec = body.get("spec") or _NO_SPEC
    status = body.get("status") or _NO_STATUS
    annotations = meta.get("annotations") or _NO_STRINGS
    name = _text(meta.get("name"))
    requests = pod_resource_requests(pod)
    gpu_milli = _gpu_milli(name, annotations, requests)
    affinity = spec.get("affinity") or _NO_AFFINITY
    required_terms, preferred_terms = _node_affinity(affinity.get("nodeAffinity"))
    pod_affinity, preferred_pod_affinity = _pod_affinity(affinity.get("podAffinity"))
    pod_anti_affinity, preferred_pod_anti_affinity = _pod_affinity(affinity.get("podAntiAffinity"))
    priority = spec.get("priority")
    return PodInfo(
        **_read_again(meta, status, annotations, seq),
        requests=requests,
        priority=int(priority) if isinstance(priority, int) else 0,
        preemption_policy=_text(spec.get("preemptionPolicy"), "PreemptLowerPriority"),
        priority_class=_text(spec.get("priorityClassName")),
        scheduler_name=_text(spec.get("schedulerName"), "default-scheduler"),
        node_name=_text(spec.get("nodeName")),
        node_selector=dict(spec.get("nodeSelector") or _NO_STRINGS),
        required_terms=required_terms,
        preferred_terms=preferred_terms,
        tolerations=_tolerations(spec.get("tolerations")),
        topology_spread=_topology_spread(spec.get("topologySpreadConstraints")),
        pod_affinity=pod_affinity,
        pod_anti_affinity=pod_anti_affinity,
        preferred_pod_affinity=preferred_pod_affinity,
        preferred_pod_anti_affinity=preferred_pod_anti_affinity,
        pvc_names=_pvc_names(spec),
        gpu_milli=gpu_milli,
        host_ports=_host_ports(spec),
        resource_claims=pod_claims(body),
    )


# PodInfo fields read from the spec (and the gpu-milli annotation): pod_info_like keeps them.
SPEC_FIELDS = frozenset({
    "requests", "priority", "preemption_policy", "priority_class", "scheduler_name", "node_name",
    "node_selector", "required_terms", "preferred_terms", "tolerations", "topology_spread", "pod_affinity",
    "pod_anti_affinity", "preferred_pod_affinity", "preferred_pod_anti_affinity", "pvc_names",
    "gpu_milli", "host_ports"})


def pod_info_like(prior: PodInfo, pod: Mapping[str, Any], seq: int = 0) -> PodInfo:
    """``pod_info(pod, seq)`` for a pod whose spec and ``gpusched.io/gpu-milli`` annotation are
    those ``prior`` was built from (the caller checks): the spec's parts (requests, affinity,
    tolerations: ``SPEC_FIELDS``, the costly ones) are kept, metadata and status read again."""
    body = cast("k8s.Pod", pod)
    meta = body.get("metadata") or _NO_META
    return replace(prior, **_read_again(meta, body.get("status") or _NO_STATUS,
                                        meta.get("annotations") or _NO_STRINGS, seq),
                   resource_claims=pod_claims(body))


def _read_again(meta: k8s.ObjectMeta, status: k8s.PodStatus, annotations: Mapping[str, str],
                seq: int) -> dict[str, Any]:
    """The PodInfo fields read from metadata and status (every field but ``SPEC_FIELDS``): what
    ``pod_info`` reads and ``pod_info_like`` reads again."""
    owner_kind, owner_name = _owner(meta)
    model_text = annotations.get(ANN_GPU_MODEL)
    return {
        "namespace": _text(meta.get("namespace"), "default"),
        "name": _text(meta.get("name")),
        "uid": _text(meta.get("uid")),
        "nominated_node": _text(status.get("nominatedNodeName")),
        "labels": dict(meta.get("labels") or _NO_STRINGS),
        "gpu_models": _gpu_models(str(model_text)) if model_text else (),
        "creation_seq": seq,
        "start_time": _start_time(annotations, status),
        "owner_kind": owner_kind,
        "owner_name": owner_name,
        "terminating": bool(meta.get("deletionTimestamp")),
        "disruption_reason": _disruption_reason(status),
    }
