"""ReplicaSet controller: keep ``spec.replicas`` active pods matching the selector.

Active = not Succeeded/Failed and not being deleted (``controller.FilterActivePods``). Missing
pods are created as ``<rs>-<5 chars>``. Surplus pods are chosen as upstream's ``getPodsToDelete``
does (pkg/controller/replicaset/replica_set.go), sorting by ``ActivePodsWithRanks``
(pkg/controller/controller_utils.go), first rule that differs wins:

1. unassigned before assigned; 2. Pending < Unknown < Running; 3. not ready before ready;
4. lower ``controller.kubernetes.io/pod-deletion-cost`` first; 5. more active pods of the same
Deployment (its ReplicaSets: "related pods") on the pod's node first; 6. ready for less time
first; 7. more container restarts first; 8. created later first. Rules 6 and 8 compare
``floor(log2(age in ns))`` buckets (LogarithmicScaleDown, on by default) and break ties by uid.

Status: replicas, fullyLabeledReplicas, readyReplicas, availableReplicas, observedGeneration
(zero counters other than ``replicas`` omitted, as the API omits them).

Neighbours: created by ``controllers.workloads.deployment``; uses ``controllers.common``.
"""

from __future__ import annotations

from typing import Any

import functools
import math

from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.controllers.base import WorkQueue, controller, itself
from gpusched.cluster.controllers.common import (controller_of, create_from_template, delete_pod,
                                                 is_active, is_ready, labels_of, owned_pods,
                                                 selector_matches, set_status)
from gpusched.cluster.apiserver.store import EPOCH
from gpusched.cluster.apiserver.view import View

COMPONENT = "replicaset-controller"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}


# The informers (``replica_set.go`` NewBaseController): ReplicaSets, and pods enqueue their
# controlling ReplicaSet (addPod/updatePod/deletePod).
QUEUE = WorkQueue("ReplicaSet", (itself("ReplicaSet"), controller("Pod", "ReplicaSet")))


def reconcile(view: View, changes: Changes | None = None) -> None:
    """Every ReplicaSet, or (``changes``) those its informers enqueue (``QUEUE``)."""
    for rs in QUEUE.objects(view, changes):
        reconcile_one(view, rs)


def reconcile_one(view: View, rs: dict[str, Any]) -> None:
    """``syncReplicaSet``: ``manageReplicas``, then the status (``calculateStatus``)."""
    spec = rs.get("spec") or {}
    pods = [p for p in owned_pods(view, rs)
            if is_active(p) and selector_matches(spec.get("selector"), labels_of(p))]
    _manage_replicas(view, rs, pods)
    rs = view.get("ReplicaSet", rs["metadata"]["name"], rs["metadata"]["namespace"]) or rs
    set_status(view, rs, _calculate_status(view, rs, labels_of(spec.get("template") or {})))


def _manage_replicas(view: View, rs: dict[str, Any], pods: list[dict[str, Any]]) -> None:
    """``manageReplicas``: create the missing pods, or delete the surplus (``getPodsToDelete``)."""
    spec = rs.get("spec") or {}
    want = int(spec.get("replicas", 1))
    name = rs["metadata"]["name"]
    for _ in range(want - len(pods)):
        create_from_template(view, rs, spec.get("template") or {},
                             f"{name}-{view.random_suffix()}", COMPONENT)
    if len(pods) > want:
        for pod in pods_to_delete(pods, related_pods(view, rs), len(pods) - want, view.now()):
            delete_pod(view, pod, COMPONENT, rs)


def _calculate_status(view: View, rs: dict[str, Any],
                      template_labels: dict[str, Any]) -> dict[str, Any]:
    """``calculateStatus``: the active pods' counts (zero ones but ``replicas`` omitted)."""
    pods = [p for p in owned_pods(view, rs) if is_active(p)]
    counts = {"fullyLabeledReplicas": sum(1 for p in pods if template_labels.items()
                                          <= labels_of(p).items()),
              "readyReplicas": sum(1 for p in pods if is_ready(p)),
              "availableReplicas": sum(1 for p in pods if is_ready(p))}
    return {"replicas": len(pods), **{k: v for k, v in counts.items() if v},
            "observedGeneration": rs["metadata"].get("generation", 1)}


def related_pods(view: View, rs: dict[str, Any]) -> list[dict[str, Any]]:
    """``getIndirectlyRelatedPods``: pods of every ReplicaSet with the same controller (the
    Deployment's other ReplicaSets); just this set's pods when it has no controller."""
    owner = controller_of(rs)
    ns = rs["metadata"]["namespace"]
    sets = [rs] if owner is None else [
        other for other in view.list("ReplicaSet", ns)
        if (controller_of(other) or {}).get("uid") == owner.get("uid")]
    out: list[dict[str, Any]] = []
    for other in sets:
        out.extend(owned_pods(view, other))
    return out


def pods_to_delete(pods: list[dict[str, Any]], related: list[dict[str, Any]], count: int, now: float) -> list[dict[str, Any]]:
    """``getPodsToDelete``: the first ``count`` pods in ``ActivePodsWithRanks`` order."""
    on_node: dict[str, int] = {}
    for pod in related:
        if is_active(pod):
            node = (pod.get("spec") or {}).get("nodeName", "")
            on_node[node] = on_node.get(node, 0) + 1
    ranked: list[tuple[dict[str, Any], int]] = [(pod, on_node.get((pod.get("spec") or {}).get("nodeName", ""), 0)) for pod in pods]
    ranked.sort(key=functools.cmp_to_key(functools.partial(_compare, now=now)))
    return [pod for pod, _rank in ranked[:count]]


def _compare(a: tuple[dict[str, Any], int], b: tuple[dict[str, Any], int], now: float) -> int:
    """-1 when ``a`` should be deleted before ``b`` (``ActivePodsWithRanks.Less``)."""
    for key in (_unassigned_first, _phase_key, _ready_key, _cost_key):
        ka, kb = key(a[0]), key(b[0])
        if ka != kb:
            return -1 if ka < kb else 1
    if a[1] != b[1]:
        return -1 if a[1] > b[1] else 1
    if is_ready(a[0]) and is_ready(b[0]):
        order = _time_order(_ready_since(a[0]), _ready_since(b[0]), a[0], b[0], now)
        if order:
            return order
    ra, rb = _restarts(a[0]), _restarts(b[0])
    if ra != rb:
        return -1 if ra > rb else 1
    return _time_order(_created_at(a[0]), _created_at(b[0]), a[0], b[0], now)


def _unassigned_first(pod: dict[str, Any]) -> int:
    return 1 if (pod.get("spec") or {}).get("nodeName") else 0


def _phase_key(pod: dict[str, Any]) -> int:
    return _PHASE_ORDINAL.get((pod.get("status") or {}).get("phase", ""), -1)


def _ready_key(pod: dict[str, Any]) -> int:
    return 1 if is_ready(pod) else 0


def _cost_key(pod: dict[str, Any]) -> int:
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(DELETION_COST, "0")
    try:
        return int(text)
    except ValueError:
        return 0


def _restarts(pod: dict[str, Any]) -> int:
    return max((int(c.get("restartCount", 0) or 0)
                for c in (pod.get("status") or {}).get("containerStatuses") or []), default=0)


def _seconds(timestamp: str | None) -> float | None:
    if not timestamp:
        return None
    from datetime import datetime
    when = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=EPOCH.tzinfo)
    return (when - EPOCH).total_seconds()


def _ready_since(pod: dict[str, Any]) -> float | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready" and cond.get("status") == "True":
            return _seconds(cond.get("lastTransitionTime"))
    return None


def _created_at(pod: dict[str, Any]) -> float | None:
    return _seconds((pod.get("metadata") or {}).get("creationTimestamp"))


def _bucket(then: float, now: float) -> int:
    nanos = (now - then) * 1e9
    return int(math.log2(nanos)) if nanos > 0 else -1


def _time_order(ta: float | None, tb: float | None, a: dict[str, Any], b: dict[str, Any], now: float) -> int:
    """Newer first; an empty time first; equal log2 buckets -> lower uid first."""
    if ta == tb:
        return 0
    if ta is None or tb is None:
        return -1 if ta is None else 1
    diff = _bucket(ta, now) - _bucket(tb, now)
    if diff == 0:
        ua, ub = a["metadata"].get("uid", ""), b["metadata"].get("uid", "")
        return -1 if ua < ub else (1 if ua > ub else 0)
    return -1 if diff < 0 else 1
