"""A TopologyAssignment in and out of a Workload's ``status.admission``, and which gated pod
goes to which domain.

v1beta2 stores an assignment compressed (``pkg/util/tas/tas_assignment.go``): ``levels`` and
``slices[]``, each ``{domainCount, valuesPerLevel[], podCounts}``; a level's values are
``universal`` (one value for every domain) or ``individual`` (``prefix`` + ``roots[i]`` +
``suffix``, the longest prefix and suffix all share); pod counts are ``universal`` or
``individual``. ``encode`` writes one slice (``singleCompactTopologyAssignmentEncoding``; Kueue
v0.19 may split hostnames into several slices by prefix, which ``decode`` reads the same).

``pods_to_ungate`` is the topology ungater's choice (``pkg/controller/tas/topology_ungater.go``):
when every pod has a distinct rank (the PodSet's ``podIndexLabel``, a Job's completion index)
below the PodSet's count, rank r goes to the domain holding the r-th pod in assignment order;
otherwise, greedily, each domain gets gated pods (by name) until it holds its count, counting
pods already ungated into it. An ungated pod gets the domain's level labels in its
nodeSelector.

Neighbours: ``tas`` (the assignment), ``jobs`` (writes the admission); the controllers ungate.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpusched.kueue.tas import DomainCount, TopologyAssignment


def _common(values: Sequence[str]) -> tuple[str, str]:
    """``fillSingleCompactSliceValues``: the longest common prefix, then suffix, of ``values``,
    the suffix cut so prefix + suffix never exceed the shortest value."""
    prefix, suffix = values[0], values[0]
    for value in values[1:]:
        prefix = prefix[:next((i for i, (a, b) in enumerate(zip(prefix, value)) if a != b), min(len(prefix), len(value)))]
        common = next((i for i, (a, b) in enumerate(zip(reversed(suffix), reversed(value))) if a != b),
                      min(len(suffix), len(value)))
        suffix = suffix[len(suffix) - common:]
    shortest = min(len(v) for v in values)
    if len(prefix) + len(suffix) > shortest:
        prefix = prefix[:shortest - len(suffix)]
    return prefix, suffix


def _level_values(values: Sequence[str]) -> dict[str, Any]:
    if all(v == values[0] for v in values):
        return {"universal": values[0]}
    prefix, suffix = _common(values)
    individual: dict[str, Any] = {}
    if prefix:
        individual["prefix"] = prefix
    if suffix:
        individual["suffix"] = suffix
    individual["roots"] = [v[len(prefix):len(v) - len(suffix)] for v in values]
    return {"individual": individual}


def encode(assignment: TopologyAssignment) -> dict[str, Any]:
    """The v1beta2 ``topologyAssignment`` of an assignment (one compact slice)."""
    out: dict[str, Any] = {"levels": list(assignment.levels), "slices": []}
    domains = assignment.domains
    if not domains:
        return out
    counts = [d.count for d in domains]
    out["slices"].append({
        "domainCount": len(domains),
        "valuesPerLevel": [_level_values([d.values[n] for d in domains]) for n in range(len(assignment.levels))],
        "podCounts": {"universal": counts[0]} if len(set(counts)) == 1 else {"individual": counts},
    })
    return out


def _value_at(values: Mapping[str, Any], index: int) -> str:
    if "universal" in values:
        return str(values["universal"])
    individual = values.get("individual") or {}
    return f"{individual.get('prefix', '')}{individual['roots'][index]}{individual.get('suffix', '')}"


def _count_at(counts: Mapping[str, Any], index: int) -> int:
    return int(counts["universal"]) if "universal" in counts else int(counts["individual"][index])


def _domains(raw: Mapping[str, Any]) -> Iterator[DomainCount]:
    levels = raw.get("levels") or []
    for piece in raw.get("slices") or ():
        for index in range(int(piece.get("domainCount", 0))):
            values = tuple(_value_at(piece["valuesPerLevel"][n], index) for n in range(len(levels)))
            yield DomainCount(values, _count_at(piece.get("podCounts") or {}, index))


def decode(raw: Any) -> TopologyAssignment | None:
    """A ``topologyAssignment`` dict back as ``TopologyAssignment`` (None when absent or not
    readable: a hand-written status)."""
    if not isinstance(raw, Mapping):
        return None
    try:
        return TopologyAssignment(tuple(raw.get("levels") or ()), tuple(_domains(raw)))
    except (KeyError, IndexError, TypeError, ValueError):
        return None


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
