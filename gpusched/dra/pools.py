"""Resource pools as the allocator sees them from one node (upstream ``GatherPools``).

A pool is the slices of one ``(driver, pool name)`` at its newest generation. From a node, the
relevant slices are those whose ``nodeName`` is the node, whose ``nodeSelector`` matches it,
``allNodes`` ones, ``perDeviceNodeSelection`` ones with a device for the node, and slices of
``sharedCounters``. A pool is

- *incomplete* when fewer slices of that generation exist than ``resourceSliceCount`` says (it is
  being updated: no device of it is allocated, and an ``All`` request fails on it);
- *invalid* when two of its slices name the same device, a counter set is defined twice, or a
  device consumes a counter set or counter the pool does not define;
- else usable: its slices sorted by name, each slice's devices in the slice's order.

Pools are sorted by driver, then pool name; pools with devices that have binding conditions go
last. Upstream: ``structured/internal/incubating/pools_incubating.go``.

``SliceSet`` is a tuple of slices that keeps, per node, the pools it gathered: the slices of a
snapshot are parsed once and their pools built once per node.

Neighbours: ``dra.model`` (slices), ``dra.allocator`` (the search).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from gpusched.dra.model import Device, Number, Slice
from gpusched.objects.selectors import node_selector_matches
from gpusched.objects.types import NodeSelectorTerm


@dataclass(frozen=True)
class NodeFacts:
    """What node selection reads of a node: its name and labels."""
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(eq=False)
class Pool:
    driver: str
    name: str
    incomplete: bool = False
    invalid_reason: str = ""
    slices: tuple[Slice, ...] = ()
    other_slices: tuple[Slice, ...] = ()
    counter_sets: dict[str, Mapping[str, Number]] = field(default_factory=dict)
    devices_by_name: dict[str, Device] = field(default_factory=dict)

    @property
    def invalid(self) -> bool:
        return bool(self.invalid_reason)

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.name}"


def node_matches(node: NodeFacts, node_name: str, all_nodes: bool,
                 terms: tuple[NodeSelectorTerm, ...] | None) -> bool:
    """upstream ``NodeMatches``."""
    if node_name:
        return node.name == node_name
    if all_nodes:
        return True
    if terms is not None:
        return node_selector_matches(terms, node.labels, node.name)
    return False


def _relevant(slice_: Slice, node: NodeFacts) -> bool:
    if slice_.shared_counters:
        return True
    if slice_.node_name or slice_.all_nodes or slice_.node_selector is not None:
        return node_matches(node, slice_.node_name, slice_.all_nodes, slice_.node_terms)
    if slice_.per_device_node_selection:
        return any(node_matches(node, d.node_name, d.all_nodes, d.node_terms) for d in slice_.devices)
    return False


def _newest(slices: Iterable[Slice]) -> dict[tuple[str, str], list[Slice]]:
    """upstream ``addSlice``: per pool, the slices of the highest generation seen."""
    pools: dict[tuple[str, str], list[Slice]] = {}
    for slice_ in slices:
        key = (slice_.driver, slice_.pool)
        found = pools.get(key)
        if found is None or slice_.generation > found[0].generation:
            pools[key] = [slice_]
        elif slice_.generation == found[0].generation:
            found.append(slice_)
    return pools


def _invalid_reason(device_slices: list[Slice], counter_slices: list[Slice],
                    consumers: Iterable[Slice]) -> tuple[str, dict[str, Mapping[str, Number]]]:
    names: set[str] = set()
    for slice_ in device_slices:
        for device in slice_.devices:
            if device.name in names:
                return f"duplicate device name {device.name}", {}
            names.add(device.name)
    counter_sets: dict[str, Mapping[str, Number]] = {}
    for slice_ in counter_slices:
        for counter_set in slice_.shared_counters:
            if counter_set.name in counter_sets:
                return f"duplicate counter set name {counter_set.name}", {}
            counter_sets[counter_set.name] = counter_set.counters
    for slice_ in consumers:
        for device in slice_.devices:
            for consumption in device.consumes_counters:
                counters = counter_sets.get(consumption.counter_set)
                if counters is None:
                    return f"counter set {consumption.counter_set} not found", {}
                for name in consumption.counters:
                    if name not in counters:
                        return f"counter {name} not found in counter set {consumption.counter_set}", {}
    return "", counter_sets


def _build_pool(driver: str, name: str, slices: list[Slice], others: list[Slice]) -> Pool:
    """upstream ``buildPool``: ``others`` are the pool's slices that do not target the node."""
    slices = sorted(slices, key=lambda s: s.name)
    device_slices = [s for s in slices if not s.shared_counters]
    counter_slices = [s for s in slices if s.shared_counters]
    reason, counter_sets = _invalid_reason(device_slices, counter_slices, [*slices, *others])
    if reason:
        return Pool(driver, name, invalid_reason=reason)
    return Pool(driver, name, slices=tuple(device_slices), other_slices=tuple(others),
                counter_sets=counter_sets,
                devices_by_name={d.name: d for s in (*device_slices, *others) for d in s.devices})


def _has_binding_conditions(pool: Pool) -> bool:
    return any(d.binding_conditions for s in pool.slices for d in s.devices)


def gather_pools(node: NodeFacts, slices: Sequence[Slice], candidates: Iterable[Slice] | None = None) -> list[Pool]:
    """The pools visible from ``node``, in the allocator's search order. ``candidates`` are the
    slices that may target the node (default: all of ``slices``)."""
    relevant = _newest(s for s in (slices if candidates is None else candidates) if _relevant(s, node))
    pools: list[Pool] = []
    for (driver, name), found in relevant.items():
        if len(found) == found[0].resource_slice_count:
            pools.append(_build_pool(driver, name, found, []))
        else:
            pools += _partly_targeting(driver, name, found, slices)
    pools.sort(key=lambda p: (_has_binding_conditions(p), p.driver, p.name))
    return pools


def _partly_targeting(driver: str, name: str, found: list[Slice], slices: Sequence[Slice]) -> list[Pool]:
    """A pool of which the node sees only some slices: obsolete (no pool) when a newer
    generation exists elsewhere, incomplete when slices are missing, else built with the
    slices that target other nodes (their counter consumption counts)."""
    generation, count = found[0].generation, found[0].resource_slice_count
    same_pool = [s for s in slices if s.driver == driver and s.pool == name]
    if any(s.generation > generation for s in same_pool):
        return []
    every = [s for s in same_pool if s.generation == generation]
    if len(every) != count:
        return [Pool(driver, name, incomplete=True)]
    targeting = {s.name for s in found}
    return [_build_pool(driver, name, found, [s for s in every if s.name not in targeting])]


class SliceSet(tuple[Slice, ...]):
    """The slices of one snapshot, with the pools gathered per node kept (a slice set is
    immutable, and so is what a node sees of it)."""

    _pools: dict[tuple[str, tuple[tuple[str, str], ...]], list[Pool]]
    _by_node: dict[str, list[Slice]] | None
    _shared: list[Slice]

    def __new__(cls, slices: Iterable[Slice]) -> SliceSet:
        made = super().__new__(cls, slices)
        made._pools = {}
        made._by_node = None
        made._shared = []
        return made

    def _candidates(self, node_name: str) -> list[Slice]:
        """upstream ``slicesOnNode[node] + slicesShared``."""
        if self._by_node is None:
            self._by_node = {}
            for slice_ in self:
                if slice_.node_name and not slice_.shared_counters:
                    self._by_node.setdefault(slice_.node_name, []).append(slice_)
                else:
                    self._shared.append(slice_)
        return [*self._by_node.get(node_name, ()), *self._shared]

    def pools_for(self, node: NodeFacts) -> list[Pool]:
        key = (node.name, tuple(sorted(node.labels.items())))
        found = self._pools.get(key)
        if found is None:
            found = gather_pools(node, self, self._candidates(node.name))
            self._pools[key] = found
        return found
