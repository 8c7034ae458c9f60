"""The allocator's depth-first search over one node's pools (upstream ``allocateOne``).

One ``Search`` per ``allocate`` call holds what the search is building: devices taken per claim
(``results``), which claims are taking which device (``taking``), capacity taken from shareable
devices (``taking_capacity``) and counters consumed per pool (``consumed``). Each step that takes
a device returns an undo, and a failed branch undoes it before trying the next device.

Neighbours: ``dra.allocator`` (the entry point and its docstring's walk-through),
``dra.requests`` (request checks), ``dra.results`` (what a solution becomes).
"""

from __future__ import annotations

import bisect
import uuid
from dataclasses import dataclass, field
from typing import Callable, Mapping

from gpusched.dra import capacity as cap
from gpusched.dra.constraints import ActiveConstraint
from gpusched.dra.counters import Taking
from gpusched.dra.in_use import DeviceId, InUse
from gpusched.dra.model import Claim, Device, DeviceClass, Number, Request
from gpusched.dra.pools import Candidate, NodeFacts, Pool, candidates_of
from gpusched.dra.selection import Matching, SelectorError, matching

MAX_RESULTS = 32                 # resourceapi.AllocationResultsMaxSize
_SHARE_IDS = uuid.UUID("6f1b3c1e-3d1a-4c55-9a43-2d6c0a7e5b10")


class Failure(Exception):
    """Allocation ends with this message; ``error`` as in ``Unallocatable``."""

    def __init__(self, message: str, error: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.error = error


class TooMany(Exception):
    """upstream ``errAllocationResultMaxSizeExceeded``: this branch would exceed 32 results."""


@dataclass
class RequestData:
    request: Request
    parent: Request | None
    klass: DeviceClass | None
    num_devices: int = 0
    all_devices: list[Candidate] | None = None
    selected: int = 0

    @property
    def name(self) -> str:
        return f"{self.parent.name}/{self.request.name}" if self.parent else self.request.name


@dataclass
class Taken:
    """One device in a claim's result."""
    candidate: Candidate
    data: RequestData
    admin_access: bool
    share_id: str | None = None
    consumed: dict[str, Number] | None = None


@dataclass
class Search:
    claims: list[Claim]
    node: NodeFacts
    pools: list[Pool]
    classes: Mapping[str, DeviceClass]
    in_use: InUse
    data: dict[tuple[int, int, int], RequestData] = field(default_factory=dict)
    constraints: list[list[ActiveConstraint]] = field(default_factory=list)
    results: list[list[Taken]] = field(default_factory=list)
    taking: dict[DeviceId, set[int]] = field(default_factory=dict)
    taking_capacity: dict[DeviceId, dict[str, Number]] = field(default_factory=dict)
    shares: dict[DeviceId, int] = field(default_factory=dict)
    steps: int = 0
    counting: Taking = field(init=False)

    def __post_init__(self) -> None:
        self.counting = Taking(self.in_use)

    def run(self) -> bool:
        """Search from the first device of the first request (``dra.requests.prepare`` first)."""
        return self.step(0, 0, 0, 0, False, (0, 0))

    # -- the walk ------------------------------------------------------------------------------

    def step(self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: tuple[int, int]) -> bool:
        """upstream ``allocateOne`` for device ``di`` of request ``(ci, ri, si)``."""
        self.steps += 1
        if ci >= len(self.claims):
            return True
        if ri >= len(self.claims[ci].requests):
            try:
                return self.step(ci + 1, 0, 0, 0, False, (0, 0))
            except TooMany:
                return False
        data = self.data[(ci, ri, si)]
        if not in_sub and data.parent is not None:
            return self._subrequests(ci, ri)
        if data.all_devices is not None and not data.all_devices:
            return False
        if di >= data.num_devices:
            return self.step(ci, ri + 1, 0, 0, False, (0, 0))
        if len(self.results[ci]) + data.num_devices - di > MAX_RESULTS:
            raise TooMany()
        if data.all_devices is not None:
            undo = self.take(ci, data, data.all_devices[di], must=True)
            if undo is None:
                return False
            return self._deeper(undo, ci, ri, si, di + 1, in_sub, (0, 0))
        return self._walk_pools(ci, ri, si, di, in_sub, start, data)

    def _subrequests(self, ci: int, ri: int) -> bool:
        all_too_many = True
        si = 0
        while (ci, ri, si) in self.data:
            try:
                done = self.step(ci, ri, si, 0, True, (0, 0))
            except TooMany:
                si += 1
                continue
            all_too_many = False
            if done:
                self.data[(ci, ri, 0)].selected = si
                return True
            si += 1
        if all_too_many:
            raise TooMany()
        return False

    def _walk_pools(self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: tuple[int, int],
                    data: RequestData) -> bool:
        admin = data.request.admin_access is True
        for pi in range(start[0], len(self.pools)):
            pool = self.pools[pi]
            if pool.incomplete or pool.invalid:
                continue
            candidates = candidates_of(pool)
            selected = self.selected(pool, data) if admin else self.viable(pool, data)
            first = bisect.bisect_left(selected.positions, start[1]) if pi == start[0] else 0
            for position in selected.positions[first:]:
                candidate = candidates[position]
                if admin and ci in self.taking.get(candidate.id, ()):
                    continue
                if not admin and self.in_use_now(candidate.id):
                    continue
                if position in selected.errors:
                    raise self.selector_failure(ci, data, selected.errors[position])
                if self.capacity_fits(data, candidate) is not True:
                    continue
                undo = self.take(ci, data, candidate, must=False)
                if undo is not None and self._deeper(undo, ci, ri, si, di + 1, in_sub, (pi, position + 1)):
                    return True
        return False

    def _deeper(self, undo: Callable[[], None], ci: int, ri: int, si: int, di: int, in_sub: bool,
                start: tuple[int, int]) -> bool:
        """The next step after taking a device; the device is put back when that fails (also
        when it ends the branch for exceeding 32 results, which a subrequest loop catches)."""
        try:
            if self.step(ci, ri, si, di, in_sub, start):
                return True
        except TooMany:
            undo()
            raise
        undo()
        return False

    # -- one device ----------------------------------------------------------------------------

    def in_use_now(self, device_id: DeviceId) -> bool:
        return device_id in self.in_use.devices or bool(self.taking.get(device_id))

    def selected(self, pool: Pool, data: RequestData) -> Matching:
        class_selectors = data.klass.selectors if data.klass is not None else ()
        return matching(pool, self.node, class_selectors, data.request.selectors)

    def viable(self, pool: Pool, data: RequestData) -> Matching:
        """The selected devices that are not held by allocated claims and whose counters fit
        what the pool has left: no other device can be taken by a request without admin access
        under these holdings (kept on the ``InUse``, so a full node answers at once)."""
        selected = self.selected(pool, data)
        cache: dict[tuple[int, int], tuple[Pool, Matching, Matching]] = self.in_use.cache("viable")
        key = (id(pool), id(selected))
        found = cache.get(key)
        if found is None or found[0] is not pool or found[1] is not selected:
            candidates = candidates_of(pool)
            kept = [p for p in selected.positions if candidates[p].id not in self.in_use.devices
                    and (candidates[p].device.allow_multiple_allocations or p in selected.errors
                         or self.counting.fits_alone(pool, candidates[p].device))]
            found = (pool, selected, Matching(kept, selected.errors))
            cache[key] = found
        return found[2]

    def selector_failure(self, ci: int, data: RequestData, error: SelectorError) -> Failure:
        """upstream's ``class <c>: selector #<i>: CEL compile error: ...`` (or ``claim <ns/n>``)."""
        owner = f"class {data.klass.name}" if error.in_class and data.klass else f"claim {self.claims[ci].key}"
        return Failure(f"{owner}: selector #{error.index}: CEL {error.kind} error: {error.text}")

    def capacity_fits(self, data: RequestData, candidate: Candidate) -> bool | None:
        allocated = self.in_use.capacity.get(candidate.id, {})
        return cap.fits(data.request.capacity_requests, candidate.device.capacity, allocated,
                        self.taking_capacity.get(candidate.id, {}))

    def _free_for(self, ci: int, data: RequestData, device_id: DeviceId, shareable: bool) -> bool:
        """The first checks of upstream ``allocateDevice``: admin access may take a device in
        use, but not twice for one claim; anything else needs a device nobody holds."""
        admin = data.request.admin_access is True
        if not shareable and admin and ci in self.taking.get(device_id, ()):
            return False
        return admin or not self.in_use_now(device_id)

    def take(self, ci: int, data: RequestData, candidate: Candidate, must: bool) -> Callable[[], None] | None:
        """upstream ``allocateDevice``: take the device for claim ``ci`` (``None``: it cannot be
        taken: counters, taints, capacity or a constraint) and return how to put it back."""
        device, device_id = candidate.device, candidate.id
        shareable = device.allow_multiple_allocations
        if not self._free_for(ci, data, device_id, shareable):
            return None
        sharing_already = shareable and (device_id in self.in_use.capacity or device_id in self.shares)
        counted = bool(device.consumes_counters) and not sharing_already
        if counted and not self.counting.take(candidate.pool, device):
            return None
        base, sub = (data.parent.name, data.request.name) if data.parent else (data.request.name, "")
        added = None
        if not _taint_blocks(device, data.request) and self.capacity_fits(data, candidate) is True:
            added = self._add_to_constraints(ci, base, sub, device)
            if added is None and must:
                self._release_counters(candidate, counted)
                raise Failure(f"claim {self.claims[ci].key}, request {data.request.name}: cannot add device "
                              f"{'/'.join(device_id)} because a claim constraint would not be satisfied")
        if added is None:
            self._release_counters(candidate, counted)
            return None
        taken = Taken(candidate, data, data.request.admin_access is True)
        self.taking.setdefault(device_id, set())
        if shareable:
            self._take_share(ci, taken)
        else:
            self.taking[device_id].add(ci)
        self.results[ci].append(taken)

        def undo() -> None:
            for constraint in added:
                constraint.remove(base, sub)
            self.taking[device_id].discard(ci)
            if taken.consumed is not None:
                self._return_share(taken)
            self._release_counters(candidate, counted)
            self.results[ci].pop()
        return undo

    def _take_share(self, ci: int, taken: Taken) -> None:
        """A share of a device that allows multiple allocations: its consumed capacity and a
        share id. Upstream draws a random UID; here it is derived from the claim, device,
        request and position, so a run is reproducible."""
        device_id, data = taken.candidate.id, taken.data
        taken.consumed = cap.consumed_capacity(data.request.capacity_requests, taken.candidate.device.capacity)
        taken.share_id = str(uuid.uuid5(_SHARE_IDS, f"{self.claims[ci].uid}/{'/'.join(device_id)}/"
                                        f"{data.name}/{len(self.results[ci])}"))
        total = self.taking_capacity.setdefault(device_id, {})
        for name, amount in taken.consumed.items():
            total[name] = total.get(name, 0) + amount
        self.shares[device_id] = self.shares.get(device_id, 0) + 1

    def _return_share(self, taken: Taken) -> None:
        device_id = taken.candidate.id
        total = self.taking_capacity[device_id]
        for name, amount in (taken.consumed or {}).items():
            total[name] -= amount
        self.shares[device_id] -= 1
        if not self.shares[device_id]:
            del self.shares[device_id], self.taking_capacity[device_id]

    def _add_to_constraints(self, ci: int, base: str, sub: str, device: Device) -> list[ActiveConstraint] | None:
        added: list[ActiveConstraint] = []
        for constraint in self.constraints[ci]:
            if not constraint.add(base, sub, device):
                for earlier in added:
                    earlier.remove(base, sub)
                return None
            added.append(constraint)
        return added

    def _release_counters(self, candidate: Candidate, counted: bool) -> None:
        if counted:
            self.counting.give_back(candidate.pool, candidate.device)


def _taint_blocks(device: Device, request: Request) -> bool:
    """upstream ``taintPreventsAllocation``: a NoSchedule or NoExecute taint no toleration of
    the request tolerates."""
    return any(taint.effect in ("NoSchedule", "NoExecute")
               and not any(t.tolerates(taint) for t in request.tolerations)
               for taint in device.taints)
