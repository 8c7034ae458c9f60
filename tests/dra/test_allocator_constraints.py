"""A claim's constraints: ``matchAttribute`` and ``distinctAttribute``. Each case is named after
the case of upstream's table it reproduces (``kubernetes/dynamic-resource-allocation`` v0.36.2,
``structured/internal/allocatortesting/allocator_testing.go``). The ``list-attributes-*`` cases
are left out: ``DRAListTypeAttributes`` is alpha and off in v1.36."""

from __future__ import annotations

from typing import Any

import pytest

from tests.dra.builders import (BOOL_ATTRIBUTE, CAPACITY0, CLAIM0, CLASS_A, CLASS_B, DEVICE1, DEVICE2, DEVICE3,
                                DEVICE4, DRIVER_A, DRIVER_B, INT_ATTRIBUTE, NODE1, POOL1, REQ0, REQ1, REQ2, REQ3,
                                STRING_ATTRIBUTE, SUB0, SUB1, VERSION_ATTRIBUTE, Case, all_request, allocation,
                                claim, device, device_class, distinct, local, match, multi_class, one_device, pool,
                                prioritized, range_policy, request, result, run, share, slice_with, sub_request)

A = [device_class(CLASS_A, DRIVER_A)]
AB = [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)]
ALL_FOUR = {"driverVersion": {"version": "1.0.0"}, "numa": {"int": 1},
            "stringAttribute": {"string": "stringAttributeValue"}, "boolAttribute": {"bool": True}}


def two(name: str, first: Any, second: Any) -> list[Any]:
    """Two devices of pool-1 whose attribute ``name`` is ``first`` and ``second``."""
    return [slice_with("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, attributes={name: first}),
                       device(DEVICE2, attributes={name: second}))]


def attrs(version: str, numa: int, flag: bool) -> dict[str, Any]:
    return {"driverVersion": {"version": version}, "numa": {"int": numa}, "boolAttribute": {"bool": flag}}


def selector(sub: str) -> dict[str, Any]:
    return sub_request(sub, CLASS_A, 1, 'device.attributes["driver-a"].boolAttribute')


CASES = {
    "with-constraint": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A),
                      constraints=[match(INT_ATTRIBUTE), match(VERSION_ATTRIBUTE), match(STRING_ATTRIBUTE),
                                   match(BOOL_ATTRIBUTE)])],
        classes=A,
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, attributes=ALL_FOUR),
                           device(DEVICE2, attributes=ALL_FOUR))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2)),)),
    "with-constraint-non-existent-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), constraints=[match("driver-a/NonExistentAttribute")])],
        classes=A, slices=[one_device("slice-1", NODE1, POOL1, DRIVER_A)]),
    "with-constraint-not-matching-int-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=[match(INT_ATTRIBUTE)])], classes=AB,
        slices=two("numa", {"int": 1}, {"int": 2})),
    "with-constraint-not-matching-int-attribute-all-devices": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A), constraints=[match(INT_ATTRIBUTE)])], classes=AB,
        slices=two("numa", {"int": 1}, {"int": 2}),
        error="claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a claim "
              "constraint would not be satisfied"),
    "with-constraint-not-matching-string-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=[match(STRING_ATTRIBUTE)])], classes=AB,
        slices=two("stringAttribute", {"string": "stringAttributeValue"}, {"string": "stringAttributeValue2"})),
    "with-constraint-not-matching-bool-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=[match(BOOL_ATTRIBUTE)])], classes=AB,
        slices=two("boolAttribute", {"bool": True}, {"bool": False})),
    "with-constraint-not-matching-version-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=[match(VERSION_ATTRIBUTE)])], classes=AB,
        slices=two("driverVersion", {"version": "1.0.0"}, {"version": "2.0.0"})),
    "with-constraint-for-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A), constraints=[match(VERSION_ATTRIBUTE, REQ0)])],
        classes=AB, slices=two("driverVersion", {"version": "1.0.0"}, {"version": "2.0.0"}),
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2)),)),
    "with-constraint-for-request-retry": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A),
                      constraints=[match(VERSION_ATTRIBUTE, REQ0), match(STRING_ATTRIBUTE)])],
        classes=AB,
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A,
                           device(DEVICE1, attributes={"driverVersion": {"version": "1.0.0"}, "stringAttribute": {"string": "a"}}),
                           device(DEVICE2, attributes={"driverVersion": {"version": "2.0.0"}, "stringAttribute": {"string": "b"}}),
                           device(DEVICE3, attributes={"driverVersion": {"version": "3.0.0"}, "stringAttribute": {"string": "b"}}))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE2), result(REQ1, DRIVER_A, POOL1, DEVICE3)),)),
    "with-distinct-constraints": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A), request(REQ2, CLASS_A), request(REQ3, CLASS_A),
                      constraints=[distinct(BOOL_ATTRIBUTE, REQ0, REQ1), distinct(VERSION_ATTRIBUTE, REQ0, REQ1, REQ2),
                                   distinct(INT_ATTRIBUTE, REQ0, REQ1, REQ2, REQ3)])],
        classes=A,
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A,
                           device(DEVICE1, attributes=attrs("1.0.0", 0, True), allowMultipleAllocations=True),
                           device(DEVICE2, attributes=attrs("1.0.1", 1, False), allowMultipleAllocations=True),
                           device(DEVICE3, attributes=attrs("1.0.2", 2, True), allowMultipleAllocations=True),
                           device(DEVICE4, attributes=attrs("1.0.0", 3, True), allowMultipleAllocations=True))],
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1), share(REQ1, DRIVER_A, POOL1, DEVICE2),
                           share(REQ2, DRIVER_A, POOL1, DEVICE3), share(REQ3, DRIVER_A, POOL1, DEVICE4)),)),
    "with-distinct-constraints-attribute-not-set": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), constraints=[distinct(BOOL_ATTRIBUTE, REQ0)])], classes=A,
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, allowMultipleAllocations=True))]),
    "with-distinct-constraints-unknown-type-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), constraints=[distinct(BOOL_ATTRIBUTE, REQ0)])], classes=A,
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A,
                           device(DEVICE1, attributes={"boolAttribute": {}}, allowMultipleAllocations=True))],
        error="unsupported attribute value"),
    "with-distinct-constraints-with-subrequests": Case(
        claims=[claim(CLAIM0, prioritized(REQ0, selector(SUB0), sub_request(SUB1, CLASS_A)),
                      prioritized(REQ1, selector(SUB0), sub_request(SUB1, CLASS_A)),
                      prioritized(REQ2, selector(SUB0), sub_request(SUB1, CLASS_A)),
                      constraints=[distinct(BOOL_ATTRIBUTE, REQ0, REQ1)])],
        classes=A,
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A,
                           device(DEVICE1, attributes={"boolAttribute": {"bool": True}}, allowMultipleAllocations=True),
                           device(DEVICE2, attributes={"boolAttribute": {"bool": False}}, allowMultipleAllocations=True))],
        expect=(allocation(local(NODE1), share("req-0/subReq-0", DRIVER_A, POOL1, DEVICE1),
                           share("req-1/subReq-1", DRIVER_A, POOL1, DEVICE2),
                           share("req-2/subReq-0", DRIVER_A, POOL1, DEVICE1)),)),
    "distinct-constraint-one-multi-allocatable-device-with-distinct-constraint": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity={"requests": {CAPACITY0: "1"}}),
                      request(REQ1, CLASS_A, capacity={"requests": {CAPACITY0: "1"}}),
                      constraints=[distinct(STRING_ATTRIBUTE)])],
        classes=[multi_class(CLASS_A, DRIVER_A, True)],
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A,
                           device(DEVICE1, {CAPACITY0: range_policy("2")}, {"stringAttribute": {"string": "stringAttributeValue"}},
                                  allowMultipleAllocations=True))]),
    "distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity={"requests": {CAPACITY0: "2"}}),
                      request(REQ1, CLASS_A, capacity={"requests": {CAPACITY0: "2"}}),
                      constraints=[distinct(STRING_ATTRIBUTE)])],
        classes=[multi_class(CLASS_A, DRIVER_A, True)],
        slices=[slice_with("slice-1", NODE1, pool(POOL1, 2), DRIVER_A,
                           device(DEVICE1, {CAPACITY0: range_policy()}, {"stringAttribute": {"string": "stringAttributeValue1"}},
                                  allowMultipleAllocations=True)),
                slice_with("slice-1", NODE1, pool(POOL1, 2), DRIVER_A,
                           device(DEVICE2, {CAPACITY0: range_policy()}, {"stringAttribute": {"string": "stringAttributeValue2"}},
                                  allowMultipleAllocations=True))],
        expect=(allocation(local(NODE1), share(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: "2"}),
                           share(REQ1, DRIVER_A, POOL1, DEVICE2, {CAPACITY0: "2"})),)),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_upstream_case(case: Case) -> None:
    run(case)
