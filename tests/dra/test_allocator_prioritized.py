"""``firstAvailable`` (prioritized lists): subrequests tried in order, the first that completes
the search wins, their config and constraints. Each case is named after the case of upstream's
table it reproduces (``kubernetes/dynamic-resource-allocation`` v0.36.2,
``structured/internal/allocatortesting/allocator_testing.go``); ``steps`` is that case's
``expectNumAllocateOneInvocations`` for the incubating allocator. ``prioritized-list-disabled``
is left out: ``DRAPrioritizedList`` is GA in v1.36."""

from __future__ import annotations

from typing import Any

import pytest

from tests.dra.builders import (CLAIM0, CLASS_A, CLASS_B, DEVICE1, DEVICE2, DEVICE3, DRIVER_A, DRIVER_B, NODE1,
                                POOL1, POOL2, REQ0, REQ1, SUB0, SUB1, VERSION_ATTRIBUTE, Case, allocation, claim,
                                device, device_class, device_configuration, local, many_devices, match,
                                one_device, prioritized, request, result, run, slice_with, sub_request, used)

A = [device_class(CLASS_A, DRIVER_A)]
AB = [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)]
R0S1, R1S1 = "req-0/subReq-1", "req-1/subReq-1"


def memory(size: str) -> str:
    return f'device.capacity["driver-a"].memory.compareTo(quantity("{size}")) >= 0'


def generation(value: str) -> str:
    return f'device.attributes["driver-a"].generation == "{value}"'


def gen_device(name: str, value: str, **attributes: Any) -> dict[str, Any]:
    return device(name, attributes={"generation": {"string": value}, **attributes})


def sized(name: str, size: str, version: str | None = None) -> dict[str, Any]:
    return device(name, {"memory": size}, {"driverVersion": {"version": version}} if version else None)


def type_device(name: str, kind: str) -> dict[str, Any]:
    return device(name, attributes={"type": {"string": kind}})


ALL_V6_V5 = prioritized(REQ0, sub_request(SUB0, CLASS_A, 0, generation("v6"), mode="All"),
                        sub_request(SUB1, CLASS_A, 0, generation("v5"), mode="All"))
XYY = slice_with("slice-1", NODE1, POOL1, DRIVER_A, type_device(DEVICE1, "X"), type_device(DEVICE2, "Y"),
                 type_device(DEVICE3, "Y"))

CASES = {
    "prioritized-list-first-unavailable": Case(
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1, CLASS_A)))], classes=AB,
        slices=[one_device("slice-1", NODE1, POOL1, DRIVER_A)],
        expect=(allocation(local(NODE1), result(R0S1, DRIVER_A, POOL1, DEVICE1)),)),
    "prioritized-list-non-available": Case(
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B, 2), sub_request(SUB1, CLASS_A, 2)))],
        classes=AB, slices=[one_device("slice-1", NODE1, POOL1, DRIVER_A), one_device("slice-2", NODE1, POOL2, DRIVER_B)]),
    "prioritized-list-device-config": Case(
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A), sub_request(SUB1, CLASS_B, 2)),
                      config=[{"requests": ["req-0/subReq-0"], **device_configuration(DRIVER_A, "foo")},
                              {"requests": [R0S1], **device_configuration(DRIVER_B, "bar")}])],
        classes=AB, slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_B, device(DEVICE1), device(DEVICE2))],
        expect=(allocation(local(NODE1), result(R0S1, DRIVER_B, POOL1, DEVICE1), result(R0S1, DRIVER_B, POOL1, DEVICE2),
                           config=[{"source": "FromClaim", "requests": [R0S1], **device_configuration(DRIVER_B, "bar")}]),)),
    "prioritized-list-class-config": Case(
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 2), sub_request(SUB1, CLASS_B, 2)))],
        classes=[device_class(CLASS_A, DRIVER_A, "foo"), device_class(CLASS_B, DRIVER_B, "bar")],
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_B, device(DEVICE1), device(DEVICE2)),
                slice_with("slice-2", NODE1, POOL2, DRIVER_A, device(DEVICE3))],
        expect=(allocation(local(NODE1), result(R0S1, DRIVER_B, POOL1, DEVICE1), result(R0S1, DRIVER_B, POOL1, DEVICE2),
                           config=[{"source": "FromClass", "requests": [R0S1], **device_configuration(DRIVER_B, "bar")}]),)),
    "prioritized-list-subrequests-with-expressions": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, memory("1Gi")),
                      prioritized(REQ1, sub_request(SUB0, CLASS_A, 1, memory("4Gi")), sub_request(SUB1, CLASS_A, 2, memory("2Gi"))))],
        classes=A,
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, sized(DEVICE1, "2Gi"), sized(DEVICE2, "2Gi"), sized(DEVICE3, "1Gi"))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE3), result(R1S1, DRIVER_A, POOL1, DEVICE1),
                           result(R1S1, DRIVER_A, POOL1, DEVICE2)),)),
    "prioritized-list-subrequests-with-constraints-ref-parent-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, memory("8Gi")),
                      prioritized(REQ1, sub_request(SUB0, CLASS_A, 1, memory("2Gi")), sub_request(SUB1, CLASS_A, 1, memory("1Gi"))),
                      constraints=[match(VERSION_ATTRIBUTE, REQ0, REQ1)])],
        classes=A,
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, sized(DEVICE1, "8Gi", "1.0.0")),
                slice_with("slice-2", NODE1, POOL2, DRIVER_A, sized(DEVICE2, "2Gi", "2.0.0"), sized(DEVICE3, "1Gi", "1.0.0"))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), result(R1S1, DRIVER_A, POOL2, DEVICE3)),)),
    "prioritized-list-subrequests-with-constraints-ref-sub-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, memory("8Gi")),
                      prioritized(REQ1, sub_request(SUB0, CLASS_A, 1, memory("2Gi")), sub_request(SUB1, CLASS_A, 1, memory("1Gi"))),
                      constraints=[match(VERSION_ATTRIBUTE, REQ0, "req-1/subReq-0")])],
        classes=A,
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, sized(DEVICE1, "8Gi", "1.0.0")),
                slice_with("slice-2", NODE1, POOL2, DRIVER_A, sized(DEVICE2, "2Gi", "2.0.0"))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), result(R1S1, DRIVER_A, POOL2, DEVICE2)),)),
    "prioritized-list-subrequests-with-allocation-mode-all": Case(
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, mode="All"), sub_request(SUB1, CLASS_A)))],
        classes=A, slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        in_use=used((DRIVER_A, POOL1, DEVICE1)),
        expect=(allocation(local(NODE1), result(R0S1, DRIVER_A, POOL1, DEVICE2)),)),
    "prioritized-list-allocation-mode-all-multiple-requests": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A),
                      prioritized(REQ1, sub_request(SUB0, CLASS_A, mode="All"), sub_request(SUB1, CLASS_A)))],
        classes=A, slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), result(R1S1, DRIVER_A, POOL1, DEVICE2)),)),
    "prioritized-list-multi-request": Case(
        claims=[claim(CLAIM0, request(REQ1, CLASS_A, 1, memory("8Gi")),
                      prioritized(REQ0, sub_request(SUB0, CLASS_A, 1, memory("8Gi")), sub_request(SUB1, CLASS_A, 1, memory("4Gi"))))],
        classes=A,
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, sized(DEVICE1, "8Gi")),
                slice_with("slice-2", NODE1, POOL2, DRIVER_A, sized(DEVICE2, "4Gi"))],
        expect=(allocation(local(NODE1), result(REQ1, DRIVER_A, POOL1, DEVICE1), result(R0S1, DRIVER_A, POOL2, DEVICE2)),)),
    "prioritized-list-with-backtracking": Case(
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 1, memory("8Gi")), sub_request(SUB1, CLASS_A, 1, memory("4Gi"))),
                      request(REQ1, CLASS_A, 1, memory("8Gi")))],
        classes=A,
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, sized(DEVICE1, "8Gi")),
                slice_with("slice-2", NODE1, POOL2, DRIVER_A, sized(DEVICE2, "4Gi"))],
        expect=(allocation(local(NODE1), result(R0S1, DRIVER_A, POOL2, DEVICE2), result(REQ1, DRIVER_A, POOL1, DEVICE1)),)),
    "prioritized-list-too-many-in-first-subrequest": Case(
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B, 500), sub_request(SUB1, CLASS_A)))], classes=AB,
        slices=[one_device("slice-1", NODE1, POOL1, DRIVER_A)],
        expect=(allocation(local(NODE1), result(R0S1, DRIVER_A, POOL1, DEVICE1)),)),
    "prioritized-list-allocation-mode-all": Case(
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, mode="All"), sub_request(SUB1, CLASS_A)))],
        classes=A, slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        in_use=used((DRIVER_A, POOL1, DEVICE2)),
        expect=(allocation(local(NODE1), result("req-0/subReq-1", DRIVER_A, POOL1, DEVICE1)),)),
    "prioritized-list-allocation-mode-all-with-selectors": Case(
        claims=[claim(CLAIM0, ALL_V6_V5)], classes=A,
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, gen_device(DEVICE1, "v5"))],
        expect=(allocation(local(NODE1), result(R0S1, DRIVER_A, POOL1, DEVICE1)),)),
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools": Case(
        claims=[claim(CLAIM0, ALL_V6_V5)], classes=A,
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, gen_device(DEVICE1, "v5")),
                slice_with("slice-2", NODE1, POOL2, DRIVER_A, gen_device(DEVICE1, "v5"))],
        expect=(allocation(local(NODE1), result(R0S1, DRIVER_A, POOL1, DEVICE1), result(R0S1, DRIVER_A, POOL2, DEVICE1)),)),
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools-across-nodes": Case(
        claims=[claim(CLAIM0, ALL_V6_V5)], classes=A,
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, gen_device(DEVICE1, "v5")),
                slice_with("slice-2", "node-2", POOL2, DRIVER_A, gen_device(DEVICE1, "v5"), gen_device(DEVICE2, "v6"))],
        expect=(allocation(local(NODE1), result(R0S1, DRIVER_A, POOL1, DEVICE1)),)),
    "prioritized-list-allocation-mode-all-with-selectors-deviceclass-subset": Case(
        claims=[claim(CLAIM0, ALL_V6_V5)],
        classes=[device_class(CLASS_A, DRIVER_A, expression='device.driver == "driver-a" && '
                                                            'device.attributes["driver-a"].selected')],
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, gen_device(DEVICE1, "v6", selected={"bool": False}),
                           gen_device(DEVICE2, "v5", selected={"bool": False}),
                           gen_device(DEVICE3, "v5", selected={"bool": True}))],
        expect=(allocation(local(NODE1), result(R0S1, DRIVER_A, POOL1, DEVICE3)),)),
    "prioritized-list-max-allocation-limit-request": Case(
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 32), sub_request(SUB1, CLASS_A, 16)),
                      prioritized(REQ1, sub_request(SUB0, CLASS_A, 32), sub_request(SUB1, CLASS_A, 16)))],
        classes=A, slices=[many_devices("slice-1", NODE1, POOL1, DRIVER_A, 64)],
        expect=(allocation(local(NODE1), *(result("req-0/subReq-1", DRIVER_A, POOL1, f"device-{i}") for i in range(16)),
                           *(result(R1S1, DRIVER_A, POOL1, f"device-{i}") for i in range(16, 32))),),
        steps=75),
    "prioritized-list-max-allocation-allocation-mode-all": Case(
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, mode="All"), sub_request(SUB1, CLASS_A, 2)),
                      request(REQ1, CLASS_B, 2))],
        classes=AB,
        slices=[many_devices("slice-1", NODE1, POOL1, DRIVER_A, 31), many_devices("slice-2", NODE1, POOL2, DRIVER_B, 2)],
        expect=(allocation(local(NODE1), result(R0S1, DRIVER_A, POOL1, "device-0"), result(R0S1, DRIVER_A, POOL1, "device-1"),
                           result(REQ1, DRIVER_B, POOL2, "device-0"), result(REQ1, DRIVER_B, POOL2, "device-1")),),
        steps=42),
    "check-combinations-with-prioritized-list": Case(
        claims=[claim(CLAIM0, prioritized(REQ1, sub_request(SUB0, CLASS_A, 3, 'device.attributes["driver-a"].type == "Y"'),
                                          sub_request(SUB1, CLASS_A, 2)),
                      prioritized("req-2", sub_request(SUB0, CLASS_A, 2),
                                  sub_request(SUB1, CLASS_A, 1, 'device.attributes["driver-a"].type == "X"')))],
        classes=A, slices=[XYY],
        expect=(allocation(local(NODE1), result(R1S1, DRIVER_A, POOL1, DEVICE2), result(R1S1, DRIVER_A, POOL1, DEVICE3),
                           result("req-2/subReq-1", DRIVER_A, POOL1, DEVICE1)),),
        steps=26),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_upstream_case(case: Case) -> None:
    run(case)


@pytest.mark.parametrize("available,score", [
    pytest.param(("driver-b",), 8, id="first-choice-scores-8"),
    pytest.param(("driver-a",), 7, id="second-choice-scores-7"),
])
def test_first_available_score(available: tuple[str, ...], score: int) -> None:
    """``dynamicresources.go`` ``computeScore``: 8 (FirstAvailableDeviceRequestMaxSize) minus
    the index of each allocated subrequest."""
    from gpusched.dra.allocator import Allocated, allocate, first_available_score
    from tests.dra.builders import node
    claims = [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1, CLASS_A)), request(REQ1, CLASS_A))]
    slices = [one_device(f"slice-{d}", NODE1, POOL1, d) for d in available] + [one_device("slice-x", NODE1, POOL2, DRIVER_A)]
    got = allocate(claims, node(), slices, {c.name: c for c in AB}, used())
    assert isinstance(got, Allocated) and first_available_score(claims, got) == score
