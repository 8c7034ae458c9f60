"""A TopologyAssignment in and out of a Workload's ``status.admission`` (v1beta2's compressed
form, ``objects.topology_assignment``), and which gated pod goes to which domain.

``pods_to_ungate`` is the topology ungater's choice (``pkg/controller/tas/topology_ungater.go``):
when every pod has a distinct rank (the PodSet's ``podIndexLabel``, a Job's completion index)
below the PodSet's count, rank r goes to the domain holding the r-th pod in assignment order;
otherwise, greedily, each domain gets gated pods (by name) until it holds its count, counting
pods already ungated into it. An ungated pod gets the domain's level labels in its
nodeSelector.

Neighbours: ``tas`` (the assignment), ``objects.topology_assignment`` (the codec), ``jobs``
(writes the admission); the controllers ungate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpusched.kueue.tas import DomainCount, TopologyAssignment
from gpusched.objects import topology_assignment as codec


def encode(assignment: TopologyAssignment) -> dict[str, Any]:
    """The v1beta2 ``topologyAssignment`` of an assignment, as Kueue v0.19 writes it."""
    return codec.encode(assignment.levels, [(d.values, d.count) for d in assignment.domains])


def decode(raw: Any) -> TopologyAssignment | None:
    """A ``topologyAssignment`` dict back as ``TopologyAssignment`` (None when absent or not
    readable)."""
    found = codec.decode(raw)
    if found is None:
        return None
    levels, domains = found
    return TopologyAssignment(levels, tuple(DomainCount(values, count) for values, count in domains))


@dataclass(frozen=True)
class PodView:
    """What the ungater reads of one pod of the PodSet."""

    name: str
    gated: bool
    node_selector: Mapping[str, str]
    rank: int | None = None


def _ranked(assignment: TopologyAssignment, pods: Sequence[PodView], count: int) -> list[tuple[str, DomainCount]] | None:
    """``readRanksIfAvailable``: rank -> domain, when every pod has a distinct rank below count."""
    ranks = [p.rank for p in pods]
    if any(r is None or not 0 <= r < count for r in ranks) or len(set(ranks)) != len(ranks):
        return None
    by_rank = [domain for domain in assignment.domains for _ in range(domain.count)]
    return [(p.name, by_rank[p.rank]) for p in pods if p.gated and p.rank is not None and p.rank < len(by_rank)]


def pods_to_ungate(assignment: TopologyAssignment, pods: Sequence[PodView], count: int) -> list[tuple[str, dict[str, str]]]:
    """(pod name, the nodeSelector labels it gets) for each gated pod that goes now."""
    chosen = _ranked(assignment, pods, count)
    if chosen is None:
        ungated: dict[tuple[str, ...], int] = {}
        for pod in pods:
            if not pod.gated:
                values = tuple(pod.node_selector.get(level, "") for level in assignment.levels)
                ungated[values] = ungated.get(values, 0) + 1
        gated = sorted((p for p in pods if p.gated), key=lambda p: p.name)
        chosen = []
        for domain in assignment.domains:
            room = max(domain.count - ungated.get(domain.values, 0), 0)
            taken = gated[len(chosen):len(chosen) + room]
            chosen += [(p.name, domain) for p in taken]
    return [(name, dict(zip(assignment.levels, domain.values))) for name, domain in chosen]
