"""Kueue's topology ungater (``pkg/controller/tas/topology_ungater.go``): the pods of a PodSet
placed by topology are created with the scheduling gate ``kueue.x-k8s.io/topology``; for each
admitted Workload with a ``topologyAssignment``, each gated pod of the PodSet (label
``kueue.x-k8s.io/podset``, annotation ``kueue.x-k8s.io/workload``) gets its domain's level
labels added to ``spec.nodeSelector`` and the gate removed, so kube-scheduler places it inside
the domain Kueue chose (``tas_assignment.pods_to_ungate``: by the Job's completion index when
every pod has one, else greedily). Event ``TopologyAssigned`` on the pod: ``ungated pod``.

Neighbours: ``gpusched.kueue.tas_assignment`` (which pod goes where), ``jobs`` (the template
carries the gate); writes through ``apiserver.write``.
"""

from __future__ import annotations

import copy
from typing import Any, Iterable

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.apiserver.view import Key, View
from gpusched.cluster.controllers.base import Informer, WorkQueue, itself
from gpusched.kueue.tas_assignment import PodView, decode, pods_to_ungate
from gpusched.kueue.tas_request import PODSET_LABEL, TOPOLOGY_GATE, WORKLOAD_ANNOTATION

COMPONENT = "kueue-topology-ungater"


def _workload_of_pod(changes: Changes, keys: list[Key]) -> Iterable[Key]:
    for key in keys:
        annotations = ((changes.body(key) or {}).get("metadata") or {}).get("annotations") or {}
        if annotations.get(WORKLOAD_ANNOTATION):
            yield ("Workload", key[1], str(annotations[WORKLOAD_ANNOTATION]))


QUEUE = WorkQueue("Workload", (itself("Workload"), Informer("Pod", _workload_of_pod)), pod_creator=False)


def _gated(pod: dict[str, Any]) -> bool:
    return any(g.get("name") == TOPOLOGY_GATE for g in (pod.get("spec") or {}).get("schedulingGates") or ()
               if isinstance(g, dict))


def _rank(pod: dict[str, Any], label: str | None) -> int | None:
    if not label:
        return None
    meta = pod.get("metadata") or {}
    value = str((meta.get("labels") or {}).get(label, (meta.get("annotations") or {}).get(label, "")))
    return int(value) if value.isdigit() else None


def _view(pod: dict[str, Any], index_label: str | None) -> PodView:
    return PodView(pod["metadata"]["name"], _gated(pod), (pod.get("spec") or {}).get("nodeSelector") or {},
                   _rank(pod, index_label))


def _ungate(view: View, pod: dict[str, Any], labels: dict[str, str]) -> None:
    body = copy.deepcopy(pod)
    spec = body.setdefault("spec", {})
    spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **labels}
    gates = [g for g in spec.get("schedulingGates") or () if not (isinstance(g, dict) and g.get("name") == TOPOLOGY_GATE)]
    if gates:
        spec["schedulingGates"] = gates
    else:
        spec.pop("schedulingGates", None)
    write.update(view, body)
    view.record_event(pod, "TopologyAssigned", "ungated pod", "Normal", COMPONENT)


def _podset_pods(view: View, namespace: str, workload: str, podset: str) -> list[dict[str, Any]]:
    """The live pods of one PodSet (``podsForPodSet``: the Workload annotation, the PodSet label)."""
    found = []
    for pod in view.list("Pod", namespace):
        meta = pod.get("metadata") or {}
        if (meta.get("annotations") or {}).get(WORKLOAD_ANNOTATION) == workload and \
                (meta.get("labels") or {}).get(PODSET_LABEL) == podset and not meta.get("deletionTimestamp"):
            found.append(pod)
    return found


def _sync(view: View, wl: dict[str, Any]) -> None:
    meta = wl.get("metadata") or {}
    namespace, name = str(meta.get("namespace", "default")), str(meta.get("name", ""))
    podsets = (wl.get("spec") or {}).get("podSets") or []
    admission = (wl.get("status") or {}).get("admission") or {}
    for assigned, podset in zip(admission.get("podSetAssignments") or (), podsets):
        topology = decode(assigned.get("topologyAssignment"))
        if topology is None:
            continue
        label = (podset.get("topologyRequest") or {}).get("podIndexLabel")
        pods = _podset_pods(view, namespace, name, str(assigned.get("name", "")))
        views = [_view(p, label) for p in pods]
        by_name = {p["metadata"]["name"]: p for p in pods}
        for pod_name, labels in pods_to_ungate(topology, views, int(assigned.get("count") or len(pods))):
            _ungate(view, by_name[pod_name], labels)


def reconcile(view: View, changes: Changes | None = None) -> None:
    """The admitted Workloads ``QUEUE`` enqueues (every one without ``changes``)."""
    for wl in QUEUE.objects(view, changes):
        if (wl.get("status") or {}).get("admission"):
            _sync(view, wl)
