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


class SliceIndex:
    """The slices of a snapshot grouped for node lookups: device slices by node name, the other
    device slices (selectors, ``allNodes``, per-device selection), counter slices, and every
    slice by pool. Counter slices are relevant to every node (upstream treats them as shared);
    a pool a node sees only through them has no device for it, so it matters only when it is
    incomplete or invalid (``All`` requests and the error text), and that status does not depend
    on the node: it is computed once."""

    def __init__(self, slices: Iterable[Slice]) -> None:
        self.by_pool: dict[tuple[str, str], list[Slice]] = {}
        self.by_node: dict[str, list[Slice]] = {}
        self.selecting: list[Slice] = []
        self.counters: dict[tuple[str, str], list[Slice]] = {}
        self._foreign: list[Pool] | None = None
        for slice_ in slices:
            key = (slice_.driver, slice_.pool)
            self.by_pool.setdefault(key, []).append(slice_)
            if slice_.shared_counters:
                self.counters.setdefault(key, []).append(slice_)
            elif slice_.node_name:
                self.by_node.setdefault(slice_.node_name, []).append(slice_)
            else:
                self.selecting.append(slice_)

    def foreign(self) -> list[Pool]:
        """Incomplete or invalid pools as seen through their counter slices alone."""
        if self._foreign is None:
            self._foreign = [pool for key, found in _newest(s for c in self.counters.values() for s in c).items()
                             for pool in self._pools_of(key, found) if pool.incomplete or pool.invalid]
        return self._foreign

    def _pools_of(self, key: tuple[str, str], found: list[Slice]) -> list[Pool]:
        if len(found) == found[0].resource_slice_count:
            return [_build_pool(key[0], key[1], found, [])]
        return _partly_targeting(key[0], key[1], found, self.by_pool.get(key, []))

    def gather(self, node: NodeFacts) -> list[Pool]:
        """upstream ``GatherPools`` for ``node``, in the allocator's search order."""
        devices = [s for s in (*self.by_node.get(node.name, ()), *self.selecting) if _relevant(s, node)]
        mine = {(s.driver, s.pool) for s in devices}
        counters = [s for key in mine for s in self.counters.get(key, ())]
        pools = [pool for key, found in _newest([*devices, *counters]).items() for pool in self._pools_of(key, found)]
        pools += [pool for pool in self.foreign() if (pool.driver, pool.name) not in mine]
        pools.sort(key=lambda p: (_has_binding_conditions(p), p.driver, p.name))
        return pools


def gather_pools(node: NodeFacts, slices: Sequence[Slice]) -> list[Pool]:
    """The pools visible from ``node``, in the allocator's search order."""
    return SliceIndex(slices).gather(node)


def _partly_targeting(driver: str, name: str, found: list[Slice], same_pool: Sequence[Slice]) -> list[Pool]:
    """A pool of which the node sees only some slices: obsolete (no pool) when a newer
    generation exists elsewhere, incomplete when slices are missing, else built with the
    slices that target other nodes (their counter consumption counts)."""
    generation, count = found[0].generation, found[0].resource_slice_count
    if any(s.generation > generation for s in same_pool):
        return []
    every = [s for s in same_pool if s.generation == generation]
    if len(every) != count:
        return [Pool(driver, name, incomplete=True)]
    targeting = {s.name for s in found}
    return [_build_pool(driver, name, found, [s for s in every if s.name not in targeting])]


@dataclass(frozen=True)
class Candidate:
    """A device as the search meets it: with its slice, its pool and its id."""
    device: Device
    slice: Slice
    pool: Pool
    id: tuple[str, str, str]


def candidates_of(pool: Pool) -> list[Candidate]:
    """The pool's devices in search order: slices by name, each slice's devices in its order
    (kept on the pool)."""
    found: list[Candidate] | None = pool.__dict__.get("_candidates")
    if found is None:
        found = [Candidate(device, slice_, pool, (pool.driver, pool.name, device.name))
                 for slice_ in pool.slices for device in slice_.devices]
        pool.__dict__["_candidates"] = found
    return found


class SliceSet(tuple[Slice, ...]):
    """The slices of one snapshot, with the pools gathered per node kept (a slice set is
    immutable, and so is what a node sees of it)."""

    _pools: dict[str, tuple[dict[str, str], list[Pool]]]
    _index: SliceIndex | None

    def __new__(cls, slices: Iterable[Slice]) -> SliceSet:
        made = super().__new__(cls, slices)
        made._pools = {}
        made._index = None
        return made

    def pools_for(self, node: NodeFacts) -> list[Pool]:
        """The node's pools (kept per node name, gathered again when its labels differ)."""
        found = self._pools.get(node.name)
        if found is None or found[0] != node.labels:
            if self._index is None:
                self._index = SliceIndex(self)
            found = (dict(node.labels), self._index.gather(node))
            self._pools[node.name] = found
        return found[1]
