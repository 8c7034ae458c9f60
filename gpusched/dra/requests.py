"""The allocator's first pass over the claims: every request checked, its class looked up, its
device count known, ``All`` requests listed; constraints set up (upstream ``Allocate`` before
``allocateOne``, and ``validateDeviceRequest``).

Error texts are upstream's, prefixed ``claim <namespace>/<name>, request <request>: ``.
"""

from __future__ import annotations

from gpusched.dra.constraints import ActiveConstraint
from gpusched.dra.model import Claim, Request
from gpusched.dra.pools import Candidate, candidates_of
from gpusched.dra.search import MAX_RESULTS, Failure, RequestData, Search


def _where(search: Search, ci: int, request: Request) -> str:
    return f"claim {search.claims[ci].key}, request {request.name}"


def _check(search: Search, ci: int, request: Request, parent: Request | None) -> RequestData:
    for i, expression in enumerate(request.selectors):
        if not expression:
            raise Failure(f"{_where(search, ci, request)}, selector #{i}: "
                          "CEL expression empty (unsupported selector type?)")
    if not request.device_class_name:
        raise Failure(f"{_where(search, ci, request)}: missing device class name (unsupported request type?)")
    klass = search.classes.get(request.device_class_name)
    if klass is None:
        raise Failure(f"{_where(search, ci, request)}: could not retrieve device class {request.device_class_name}: "
                      f'deviceclass.resource.k8s.io "{request.device_class_name}" not found')
    data = RequestData(request, parent, klass)
    if request.allocation_mode == "ExactCount":
        data.num_devices = request.count
    elif request.allocation_mode == "All":
        data.all_devices = _all_devices(search, ci, data)
        data.num_devices = len(data.all_devices)
    else:
        raise Failure(f"{_where(search, ci, request)}: unsupported count mode {request.allocation_mode}")
    return data


def _all_devices(search: Search, ci: int, data: RequestData) -> list[Candidate]:
    where = _where(search, ci, data.request)
    found: list[Candidate] = []
    for pool in search.pools:
        if pool.incomplete:
            raise Failure(f"{where}: asks for all devices, but resource pool {pool.pool_id} is currently being updated")
        if pool.invalid:
            raise Failure(f"{where}: asks for all devices, but resource pool {pool.pool_id} is currently invalid")
        candidates = candidates_of(pool)
        selected = search.selected(pool, data)
        for position in selected.positions:
            if position in selected.errors:
                raise search.selector_failure(ci, data, selected.errors[position])
            if search.capacity_fits(data, candidates[position]) is True:
                found.append(candidates[position])
    return found


def _claim(search: Search, ci: int, claim: Claim) -> None:
    minimum = 0
    for ri, request in enumerate(claim.requests):
        if request.first_available:
            fewest = None
            for si, sub in enumerate(request.first_available):
                data = _check(search, ci, sub, request)
                search.data[(ci, ri, si)] = data
                fewest = data.num_devices if fewest is None else min(fewest, data.num_devices)
            minimum += fewest or 0
        else:
            data = _check(search, ci, request, None)
            search.data[(ci, ri, 0)] = data
            minimum += data.num_devices
    if minimum > MAX_RESULTS:
        raise Failure(f"claim {claim.key}: number of requested devices {minimum} exceeds the claim limit of {MAX_RESULTS}")
    active = []
    for i, constraint in enumerate(claim.constraints):
        made = ActiveConstraint.of(constraint)
        if made is None:
            raise Failure(f"claim {claim.key}, constraint #{i}: empty constraint (unsupported constraint type?)")
        active.append(made)
    search.constraints.append(active)


def prepare(search: Search) -> None:
    search.results = [[] for _ in search.claims]
    for ci, claim in enumerate(search.claims):
        _claim(search, ci, claim)
