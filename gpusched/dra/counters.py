"""Shared counters of partitionable devices (KEP-4815) during one allocation: what a pool has
left after the allocated devices (``available``), what the search is taking (``taking``).

A device consuming counters fits when, for each counter it consumes, what the search already
takes plus its own amount stays within what is left; a pool already overdrawn by allocated
devices (a counter below zero) takes no device at all. That is upstream's
``checkAvailableCounters`` (which adds the device, then checks every counter of the pool):
counters the device does not touch were within bounds before it and stay so.

Worked example (one A100 under dynamic MIG: memory slices 0..7, one each): ``1g.10gb`` at
placement 3 consumes ``memory-slice-3``; a ``3g.40gb`` at placement 0 consumes slices 0..3 and no
longer fits once the first is taken, while the one at placement 4 still does.

What is left per pool is kept on the ``InUse`` it was computed from, so a node's claims are
counted once for every allocation against the same holdings.

Upstream: ``structured/internal/incubating/allocator_incubating.go``.
"""

from __future__ import annotations

from typing import Any

from gpusched.dra.in_use import InUse
from gpusched.dra.model import Device, Number
from gpusched.dra.pools import Pool

CounterKey = tuple[str, str]       # (counter set, counter)


def consumption(device: Device) -> tuple[tuple[CounterKey, Number], ...]:
    """A device's consumption, summed per counter (kept on the device)."""
    found: tuple[tuple[CounterKey, Number], ...] | None = device.cel.get("counters")
    if found is None:
        total: dict[CounterKey, Number] = {}
        for entry in device.consumes_counters:
            for name, amount in entry.counters.items():
                total[(entry.counter_set, name)] = total.get((entry.counter_set, name), 0) + amount
        found = tuple(total.items())
        device.cel["counters"] = found
    return found


def _left(pool: Pool, in_use: InUse) -> tuple[dict[CounterKey, Number], bool]:
    left: dict[CounterKey, Number] = {(s, c): v for s, counters in pool.counter_sets.items() for c, v in counters.items()}
    for name in in_use.by_pool().get((pool.driver, pool.name), ()):
        device = pool.devices_by_name.get(name)
        for key, amount in consumption(device) if device else ():
            if key in left:
                left[key] -= amount
    return left, any(v < 0 for v in left.values())


def available(pool: Pool, in_use: InUse) -> tuple[dict[CounterKey, Number], bool]:
    """What the pool has left per counter, and whether it is overdrawn."""
    cache: dict[int, Any] = in_use.cache("counters")
    found = cache.get(id(pool))
    if found is None or found[0] is not pool:
        found = (pool, *_left(pool, in_use))
        cache[id(pool)] = found
    return found[1], found[2]


class Taking:
    """What one search takes per pool and counter."""

    def __init__(self, in_use: InUse) -> None:
        self.in_use = in_use
        self.taken: dict[tuple[str, str, str], Number] = {}

    def fits_alone(self, pool: Pool, device: Device) -> bool:
        """Whether the device's counters fit what the pool has left, nothing else taken."""
        left, overdrawn = available(pool, self.in_use)
        return not overdrawn and all(amount <= left[key] for key, amount in consumption(device) if key in left)

    def take(self, pool: Pool, device: Device) -> bool:
        """Take the device's counters if they fit (``False``: nothing taken)."""
        left, overdrawn = available(pool, self.in_use)
        if overdrawn:
            return False
        pool_id = pool.pool_id
        needs = consumption(device)
        for key, amount in needs:
            if key in left and self.taken.get((pool_id, *key), 0) + amount > left[key]:
                return False
        for key, amount in needs:
            full = (pool_id, *key)
            self.taken[full] = self.taken.get(full, 0) + amount
        return True

    def give_back(self, pool: Pool, device: Device) -> None:
        pool_id = pool.pool_id
        for key, amount in consumption(device):
            self.taken[(pool_id, *key)] -= amount
