"""ResourceQuota (``plugin/pkg/admission/resourcequota/controller.go`` ``checkRequest``), last
in the chain as upstream requires (it charges only what every other plugin let through).

On a create of a namespaced object, for each quota of its namespace that matches it
(``admission.quota_evaluator``): a Pod must declare the cpu/memory keys the quota limits in every
container (``failed quota: q: must specify requests.cpu for: a,b; ...``), then
``used + requested <= hard`` on the keys the object charges (``exceeded quota: q, requested:
..., used: ..., limited: ...``). Subresources are not charged, as upstream.

Neighbours: ``admission.registry``; ``controllers.quota`` keeps ``status`` (hard, used).
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.admission.attributes import Attributes
from gpusched.cluster.admission.plugin import CREATE, Plugin
from gpusched.cluster.admission.quota_evaluator import (format_amount_for_key, hard_keys,
                                                        object_usage, quota_matches, quota_used,
                                                        resource_of, tracked_keys)
from gpusched.errors import ForbiddenError
from gpusched.objects.kinds import KINDS
from gpusched.objects.quantity import canonical

NAME = "ResourceQuota"
VALIDATION_SET = ("cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu",
                  "limits.memory")


def _validate(attrs: Attributes) -> None:
    info = KINDS.get(attrs.kind)
    if info is None or not info.namespaced or attrs.kind == "Event":
        return
    quotas = attrs.view.list("ResourceQuota", attrs.namespace)
    if not quotas:
        return
    plural = info.plural if not info.group else f"{info.plural}.{info.group}"
    res = attrs.pod if attrs.kind == "Pod" else None
    now = attrs.view.timestamp()
    for quota in quotas:
        if quota_matches(quota, attrs.obj, res):
            _check_one_quota(attrs, quota, plural, now)


def _check_one_quota(attrs: Attributes, quota: dict[str, Any], plural: str, now: str) -> None:
    """One matching quota: a Pod's missing constraints, then ``used + requested <= hard`` for
    the keys the object uses."""
    qname = quota["metadata"]["name"]
    hard_raw = (quota.get("spec") or {}).get("hard") or {}
    keys = hard_keys(quota)
    if attrs.kind == "Pod":
        missing = missing_constraints(attrs, tracked_keys("Pod", keys))
        if missing:
            raise ForbiddenError(plural, attrs.name, f"failed quota: {qname}: must specify {missing}")
    requested = object_usage(attrs.obj, keys, now, attrs.pod if attrs.kind == "Pod" else None)
    if not requested:
        return
    used = quota_used(attrs.view, quota)
    exceeded = [k for k in keys if k in requested
                and used.get(k, 0) + requested[k] > canonical(resource_of(k), hard_raw[k])]
    if exceeded:
        def pairs(values: dict[str, int]) -> str:
            return ",".join(f"{k}={format_amount_for_key(k, values.get(k, 0))}" for k in exceeded)
        hard = {k: canonical(resource_of(k), hard_raw[k]) for k in exceeded}
        raise ForbiddenError(plural, attrs.name, f"exceeded quota: {qname}, requested: "
                             f"{pairs(requested)}, used: {pairs(used)}, limited: {pairs(hard)}")


def missing_constraints(attrs: Attributes, required: list[str]) -> str:
    """``Constraints``: the cpu/memory keys some container or init container does not declare,
    ``requests.cpu for: a,b; limits.memory for: a`` (keys and names sorted), or ''."""
    needed = [k for k in required if k in VALIDATION_SET]
    missing: dict[str, set[str]] = {}
    for _, name, requests, limits in attrs.pod.containers:
        declared = set()
        for res in ("cpu", "memory"):
            if res in requests:
                declared |= {res, f"requests.{res}"}
            if res in limits:
                declared.add(f"limits.{res}")
        for key in needed:
            if key not in declared:
                missing.setdefault(key, set()).add(name)
    return "; ".join(f"{k} for: {','.join(sorted(v))}" for k, v in sorted(missing.items()))


PLUGIN = Plugin(NAME, frozenset({CREATE}), validate=_validate)
