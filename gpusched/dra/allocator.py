"""Upstream's structured allocator: devices for a pod's claims on one node.

``allocate(claims, node, slices, classes, in_use)`` returns ``Allocated`` (one
``status.allocation`` per claim, as upstream writes it: results, config, nodeSelector) or
``Unallocatable`` (the reason; ``error`` tells an upstream *error* from "no solution").

The search is upstream's (``structured/internal/incubating/allocator_incubating.go``, the
allocator v1.36 runs with its default features):

1. Every request is checked first (its class exists, its count fits); an ``All`` request lists
   its devices now and fails if a pool is incomplete or invalid. A claim needing more than 32
   devices fails (``number of requested devices 33 exceeds the claim limit of 32``).
2. Depth-first: claims in order, requests in order, one device at a time. Devices are tried in
   pool order (driver, then pool name), slice order (by name), then the slice's own order; the
   next device of the same request starts after the previous one, so no combination is tried
   twice. A device is taken when it is free (or shareable), its class's and the request's
   selectors match, its taints are tolerated, its counters and capacity fit and the claim's
   constraints hold; when the rest cannot be completed, it is put back and the next tried.
3. A request with ``firstAvailable`` tries its subrequests in order; the first that completes
   the whole search wins (the plugin scores by its index).
4. The first complete solution wins. No solution with an invalid pool seen is
   ``invalid resource pools were encountered``.

Neighbours: ``dra.pools`` (what a node sees), ``dra.search`` (the depth-first part),
``dra.results`` (the allocation dicts), ``dra.in_use``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from gpusched.dra import requests, results
from gpusched.dra.in_use import InUse
from gpusched.dra.model import Claim, DeviceClass, Slice
from gpusched.dra.pools import NodeFacts, SliceSet
from gpusched.dra.search import Failure, Search, TooMany

__all__ = ["Allocated", "InUse", "NodeFacts", "SliceSet", "Unallocatable", "allocate", "first_available_score"]


@dataclass(frozen=True)
class Allocated:
    """Per claim (in the order given), its ``status.allocation``. ``steps``: how many search
    steps it took (upstream's ``NumAllocateOneInvocations``)."""
    allocations: tuple[dict[str, Any], ...]
    steps: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Unallocatable:
    """Why the claims cannot be allocated on the node. ``error``: upstream's ``Allocate``
    returned an error (the plugin's Filter reports an Error status with this text); otherwise
    the node simply has no solution (``cannot allocate all claims``) or an invalid pool."""
    reason: str
    error: bool = False
    steps: int = field(default=0, compare=False)


CANNOT_ALLOCATE = "cannot allocate all claims"


def allocate(claims: Sequence[Claim], node: NodeFacts, slices: Sequence[Slice],
             classes: Mapping[str, DeviceClass], in_use: InUse) -> Allocated | Unallocatable:
    """Allocate devices for ``claims`` (none allocated yet) on ``node``. Pass a ``SliceSet``
    to keep the pools per node between calls."""
    slice_set = slices if isinstance(slices, SliceSet) else SliceSet(slices)
    pools = slice_set.pools_for(node)
    search = Search(list(claims), node, pools, classes, in_use)
    try:
        requests.prepare(search)
        if not search.run():
            if any(pool.invalid for pool in pools):
                return Unallocatable("invalid resource pools were encountered", steps=search.steps)
            return Unallocatable(CANNOT_ALLOCATE, steps=search.steps)
        return Allocated(tuple(results.allocation(search, i) for i in range(len(search.claims))), search.steps)
    except Failure as failure:
        return Unallocatable(failure.message, failure.error, search.steps)
    except TooMany:
        return Unallocatable("allocation max size exceeded", True, search.steps)


FIRST_AVAILABLE_MAX = 8          # resourceapi.FirstAvailableDeviceRequestMaxSize


def first_available_score(claims: Sequence[Claim], allocated: Allocated) -> int:
    """The DynamicResources plugin's node score (``computeScore``): per allocated subrequest of
    a ``firstAvailable`` request, 8 minus its index, summed over the claims (index 0 scores 8,
    so a node serving everyone's first choice ranks highest; DefaultNormalizeScore follows)."""
    score = 0
    for claim, allocation in zip(claims, allocated.allocations):
        taken = {r.get("request") for r in allocation["devices"]["results"]}
        for request in claim.requests:
            score += sum(FIRST_AVAILABLE_MAX - i for i, sub in enumerate(request.first_available)
                         if f"{request.name}/{sub.name}" in taken)
    return score
