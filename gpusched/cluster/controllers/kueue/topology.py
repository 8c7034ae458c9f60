"""What Kueue's topology-aware scheduling reads from the store (``pkg/cache/scheduler/tas_*``):
for each ResourceFlavor with a ``topologyName`` whose Topology exists, a
``kueue.tas.TopologySnapshot`` of the Ready, schedulable nodes carrying the flavor's
``nodeLabels``, each with its allocatable minus the requests of the non-TAS pods bound to it
(``tas_non_tas_pod_cache.go``: a pod is TAS when it carries a podset topology annotation), and
the pods of every admitted Workload's topology assignment counted on their domains.

Neighbours: ``snapshot`` (calls ``topologies``), ``gpusched.kueue.tas`` (the snapshot).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gpusched.cluster.apiserver.view import View
from gpusched.kueue.inputs import Flavor, podset_request
from gpusched.kueue.tas import TasNode, TopologySnapshot
from gpusched.kueue.tas_assignment import decode
from gpusched.kueue.tas_request import PREFERRED, REQUIRED, SLICE_REQUIRED, UNCONSTRAINED
from gpusched.objects.pod import pod_resource_totals
from gpusched.objects.quantity import canonical
from gpusched.objects.selectors import map_matches
from gpusched.objects.types import Taint

_TAS_ANNOTATIONS = (REQUIRED, PREFERRED, SLICE_REQUIRED, UNCONSTRAINED)


def levels_of(topology: Mapping[str, Any] | None) -> tuple[str, ...] | None:
    """A Topology's level labels, top first (None for no Topology)."""
    if topology is None:
        return None
    return tuple(str(level.get("nodeLabel", "")) for level in (topology.get("spec") or {}).get("levels") or ())


def with_levels(view: View, flavors: Mapping[str, Flavor]) -> dict[str, Flavor]:
    """The flavors, each TAS one with its Topology's levels (left None when it is missing)."""
    return {name: replace(flavor, topology_levels=levels_of(view.get("Topology", flavor.topology_name)))
            if flavor.topology_name else flavor for name, flavor in flavors.items()}


def _ready(node: Mapping[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or ()
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return ready and not (node.get("spec") or {}).get("unschedulable")


def _non_tas_usage(view: View, node: str) -> dict[str, int]:
    used: dict[str, int] = {}
    for key in view.pods_on(node):
        pod = view.objects[key]
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        if any(a in ((pod.get("metadata") or {}).get("annotations") or {}) for a in _TAS_ANNOTATIONS):
            continue
        for name, amount in {**pod_resource_totals(pod), "pods": 1}.items():
            used[name] = used.get(name, 0) + amount
    return used


def _tas_node(view: View, node: Mapping[str, Any]) -> TasNode:
    meta, status = node.get("metadata") or {}, node.get("status") or {}
    free = {name: canonical(name, value) for name, value in (status.get("allocatable") or {}).items()}
    for name, amount in _non_tas_usage(view, str(meta.get("name", ""))).items():
        free[name] = free.get(name, 0) - amount
    taints = tuple(Taint(str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or ""))
                   for t in (node.get("spec") or {}).get("taints") or ())
    return TasNode(str(meta.get("name", "")), dict(meta.get("labels") or {}), free, taints)


def _finished(wl: Mapping[str, Any]) -> bool:
    return any(c.get("type") == "Finished" and c.get("status") == "True"
               for c in (wl.get("status") or {}).get("conditions") or ())


def _admitted_usage(view: View, snapshots: Mapping[str, TopologySnapshot]) -> None:
    """Every unfinished admitted Workload's TAS pods, on their flavor's domains."""
    for wl in view.list("Workload"):
        admission = (wl.get("status") or {}).get("admission") or {}
        podsets = (wl.get("spec") or {}).get("podSets") or []
        if _finished(wl):
            continue
        for assigned, podset in zip(admission.get("podSetAssignments") or (), podsets):
            topology = decode(assigned.get("topologyAssignment"))
            tas = [f for f in (assigned.get("flavors") or {}).values() if f in snapshots]
            if topology is not None and tas:
                snapshots[tas[0]].add_usage(topology, podset_request(podset).per_pod)


def topologies(view: View, flavors: Mapping[str, Flavor]) -> dict[str, TopologySnapshot]:
    """A ``TopologySnapshot`` per TAS flavor whose Topology exists."""
    tas = {name: f for name, f in flavors.items() if f.topology_name and f.topology_levels}
    if not tas:
        return {}
    nodes = [n for n in view.list("Node") if _ready(n)]
    snapshots = {}
    for name, flavor in tas.items():
        members = [_tas_node(view, n) for n in nodes
                   if map_matches(flavor.node_labels, (n.get("metadata") or {}).get("labels") or {})]
        snapshots[name] = TopologySnapshot(str(flavor.topology_name), flavor.topology_levels or (), members,
                                           flavor.tolerations)
    _admitted_usage(view, snapshots)
    return snapshots
