"""Node lifecycle: NoExecute taint eviction, PodDisruptionBudget status, and the eviction API.

- A pod bound to a node with a NoExecute taint it does not tolerate is deleted at once (event
  ``TaintManagerEviction`` "Marking for deletion Pod <ns>/<name>"); one it tolerates with
  ``tolerationSeconds`` is deleted when the shortest of those expires, counted from the taint's
  ``timeAdded`` (set when the taint is added).
- PDB status: ``currentHealthy`` (Running pods selected), ``desiredHealthy`` (from minAvailable
  or maxUnavailable, integers or percentages rounded up), ``disruptionsAllowed``,
  ``expectedPods``.
- :func:`evict` is the Eviction API used by ``drain``: refused with upstream's message when it
  would violate a PDB.

Neighbours: ``cluster.cluster`` (cordon, taint, drain); ``controllers.job.seconds_of``.
"""

from __future__ import annotations

import math

from gpusched.cluster.controllers.common import (delete_pod, is_running, is_terminal, labels_of,
                                                 selector_matches, set_status)
from gpusched.cluster.controllers.daemonset import node_taints
from gpusched.cluster.controllers.job import seconds_of
from gpusched.cluster.view import View
from gpusched.errors import GpuschedError
from gpusched.objects.pod import pod_info

COMPONENT = "taint-eviction-controller"
PDB_VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."


class EvictionRefused(GpuschedError):
    code = 429
    reason = "TooManyRequests"


def _eviction_time(view: View, pod: dict, node: dict) -> float | None:
    """When the pod must go (now or later), or None when it may stay."""
    info = pod_info(pod)
    deadline: float | None = None
    added = {(t.get("key"), t.get("value", "") or "", t.get("effect")): t.get("timeAdded")
             for t in (node.get("spec") or {}).get("taints") or []}
    for taint in node_taints(node):
        if taint.effect != "NoExecute":
            continue
        matching = [t for t in info.tolerations if t.tolerates(taint)]
        if not matching:
            return view.now()
        limits = [t.toleration_seconds for t in matching if t.toleration_seconds is not None]
        if len(limits) == len(matching) and limits:
            stamp = added.get((taint.key, taint.value, taint.effect))
            start = seconds_of(stamp) if stamp else view.now()
            expiry = start + max(0, min(limits))
            deadline = expiry if deadline is None else min(deadline, expiry)
    return deadline


def _bound_pods(view: View) -> list[tuple[dict, dict]]:
    """Unfinished pods bound to a node that has a NoExecute taint, with that node."""
    nodes = {n["metadata"]["name"]: n for n in view.list("Node") if _has_no_execute(n)}
    if not nodes:
        return []
    return [(pod, nodes[pod["spec"]["nodeName"]]) for pod in view.list("Pod")
            if not is_terminal(pod) and (pod.get("spec") or {}).get("nodeName") in nodes]


def eviction_due(view: View, pod: dict) -> float | None:
    """Timer (``cluster.timers``): when a NoExecute taint on the pod's node evicts it."""
    node_name = (pod.get("spec") or {}).get("nodeName")
    node = view.get("Node", node_name) if node_name else None
    if node is None or is_terminal(pod) or not _has_no_execute(node):
        return None
    return _eviction_time(view, pod, node)


def _has_no_execute(node: dict) -> bool:
    return any(t.get("effect") == "NoExecute" for t in (node.get("spec") or {}).get("taints") or [])


def reconcile(view: View) -> None:
    for pod, node in _bound_pods(view):
        when = _eviction_time(view, pod, node)
        if when is not None and when <= view.now():
            meta = pod["metadata"]
            view.record_event(pod, "TaintManagerEviction",
                              f"Marking for deletion Pod {meta['namespace']}/{meta['name']}",
                              "Normal", COMPONENT)
            delete_pod(view, pod)
    refresh_pdbs(view)


def _count(value, total: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)


def pdb_pods(view: View, pdb: dict) -> list[dict]:
    selector = (pdb.get("spec") or {}).get("selector")
    if selector is None:
        selector = {}
    return [p for p in view.list("Pod", pdb["metadata"]["namespace"])
            if not is_terminal(p) and selector_matches(selector, labels_of(p))]


def pdb_status(view: View, pdb: dict) -> dict:
    spec = pdb.get("spec") or {}
    pods = pdb_pods(view, pdb)
    expected = len(pods)
    healthy = sum(1 for p in pods if is_running(p))
    if "minAvailable" in spec:
        desired = _count(spec["minAvailable"], expected)
    elif "maxUnavailable" in spec:
        desired = max(0, expected - _count(spec["maxUnavailable"], expected))
    else:
        desired = 0
    return {"currentHealthy": healthy, "desiredHealthy": desired,
            "disruptionsAllowed": max(0, healthy - desired), "expectedPods": expected,
            "observedGeneration": pdb["metadata"].get("generation", 1)}


def refresh_pdbs(view: View) -> None:
    for pdb in view.list("PodDisruptionBudget"):
        set_status(view, pdb, pdb_status(view, pdb))


def evict(view: View, pod: dict) -> None:
    """The Eviction API: delete the pod unless a PDB covering it allows no disruption."""
    for pdb in view.list("PodDisruptionBudget", pod["metadata"]["namespace"]):
        if pod in pdb_pods(view, pdb) and is_running(pod):
            if pdb_status(view, pdb)["disruptionsAllowed"] < 1:
                raise EvictionRefused(PDB_VIOLATION)
    view.record_event(pod, "Evicted", "Evicted by the Eviction API", "Normal", "kubectl")
    delete_pod(view, pod)
    refresh_pdbs(view)
