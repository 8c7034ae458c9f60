"""Node lifecycle: NoExecute taint eviction, PodDisruptionBudget status, and the eviction API.

- A pod bound to a node with a NoExecute taint it does not tolerate is deleted at once (event
  ``TaintManagerEviction`` "Marking for deletion Pod <ns>/<name>", condition DisruptionTarget
  reason DeletionByTaintManager, then a graceful delete: Terminating for its grace period); one
  it tolerates with
  ``tolerationSeconds`` is deleted when the shortest of those expires, counted from the taint's
  ``timeAdded`` (set when the taint is added).
- PDB status: ``currentHealthy`` (Running pods selected), ``desiredHealthy`` (from minAvailable
  or maxUnavailable, integers or percentages rounded up), ``disruptionsAllowed``,
  ``expectedPods``.
- Node taints the node lifecycle controller keeps (:func:`taint_nodes`): a cordoned node
  (``spec.unschedulable``) gets ``node.kubernetes.io/unschedulable:NoSchedule``; a node whose
  Ready condition is False gets ``node.kubernetes.io/not-ready`` and one whose Ready is Unknown
  ``node.kubernetes.io/unreachable``, each as NoSchedule and NoExecute (``timeAdded`` now), so
  pods without a toleration are evicted at once and those with the 300 s tolerations the
  DefaultTolerationSeconds admission adds after 300 s. Uncordon / Ready=True removes them.
- PodGC: deleting a Node (``kubectl delete node``, a NodePool shrinking) deletes its pods
  (:func:`collect_orphans`).
- :func:`evict` is the Eviction API used by ``drain``: refused with upstream's message when it
  would violate a PDB; else DisruptionTarget reason EvictionByEvictionAPI and a graceful delete.
  Terminating pods are not healthy for a PDB (``pkg/controller/disruption``, countHealthyPods).

Neighbours: ``cluster.cluster`` (cordon, taint, drain); ``controllers.workloads.job.seconds_of``.
"""

from __future__ import annotations

from typing import Any

import copy
import math

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.controllers.common import (delete_pod, is_running, is_terminal,
                                                 is_terminating, node_taints, pdb_pods,
                                                 ready_status, set_disruption_target, set_status)
from gpusched.cluster.apiserver.store import seconds_of
from gpusched.cluster.apiserver.view import View
from gpusched.errors import GpuschedError
from gpusched.objects.pod import pod_info

COMPONENT = "taint-eviction-controller"
PDB_VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
# DisruptionTarget messages: pkg/controller/tainteviction/taint_eviction.go (addConditionAndDeletePod)
# and pkg/registry/core/pod/storage/eviction.go (EvictionREST.Create).
TAINT_MANAGER_MESSAGE = "Taint manager: deleting due to NoExecute taint"
EVICTION_MESSAGE = "Eviction API: evicting"
PODGC_MESSAGE = "PodGC: node no longer exists"


class EvictionRefused(GpuschedError):
    code = 429
    reason = "TooManyRequests"


def _eviction_time(view: View, pod: dict[str, Any], node: dict[str, Any]) -> float | None:
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
        expiry = _toleration_expiry(view, taint, matching, added)
        if expiry is not None:
            deadline = expiry if deadline is None else min(deadline, expiry)
    return deadline


def _toleration_expiry(view: View, taint: Any, matching: list[Any],
                       added: dict[tuple[Any, ...], Any]) -> float | None:
    """``getMinTolerationTime``: the taint's ``timeAdded`` (now when unset) plus the shortest
    tolerationSeconds, or None when a matching toleration has no limit."""
    limits = [t.toleration_seconds for t in matching if t.toleration_seconds is not None]
    if len(limits) != len(matching) or not limits:
        return None
    stamp = added.get((taint.key, taint.value, taint.effect))
    start = seconds_of(stamp) if stamp else view.now()
    expiry: float = start + max(0, min(limits))
    return expiry


def _bound_pods(view: View, changes: Changes | None = None) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Unfinished pods bound to a node that has a NoExecute taint, with that node (among the
    changed pods and the pods of changed nodes when ``changes`` is given)."""
    if changes is None:
        nodes = {n["metadata"]["name"]: n for n in view.list("Node") if _has_no_execute(n)}
        pods = view.list("Pod") if nodes else []
    else:
        pods = changes.pods()
        nodes = _tainted_nodes_of(view, pods)
    if not nodes:
        return []
    return [(pod, nodes[pod["spec"]["nodeName"]]) for pod in pods
            if not is_terminal(pod) and (pod.get("spec") or {}).get("nodeName") in nodes]


def _tainted_nodes_of(view: View, pods: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The nodes ``pods`` are bound to that have a NoExecute taint, by name."""
    names = {(p.get("spec") or {}).get("nodeName") for p in pods}
    found = {n: view.get("Node", n) for n in names if n}
    return {n: node for n, node in found.items() if node is not None and _has_no_execute(node)}


def eviction_due(view: View, pod: dict[str, Any]) -> float | None:
    """Timer (``cluster.clock.timers``): when a NoExecute taint on the pod's node evicts it."""
    node_name = (pod.get("spec") or {}).get("nodeName")
    node = view.get("Node", node_name) if node_name else None
    if node is None or is_terminal(pod) or is_terminating(pod) or not _has_no_execute(node):
        return None
    return _eviction_time(view, pod, node)


def _has_no_execute(node: dict[str, Any]) -> bool:
    return any(t.get("effect") == "NoExecute" for t in (node.get("spec") or {}).get("taints") or [])


def collect_orphans(view: View) -> None:
    """PodGC's ``gcOrphaned`` (kubernetes ``pkg/controller/podgc/gc_controller.go``) for the
    nodes deleted in this command (``View.deleted_nodes``): their pods are marked Failed with
    DisruptionTarget DeletionByPodGC ("PodGC: node no longer exists") and deleted with grace
    period 0 (their kubelet is gone). Upstream waits a 40 s quarantine first and also collects
    pods bound to a node that never existed; here deletion is at once and only for deleted
    nodes (a pod bound to an unknown node stays Pending)."""
    gone = view.take_deleted_nodes()
    if not gone:
        return
    orphans = sorted(key for node in gone if view.get("Node", node) is None
                     for key in view.pods_on(node))
    for key in orphans:
        pod = view.objects.get(key)
        if pod is None:
            continue
        if not is_terminal(pod):
            pod = set_disruption_target(view, pod, "DeletionByPodGC", PODGC_MESSAGE)
            failed = copy.deepcopy(pod)
            failed["status"]["phase"] = "Failed"
            write.update_status(view, failed)
            pod = failed
        delete_pod(view, pod, grace=0)


def reconcile(view: View, changes: Changes | None = None) -> None:
    """Every node and pod, or (``changes``) the changed nodes, the changed pods and the pods of
    changed nodes (a NoExecute eviction's time is a timer on its pod)."""
    collect_orphans(view)
    taint_nodes(view, None if changes is None else sorted(changes.of_kind("Node")))
    for pod, node in _bound_pods(view, changes):
        when = _eviction_time(view, pod, node)
        if when is not None and when <= view.now() and not is_terminating(pod):
            meta = pod["metadata"]
            view.record_event(pod, "TaintManagerEviction",
                              f"Marking for deletion Pod {meta['namespace']}/{meta['name']}",
                              "Normal", COMPONENT)
            delete_pod(view, set_disruption_target(view, pod, "DeletionByTaintManager",
                                                   TAINT_MANAGER_MESSAGE))
    if changes is None:
        refresh_pdbs(view)
    else:
        namespaces = {k[1] for k in changes.keys if k[0] in ("Pod", "PodDisruptionBudget")}
        refresh_pdbs(view, namespaces)


def _count(value: Any, total: int) -> int:     # minAvailable/maxUnavailable: int or "N%"
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)


def pdb_status(view: View, pdb: dict[str, Any]) -> dict[str, Any]:
    spec = pdb.get("spec") or {}
    pods = pdb_pods(view, pdb)
    expected = len(pods)
    healthy = sum(1 for p in pods if is_running(p) and not is_terminating(p))
    if "minAvailable" in spec:
        desired = _count(spec["minAvailable"], expected)
    elif "maxUnavailable" in spec:
        desired = max(0, expected - _count(spec["maxUnavailable"], expected))
    else:
        desired = 0
    return {"currentHealthy": healthy, "desiredHealthy": desired,
            "disruptionsAllowed": max(0, healthy - desired), "expectedPods": expected,
            "observedGeneration": pdb["metadata"].get("generation", 1)}


def refresh_pdbs(view: View, namespaces: set[str] | None = None) -> None:
    """Every PDB's status, or those of ``namespaces``."""
    for pdb in view.list("PodDisruptionBudget"):
        if namespaces is not None and pdb["metadata"].get("namespace") not in namespaces:
            continue
        set_status(view, pdb, pdb_status(view, pdb))


def evict(view: View, pod: dict[str, Any]) -> None:
    """The Eviction API: delete the pod unless a PDB covering it allows no disruption."""
    for pdb in view.list("PodDisruptionBudget", pod["metadata"]["namespace"]):
        if pod in pdb_pods(view, pdb) and is_running(pod) and not is_terminating(pod):
            if pdb_status(view, pdb)["disruptionsAllowed"] < 1:
                raise EvictionRefused(PDB_VIOLATION)
    view.record_event(pod, "Evicted", "Evicted by the Eviction API", "Normal", "kubectl")
    if not is_terminating(pod):
        pod = set_disruption_target(view, pod, "EvictionByEvictionAPI", EVICTION_MESSAGE)
    delete_pod(view, pod)
    refresh_pdbs(view)


# ---- taints from node state (pkg/controller/nodelifecycle/node_lifecycle_controller.go) -------

UNSCHEDULABLE_KEY = "node.kubernetes.io/unschedulable"
NOT_READY_KEY = "node.kubernetes.io/not-ready"
UNREACHABLE_KEY = "node.kubernetes.io/unreachable"
_MANAGED = (UNSCHEDULABLE_KEY, NOT_READY_KEY, UNREACHABLE_KEY)


def wanted_taints(node: dict[str, Any]) -> list[tuple[str, str]]:
    """(key, effect) the node lifecycle controller keeps on a node: ``unschedulable:NoSchedule``
    for a cordoned node (doNoScheduleTaintingPass, UnschedulableTaintTemplate); for Ready False
    ``not-ready`` and for Ready Unknown ``unreachable``, each NoSchedule (taint by condition) and
    NoExecute (markNodeForTainting, taint-based eviction)."""
    out = []
    if (node.get("spec") or {}).get("unschedulable"):
        out.append((UNSCHEDULABLE_KEY, "NoSchedule"))
    key = {"False": NOT_READY_KEY, "Unknown": UNREACHABLE_KEY}.get(ready_status(node))
    if key:
        out += [(key, "NoSchedule"), (key, "NoExecute")]
    return out


def taint_nodes(view: View, keys: list[Any] | None = None) -> None:
    """Add and remove the controller's taints; a kept taint keeps its ``timeAdded``. Every node,
    or the nodes of ``keys``."""
    nodes = view.list("Node") if keys is None else [view.objects[k] for k in keys
                                                    if k in view.objects]
    for node in nodes:
        current = list((node.get("spec") or {}).get("taints") or [])
        kept = _reconciled_taints(view, node, current)
        if kept == current:
            continue
        new = copy.deepcopy(node)
        if kept:
            new.setdefault("spec", {})["taints"] = kept
        else:
            new.setdefault("spec", {}).pop("taints", None)
        write.update(view, new)


def _reconciled_taints(view: View, node: dict[str, Any],
                       current: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``current`` without the managed taints no longer wanted, plus the wanted ones missing
    (a NoExecute one stamped ``timeAdded`` now)."""
    wanted = wanted_taints(node)
    kept = [t for t in current if t.get("key") not in _MANAGED
            or (t.get("key"), t.get("effect")) in wanted]
    present = {(t.get("key"), t.get("effect")) for t in kept}
    for key, effect in wanted:
        if (key, effect) not in present:
            entry = {"key": key, "effect": effect}
            if effect == "NoExecute":
                entry["timeAdded"] = view.timestamp()
            kept.append(entry)
    return kept
