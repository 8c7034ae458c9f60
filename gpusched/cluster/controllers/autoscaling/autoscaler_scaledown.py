"""Cluster Autoscaler scale-down: unneeded nodes of autoscaled NodePools are drained and removed.

As ``core/scaledown/planner/planner.go`` and ``core/scaledown/actuation/actuator.go``:

1. Nodes being drained (``status.draining``) whose pods are all gone leave the pool
   (``status.nodes``; the NodePool controller deletes the Node): event ``ScaleDown`` ``node
   removed by cluster autoscaler`` on the node, ``ScaleDown`` ``Scale-down: node X removed
   with drain`` (or ``ScaleDownEmpty`` ``Scale-down: empty node X removed``) on the status
   ConfigMap.
2. Nothing else while ``scale-down-delay-after-add`` runs after the last scale-up.
3. Utilization (``simulator/utilization/info.go`` ``Calculate``): the pods' requests over the
   node's allocatable; a GPU node (``nvidia.com/gpu`` allocatable) counts GPU utilization
   only, other nodes the larger of CPU and memory. Terminating pods do not count. Below
   ``scale-down-utilization-threshold`` a node is a candidate.
4. A candidate is removable when every pod on it (DaemonSet pods excepted) may move
   (``utils/drain/drain.go`` and ``simulator/drainability/rules``:
   ``cluster-autoscaler.kubernetes.io/safe-to-evict: "false"`` blocks, ``"true"`` allows
   anything; a pod with an emptyDir or hostPath volume blocks unless
   ``cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes`` lists them all
   (``--skip-nodes-with-local-storage``, default true); a pod without a controller blocks; a
   kube-system pod blocks unless a PDB covers it; a PDB with too few disruptions allowed
   blocks; a node annotated ``cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"``
   is never a candidate (FAQ.md) and the scheduler finds each a place
   on the remaining nodes (``simulator/cluster.go`` ``FindNodesToRemove``: the same Filter
   plugins, nodes already chosen for removal excluded).
5. Removable candidates are ``unneeded`` since the first pass that found them so; after
   ``scale-down-unneeded-time`` they go, never below ``minNodes``: empty ones at once, one
   non-empty one at a time, which is tainted ``ToBeDeletedByClusterAutoscaler=<unix
   time>:NoSchedule`` (``utils/taints``) with event ``ScaleDown`` ``marked the node as
   toBeDeleted/unschedulable``, and its pods evicted (``DisruptionTarget``
   EvictionByEvictionAPI, event ``ScaleDown`` ``deleting pod for node scale down``, graceful
   deletion capped by ``max-graceful-termination-sec``).

Neighbours: ``controllers.autoscaling.autoscaler`` (calls it), ``controllers.nodes.node_lifecycle``
(PDBs), ``controllers.common`` (graceful deletion), ``cluster.scheduling`` (the simulation).
"""

from __future__ import annotations

from typing import Any

import dataclasses


import numpy as np

from gpusched.cluster.apiserver import write
from gpusched.cluster.controllers.autoscaling.autoscaler_config import COMPONENT, Config
from gpusched.cluster.controllers.autoscaling.autoscaler_groups import (Group, Simulation,
                                                                        update_status)
from gpusched.cluster.controllers.autoscaling.autoscaler_groups import groups as current
from gpusched.cluster.controllers.common import (controller_of, delete_pod, is_terminal,
                                                 is_terminating, set_disruption_target)
from gpusched.cluster.apiserver.view import View

TO_BE_DELETED = "ToBeDeletedByClusterAutoscaler"
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SAFE_LOCAL_VOLUMES = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
MAX_EMPTY_BULK_DELETE = 10     # --max-empty-bulk-delete


def reconcile(view: View, config: Config, groups: list[Any]) -> None:
    for group in groups:
        _finish_drains(view, group)
    groups = current(view)
    last_up = max((float(g.status.get("lastScaleUp", -1e18)) for g in groups), default=-1e18)
    if view.now() < last_up + config.delay_after_add:
        for group in groups:
            if group.status.get("unneeded"):
                _set(view, group, {"unneeded": {}})
        return
    removable = _removable(view, config, groups)
    _act(view, config, current(view), removable)


def node_pods(view: View, name: str) -> list[dict[str, Any]]:
    return pods_by_node(view).get(name, [])


def pods_by_node(view: View) -> dict[str, list[dict[str, Any]]]:
    """Unfinished bound pods per node, cached for the view's current state (``mutations``)."""
    memo = view.memo.setdefault("autoscaler-pods", {})
    if memo.get("at") != view.mutations:
        index: dict[str, list[dict[str, Any]]] = {}
        for pod in view.list("Pod"):
            node = (pod.get("spec") or {}).get("nodeName")
            if node and not is_terminal(pod):
                index.setdefault(node, []).append(pod)
        memo["at"], memo["index"] = view.mutations, index
    result: dict[str, list[dict[str, Any]]] = memo["index"]
    return result


def _is_daemon(pod: dict[str, Any]) -> bool:
    owner = controller_of(pod)
    return owner is not None and owner.get("kind") == "DaemonSet"


def _set(view: View, group: Group, changes: dict[str, Any]) -> Group:
    return update_status(view, group, changes)


# ---- step 1 ----------------------------------------------------------------------------------

def _finish_drains(view: View, group: Group) -> None:
    from gpusched.cluster.controllers.autoscaling import autoscaler_status
    draining = dict(group.status.get("draining") or {})
    for name in sorted(draining):
        if any(not _is_daemon(p) for p in node_pods(view, name)):
            continue
        node = view.get("Node", name)
        if node is not None:
            view.record_event(node, "ScaleDown", "node removed by cluster autoscaler", "Normal",
                              COMPONENT)
        emptied = draining.pop(name)
        group = _remove(view, group, name, draining)
        reason, text = (("ScaleDownEmpty", f"Scale-down: empty node {name} removed")
                        if emptied == "empty" else
                        ("ScaleDown", f"Scale-down: node {name} removed with drain"))
        autoscaler_status.record(view, reason, text)


MAX_REMOVED_RECORDS = 1000


def _remove(view: View, group: Group, name: str, draining: dict[str, Any]) -> Group:
    status = group.status
    created = dict(status.get("created") or {})
    removed = list(status.get("removed") or [])
    removed.append({"name": name, "created": float(created.pop(name, view.now())),
                    "removed": view.now()})
    changes = {"nodes": [n for n in group.nodes if n != name], "draining": draining,
               "created": created, "removed": removed[-MAX_REMOVED_RECORDS:]}
    if len(removed) > MAX_REMOVED_RECORDS:      # keep the hours, drop the oldest records
        oldest = removed[:-MAX_REMOVED_RECORDS]
        changes["retiredNodeSeconds"] = float(status.get("retiredNodeSeconds", 0.0)) + sum(
            r["removed"] - r["created"] for r in oldest)
    unneeded = dict(status.get("unneeded") or {})
    unneeded.pop(name, None)
    changes["unneeded"] = unneeded
    return _set(view, group, changes)


# ---- steps 3-4 ---------------------------------------------------------------------------------

def utilization(view: View, node: dict[str, Any], pods: list[dict[str, Any]]) -> float:
    """``utilization.Calculate``: GPU only on a GPU node, else max(cpu, memory)."""
    from gpusched.objects.pod import pod_resource_requests
    from gpusched.objects.quantity import canonical
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    live = [pod_resource_requests(p) for p in pods if not is_terminating(p)]

    def share(resource: str) -> float:
        total = canonical(resource, allocatable.get(resource, 0) or 0)
        if total <= 0:
            return 0.0
        return sum(int(r.get(resource, 0)) for r in live) / total

    if canonical("nvidia.com/gpu", allocatable.get("nvidia.com/gpu", 0) or 0) > 0:
        return share("nvidia.com/gpu")
    return max(share("cpu"), share("memory"))


def _local_volumes(pod: dict[str, Any]) -> list[str]:
    return [str(v.get("name", "")) for v in (pod.get("spec") or {}).get("volumes") or []
            if "emptyDir" in v or "hostPath" in v]


def blocking_reason(view: View, pod: dict[str, Any]) -> str:
    """Why ``pod`` keeps its node (``drain.go`` BlockingPodReason names), or ``""``."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    safe = annotations.get(SAFE_TO_EVICT)
    reason = _annotation_reason(pod, annotations, safe)
    if reason:
        return reason
    namespace = pod["metadata"].get("namespace", "default")
    covering = _covering_pdbs(view, pod, namespace)
    for pdb in covering:
        if int((pdb.get("status") or {}).get("disruptionsAllowed", 0)) < 1:
            return "NotEnoughPdb"
    if safe == "true":
        return ""
    if controller_of(pod) is None:
        return "NotReplicated"
    if namespace == "kube-system" and not covering:
        return "UnmovableKubeSystemPod"
    return ""


def _annotation_reason(pod: dict[str, Any], annotations: dict[str, Any], safe: str | None) -> str:
    """The safe-to-evict annotation's and the local storage rule's reason, or ``""``."""
    if safe == "false":
        return "NotSafeToEvictAnnotation"
    allowed = {v.strip() for v in annotations.get(SAFE_LOCAL_VOLUMES, "").split(",") if v.strip()}
    if safe != "true" and any(v not in allowed for v in _local_volumes(pod)):
        return "LocalStorageRequested"      # --skip-nodes-with-local-storage (default true)
    return ""


def _covering_pdbs(view: View, pod: dict[str, Any], namespace: str) -> list[dict[str, Any]]:
    """The PodDisruptionBudgets of ``namespace`` that select ``pod``."""
    from gpusched.cluster.controllers.common import pdb_pods
    return [pdb for pdb in view.list("PodDisruptionBudget", namespace)
            if pod in pdb_pods(view, pdb)]


def _removable(view: View, config: Config, groups: list[Any]) -> dict[str, tuple[str, bool]]:
    """node -> (pool, empty) for the nodes that are unneeded now (both checks pass)."""
    draining = {n for g in groups for n in (g.status.get("draining") or {})}
    candidates = []
    for group in groups:
        for name in group.nodes:
            movable = _movable_pods(view, config, name, draining)
            if movable is not None:
                candidates.append((group.name, name, movable))
    if not candidates:
        return {}
    out: dict[str, tuple[str, bool]] = {}
    accepted: list[tuple[str, list[dict[str, Any]]]] = []
    for pool, name, movable in candidates:
        sim = Simulation(view)
        gone = {n for n, _ in accepted} | draining | {name}
        if _moved(sim, accepted, gone) and _moved(sim, [(name, movable)], gone):
            accepted.append((name, movable))
            out[name] = (pool, not movable)
    return out


def _movable_pods(view: View, config: Config, name: str,
                  draining: set[str]) -> list[dict[str, Any]] | None:
    """A scale-down candidate's pods to move (not DaemonSet's, not terminating); None when the
    node is gone or draining, has scale-down disabled, is utilized at or above the threshold
    (``eligibility.go``), or holds a pod that blocks its drain."""
    node = view.get("Node", name)
    if node is None or name in draining:
        return None
    if ((node.get("metadata") or {}).get("annotations") or {}).get(SCALE_DOWN_DISABLED) == "true":
        return None
    pods = node_pods(view, name)
    if utilization(view, node, pods) >= config.utilization_threshold:
        return None
    movable = [p for p in pods if not _is_daemon(p) and not is_terminating(p)]
    if any(blocking_reason(view, p) for p in movable):
        return None
    return movable


def _moved(sim: Simulation, removals: list[tuple[str, list[dict[str, Any]]]], gone: set[str]) -> bool:
    """Remove the nodes of ``removals`` from the simulation and place their pods elsewhere."""
    for name, pods in removals:
        if name in sim.snapshot.index:
            sim.snapshot.remove_node(name)
    rows = np.array([sim.snapshot.index[n] for n in sim.snapshot.names if n not in gone],
                    dtype=np.int64)
    for _name, pods in removals:
        for pod in pods:
            info = dataclasses.replace(sim.info(pod), node_name="")     # a replacement pod
            if not len(rows) or not sim.scheduler.place(info, rows).node:
                return False
    return True


# ---- step 5 ---------------------------------------------------------------------------------

def _act(view: View, config: Config, groups: list[Any], removable: dict[str, tuple[str, bool]]) -> None:
    now = view.now()
    draining_now = any(g.status.get("draining") for g in groups)
    empty_budget = MAX_EMPTY_BULK_DELETE
    for group in groups:
        old = dict(group.status.get("unneeded") or {})
        unneeded = {n: float(old.get(n, now)) for n in group.nodes if n in removable}
        if unneeded != old:
            group = _set(view, group, {"unneeded": unneeded})
        size = len(group.nodes)
        for name in sorted(unneeded, key=lambda n: (unneeded[n], n)):
            if now < unneeded[name] + config.unneeded_time or size <= group.min_nodes:
                continue
            empty = removable[name][1]
            if empty and empty_budget > 0:
                empty_budget -= 1
            elif not empty and not draining_now:
                draining_now = True
            else:
                continue
            size -= 1
            group = _start_deletion(view, config, group, name, empty)


def _start_deletion(view: View, config: Config, group: Group, name: str, empty: bool) -> Group:
    """Taint the node ToBeDeleted, evict its pods, and record it as draining."""
    _mark_to_be_deleted(view, name)
    _evict_pods(view, config, name)
    draining = dict(group.status.get("draining") or {})
    draining[name] = "empty" if empty else view.now()
    unneeded = dict(group.status.get("unneeded") or {})
    unneeded.pop(name, None)
    group = _set(view, group, {"draining": draining, "unneeded": unneeded})
    _finish_drains(view, group)
    return next(g for g in current(view) if g.name == group.name)


def _mark_to_be_deleted(view: View, name: str) -> None:
    """``taints.MarkToBeDeleted``: the ToBeDeletedByClusterAutoscaler NoSchedule taint (Unix
    seconds as its value) and the ScaleDown event."""
    node = view.copy("Node", name)
    if node is None:
        return
    taints = [t for t in (node.get("spec") or {}).get("taints") or []
              if t.get("key") != TO_BE_DELETED]
    taints.append({"key": TO_BE_DELETED, "value": str(int(view.now()) + _unix_offset(view)),
                   "effect": "NoSchedule"})
    node.setdefault("spec", {})["taints"] = taints
    write.update(view, node)
    view.record_event(node, "ScaleDown", "marked the node as toBeDeleted/unschedulable",
                      "Normal", COMPONENT)


def _evict_pods(view: View, config: Config, name: str) -> None:
    """The node's pods but DaemonSet's and terminating ones evicted: a ScaleDown event, the
    DisruptionTarget condition, and a grace of at most ``max_graceful_termination``."""
    for pod in node_pods(view, name):
        if _is_daemon(pod) or is_terminating(pod):
            continue
        view.record_event(pod, "ScaleDown", "deleting pod for node scale down", "Normal",
                          COMPONENT)
        pod = set_disruption_target(view, pod, "EvictionByEvictionAPI",
                                    "Eviction API: evicting")
        grace = min(int(config.max_graceful_termination),
                    int((pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30) or 0))
        delete_pod(view, pod, grace=grace)


def _unix_offset(view: View) -> int:
    """Seconds between the Unix epoch and the cluster clock's zero (the taint's value is Unix
    seconds, as ``taints.MarkToBeDeleted`` writes ``time.Now().Unix()``)."""
    from datetime import datetime, timezone
    stamp = datetime.strptime(view.timestamp(0.0), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    return int(stamp.timestamp())



