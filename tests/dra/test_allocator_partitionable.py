"""Partitionable devices (shared counters), per-device node selection and binding conditions.
Each case is named after the case of upstream's table it reproduces
(``kubernetes/dynamic-resource-allocation`` v0.36.2,
``structured/internal/allocatortesting/allocator_testing.go``; ``*-disabled`` cases are left
out: ``DRAPartitionableDevices`` and ``DRADeviceBindingConditions`` are beta and on in v1.36)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.dra.builders import (CLAIM0, CLASS_A, CLASS_B, COUNTER_SET1, COUNTER_SET2, DEVICE1, DEVICE2,
                                DEVICE3, DRIVER_A, DRIVER_B, NODE1, NODE2, PER_DEVICE, POOL1, POOL2, REGION1, REQ0,
                                REQ1, SLICE1, SLICE2, SLICE3, SLICE4, SUB0, SUB1, Case, all_request, allocation, claim, consumes,
                                counter_device, counter_set, device, device_class, local, node_label_selector, pool,
                                prioritized, request, result, run, slice_with, sub_request, used)

A = [device_class(CLASS_A, DRIVER_A)]
R1S1 = "req-1/subReq-1"


def memory(size: str) -> str:
    return f'device.capacity["driver-a"].memory.compareTo(quantity("{size}")) >= 0'


def mem(name: str, size: str, **extra: Any) -> dict[str, Any]:
    return counter_device(name, consumes(COUNTER_SET1, memory=size), **extra)


def counters(name: str, pool_: Any, *sets: dict[str, Any], selection: Any = NODE1) -> Any:
    return slice_with(name, selection, pool_, DRIVER_A, counter_sets=list(sets))


def bound(name: str, size: str, conditions: list[str] | None, failures: list[str] | None, **extra: Any) -> dict[str, Any]:
    more = {"bindingConditions": conditions, "bindingFailureConditions": failures} if conditions else {}
    return mem(name, size, **more, **extra)


def with_conditions(request_: str, pool_: str, device_: str, conditions: list[str] | None = None,
                    failures: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    more: dict[str, Any] = {"bindingConditions": conditions, "bindingFailureConditions": failures} if conditions else {}
    return result(request_, DRIVER_A, pool_, device_, **more, **extra)


SIX_OR_FOUR = prioritized(REQ1, sub_request(SUB0, CLASS_A, 1, memory("6Gi")), sub_request(SUB1, CLASS_A, 1, memory("4Gi")))
FOUR_SIX_FOUR = [mem(DEVICE1, "4Gi"), mem(DEVICE2, "6Gi"), mem(DEVICE3, "4Gi")]
EIGHT = counter_set(COUNTER_SET1, memory="8Gi")
TWO_REQUESTS = [claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A))]
TAINT_KEY1 = {"key": "key1", "value": "value1", "effect": "NoSchedule"}
TOLERATE_KEY1 = {"key": "key1", "operator": "Exists", "effect": "NoSchedule"}


def two_sets(name: str, mem1: str, cpu1: str, cpu2: str, mem2: str) -> dict[str, Any]:
    return counter_device(name, consumes(COUNTER_SET1, memory=mem1, cpus=cpu1), consumes(COUNTER_SET2, cpus=cpu2, memory=mem2))


def cpu_mem(name: str, cpus: str, size: str) -> dict[str, Any]:
    return counter_device(name, consumes(COUNTER_SET1, cpus=cpus, memory=size))


CASES = {
    "partitionable-devices-single-device": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1, consumesCounters=[consumes(COUNTER_SET1, memory="4Gi")])),
                counters(SLICE2, pool(POOL1, 2), EIGHT)],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),)),
    "partitionable-devices-prioritized-list": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), SIX_OR_FOUR)], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, *FOUR_SIX_FOUR), counters(SLICE2, pool(POOL1, 2), EIGHT)],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), result(R1S1, DRIVER_A, POOL1, DEVICE3)),)),
    "partitionable-devices-multiple-devices": Case(
        claims=TWO_REQUESTS, classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, *FOUR_SIX_FOUR), counters(SLICE2, pool(POOL1, 2), EIGHT)],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE3)),)),
    "partitionable-devices-multiple-capacity-pools": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), SIX_OR_FOUR)], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A,
                           *(counter_device(n, consumes(COUNTER_SET1, memory=f"{g}Gi"), consumes(COUNTER_SET2, cpus=str(g)))
                             for n, g in ((DEVICE1, 4), (DEVICE2, 6), (DEVICE3, 4)))),
                counters(SLICE2, pool(POOL1, 2), counter_set(COUNTER_SET1, memory="18Gi"), counter_set(COUNTER_SET2, cpus="8"))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), result(R1S1, DRIVER_A, POOL1, DEVICE3)),)),
    "partitionable-devices-multiple-counters": Case(
        claims=TWO_REQUESTS, classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, two_sets(DEVICE1, "4Gi", "6", "4", "2Gi"),
                           two_sets(DEVICE2, "6Gi", "4", "6", "6Gi"), two_sets(DEVICE3, "4Gi", "4", "4", "4Gi")),
                counters(SLICE2, pool(POOL1, 2), counter_set(COUNTER_SET1, cpus="8", memory="18Gi"),
                         counter_set(COUNTER_SET2, cpus="12", memory="18Gi"))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE2), result(REQ1, DRIVER_A, POOL1, DEVICE3)),)),
    "partitionable-devices-multiple-pools": Case(
        claims=TWO_REQUESTS, classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, cpu_mem(DEVICE1, "6", "4Gi"), cpu_mem(DEVICE2, "4", "6Gi"),
                           cpu_mem(DEVICE3, "4", "4Gi")),
                counters(SLICE2, pool(POOL1, 2), counter_set(COUNTER_SET1, cpus="8", memory="18Gi")),
                slice_with(SLICE3, NODE1, pool(POOL2, 2), DRIVER_A, cpu_mem(DEVICE1, "6", "4Gi"), cpu_mem(DEVICE2, "1", "7Gi"),
                           cpu_mem(DEVICE3, "1", "7Gi")),
                counters(SLICE4, pool(POOL2, 2), counter_set(COUNTER_SET1, cpus="8", memory="18Gi"))],
        in_use=used((DRIVER_A, POOL1, DEVICE2), (DRIVER_A, POOL1, DEVICE3), (DRIVER_A, POOL2, DEVICE1)),
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL2, DEVICE2), result(REQ1, DRIVER_A, POOL2, DEVICE3)),)),
    "partitionable-devices-unused-counters-in-counter-set": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, mem(DEVICE1, "5Gi"), mem(DEVICE2, "4Gi"), mem(DEVICE3, "4Gi")),
                counters(SLICE2, pool(POOL1, 2), counter_set(COUNTER_SET1, memory="8Gi", unused="1Gi"))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE2), result(REQ0, DRIVER_A, POOL1, DEVICE3)),)),
    "partitionable-devices-no-capacity-available": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE1, POOL1, DRIVER_A, mem(DEVICE1, "4Gi"), mem(DEVICE2, "16Gi")),
                counters(SLICE2, POOL1, counter_set(COUNTER_SET1, memory="18Gi"))],
        in_use=used((DRIVER_A, POOL1, DEVICE2))),
    "partitionable-devices-overallocated-capacity-pool": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE1, POOL1, DRIVER_A, mem(DEVICE1, "4Gi"), mem(DEVICE2, "20Gi")),
                counters(SLICE2, POOL1, counter_set(COUNTER_SET1, memory="18Gi"))],
        in_use=used((DRIVER_A, POOL1, DEVICE2))),
    "partitionable-devices-per-device-node-selection-nodename": Case(
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 1, memory("6Gi")), sub_request(SUB1, CLASS_A, 1, memory("4Gi"))))],
        classes=A,
        slices=[slice_with(SLICE1, PER_DEVICE, pool(POOL1, 2), DRIVER_A, mem(DEVICE1, "4Gi", nodeName=NODE1),
                           mem(DEVICE2, "6Gi", nodeName=NODE2)),
                counters(SLICE2, pool(POOL1, 2), counter_set(COUNTER_SET1, memory="18Gi"), selection=PER_DEVICE)],
        expect=(allocation(local(NODE1), result("req-0/subReq-1", DRIVER_A, POOL1, DEVICE1)),)),
    "partitionable-devices-per-device-node-selection-node-selector": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, PER_DEVICE, pool(POOL1, 2), DRIVER_A,
                           mem(DEVICE1, "4Gi", nodeSelector=node_label_selector("region", REGION1))),
                counters(SLICE2, pool(POOL1, 2), counter_set(COUNTER_SET1, memory="18Gi"), selection=PER_DEVICE)],
        expect=(allocation(node_label_selector("region", REGION1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),)),
    "partitionable-devices-per-device-node-selection-node-selector-multiple-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 3), request(REQ1, CLASS_B, 3))],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[slice_with(SLICE1, PER_DEVICE, pool(POOL1, 2), DRIVER_A,
                           mem(DEVICE1, "4Gi", nodeSelector=node_label_selector("region", REGION1)),
                           mem(DEVICE2, "4Gi", nodeName=NODE1), mem(DEVICE3, "4Gi", allNodes=True)),
                counters(SLICE2, pool(POOL1, 2), counter_set(COUNTER_SET1, memory="18Gi"), selection=PER_DEVICE),
                slice_with(SLICE3, NODE1, pool(POOL2, 2), DRIVER_B,
                           *(counter_device(n, consumes(COUNTER_SET2, memory="4Gi")) for n in (DEVICE1, DEVICE2, DEVICE3))),
                slice_with(SLICE4, NODE1, pool(POOL2, 2), DRIVER_B, counter_sets=[counter_set(COUNTER_SET2, memory="12Gi")])],
        expect=(allocation(local(NODE1), *(result(REQ0, DRIVER_A, POOL1, d) for d in (DEVICE1, DEVICE2, DEVICE3)),
                           *(result(REQ1, DRIVER_B, POOL2, d) for d in (DEVICE1, DEVICE2, DEVICE3))),)),
    "partitionable-devices-with-attribute-selector": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), request(REQ1, CLASS_A, 1, 'device.attributes["driver-a"].special'))],
        classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A,
                           *(device(n, attributes={"special": {"bool": special}},
                                    consumesCounters=[consumes(COUNTER_SET1, **{cpu: "1"}), consumes(COUNTER_SET2, mem="10Gi")])
                             for n, special, cpu in ((DEVICE1, True, "cpu1"), (DEVICE2, False, "cpu2"), (DEVICE3, False, "cpu3")))),
                counters(SLICE2, pool(POOL1, 2), counter_set(COUNTER_SET1, cpu1="1", cpu2="1", cpu3="1"),
                         counter_set(COUNTER_SET2, mem="30Gi"))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE2), result(REQ0, DRIVER_A, POOL1, DEVICE3),
                           result(REQ1, DRIVER_A, POOL1, DEVICE1)),)),
    "partitionable-devices-same-counter-set-name-in-different-resource-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 4), DRIVER_A, device(DEVICE1)),
                counters(SLICE2, pool(POOL1, 4), {"name": COUNTER_SET1}),
                slice_with(SLICE3, NODE1, pool(POOL1, 4), DRIVER_A, device(DEVICE2)),
                counters(SLICE4, pool(POOL1, 4), {"name": COUNTER_SET1})],
        error="invalid resource pools were encountered"),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-set": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1, consumesCounters=[{"counterSet": COUNTER_SET2}])),
                counters(SLICE2, pool(POOL1, 2), {"name": COUNTER_SET1})],
        error="invalid resource pools were encountered"),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-in-counter-set": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1, consumesCounters=[consumes(COUNTER_SET1, memory="8Gi")])),
                counters(SLICE2, pool(POOL1, 2), counter_set(COUNTER_SET1, **{"other-memory": "8Gi"}))],
        error="invalid resource pools were encountered"),
    "partitionable-devices-device-counter-consumption-references-counter-set-in-other-pool": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, consumesCounters=[consumes(COUNTER_SET1, memory="8Gi")])),
                counters(SLICE2, POOL2, counter_set(COUNTER_SET1, memory="8Gi"))],
        error="invalid resource pools were encountered"),
    "partitionable-devices-devices-on-different-nodes-consume-same-counter-set": Case(
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 1, memory("6Gi")), sub_request(SUB1, CLASS_A, 1, memory("2Gi"))))],
        classes=A,
        slices=[counters(SLICE1, pool(POOL1, 3), EIGHT),
                slice_with(SLICE2, NODE1, pool(POOL1, 3), DRIVER_A, mem(DEVICE1, "6Gi"), mem(DEVICE2, "2Gi")),
                slice_with(SLICE3, NODE2, pool(POOL1, 3), DRIVER_A, device(DEVICE3, consumesCounters=[consumes(COUNTER_SET1, memory="6Gi")]))],
        in_use=used((DRIVER_A, POOL1, DEVICE3)),
        expect=(allocation(local(NODE1), result("req-0/subReq-1", DRIVER_A, POOL1, DEVICE2)),)),
    "partitionable-devices-validation-error-on-non-targeting-slice": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[counters(SLICE1, pool(POOL1, 3), EIGHT),
                slice_with(SLICE2, NODE1, pool(POOL1, 3), DRIVER_A, mem(DEVICE1, "6Gi")),
                slice_with(SLICE3, NODE2, pool(POOL1, 3), DRIVER_A, device(DEVICE3, consumesCounters=[consumes(COUNTER_SET2, memory="6Gi")]))],
        error="invalid resource pools were encountered"),
    "device-binding-conditions": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, bindingConditions=["IsPrepare"], bindingFailureConditions=["BindingFailed"]))],
        expect=(allocation(local(NODE1), with_conditions(REQ0, POOL1, DEVICE1, ["IsPrepare"], ["BindingFailed"])),)),
    "binding-conditions-multiple-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), request(REQ1, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE1, POOL1, DRIVER_A,
                           *(device(n, bindingConditions=[f"IsPrepare{s}"], bindingFailureConditions=[f"BindingFailed{s}"])
                             for n, s in ((DEVICE1, ""), (DEVICE2, "2"), (DEVICE3, "3"))))],
        expect=(allocation(local(NODE1), with_conditions(REQ0, POOL1, DEVICE1, ["IsPrepare"], ["BindingFailed"]),
                           with_conditions(REQ0, POOL1, DEVICE2, ["IsPrepare2"], ["BindingFailed2"]),
                           with_conditions(REQ1, POOL1, DEVICE3, ["IsPrepare3"], ["BindingFailed3"])),)),
    "binding-conditions-with-and-without": Case(
        claims=TWO_REQUESTS, classes=A,
        slices=[slice_with(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1),
                           device(DEVICE2, bindingConditions=["IsPrepare"], bindingFailureConditions=["BindingFailed"]))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1),
                           with_conditions(REQ1, POOL1, DEVICE2, ["IsPrepare"], ["BindingFailed"])),)),
    "node-restriction": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, node_label_selector("planet", "earth"), POOL1, DRIVER_A, device(DEVICE1, bindsToNode=True))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),)),
    "partitionable-devices-with-binding-conditions": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, bound(DEVICE1, "4Gi", ["IsPrepare"], ["BindingFailed"])),
                counters(SLICE2, pool(POOL1, 2), EIGHT)],
        expect=(allocation(local(NODE1), with_conditions(REQ0, POOL1, DEVICE1, ["IsPrepare"], ["BindingFailed"])),)),
    "partitionable-devices-with-binding-conditions-multiple": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, bound(DEVICE1, "4Gi", ["IsPrepare"], ["BindingFailed"]),
                           bound(DEVICE2, "4Gi", ["IsPrepare2"], ["BindingFailed2"])),
                counters(SLICE2, pool(POOL1, 2), EIGHT)],
        expect=(allocation(local(NODE1), with_conditions(REQ0, POOL1, DEVICE1, ["IsPrepare"], ["BindingFailed"]),
                           with_conditions(REQ0, POOL1, DEVICE2, ["IsPrepare2"], ["BindingFailed2"])),)),
    "partitionable-devices-with-binding-conditions-some-devices-no-conditions": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 3))], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, bound(DEVICE1, "2Gi", ["IsPrepare"], ["BindingFailed"]),
                           bound(DEVICE2, "2Gi", None, None), bound(DEVICE3, "4Gi", ["IsReady"], ["BindingTimeout"])),
                counters(SLICE2, pool(POOL1, 2), EIGHT)],
        expect=(allocation(local(NODE1), with_conditions(REQ0, POOL1, DEVICE1, ["IsPrepare"], ["BindingFailed"]),
                           with_conditions(REQ0, POOL1, DEVICE2),
                           with_conditions(REQ0, POOL1, DEVICE3, ["IsReady"], ["BindingTimeout"])),)),
    "partitionable-devices-with-binding-conditions-multi-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))], classes=A,
        slices=[slice_with(SLICE4, NODE1, pool(POOL1, 4), DRIVER_A, bound(DEVICE1, "4Gi", ["IsPrepare"], ["BindingFailed"])),
                counters(SLICE3, pool(POOL1, 4), EIGHT),
                slice_with(SLICE2, NODE1, pool(POOL1, 4), DRIVER_A, counter_device(DEVICE2, consumes(COUNTER_SET2, memory="4Gi"))),
                counters(SLICE1, pool(POOL1, 4), counter_set(COUNTER_SET2, memory="8Gi"))],
        expect=(allocation(local(NODE1), with_conditions(REQ0, POOL1, DEVICE2),
                           with_conditions(REQ0, POOL1, DEVICE1, ["IsPrepare"], ["BindingFailed"])),)),
    "partitionable-devices-with-binding-conditions-and-taints-tolerated": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2, tolerations=[TOLERATE_KEY1]))], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A,
                           bound(DEVICE1, "4Gi", ["IsPrepare"], ["BindingFailed"], taints=[TAINT_KEY1]), mem(DEVICE2, "4Gi")),
                counters(SLICE2, pool(POOL1, 2), EIGHT)],
        expect=(allocation(local(NODE1), with_conditions(REQ0, POOL1, DEVICE1, ["IsPrepare"], ["BindingFailed"], tolerations=[TOLERATE_KEY1]),
                           with_conditions(REQ0, POOL1, DEVICE2, tolerations=[TOLERATE_KEY1])),)),
    "partitionable-devices-with-binding-conditions-and-taints": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))], classes=A,
        slices=[slice_with(SLICE1, NODE1, POOL1, DRIVER_A,
                           bound(DEVICE1, "4Gi", ["IsPrepare"], ["BindingFailed"], taints=[TAINT_KEY1]), mem(DEVICE2, "4Gi")),
                counters(SLICE2, POOL1, EIGHT)]),
    "lexicographical-sorting-pools-with-binding-conditions": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))], classes=A,
        slices=[slice_with(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, bindingConditions=["IsPrepare"], bindingFailureConditions=["BindingFailed"])),
                slice_with(SLICE3, NODE1, "pool-3", DRIVER_A, device(DEVICE3)),
                slice_with(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE2))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL2, DEVICE2), result(REQ0, DRIVER_A, "pool-3", DEVICE3)),)),
    "lexicographical-sorting-slices-with-binding-conditions": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 3), DRIVER_A, device(DEVICE1, bindingConditions=["IsPrepare"], bindingFailureConditions=["BindingFailed"])),
                slice_with(SLICE3, NODE1, pool(POOL1, 3), DRIVER_A, device(DEVICE3)),
                slice_with(SLICE2, NODE1, pool(POOL1, 3), DRIVER_A, device(DEVICE2))],
        expect=(allocation(local(NODE1), with_conditions(REQ0, POOL1, DEVICE1, ["IsPrepare"], ["BindingFailed"]),
                           result(REQ0, DRIVER_A, POOL1, DEVICE2)),)),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_upstream_case(case: Case) -> None:
    run(case)


def test_counter_slices_of_other_nodes() -> None:
    """Counter slices are relevant to every node (upstream ``GatherPools``: ``relevant = true``
    for a slice with sharedCounters). Another node's pool seen through them alone has no device
    here: a complete one changes nothing, an incomplete one makes an ``All`` request fail as
    upstream's does."""
    mine = [slice_with(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1))]
    complete = [counters(SLICE2, pool(POOL2, 2), EIGHT, selection=NODE2),
                slice_with(SLICE3, NODE2, pool(POOL2, 2), DRIVER_A, mem(DEVICE2, "4Gi"))]
    incomplete = [counters(SLICE2, pool(POOL2, 2), EIGHT, selection=NODE2)]
    all_claim = [claim(CLAIM0, all_request(REQ0, CLASS_A))]
    run(Case(claims=all_claim, classes=A, slices=mine + complete,
             expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),)))
    run(Case(claims=all_claim, classes=A, slices=mine + incomplete,
             error="asks for all devices, but resource pool driver-a/pool-2 is currently being updated"))
