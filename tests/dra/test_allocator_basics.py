"""The structured allocator's basic cases: one request after another, backtracking, pools and
slices, missing classes. Each case is named after the case of upstream's table it reproduces
(``kubernetes/dynamic-resource-allocation`` v0.36.2,
``structured/internal/allocatortesting/allocator_testing.go``, ``TestAllocator``; the
``lexicographical-*`` cases are ``lexicographical_testing.go``)."""

from __future__ import annotations

import pytest

from tests.dra.builders import (CLAIM0, CLAIM1, CLASS_A, DEVICE1, DEVICE2, DEVICE3, DRIVER_A, DRIVER_B, NODE1,
                                NODE2, POOL1, POOL2, POOL3, REGION2, REQ0, REQ1, SLICE1, SLICE2, SLICE3,
                                Case, allocation, claim, device, device_class, local, node, one_device, pool,
                                request, result, run, slice_with)

MEMORY_1GI = 'device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0'
MEMORY_2GI = 'device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0'
SMALL_LARGE = [device(DEVICE2, {"memory": "2Gi"}), device(DEVICE1, {"memory": "1Gi"})]

CASES = {
    "simple": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),)),
    "other-node": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_B), one_device(SLICE2, NODE2, POOL2, DRIVER_A)],
        node=node(NODE2, REGION2),
        expect=(allocation(local(NODE2), result(REQ0, DRIVER_A, POOL2, DEVICE1)),)),
    "small-and-large": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, MEMORY_1GI), request(REQ1, CLASS_A, 1, MEMORY_2GI))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with(SLICE1, NODE1, POOL1, DRIVER_A, *reversed(SMALL_LARGE))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1),
                           result(REQ1, DRIVER_A, POOL1, DEVICE2)),)),
    "small-and-large-backtrack-requests": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, MEMORY_1GI), request(REQ1, CLASS_A, 1, MEMORY_2GI))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with(SLICE1, NODE1, POOL1, DRIVER_A, *SMALL_LARGE)],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1),
                           result(REQ1, DRIVER_A, POOL1, DEVICE2)),)),
    "small-and-large-backtrack-claims": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, MEMORY_1GI)), claim(CLAIM1, request(REQ1, CLASS_A, 1, MEMORY_2GI))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with(SLICE1, NODE1, POOL1, DRIVER_A, *SMALL_LARGE)],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),
                allocation(local(NODE1), result(REQ1, DRIVER_A, POOL1, DEVICE2)))),
    "devices-split-across-different-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))], classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE2, NODE1, POOL2, DRIVER_A)],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1),
                           result(REQ0, DRIVER_A, POOL2, DEVICE1)),)),
    "obsolete-slice": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with("slice-1-obsolete", NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
                slice_with("slice-1-obsolete", NODE1, pool(POOL1, 2, generation=2), DRIVER_A, device(DEVICE2))]),
    "duplicate-slice": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[one_device(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A), one_device(SLICE1 + "-2", NODE1, pool(POOL1, 2), DRIVER_A)],
        error="invalid resource pools were encountered"),
    "no-slices": Case(claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=[device_class(CLASS_A, DRIVER_A)]),
    "not-enough-suitable-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A)), claim(CLAIM0, request(REQ1, CLASS_A))],
        classes=[device_class(CLASS_A, DRIVER_A)], slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)]),
    "no-classes": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="could not retrieve device class class-a"),
    "unknown-class": Case(
        claims=[claim(CLAIM0, request(REQ0, "unknown-class"))], classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)], error="could not retrieve device class unknown-class"),
    "empty-class": Case(
        claims=[claim(CLAIM0, request(REQ0, ""))], classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim claim-0, request req-0: missing device class name (unsupported request type?)"),
    "lexicographical-sorting-pools": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))], classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[one_device(SLICE1, NODE1, POOL3, DRIVER_A), one_device(SLICE2, NODE1, POOL2, DRIVER_A),
                one_device(SLICE3, NODE1, POOL1, DRIVER_A)],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1),
                           result(REQ0, DRIVER_A, POOL2, DEVICE1)),)),
    "lexicographical-sorting-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))], classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with(SLICE3, NODE1, pool(POOL1, 3), DRIVER_A, device(DEVICE3)),
                slice_with(SLICE2, NODE1, pool(POOL1, 3), DRIVER_A, device(DEVICE2)),
                slice_with(SLICE1, NODE1, pool(POOL1, 3), DRIVER_A, device(DEVICE1))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1),
                           result(REQ0, DRIVER_A, POOL1, DEVICE2)),)),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_upstream_case(case: Case) -> None:
    run(case)


def test_no_claims_to_allocate_is_an_empty_solution() -> None:
    """upstream ``no-claims-to-allocate``: nothing asked, nothing allocated, no error."""
    from gpusched.dra.allocator import Allocated, InUse, allocate
    got = allocate([], node(), [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
                   {CLASS_A: device_class(CLASS_A, DRIVER_A)}, InUse())
    assert got == Allocated(())
