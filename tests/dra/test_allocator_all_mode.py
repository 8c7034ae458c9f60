"""``allocationMode: All`` and admin access. Each case is named after the case of upstream's
table it reproduces (``kubernetes/dynamic-resource-allocation`` v0.36.2,
``structured/internal/allocatortesting/allocator_testing.go``). The ``admin-access-disabled``
case is left out: ``DRAAdminAccess`` is GA and locked on in v1.36."""

from __future__ import annotations

import pytest

from tests.dra.builders import (CLAIM0, CLAIM1, CLASS_A, CLASS_B, DEVICE1, DEVICE2, DRIVER_A, DRIVER_B, NODE1,
                                POOL1, POOL2, REQ0, REQ1, SLICE1, SLICE2, SUB0, SUB1, Case, all_request,
                                allocation, claim, consumes, counter_set, device, device_class, local,
                                one_device, pool, prioritized, request, result, run, slice_with, sub_request,
                                used)

A = [device_class(CLASS_A, DRIVER_A)]
AB = [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)]
TWO_DEVICES = slice_with(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))
ALL_FIRST = prioritized(REQ0, sub_request(SUB0, CLASS_A, mode="All"), sub_request(SUB1, CLASS_B, 1))
D1_A = (DRIVER_A, POOL1, DEVICE1)

CASES = {
    "all-devices-single": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=A,
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),)),
    "all-devices-with-consumed-counters": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A,
                           device(DEVICE1, consumesCounters=[consumes("counter-set-1", memory="4Gi")])),
                slice_with(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, counter_sets=[counter_set("counter-set-1", memory="8Gi")])],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),)),
    "all-devices-many": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=A,
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE1, NODE1, POOL2, DRIVER_A)],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL2, DEVICE1)),)),
    "all-devices-of-the-incomplete-pool": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=A,
        slices=[one_device(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A)],
        error="claim claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is currently being updated"),
    "all-devices-plus-another": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_B))], classes=AB,
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),
                allocation(local(NODE1), result(REQ0, DRIVER_B, POOL1, DEVICE1)))),
    "all-devices-plus-another-reversed": Case(
        claims=[claim(CLAIM1, request(REQ0, CLASS_B)), claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=AB,
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_B, POOL1, DEVICE1)),
                allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)))),
    "all-devices-many-plus-another": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_B))], classes=AB,
        slices=[TWO_DEVICES, one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL1, DEVICE2)),
                allocation(local(NODE1), result(REQ0, DRIVER_B, POOL1, DEVICE1)))),
    "all-devices-many-plus-another-reversed": Case(
        claims=[claim(CLAIM1, request(REQ0, CLASS_B)), claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=AB,
        slices=[TWO_DEVICES, one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_B, POOL1, DEVICE1)),
                allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL1, DEVICE2)))),
    "all-devices-no-solution": Case(
        claims=[claim(CLAIM1, request(REQ0, CLASS_A)), claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=A,
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)]),
    "all-devices-no-solution-reversed": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_A))], classes=A,
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)]),
    "all-devices-slice-without-devices": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=A, slices=[slice_with(SLICE1, NODE1, POOL1, DRIVER_A)]),
    "all-devices-no-slices": Case(claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=A),
    "all-devices-some-allocated": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=A, slices=[TWO_DEVICES], in_use=used(D1_A)),
    "all-devices-some-allocated-admin-access": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, adminAccess=True))], classes=A, slices=[TWO_DEVICES],
        in_use=used(D1_A),
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1, True),
                           result(REQ0, DRIVER_A, POOL1, DEVICE2, True)),)),
    "all-devices-some-allocating-admin-access": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, adminAccess=True), all_request(REQ1, CLASS_A, adminAccess=True))],
        classes=A, slices=[TWO_DEVICES]),
    "count-devices-some-allocated-admin-access": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2, adminAccess=True))], classes=A, slices=[TWO_DEVICES],
        in_use=used(D1_A),
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1, True),
                           result(REQ0, DRIVER_A, POOL1, DEVICE2, True)),)),
    "separate-claims-share-device-admin-access": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, adminAccess=True)), claim(CLAIM1, request(REQ0, CLASS_A, adminAccess=True))],
        classes=A, slices=[TWO_DEVICES],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1, True)),
                allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1, True)))),
    "admin-access-claims-device-allocating-for-non-admin-access": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_A, adminAccess=True))],
        classes=A, slices=[TWO_DEVICES],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),
                allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1, True)))),
    "all-devices-slice-without-devices-prioritized-list": Case(
        claims=[claim(CLAIM0, ALL_FIRST)], classes=AB,
        slices=[slice_with(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE2, NODE1, POOL2, DRIVER_B)],
        expect=(allocation(local(NODE1), result("req-0/subReq-1", DRIVER_B, POOL2, DEVICE1)),)),
    "all-devices-no-slices-prioritized-list": Case(
        claims=[claim(CLAIM0, ALL_FIRST)], classes=AB, slices=[one_device(SLICE2, NODE1, POOL2, DRIVER_B)],
        expect=(allocation(local(NODE1), result("req-0/subReq-1", DRIVER_B, POOL2, DEVICE1)),)),
    "all-devices-some-allocated-prioritized-list": Case(
        claims=[claim(CLAIM0, ALL_FIRST)], classes=AB, slices=[TWO_DEVICES, one_device(SLICE2, NODE1, POOL2, DRIVER_B)],
        in_use=used(D1_A),
        expect=(allocation(local(NODE1), result("req-0/subReq-1", DRIVER_B, POOL2, DEVICE1)),)),
    "already-allocated-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A, slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        in_use=used(D1_A, (DRIVER_A, POOL1, DEVICE2))),
    "admin-access-enabled": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, adminAccess=True))], classes=A,
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)], in_use=used(D1_A, (DRIVER_A, POOL1, DEVICE2)),
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1, True)),)),
    "allocation-mode-all-with-multi-host-resource-pool": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
                slice_with(SLICE2, "node-2", pool(POOL1, 2), DRIVER_A, device(DEVICE2))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),)),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_upstream_case(case: Case) -> None:
    run(case)
