"""Topology-aware scheduling inside flavor assignment (the TAS steps at the end of Kueue's
``pkg/scheduler/flavorassigner/flavorassigner.go`` ``assignFlavors``, with
``tas_flavorassigner.go``):

1. quota said NoFit: nothing to place;
2. quota said Fit: each TAS PodSet is placed on its flavor's ``TopologySnapshot`` (PodSets of one
   Workload on one flavor see each other's pods); a PodSet that does not fit gets the "doesn't
   allow to fit" reason and the mode Preempt;
3. quota said Preempt (or step 2 failed): placed again as if every TAS workload were gone
   (``WithSimulateEmpty``): a PodSet that fits nowhere even then is NoFit
   (``TopologyPlacementFailed``); one that would fit waits.

Where upstream would then look for TAS workloads to preempt so the PodSet fits, gpusched waits:
a PodSet whose quota fits but whose topology is full is pending with ``WaitingForQuota`` and the
reason (mode ``NO_CANDIDATES``), and is retried on the next change. Quota preemption is unchanged.

Neighbours: ``tas`` (placement), ``flavors`` (the assignment it completes), ``cycle`` (calls
``place`` after nomination and ``record`` after an admission).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from gpusched.kueue.flavors import FIT, NO_CANDIDATES, NO_FIT, Assignment, PodSetAssignment, tas_requested
from gpusched.kueue.inputs import Flavor, PodSetRequest, QueuePolicy
from gpusched.kueue.tas import Key, PodSetTopology, TopologySnapshot

TOPOLOGY_PLACEMENT_FAILED = "TopologyPlacementFailed"


def tas_only(policy: QueuePolicy, flavors: Mapping[str, Flavor]) -> bool:
    """``IsTASOnly``: every flavor of every resource group is a TAS flavor."""
    names = [name for group in policy.groups for name in group.flavors]
    return bool(names) and all(name in flavors and flavors[name].topology_name for name in names)


def _request(podset: PodSetRequest) -> PodSetTopology:
    topology = podset.topology
    if topology is None or not topology.explicit:
        return PodSetTopology(podset.name, podset.count, podset.per_pod, node_selector=podset.node_selector,
                              affinity_terms=podset.affinity_terms, tolerations=podset.tolerations)
    return PodSetTopology(podset.name, podset.count, podset.per_pod, topology.required, topology.preferred,
                          topology.unconstrained, topology.slice_level, max(topology.slice_size, 1),
                          podset.node_selector, podset.affinity_terms, podset.tolerations)


def _flavor(assigned: PodSetAssignment, snapshots: Mapping[str, TopologySnapshot]) -> tuple[str, str]:
    """``onlyTASFlavor``: the PodSet's one TAS flavor, or the error."""
    names = sorted({choice.name for choice in assigned.flavors.values() if choice.name in snapshots})
    if not names:
        return "", "no TAS flavor assigned"
    if len(names) > 1:
        return "", f"more than one TAS flavor assigned: {', '.join(names)}"
    return names[0], ""


def _with_mode(assigned: PodSetAssignment, mode: int, reason: str = "") -> PodSetAssignment:
    flavors = {res: replace(choice, mode=mode) for res, choice in assigned.flavors.items()}
    return replace(assigned, flavors=flavors, reasons=assigned.reasons + ((reason,) if reason else ()))


def _no_fit(assigned: PodSetAssignment, reason: str = "") -> PodSetAssignment:
    return replace(assigned, flavors={}, no_fit_reason=TOPOLOGY_PLACEMENT_FAILED,
                   reasons=assigned.reasons + ((reason,) if reason else ()))


def _try(podsets: list[PodSetAssignment], wanted: Sequence[tuple[int, str, PodSetTopology]],
         snapshots: Mapping[str, TopologySnapshot], simulate_empty: bool) -> tuple[int, str]:
    """Place every wanted PodSet in order (each seeing the earlier ones' pods); the first that
    fails and its reason (-1 when all fit, their topologies written into ``podsets``)."""
    assumed: dict[str, dict[Key, dict[str, int]]] = {}
    for index, flavor, request in wanted:
        snapshot = snapshots[flavor]
        found, reason = snapshot.find(request, simulate_empty, assumed.get(flavor, {}))
        if found is None:
            return index, reason
        podsets[index] = replace(podsets[index], topology=found)
        used = assumed.setdefault(flavor, {})
        for domain in found.domains:
            leaf = snapshot.leaf_of(domain.values)
            if leaf is not None:
                totals = used.setdefault(leaf, {})
                for name, amount in {**request.per_pod, "pods": 1}.items():
                    totals[name] = totals.get(name, 0) + amount * domain.count
    return -1, ""


def place(assignment: Assignment, podsets: Sequence[PodSetRequest], snapshots: Mapping[str, TopologySnapshot],
          only_tas: bool) -> Assignment:
    """The assignment with each TAS PodSet's topology, or its mode changed as the module
    docstring says."""
    mode = assignment.mode()
    if mode == NO_FIT or not snapshots:
        return assignment
    out = list(assignment.podsets)
    wanted: list[tuple[int, str, PodSetTopology]] = []
    for index, (assigned, request) in enumerate(zip(out, podsets)):
        if not tas_requested(request, only_tas) or assigned.count == 0:
            continue
        flavor, error = _flavor(assigned, snapshots)
        if error:
            out[index] = _no_fit(assigned, error)
            return Assignment(tuple(out))
        wanted.append((index, flavor, _request(request)))
    if not wanted:
        return assignment
    if mode == FIT:
        failed, reason = _try(out, wanted, snapshots, simulate_empty=False)
        if failed < 0:
            return Assignment(tuple(out))
        out[failed] = _with_mode(out[failed], NO_CANDIDATES, reason)
    failed, _ = _try(list(out), wanted, snapshots, simulate_empty=True)
    if failed >= 0:
        out[failed] = _no_fit(out[failed])
    return Assignment(tuple(out))


def record(assignment: Assignment, podsets: Sequence[PodSetRequest], snapshots: Mapping[str, TopologySnapshot]) -> None:
    """An admitted Workload's pods count on their domains for the rest of the cycle."""
    for assigned, request in zip(assignment.podsets, podsets):
        if assigned.topology is None:
            continue
        flavor, error = _flavor(assigned, snapshots)
        if not error:
            snapshots[flavor].add_usage(assigned.topology, request.per_pod)
