"""One node's allocation for a pod's pending claims, through ``gpusched.dra.allocator``, and
the outcomes kept per (node, claims) while they stay the allocator's answer.

Upstream's Filter calls ``Allocator.Allocate(node, claims)`` on every node for every pod
(``dynamicresources.go``), which is where DRA scheduling is slow. The allocator's answer depends
only on the claims' specs, the node (name, labels, the slices it sees, the classes) and the
devices in use there; so the outcome is kept under (node, the claims' specs) and reused:

- while the node's epoch is unchanged (``DraManager.epoch``: nothing taken or freed there);
- after devices were only *taken* on the node (``DraManager.added_since``), when the kept
  outcome is "no solution" (taking devices never makes one appear), or when the kept solution
  still fits: none of its devices taken and its counters still sufficient (checked at once when
  what was taken shares no device and no counter set with it). The allocator walks its
  candidates in a fixed order (pools, slices, devices) and returns the first complete solution;
  every candidate before the kept solution failed, and fails still with fewer devices and
  counters free, while the kept solution still fits, so it is still the first.

Worked example (8x H100 under DynamicMIG, one counter set per GPU): the kept answer for "one
1g.10gb" on node-7 is ``gpu-0-mig-1g10gb-19-0``. A pod then takes ``gpu-3-mig-3g40gb-9-0``
(counter set ``gpu-3-counter-set``): no overlap, the answer stands without running the
allocator. A pod taking ``gpu-0-mig-2g20gb-14-2`` consumes from ``gpu-0-counter-set`` (memory
slices 2 and 3): the 1g at 0 needs memory slice 0, still free, and GPU 0's other counters
(multiprocessors, engines, memory) still cover it, so it stands too. A pod taking the 1g at 0
itself makes the allocator run again; so does a device freed anywhere on the node (a claim
deallocated): an earlier candidate may now succeed.

Neighbours: ``helper.dra_manager`` (objects, epochs, devices in use), the plugin.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from gpusched.scheduler.plugins.helper.dra_manager import CounterKey, DeviceId, DraManager

if TYPE_CHECKING:     # the allocator is imported at its first call (``helper.dra_manager``)
    from gpusched.dra.model import Number

CANNOT_ALLOCATE = "cannot allocate all claims"
SHARED_RESULT = ("adminAccess", "shareID", "consumedCapacity")   # results not judged here


@dataclass(frozen=True, slots=True)
class NodeOutcome:
    """The allocator's answer on one node: the ``status.allocation`` of each claim (claim
    order), or why not (``reason``: the allocator's text, for ``explain``; ``error``: the same
    when the allocator failed with an error, e.g. a CEL runtime error, which upstream's Filter
    returns as an Error status)."""

    allocations: tuple[dict[str, Any], ...] | None
    reason: str = ""
    error: str = ""


def spec_signature(body: Mapping[str, Any]) -> str:
    """A claim's spec as one string: claims with equal specs allocate alike on a node."""
    return json.dumps(body.get("spec") or {}, sort_keys=True, separators=(",", ":"))


@dataclass(slots=True)
class _Kept:
    node_epoch: int
    global_epoch: int
    outcome: NodeOutcome
    touched: frozenset[tuple[str, str, str]]     # the solution's devices and counter sets
    devices: frozenset[DeviceId]                 # the solution's devices
    consumption: dict[CounterKey, Number] | None  # what they consume together (None: shares,
    #                                               consumed capacity or admin access: not judged)


class AllocationMemo:
    """Outcomes per (node, claims' specs); see the module docstring for when one is reused."""

    def __init__(self, manager: DraManager) -> None:
        self.manager = manager
        self._kept: dict[tuple[str, tuple[str, ...]], _Kept] = {}
        self._signatures: dict[tuple[str, str], str] = {}
        self.allocator_calls = 0

    def signature(self, claims: Sequence[dict[str, Any]]) -> tuple[str, ...]:
        out = []
        for body in claims:
            meta = body.get("metadata") or {}
            version = (str(meta.get("uid") or meta.get("name")), str(meta.get("resourceVersion") or ""))
            sig = self._signatures.get(version) if version[1] else None
            if sig is None:
                sig = spec_signature(body)
                if version[1]:
                    self._signatures[version] = sig
            out.append(sig)
        return tuple(out)

    def outcome(self, node: str, labels: Mapping[str, str], claims: Sequence[dict[str, Any]],
                signature: tuple[str, ...]) -> NodeOutcome:
        node_epoch, global_epoch = self.manager.epoch(node)
        kept = self._kept.get((node, signature))
        if kept is not None and kept.global_epoch == global_epoch:
            if kept.node_epoch == node_epoch or self._still_first(node, kept):
                kept.node_epoch = node_epoch
                return kept.outcome
        found = self._allocate(node, labels, claims)
        self._kept[(node, signature)] = self._keep(node_epoch, global_epoch, found)
        return found

    def _still_first(self, node: str, kept: _Kept) -> bool:
        """Only devices were taken on the node since and the kept answer stands: there was no
        solution, or what was taken is none of its devices and draws on none of its counter
        sets, or its devices are still free and its counters still suffice."""
        manager = self.manager
        taken = manager.added_since(node, kept.node_epoch)
        if taken is None:
            return False
        if kept.outcome.allocations is None:
            return True
        if not any(device in kept.touched or manager.counter_sets(device) & kept.touched
                   for device in taken):
            return True
        if kept.consumption is None or any(manager.holds(node, d) for d in kept.devices):
            return False
        used = manager.counters_used(node)
        for key, amount in kept.consumption.items():
            capacity = manager.counter_capacity(key)
            if capacity is None or used.get(key, 0) + amount > capacity:
                return False
        return True

    def _keep(self, node_epoch: int, global_epoch: int, found: NodeOutcome) -> _Kept:
        touched: set[tuple[str, str, str]] = set()
        devices: set[DeviceId] = set()
        consumption: dict[CounterKey, Number] | None = {}
        for allocation in found.allocations or ():
            for result in (allocation.get("devices") or {}).get("results") or ():
                device = (str(result.get("driver", "")), str(result.get("pool", "")),
                          str(result.get("device", "")))
                devices.add(device)
                touched.add(device)
                touched |= self.manager.counter_sets(device)
                if consumption is None or any(result.get(k) for k in SHARED_RESULT):
                    consumption = None
                    continue
                for key, value in self.manager.consumption(device).items():
                    consumption[key] = consumption.get(key, 0) + value
        return _Kept(node_epoch, global_epoch, found, frozenset(touched), frozenset(devices),
                     consumption)

    def _allocate(self, node: str, labels: Mapping[str, str],
                  claims: Sequence[dict[str, Any]]) -> NodeOutcome:
        from gpusched.dra.allocator import Allocated, NodeFacts, allocate
        manager = self.manager
        self.allocator_calls += 1
        answer = allocate([manager.parsed(body) for body in claims], NodeFacts(node, labels),
                          manager.node_slices(node), manager.classes, manager.in_use(node))
        if isinstance(answer, Allocated):
            return NodeOutcome(tuple(answer.allocations))
        return NodeOutcome(None, answer.reason, answer.reason if answer.error else "")
