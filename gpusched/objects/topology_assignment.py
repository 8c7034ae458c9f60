"""Kueue's v1beta2 ``topologyAssignment``, compressed (``pkg/util/tas/tas_assignment.go``):
``levels`` and ``slices[]``, each ``{domainCount, valuesPerLevel[], podCounts}``; a level's values
are ``universal`` (one value for every domain) or ``individual`` (``prefix`` + ``roots[i]`` +
``suffix``, the longest prefix and suffix all share); pod counts are ``universal`` or
``individual``. v1beta1 wrote the same as a flat ``domains[{values, count}]`` list.

``encode`` writes one slice (``singleCompactTopologyAssignmentEncoding``; Kueue v0.19 may split
hostnames into several slices by prefix, which ``decode`` reads the same); ``to_v1beta1`` and
``from_v1beta1`` are the conversion webhook's two ways (``apis/kueue/v1beta1/workload_conversion.go``).

Neighbours: ``kueue_conversion`` (v1beta1), ``gpusched.kueue.tas_assignment`` (the typed side).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

Domain = tuple[tuple[str, ...], int]


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


def encode(levels: Sequence[str], domains: Sequence[Domain]) -> dict[str, Any]:
    """The v1beta2 ``topologyAssignment`` of (values, pod count) domains (one compact slice)."""
    out: dict[str, Any] = {"levels": list(levels), "slices": []}
    if not domains:
        return out
    counts = [count for _, count in domains]
    out["slices"].append({
        "domainCount": len(domains),
        "valuesPerLevel": [_level_values([values[n] for values, _ in domains]) for n in range(len(levels))],
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


def _domains(raw: Mapping[str, Any]) -> Iterator[Domain]:
    levels = raw.get("levels") or []
    for piece in raw.get("slices") or ():
        for index in range(int(piece.get("domainCount", 0))):
            values = tuple(_value_at(piece["valuesPerLevel"][n], index) for n in range(len(levels)))
            yield values, _count_at(piece.get("podCounts") or {}, index)


def decode(raw: Any) -> tuple[tuple[str, ...], list[Domain]] | None:
    """A v1beta2 ``topologyAssignment`` back as (levels, domains) (None when absent or not
    readable: a hand-written status)."""
    if not isinstance(raw, Mapping):
        return None
    try:
        return tuple(str(level) for level in raw.get("levels") or ()), list(_domains(raw))
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        return None


def to_v1beta1(raw: Any) -> Any:
    """``Convert_v1beta2_TopologyAssignment_To_v1beta1``: the flat ``domains`` list (an
    unreadable value is left as it is)."""
    found = decode(raw)
    if found is None:
        return raw
    levels, domains = found
    return {"levels": list(levels), "domains": [{"values": list(values), "count": count} for values, count in domains]}


def from_v1beta1(raw: Any) -> Any:
    """``Convert_v1beta1_TopologyAssignment_To_v1beta2``: flat ``domains`` compressed."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("domains"), list):
        return raw
    domains = [(tuple(str(v) for v in d.get("values") or ()), int(d.get("count") or 0))
               for d in raw["domains"] if isinstance(d, Mapping)]
    return encode([str(level) for level in raw.get("levels") or ()], domains)


