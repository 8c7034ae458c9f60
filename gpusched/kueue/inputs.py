"""The facts the Kueue semantics read from v1beta2 dicts, parsed once into frozen values: a
ClusterQueue's resource groups, fungibility and preemption policies (``QueuePolicy``), a
ResourceFlavor's labels, taints and tolerations (``Flavor``), and a Workload's PodSets with
their total requests (``PodSetRequest``). Defaults are v1beta2's.

Neighbours: ``objects`` (quantities, selectors, taints); used by ``flavors``, ``ordering``,
``preemption`` and the controllers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpusched.kueue.tas_request import TopologyRequest, parse_topology_request
from gpusched.objects.pod import pod_resource_totals
from gpusched.objects.quantity import canonical
from gpusched.objects.selectors import term_from_dict
from gpusched.objects.types import NodeSelectorTerm, Taint, Toleration

MAY_STOP_SEARCH = "MayStopSearch"
TRY_NEXT_FLAVOR = "TryNextFlavor"
NEVER = "Never"


@dataclass(frozen=True)
class ResourceGroup:
    covered: frozenset[str]
    flavors: tuple[str, ...]


@dataclass(frozen=True)
class QueuePolicy:
    """A ClusterQueue's spec, less its quotas (those live in ``quota.QuotaNode``)."""

    name: str
    groups: tuple[ResourceGroup, ...] = ()
    when_can_borrow: str = MAY_STOP_SEARCH
    when_can_preempt: str = TRY_NEXT_FLAVOR
    preference: str | None = None
    within_cluster_queue: str = NEVER
    reclaim_within_cohort: str = NEVER
    borrow_within_cohort: str = NEVER
    borrow_max_priority: int | None = None
    strategy: str = "BestEffortFIFO"

    def group_of(self, resource: str) -> ResourceGroup | None:
        return next((group for group in self.groups if resource in group.covered), None)


def _groups(spec: Mapping[str, Any]) -> tuple[ResourceGroup, ...]:
    return tuple(ResourceGroup(frozenset(group.get("coveredResources") or ()),
                               tuple(flavor["name"] for flavor in group.get("flavors") or ()))
                 for group in spec.get("resourceGroups") or ())


def queue_policy(cq: Mapping[str, Any]) -> QueuePolicy:
    """The ``QueuePolicy`` of a ClusterQueue dict (v1beta2 defaults for what is unset)."""
    spec = cq.get("spec") or {}
    fungibility = spec.get("flavorFungibility") or {}
    preemption = spec.get("preemption") or {}
    borrow = preemption.get("borrowWithinCohort") or {}
    unset = QueuePolicy("")
    return QueuePolicy(
        cq["metadata"]["name"], _groups(spec),
        fungibility.get("whenCanBorrow") or unset.when_can_borrow,
        fungibility.get("whenCanPreempt") or unset.when_can_preempt,
        fungibility.get("preference"),
        preemption.get("withinClusterQueue") or NEVER,
        preemption.get("reclaimWithinCohort") or NEVER,
        borrow.get("policy") or NEVER,
        borrow.get("maxPriorityThreshold"),
        spec.get("queueingStrategy") or unset.strategy)


@dataclass(frozen=True)
class Flavor:
    """A ResourceFlavor; ``topology_name`` marks a TAS flavor, ``topology_levels`` are its
    Topology's levels (None while that Topology is missing)."""

    name: str
    node_labels: Mapping[str, str]
    node_taints: tuple[Taint, ...]
    tolerations: tuple[Toleration, ...]
    topology_name: str | None = None
    topology_levels: tuple[str, ...] | None = None


def tolerations_of(items: Any) -> tuple[Toleration, ...]:
    return tuple(Toleration(str(t.get("key") or ""), str(t.get("operator") or "Equal"),
                            str(t.get("value") or ""), str(t.get("effect") or ""))
                 for t in items or ())


def flavor_of(rf: Mapping[str, Any]) -> Flavor:
    """The ``Flavor`` of a ResourceFlavor dict."""
    spec = rf.get("spec") or {}
    taints = tuple(Taint(str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or ""))
                   for t in spec.get("nodeTaints") or ())
    return Flavor(rf["metadata"]["name"], dict(spec.get("nodeLabels") or {}), taints,
                  tolerations_of(spec.get("tolerations")), spec.get("topologyName") or None)


@dataclass(frozen=True)
class PodSetRequest:
    """One PodSet: its count, total requests (per pod x count, canonical units), the
    scheduling constraints flavor eligibility reads, and what topology-aware scheduling reads
    (one pod's requests, the ``topologyRequest``)."""

    name: str
    count: int
    requests: Mapping[str, int]
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity_terms: tuple[NodeSelectorTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    per_pod: Mapping[str, int] = field(default_factory=dict)
    topology: TopologyRequest | None = None


def podset_request(podset: Mapping[str, Any]) -> PodSetRequest:
    """The ``PodSetRequest`` of one ``spec.podSets[]`` entry of a Workload."""
    count = int(podset.get("count", 1))
    spec = (podset.get("template") or {}).get("spec") or {}
    per_pod = pod_resource_totals({"spec": spec}, keep_zero=True)
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = tuple(term_from_dict(term) for term in required.get("nodeSelectorTerms") or ())
    return PodSetRequest(str(podset.get("name", "main")), count,
                         {name: value * count for name, value in per_pod.items()},
                         dict(spec.get("nodeSelector") or {}), terms, tolerations_of(spec.get("tolerations")),
                         per_pod, parse_topology_request(podset.get("topologyRequest")))
