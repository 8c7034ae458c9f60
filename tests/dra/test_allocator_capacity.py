"""Consumable capacity (KEP-5075, beta and on in v1.36): devices that allow multiple
allocations, request policies and shares. Each case is named after the case of upstream's table
it reproduces (``kubernetes/dynamic-resource-allocation`` v0.36.2,
``structured/internal/allocatortesting/allocator_testing.go``; the ``*-disabled-feature`` cases
are left out). Share IDs compare as upstream's harness compares them: replaced by a fixed one."""

from __future__ import annotations

from typing import Any

import pytest

from tests.dra.builders import (CAPACITY0, CAPACITY1, CLAIM0, CLAIM1, CLASS_A, COUNTER_SET1, COUNTER_SET2, DEVICE1,
                                DEVICE2, DEVICE3, DRIVER_A, FIXED_SHARE_ID, NODE1, POOL1, REQ0, REQ1, REQ2,
                                STRING_ATTRIBUTE, SUB0, SUB1, Case, all_request, allocation, claim, consumes,
                                counter_device, counter_set, device, device_class, local, match, multi_class, node, pool,
                                prioritized, range_policy, request, result, run, share, slice_with, sub_request, used,
                                values_policy)

MULTI = [multi_class(CLASS_A, DRIVER_A, True)]
DEDICATED = [multi_class(CLASS_A, DRIVER_A, False)]
A = [device_class(CLASS_A, DRIVER_A)]
D1 = (DRIVER_A, POOL1, DEVICE1)


def asks(amount: str) -> dict[str, Any]:
    return {"capacity": {"requests": {CAPACITY0: amount}}}


def shared(name: str, capacity: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return device(name, capacity, allowMultipleAllocations=True, **extra)


def one_slice(*devices: dict[str, Any]) -> list[Any]:
    return [slice_with("slice-1", NODE1, POOL1, DRIVER_A, *devices)]


def memory(size: str) -> str:
    return f'device.capacity["driver-a"].memory.compareTo(quantity("{size}")) >= 0'


def cap0(size: str) -> str:
    return f'device.capacity["driver-a"]["capacity-0"].compareTo(quantity("{size}")) >= 0'


def partitioned(name: str, cap0_: str) -> dict[str, Any]:
    body = counter_device(name, consumes(COUNTER_SET1, **{CAPACITY0: cap0_}), consumes(COUNTER_SET2, **{CAPACITY1: "4"}),
                          allowMultipleAllocations=True)
    body["capacity"][CAPACITY1] = range_policy()
    return body


CASES = {
    "consumable-capacity-multi-allocatable-device-with-missing-capacity-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("1")))], classes=A,
        slices=one_slice(shared(DEVICE1, {CAPACITY1: "1"}))),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-with-missing-capacity-request": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, **asks("1")))], classes=MULTI,
        slices=one_slice(shared(DEVICE1, {CAPACITY1: "1"}))),
    "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_A))], classes=MULTI,
        slices=one_slice(shared(DEVICE1)),
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1)),
                allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1)))),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_A))], classes=MULTI,
        slices=one_slice(shared(DEVICE1, {CAPACITY0: "1"}), shared(DEVICE2, {CAPACITY0: "1"})),
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "1"})),
                allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE2, {CAPACITY0: "1"})))),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_A))], classes=MULTI,
        slices=one_slice(shared(DEVICE1, {CAPACITY0: "2"}))),
    "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("1"))), claim(CLAIM1, request(REQ0, CLASS_A, **asks("1")))],
        classes=MULTI, slices=one_slice(shared(DEVICE1, {CAPACITY0: "2"})),
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "1"})),
                allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "1"})))),
    "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_A))], classes=MULTI,
        slices=one_slice(shared(DEVICE1, {CAPACITY0: range_policy()})),
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "2"})),
                allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "2"})))),
    "consumable-capacity-multi-allocatable-device-with-zero-request-policy": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_A))], classes=MULTI,
        slices=one_slice(shared(DEVICE1, {CAPACITY0: values_policy("0", "1")})),
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "0"})),
                allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "0"})))),
    "consumable-capacity-multi-allocatable-device-violates-zero-request-policy": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("1")))], classes=MULTI,
        slices=one_slice(shared(DEVICE1, {CAPACITY0: values_policy("0", "1")}))),
    "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("1"))), claim(CLAIM1, request(REQ0, CLASS_A, **asks("1")))],
        classes=MULTI, slices=one_slice(shared(DEVICE1, {CAPACITY0: range_policy()})),
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "2"})),
                allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "2"})))),
    "consumable-capacity-multi-allocatable-device-with-range-policy-step": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("3")))], classes=MULTI,
        slices=one_slice(shared(DEVICE1, {CAPACITY0: range_policy()})),
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "4"})),)),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("2")))], classes=MULTI,
        slices=one_slice(shared(DEVICE1, {CAPACITY0: values_policy("1", "4", "2")})),
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "2"})),)),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("2")))], classes=MULTI,
        slices=one_slice(shared(DEVICE1, {CAPACITY0: values_policy("1", "3", "3")})),
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "3"})),)),
    "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("1"))), claim(CLAIM1, request(REQ0, CLASS_A, **asks("2")))],
        classes=MULTI, slices=one_slice(shared(DEVICE1, {CAPACITY0: range_policy("2")}))),
    "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("6")))], classes=MULTI,
        slices=one_slice(shared(DEVICE1, {CAPACITY0: range_policy("10")}))),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("2")))], classes=MULTI,
        slices=one_slice(shared(DEVICE1, {CAPACITY0: range_policy()})), in_use=used(capacity={D1: {CAPACITY0: "2"}}),
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "2"})),)),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("2")))], classes=MULTI,
        slices=one_slice(shared(DEVICE1, {CAPACITY0: range_policy("2")}), shared(DEVICE2, {CAPACITY0: range_policy("2")})),
        in_use=used(capacity={D1: {CAPACITY0: "2"}}),
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE2, {CAPACITY0: "2"})),)),
    "consumable-capacity-with-multi-allocatable-device-backtrack": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("2")), request(REQ1, CLASS_A, **asks("2")),
                      constraints=[match(STRING_ATTRIBUTE)]),
                claim(CLAIM1, request(REQ0, CLASS_A, **asks("2")))],
        classes=A,
        slices=one_slice(shared(DEVICE2, {CAPACITY0: range_policy("2")}, attributes={"stringAttribute": {"string": "stringAttributeValue1"}}),
                         shared(DEVICE1, {CAPACITY0: range_policy()}, attributes={"stringAttribute": {"string": "stringAttributeValue2"}})),
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "2"}),
                           share(REQ1, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "2"})),
                allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE2, {CAPACITY0: "2"})))),
    "consumable-capacity-multi-allocatable-device-with-subrequest": Case(
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, **asks("4")), sub_request(SUB1, CLASS_A, **asks("2")),
                                          sub_request(SUB1, CLASS_A)))],
        classes=MULTI, slices=one_slice(shared(DEVICE1, {CAPACITY0: range_policy("2")})),
        expect=(allocation(local(NODE1), share("req-0/subReq-1", DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "2"})),)),
    "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("2")))], classes=MULTI,
        slices=one_slice(shared(DEVICE1, {CAPACITY0: range_policy("2")})), in_use=used(capacity={D1: {CAPACITY0: "2"}})),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, **asks("2")))], classes=MULTI,
        slices=one_slice(shared(DEVICE1, {CAPACITY0: "2"}), shared(DEVICE2)),
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "2"})),)),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-insufficient-capacity": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, **asks("2")))], classes=MULTI,
        slices=one_slice(shared(DEVICE1, {CAPACITY0: "2"}), shared(DEVICE2, {CAPACITY0: "1"})),
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "2"})),)),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("1")), all_request(REQ1, CLASS_A, **asks("1")))], classes=A,
        slices=one_slice(shared(DEVICE1, {CAPACITY0: "2"}), shared(DEVICE2, {CAPACITY0: "1"})),
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "1"}),
                           share(REQ1, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "1"}),
                           share(REQ1, DRIVER_A, POOL1, DEVICE2, {CAPACITY0: "1"})),)),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, **asks("1")))], classes=A,
        slices=one_slice(shared(DEVICE1, {CAPACITY0: "2"}), shared(DEVICE2, {CAPACITY0: "1"})),
        in_use=used(capacity={D1: {CAPACITY0: "1"}}),
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "1"}),
                           share(REQ0, DRIVER_A, POOL1, DEVICE2, {CAPACITY0: "1"})),)),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("1")), all_request(REQ1, CLASS_A, **asks("1")))], classes=A,
        slices=one_slice(shared(DEVICE1, {CAPACITY0: "1"}), shared(DEVICE2, {CAPACITY0: "1"}))),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, **asks("1")))], classes=A,
        slices=one_slice(shared(DEVICE1, {CAPACITY0: "1"}), shared(DEVICE2, {CAPACITY0: "1"})),
        in_use=used(capacity={D1: {CAPACITY0: "1"}}),
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE2, {CAPACITY0: "1"})),)),
    "consumable-capacity-dedicated-device-with-consumable-capacity-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("1")))], classes=DEDICATED,
        slices=one_slice(device(DEVICE1, {CAPACITY0: "1"})),
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),)),
    "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("1"))), claim(CLAIM1, request(REQ0, CLASS_A, **asks("1")))],
        classes=DEDICATED, slices=one_slice(device(DEVICE1, {CAPACITY0: range_policy("2")}))),
    "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("1")))], classes=DEDICATED,
        slices=one_slice(shared(DEVICE1, {CAPACITY0: "1"}))),
    "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("1")))], classes=MULTI,
        slices=one_slice(shared(DEVICE1, {CAPACITY0: range_policy("2")})), in_use=used(D1)),
    "allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-allocatable": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("1")))], classes=MULTI,
        slices=one_slice(device(DEVICE1, {CAPACITY0: range_policy("2")})), in_use=used(capacity={D1: {CAPACITY0: "1"}})),
    "allow-multiple-allocations-with-partitionable-device": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A),
                      prioritized(REQ1, sub_request(SUB0, CLASS_A, 1, memory("6Gi")), sub_request(SUB1, CLASS_A, 1, memory("4Gi"))))],
        classes=MULTI,
        slices=[slice_with("slice-1", NODE1, pool(POOL1, 2), DRIVER_A,
                           *(counter_device(n, consumes(COUNTER_SET1, memory=m), allowMultipleAllocations=True)
                             for n, m in ((DEVICE1, "4Gi"), (DEVICE2, "6Gi"), (DEVICE3, "4Gi")))),
                slice_with("slice-2", NODE1, pool(POOL1, 2), DRIVER_A, counter_sets=[counter_set(COUNTER_SET1, memory="8Gi")])],
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {"memory": "4Gi"}),
                           share("req-1/subReq-1", DRIVER_A, POOL1, DEVICE3, {"memory": "4Gi"})),)),
    "allow-multiple-allocations-with-shared-device-counter-cross-cycle": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, 'device.attributes["driver-a"].mode == "b"', **asks("1")))],
        classes=MULTI,
        slices=[slice_with("slice-1", NODE1, pool(POOL1, 2), DRIVER_A,
                           *(counter_device(n, consumes(COUNTER_SET1, **{CAPACITY0: "1"}), attributes={"mode": {"string": m}},
                                            allowMultipleAllocations=True) for n, m in ((DEVICE1, "a"), (DEVICE2, "b")))),
                slice_with("slice-2", NODE1, pool(POOL1, 2), DRIVER_A, counter_sets=[counter_set(COUNTER_SET1, **{CAPACITY0: "1"})])],
        in_use=used(shares=((D1, FIXED_SHARE_ID),), capacity={D1: {CAPACITY0: "1"}})),
    "consumable-capacity-with-partitionable-device-multiple-capacity-pools": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, **asks("1")), request(REQ2, CLASS_A, **asks("2")),
                      prioritized(REQ1, sub_request(SUB0, CLASS_A, 1, cap0("4"), **asks("1")),
                                  sub_request(SUB1, CLASS_A, 1, cap0("2"), **asks("1"))))],
        classes=A,
        slices=[slice_with("slice-1", NODE1, pool(POOL1, 2), DRIVER_A, partitioned(DEVICE1, "2"), partitioned(DEVICE2, "4"),
                           partitioned(DEVICE3, "2")),
                slice_with("slice-2", NODE1, pool(POOL1, 2), DRIVER_A,
                           counter_sets=[counter_set(COUNTER_SET1, **{CAPACITY0: "4"}), counter_set(COUNTER_SET2, **{CAPACITY1: "8"})])],
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "1", CAPACITY1: "2"}),
                           share(REQ2, DRIVER_A, POOL1, DEVICE3, {CAPACITY0: "2", CAPACITY1: "2"}),
                           share("req-1/subReq-1", DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "1", CAPACITY1: "2"})),)),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_upstream_case(case: Case) -> None:
    run(case)


def test_share_ids_are_distinct_and_repeatable() -> None:
    """Upstream draws a random UID per share; gpusched derives it, so two shares of one device
    differ and a rerun gives the same IDs."""
    from gpusched.dra.allocator import Allocated, allocate
    claims = [claim(CLAIM0, request(REQ0, CLASS_A, **asks("1"))), claim(CLAIM1, request(REQ0, CLASS_A, **asks("1")))]
    runs = [allocate(claims, node(),
                     one_slice(shared(DEVICE1, {CAPACITY0: "2"})), {CLASS_A: MULTI[0]}, used()) for _ in range(2)]
    assert all(isinstance(r, Allocated) for r in runs)
    ids = [[a["devices"]["results"][0]["shareID"] for a in r.allocations] for r in runs if isinstance(r, Allocated)]
    assert ids[0] == ids[1] and ids[0][0] != ids[0][1]
