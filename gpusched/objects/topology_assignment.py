"""Kueue's v1beta2 ``topologyAssignment``, compressed (``pkg/util/tas/tas_assignment.go``):
``levels`` and ``slices[]``, each ``{domainCount, valuesPerLevel[], podCounts}``; a level's values
are ``universal`` (one value for every domain) or ``individual`` (``prefix`` + ``roots[i]`` +
``suffix``, the longest prefix and suffix all share); pod counts are ``universal`` or
``individual``. v1beta1 wrote the same as a flat ``domains[{values, count}]`` list.

``encode`` writes what Kueue v0.19 writes: consecutive hostnames sharing a ``-``-ended prefix
form one slice each, unless one compact slice is shorter; ``to_v1beta1`` and
``from_v1beta1`` are the conversion webhook's two ways (``apis/kueue/v1beta1/workload_conversion.go``).

Neighbours: ``kueue_conversion`` (v1beta1), ``gpusched.kueue.tas_assignment`` (the typed side).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from itertools import groupby
from typing import Any

Domain = tuple[tuple[str, ...], int]
HOSTNAME = "kubernetes.io/hostname"
MAX_DOMAINS_PER_SLICE = 100_000     # maxDomainsPerTopologyAssignmentSlice
MAX_SLICES = 1_000                  # maxTopologyAssignmentSlices


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


def _slice(levels: Sequence[str], domains: Sequence[Domain]) -> dict[str, Any]:
    """``compactSliceEncoding``: one slice of ``domains``."""
    counts = [count for _, count in domains]
    return {
        "domainCount": len(domains),
        "valuesPerLevel": [_level_values([values[n] for values, _ in domains]) for n in range(len(levels))],
        "podCounts": {"universal": counts[0]} if len(set(counts)) == 1 else {"individual": counts},
    }


def _prefixes(hostname: str) -> list[str]:
    """Every ``-``-ended prefix of a hostname, shortest first (``indexHostnamePrefixes``)."""
    return [hostname[:end + 1] for end in range(len(hostname) - 1) if hostname[end] == "-"]


def _prefix_keys(hostnames: Sequence[str]) -> list[str] | None:
    """``selectHostnamePrefixKeys``: each hostname's longest prefix another hostname shares,
    backing off to shorter ones while the runs would need more than ``MAX_SLICES`` slices."""
    candidates = [_prefixes(h) for h in hostnames]
    seen: dict[str, int] = {}
    for prefixes in candidates:
        for prefix in prefixes:
            seen[prefix] = seen.get(prefix, 0) + 1
    for depth in range(max((len(c) for c in candidates), default=0), 0, -1):
        keys = [next((p for p in reversed(c[:depth]) if seen[p] >= 2), "") for c in candidates]
        runs = [len(list(group)) for _, group in groupby(keys)]
        if sum(-(-n // MAX_DOMAINS_PER_SLICE) for n in runs) <= MAX_SLICES:
            return keys
    return None


def by_hostname_prefix(levels: Sequence[str], domains: Sequence[Domain]) -> dict[str, Any]:
    """``compactTopologyAssignmentEncodingWithHostnamePrefixRuns``: consecutive domains that share
    a hostname prefix form one slice (each at most ``MAX_DOMAINS_PER_SLICE`` domains)."""
    keys = None
    if len(domains) > 1 and levels and levels[-1] == HOSTNAME:
        keys = _prefix_keys([values[-1] for values, _ in domains])
    out: dict[str, Any] = {"levels": list(levels), "slices": []}
    start = 0
    for _, group in groupby(keys if keys is not None else [""] * len(domains)):
        size = len(list(group))
        for chunk in range(start, start + size, MAX_DOMAINS_PER_SLICE):
            out["slices"].append(_slice(levels, domains[chunk:min(chunk + MAX_DOMAINS_PER_SLICE, start + size)]))
        start += size
    return out


def _size(encoded: dict[str, Any]) -> int:
    return len(json.dumps(encoded, separators=(",", ":")))


def encode(levels: Sequence[str], domains: Sequence[Domain]) -> dict[str, Any]:
    """The v1beta2 ``topologyAssignment`` of (values, pod count) domains, as Kueue v0.19 writes
    it (``V1Beta2From`` with ``TASAssignmentsEncodingByHostnamePrefix``, beta and on): the
    hostname-prefix runs, unless they are more than one slice and the single compact slice
    (``singleCompactTopologyAssignmentEncoding``) is shorter as JSON."""
    by_prefix = by_hostname_prefix(levels, domains)
    if len(by_prefix["slices"]) <= 1 or len(domains) > MAX_DOMAINS_PER_SLICE:
        return by_prefix
    single = {"levels": list(levels), "slices": [_slice(levels, domains)]}
    return single if _size(single) < _size(by_prefix) else by_prefix


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


