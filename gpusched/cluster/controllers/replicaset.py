"""ReplicaSet controller: keep ``spec.replicas`` active pods matching the selector.

Active = not Succeeded/Failed. Deleted, preempted, evicted or failed pods are replaced by new
ones named ``<rs>-<5 chars>``; surplus pods go unscheduled first, then newest first (a
simplification of upstream's ranking). Status: replicas, readyReplicas, availableReplicas,
fullyLabeledReplicas, observedGeneration.

Neighbours: created by ``controllers.deployment``; uses ``controllers.common``.
"""

from __future__ import annotations

from gpusched.cluster.controllers.common import (create_from_template, delete_pod, is_running,
                                                 is_terminal, labels_of, owned_pods,
                                                 selector_matches, set_status)
from gpusched.cluster.view import View

COMPONENT = "replicaset-controller"


def reconcile(view: View) -> None:
    for rs in view.list("ReplicaSet"):
        reconcile_one(view, rs)


def reconcile_one(view: View, rs: dict) -> None:
    spec = rs.get("spec") or {}
    want = int(spec.get("replicas", 1))
    pods = [p for p in owned_pods(view, rs)
            if not is_terminal(p) and selector_matches(spec.get("selector"), labels_of(p))]
    name = rs["metadata"]["name"]
    for _ in range(want - len(pods)):
        create_from_template(view, rs, spec.get("template") or {},
                             f"{name}-{view.random_suffix()}", COMPONENT)
    if len(pods) > want:
        unbound_first = [p for p in pods if not (p.get("spec") or {}).get("nodeName")]
        bound_newest = sorted((p for p in pods if (p.get("spec") or {}).get("nodeName")),
                              key=lambda p: (p["metadata"]["creationTimestamp"],
                                             p["metadata"]["name"]), reverse=True)
        for pod in (unbound_first + bound_newest)[:len(pods) - want]:
            delete_pod(view, pod, COMPONENT, rs)
    rs = view.get("ReplicaSet", name, rs["metadata"]["namespace"]) or rs
    pods = [p for p in owned_pods(view, rs) if not is_terminal(p)]
    ready = sum(1 for p in pods if is_running(p))
    set_status(view, rs, {"replicas": len(pods), "fullyLabeledReplicas": len(pods),
                          "readyReplicas": ready, "availableReplicas": ready,
                          "observedGeneration": rs["metadata"].get("generation", 1)})
