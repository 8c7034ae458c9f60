"""What Kueue's scheduler reads from the store, as ``gpusched.kueue``'s inputs: flavors, the
quota forest with every admitted Workload's usage, queue policies, LocalQueue -> ClusterQueue,
each Workload's priority, timestamp and PodSets, and the Configuration's ``fairSharing``.

Neighbours: ``gpusched.kueue`` (the pure semantics), ``apiserver.view``; read by ``scheduler``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gpusched.cluster.apiserver.view import View
from gpusched.cluster.controllers.kueue.configuration import configuration
from gpusched.cluster.controllers.kueue.topology import topologies, with_levels
from gpusched.kueue.conditions import Condition, cluster_queue_active, pending
from gpusched.kueue.cycle import Pending, Snapshot
from gpusched.kueue.fair_sharing import fair_sharing_config
from gpusched.kueue.inputs import flavor_of, podset_request, queue_policy
from gpusched.kueue.ordering import QueuedWorkload
from gpusched.kueue.preemption import Admitted
from gpusched.kueue.quota import FlavorResource, build_forest
from gpusched.objects.quantity import canonical
from gpusched.objects.selectors import matches, selector_from_dict


def seconds(stamp: str) -> float:
    """An RFC 3339 timestamp in seconds since the epoch (0 when absent or unreadable)."""
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except (AttributeError, ValueError):
        return 0.0


def condition(obj: Mapping[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") == type_), None)


def is_true(obj: Mapping[str, Any], type_: str) -> bool:
    found = condition(obj, type_)
    return found is not None and found.get("status") == "True"


def key_of(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def queued(wl: Mapping[str, Any], cluster_queue: str) -> QueuedWorkload:
    meta = wl.get("metadata") or {}
    return QueuedWorkload(key_of(wl), cluster_queue, int((wl.get("spec") or {}).get("priority") or 0),
                          seconds(str(meta.get("creationTimestamp", ""))), str(meta.get("uid", "")))


def admitted_usage(admission: Mapping[str, Any]) -> dict[FlavorResource, int]:
    usage: dict[FlavorResource, int] = {}
    for podset in admission.get("podSetAssignments") or ():
        for resource, flavor in (podset.get("flavors") or {}).items():
            amount = canonical(resource, (podset.get("resourceUsage") or {}).get(resource, 0))
            usage[(flavor, resource)] = usage.get((flavor, resource), 0) + amount
    return usage


@dataclass
class World:
    """The cycle's snapshot plus what the writers need: Active conditions, the LocalQueues."""

    snapshot: Snapshot
    active: dict[str, Condition]
    local_queues: dict[tuple[str, str], str]
    selectors: dict[str, Any]


def _active(cqs: list[dict[str, Any]], flavors: Mapping[str, Any], forest: Any) -> dict[str, Condition]:
    """Each ClusterQueue's Active condition: stopped, missing flavors, a TAS flavor whose
    Topology is missing, a cohort cycle."""
    active = {}
    for cq in cqs:
        spec, name = cq.get("spec") or {}, cq["metadata"]["name"]
        names = [f["name"] for g in spec.get("resourceGroups") or () for f in g.get("flavors") or ()]
        missing = sorted({n for n in names if n not in flavors})
        stopped = (spec.get("stopPolicy") or "None") != "None"
        no_topology = [(n, flavors[n].topology_name) for n in sorted(set(names))
                       if n in flavors and flavors[n].topology_name and flavors[n].topology_levels is None]
        active[name] = cluster_queue_active(stopped, missing, forest.in_cycle(forest.queues[name]), no_topology)
    return active


def admitted_of(wl: Mapping[str, Any], queues: Mapping[str, Any]) -> Admitted | None:
    """An admitted, unfinished Workload's usage (None for any other)."""
    admission = (wl.get("status") or {}).get("admission")
    if not admission or not is_true(wl, "QuotaReserved") or is_true(wl, "Finished") \
            or admission.get("clusterQueue") not in queues:
        return None
    reserved = condition(wl, "QuotaReserved") or {}
    info = queued(wl, str(admission["clusterQueue"]))
    return Admitted(info.key, info.cluster_queue, admitted_usage(admission), info.priority,
                    seconds(str(reserved.get("lastTransitionTime", ""))), info.timestamp, info.uid)


def read_world(view: View) -> World:
    flavors = with_levels(view, {rf["metadata"]["name"]: flavor_of(rf) for rf in view.list("ResourceFlavor")})
    cqs = view.list("ClusterQueue")
    forest = build_forest(cqs, view.list("Cohort"))
    snapshot = Snapshot(forest, {cq["metadata"]["name"]: queue_policy(cq) for cq in cqs}, flavors,
                        topologies=topologies(view, flavors), fair_sharing=fair_sharing_config(configuration(view)))
    for wl in view.list("Workload"):
        admitted = admitted_of(wl, forest.queues)
        if admitted is not None:
            snapshot.admit(admitted)
    local_queues = {((lq.get("metadata") or {}).get("namespace", "default"), lq["metadata"]["name"]):
                    str((lq.get("spec") or {}).get("clusterQueue", "")) for lq in view.list("LocalQueue")}
    selectors = {cq["metadata"]["name"]: (cq.get("spec") or {}).get("namespaceSelector") for cq in cqs}
    return World(snapshot, _active(cqs, flavors, forest), local_queues, selectors)


def route(view: View, world: World, wl: Mapping[str, Any]) -> tuple[str, Condition | None]:
    """The Workload's ClusterQueue, or why it cannot be queued (QuotaReserved=False)."""
    meta, spec = wl.get("metadata") or {}, wl.get("spec") or {}
    namespace, queue = str(meta.get("namespace", "default")), str(spec.get("queueName", ""))
    cq = world.local_queues.get((namespace, queue))
    if cq is None:
        return "", pending("Misconfigured", f"LocalQueue {queue} is terminating or missing")
    if cq not in world.active:
        return "", pending("Misconfigured", f"ClusterQueue {cq} not found")
    if world.active[cq].status != "True":
        return "", pending("Misconfigured", f"ClusterQueue {cq} is inactive")
    if not namespace_selected(view, world.selectors.get(cq), namespace):
        return "", pending("Misconfigured", "workload namespace doesn't match ClusterQueue selector")
    return cq, None


def namespace_selected(view: View, selector: Any, namespace: str) -> bool:
    """A ClusterQueue's namespaceSelector: null selects no namespace, ``{}`` every one."""
    if selector is None:
        return False
    ns = view.get("Namespace", namespace) or {}
    return matches(selector_from_dict(selector), (ns.get("metadata") or {}).get("labels") or {})


def pending_of(wl: Mapping[str, Any], cluster_queue: str) -> Pending:
    podsets = tuple(podset_request(ps) for ps in (wl.get("spec") or {}).get("podSets") or ())
    return Pending(queued(wl, cluster_queue), podsets)
