"""What the allocated claims hold: the allocator's ``AllocatedState``.

``InUse.from_claims(claims)`` reads the claims' ``status.allocation`` as the scheduler's
``foreachAllocatedDevice`` does (``pkg/scheduler/framework/plugins/dynamicresources/
allocateddevices.go``):

- a result with ``adminAccess: true`` is not in use (admin access shares a device);
- a result with a ``shareID`` (a device that allows multiple allocations) is a share: its
  ``consumedCapacity`` adds to the device's aggregated capacity, and the device stays free for
  other shares;
- any other result is a dedicated device.

Counters a dedicated device consumes are not stored here: the allocator derives them from the
devices in use and the pools' slices (upstream ``checkAvailableCounters``), so a claim's
allocation never has to say what it consumed.

Neighbours: ``dra.model`` (claims), ``dra.allocator``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from gpusched.dra.model import Claim, Number, quantity

DeviceId = tuple[str, str, str]          # (driver, pool, device)


@dataclass(frozen=True)
class InUse:
    devices: frozenset[DeviceId] = frozenset()
    shares: frozenset[tuple[DeviceId, str]] = frozenset()
    capacity: Mapping[DeviceId, Mapping[str, Number]] = field(default_factory=dict)

    def cache(self, name: str) -> dict[Any, Any]:
        """A per-holdings cache the allocator keeps derived values in (counters left per pool)."""
        return self.__dict__.setdefault(f"_cache_{name}", {})  # type: ignore[no-any-return]

    def by_pool(self) -> dict[tuple[str, str], set[str]]:
        """Dedicated and shared device names per ``(driver, pool)`` (upstream
        ``IsDeviceAllocated``: a device with a share or consumed capacity counts as allocated
        when counters are computed)."""
        found = self.__dict__.get("_by_pool")
        if found is None:
            found = {}
            for driver, pool, device in (*self.devices, *(d for d, _ in self.shares), *self.capacity):
                found.setdefault((driver, pool), set()).add(device)
            object.__setattr__(self, "_by_pool", found)
        return found

    @staticmethod
    def from_claims(claims: Iterable[Claim]) -> InUse:
        devices: set[DeviceId] = set()
        shares: set[tuple[DeviceId, str]] = set()
        capacity: dict[DeviceId, dict[str, Number]] = {}
        for claim in claims:
            allocated = (claim.allocation or {}).get("devices")
            results = allocated.get("results") if isinstance(allocated, dict) else None
            for result in results if isinstance(results, list) else ():
                if not isinstance(result, dict) or result.get("adminAccess") is True:
                    continue
                device_id = (str(result.get("driver", "")), str(result.get("pool", "")),
                             str(result.get("device", "")))
                share = result.get("shareID")
                if share is None:
                    devices.add(device_id)
                    continue
                shares.add((device_id, str(share)))
                consumed = result.get("consumedCapacity")
                if isinstance(consumed, dict):
                    total = capacity.setdefault(device_id, {})
                    for name, value in consumed.items():
                        total[name] = total.get(name, 0) + quantity(value)
        return InUse(frozenset(devices), frozenset(shares), capacity)
