"""Validation of the node kinds: Node (taints, podCIDR(s), capacity/allocatable quantities), NodePool
(``gpusched.io/v1alpha1``, gpusched's compact node definition, with its autoscaling bounds) and
ClusterPolicy (``nvidia.com/v1``, the GPU Operator's CRD: the fields gpusched acts on, with the
CRD's enums).

Neighbours: ``objects.validation`` registers these validators; uses ``fieldcheck``,
``podspec`` (taint effects), ``validation_affinity`` (labels).
"""

from __future__ import annotations

from typing import Any

import ipaddress

from gpusched.objects import limits
from gpusched.objects.fieldcheck import Errors, _spec
from gpusched.objects.names import (dns1123_subdomain_errors, label_value_errors,
                                    qualified_name_errors)
from gpusched.objects.podspec import TAINT_EFFECTS
from gpusched.objects.validation_affinity import validate_labels
from gpusched.objects.digits import is_digits

# ----------------------------------------------------------------------------------------------
# Nodes


def _taints(items: list[Any], path: str, e: Errors) -> None:
    seen = set()
    for p, taint in e.objects(items, path):
        key = e.string(taint, "key", f"{p}.key") or ""
        for msg in qualified_name_errors(key):
            e.invalid(f"{p}.key", key, msg)
        value = e.string(taint, "value", f"{p}.value") or ""
        for msg in label_value_errors(value):
            e.invalid(f"{p}.value", value, msg)
        effect = taint.get("effect")
        if effect is None or effect == "":
            e.required(f"{p}.effect")
        elif effect not in TAINT_EFFECTS:
            e.unsupported(f"{p}.effect", effect, TAINT_EFFECTS)
        if (key, effect) in seen and isinstance(effect, str):
            e.duplicate(p, taint)
        seen.add((key, effect) if isinstance(effect, str) else (key, None))


def _node(obj: dict[str, Any], e: Errors) -> None:
    spec = _spec(obj, e)
    _taints(e.items_of(spec, "taints", "spec.taints") or [], "spec.taints", e)
    e.boolean(spec, "unschedulable", "spec.unschedulable")
    _pod_cidrs(spec, e)
    status = e.mapping(obj, "status", "status") or {}
    for field in ("capacity", "allocatable"):
        for name, value in sorted((e.mapping(status, field, f"status.{field}") or {}).items()):
            e.quantity(value, f"status.{field}[{name}]")


def _pod_cidrs(spec: dict[str, Any], e: Errors) -> None:
    """``ValidateNode``'s ``spec.podCIDRs``, each a CIDR (``IsValidCIDRForLegacyField``). The
    v1 ``podCIDR`` is ``podCIDRs[0]`` of the internal object when ``podCIDRs`` is empty
    (``Convert_v1_NodeSpec_To_core_NodeSpec``), so it is reported as ``spec.podCIDRs[0]``."""
    cidrs = e.items_of(spec, "podCIDRs", "spec.podCIDRs") or []
    single = e.string(spec, "podCIDR", "spec.podCIDR")
    if not cidrs and single:
        cidrs = [single]
    for i, cidr in enumerate(cidrs):
        if isinstance(cidr, str) and not _is_cidr(cidr):
            e.invalid(f"spec.podCIDRs[{i}]", cidr, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")


def _is_cidr(text: str) -> bool:
    """``netutils.ParseCIDRSloppy`` accepts it: an address, ``/``, a prefix length in range (host
    bits may be set; IPv4 octets may have leading zeros, which Python's parser refuses)."""
    address, slash, length = text.partition("/")
    if not slash or not is_digits(length):
        return False
    if "." in address and ":" not in address:
        octets = address.split(".")
        if len(octets) == 4 and all(is_digits(o) for o in octets):
            address = ".".join(str(int(o)) for o in octets)
    try:
        ipaddress.ip_interface(f"{address}/{int(length)}")
    except ValueError:
        return False
    return True


def _node_pool(obj: dict[str, Any], e: Errors) -> None:
    spec = _spec(obj, e)
    _node_pool_size(spec, e)
    _node_pool_names(spec, e)
    gpu = e.mapping(spec, "gpu", "spec.gpu")
    if gpu is not None:
        model = e.string(gpu, "model", "spec.gpu.model")
        count = e.integer(gpu, "count", "spec.gpu.count", minimum=0, maximum=limits.MAX_GPUS_PER_NODE)
        defined = e.mapping(gpu, "define", "spec.gpu.define")
        if not model and (count or 0) > 0 and "model" not in gpu and defined is None:
            e.required("spec.gpu.model")
        clique = e.string(gpu, "clique", "spec.gpu.clique")
        for msg in label_value_errors(clique or ""):
            e.invalid("spec.gpu.clique", clique, msg)
    for field in ("cpu", "memory", "pods", "ephemeral-storage"):
        if spec.get(field) is not None:
            e.quantity(spec[field], f"spec.{field}")
    validate_labels(e.string_map(spec, "labels", "spec.labels"), "spec.labels", e)
    _taints(e.items_of(spec, "taints", "spec.taints") or [], "spec.taints", e)
    for field in ("migLayout", "migConfig"):
        e.string(spec, field, f"spec.{field}")


def _node_pool_size(spec: dict[str, Any], e: Errors) -> None:
    """Autoscaling bounds, then exactly one of count / names (names never when autoscaled)."""
    has_count, has_names = spec.get("count") is not None, spec.get("names") is not None
    if _node_pool_autoscaling(spec, e):
        if has_names:
            e.forbidden("spec.names", "an autoscaled pool (spec.minNodes/maxNodes) names its "
                                      "nodes <namePrefix>-N; give spec.count (the initial size)")
    elif has_count == has_names:
        e.required("spec.count", "exactly one of spec.count or spec.names must be set") if not has_count else \
            e.invalid("spec.names", spec["names"], "may not be set together with spec.count")
    e.integer(spec, "count", "spec.count", minimum=0, maximum=limits.MAX_NODES_PER_POOL)


def _node_pool_names(spec: dict[str, Any], e: Errors) -> None:
    """``spec.names``: at most MAX_NODES_PER_POOL distinct DNS subdomains."""
    names = spec.get("names")
    if isinstance(names, list) and len(names) > limits.MAX_NODES_PER_POOL:
        e.too_many("spec.names", len(names), limits.MAX_NODES_PER_POOL)
        names = []
    seen: set[str] = set()
    for i, name in enumerate((e.items_of(spec, "names", "spec.names") or []) if names else []):
        if not isinstance(name, str):
            e.invalid(f"spec.names[{i}]", name, "must be a string")
            continue
        e.distinct_name(f"spec.names[{i}]", name, seen, dns1123_subdomain_errors)


MAX_POOL_NODES = 1000     # devices.nodepool.MAX_POOL_NODES: the bound of maxNodes


def _node_pool_autoscaling(spec: dict[str, Any], e: Errors) -> bool:
    """minNodes/maxNodes (Cluster Autoscaler's node group min/max size): both or neither,
    0 <= minNodes <= maxNodes <= MAX_POOL_NODES, count (initial size) within them, a
    provisioningDelay that parses. True when the pool is autoscaled."""
    if spec.get("minNodes") is None and spec.get("maxNodes") is None:
        return False
    low, high = _pool_bound(spec, "minNodes", e), _pool_bound(spec, "maxNodes", e)
    if isinstance(low, int) and isinstance(high, int) and 0 <= low and low > high:
        e.invalid("spec.minNodes", low, f"must be less than or equal to spec.maxNodes ({high})")
        return True
    count = spec.get("count")
    if (isinstance(count, int) and not isinstance(count, bool) and isinstance(low, int)
            and isinstance(high, int) and not low <= count <= high):
        e.invalid("spec.count", count, f"the initial size must be between spec.minNodes ({low}) "
                                       f"and spec.maxNodes ({high})")
    _provisioning_delay(spec.get("provisioningDelay"), e)
    return True


def _pool_bound(spec: dict[str, Any], field: str, e: Errors) -> int | None:
    """``minNodes`` / ``maxNodes``: required with the other, an integer in [0, MAX_POOL_NODES]."""
    if spec.get(field) is None:
        e.required(f"spec.{field}", "spec.minNodes and spec.maxNodes are set together")
        return None
    value = e.integer(spec, field, f"spec.{field}", minimum=0)
    if value is not None and value > MAX_POOL_NODES:
        e.invalid(f"spec.{field}", value, f"must be less than or equal to {MAX_POOL_NODES}")
    return value


def _provisioning_delay(delay: Any, e: Errors) -> None:
    """``provisioningDelay``: a duration of at most 24h."""
    if delay is None:
        return
    from gpusched.errors import GpuschedError
    from gpusched.objects.duration import parse_duration
    try:
        if parse_duration(delay) > 86400:
            e.invalid("spec.provisioningDelay", delay, "must be at most 24h")
    except GpuschedError:
        e.invalid("spec.provisioningDelay", delay, 'must be a duration such as "3m" or "90s"')


# ----------------------------------------------------------------------------------------------
# ClusterPolicy (nvidia.com/v1, the GPU Operator's CRD; NVIDIA/gpu-operator
# api/nvidia/v1/clusterpolicy_types.go): the fields gpusched acts on, with the CRD's enums.

_POLICY_SECTIONS = ("driver", "toolkit", "devicePlugin", "dcgmExporter", "dcgm", "gfd",
                    "migManager", "validator", "nodeStatusExporter")


def _cluster_policy(obj: dict[str, Any], e: Errors) -> None:
    spec = _spec(obj, e)
    for section in _POLICY_SECTIONS:
        body = e.mapping(spec, section, f"spec.{section}")
        if body is not None:
            e.boolean(body, "enabled", f"spec.{section}.enabled")
            for field in ("repository", "image", "version"):
                e.string(body, field, f"spec.{section}.{field}")
    mig = e.mapping(spec, "mig", "spec.mig")
    if mig is not None:
        strategy = e.string(mig, "strategy", "spec.mig.strategy")
        if strategy is not None and strategy not in ("none", "single", "mixed"):
            e.unsupported("spec.mig.strategy", strategy, ["none", "single", "mixed"])
    for section in ("devicePlugin", "migManager"):
        config = e.mapping(spec.get(section) or {}, "config", f"spec.{section}.config") \
            if isinstance(spec.get(section), dict) else None
        if config is not None:
            e.string(config, "name", f"spec.{section}.config.name")
            e.string(config, "default", f"spec.{section}.config.default")
