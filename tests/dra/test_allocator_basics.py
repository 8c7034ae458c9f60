"""The structured allocator's basic cases: one request after another, backtracking, pools and
slices, missing classes. Each case is named after the case of upstream's table it reproduces
(``kubernetes/dynamic-resource-allocation`` v0.36.2,
``structured/internal/allocatortesting/allocator_testing.go``, ``TestAllocator``; the
``lexicographical-*`` cases are ``lexicographical_testing.go``)."""

from __future__ import annotations

import pytest

from tests.dra.builders import (ALL_NODES, CLAIM0, CLAIM1, CLASS_A, CLASS_B, DEVICE0, DEVICE1, DEVICE2, DEVICE3,
                                DRIVER_A, DRIVER_B, NODE1, NODE2, POOL1, POOL2, POOL3, POOL4, REGION1, REGION2, REQ0,
                                REQ1, REQ2, SLICE1, SLICE2, SLICE3, Case, all_request, allocation, claim, device,
                                device_class, device_configuration, local, many_devices, node, node_label_selector,
                                one_device, pool, request, result, run, slice_with, used)

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


@pytest.mark.parametrize("name", ["no-claims-to-allocate", "empty"])
def test_no_claims_to_allocate_is_an_empty_solution(name: str) -> None:
    """upstream ``no-claims-to-allocate`` and ``empty``: nothing asked, nothing allocated, no error."""
    from gpusched.dra.allocator import Allocated, InUse, allocate
    got = allocate([], node(), [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
                   {CLASS_A: device_class(CLASS_A, DRIVER_A)}, InUse())
    assert got == Allocated(())


A = [device_class(CLASS_A, DRIVER_A)]
XYY = slice_with(SLICE1, NODE1, POOL1, DRIVER_A, *(device(n, attributes={"type": {"string": t}})
                                                   for n, t in ((DEVICE1, "X"), (DEVICE2, "Y"), (DEVICE3, "Y"))))
FOUR = [device(DEVICE1), device(DEVICE2), device(DEVICE3), device("device-4")]
REGION_SELECTOR = node_label_selector("region", REGION1)
MORE = {
    "network-attached-device": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[one_device(SLICE1, REGION_SELECTOR, POOL1, DRIVER_A)],
        expect=(allocation(REGION_SELECTOR, result(REQ0, DRIVER_A, POOL1, DEVICE1)),)),
    "unsuccessful-allocation-network-attached-device": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[one_device(SLICE1, REGION_SELECTOR, POOL1, DRIVER_A)], node=node(NODE2, REGION2)),
    "many-network-attached-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 4))], classes=A,
        slices=[one_device(SLICE1, REGION_SELECTOR, POOL1, DRIVER_A), one_device(SLICE1, ALL_NODES, POOL2, DRIVER_A),
                one_device(SLICE1, node_label_selector("planet", "earth"), POOL3, DRIVER_A),
                one_device(SLICE1, local(NODE1), POOL4, DRIVER_A)],
        expect=(allocation({"nodeSelectorTerms": [{
            "matchExpressions": [{"key": "region", "operator": "In", "values": [REGION1]},
                                 {"key": "planet", "operator": "In", "values": ["earth"]}],
            "matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE1]}]}]},
            *(result(REQ0, DRIVER_A, p, DEVICE1) for p in (POOL1, POOL2, POOL3, POOL4))),)),
    "local-and-network-attached-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))], classes=A,
        slices=[one_device(SLICE1, REGION_SELECTOR, POOL1, DRIVER_A), one_device(SLICE1, NODE1, POOL2, DRIVER_A)],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL2, DEVICE1)),)),
    "several-different-drivers": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A)), claim(CLAIM0, request(REQ0, CLASS_B))],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[slice_with(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
                one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),
                allocation(local(NODE1), result(REQ0, DRIVER_B, POOL1, DEVICE1)))),
    "with-class-device-config": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=[device_class(CLASS_A, DRIVER_A, "classAttribute")],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), config=[
            {"source": "FromClass", "requests": [REQ0], **device_configuration(DRIVER_A, "classAttribute")}]),)),
    "with-class-device-config-with-multiple-request-and-configs": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A), request(REQ2, CLASS_B))],
        classes=[device_class(CLASS_A, DRIVER_A, "classAttribute-A"), device_class(CLASS_B, DRIVER_B, "classAttribute-B")],
        slices=[many_devices(SLICE1, NODE1, POOL1, DRIVER_A, 2), one_device(SLICE2, NODE1, POOL1, DRIVER_B)],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE0), result(REQ1, DRIVER_A, POOL1, DEVICE1),
                           result(REQ2, DRIVER_B, POOL1, DEVICE1), config=[
            {"source": "FromClass", "requests": [REQ0, REQ1], **device_configuration(DRIVER_A, "classAttribute-A")},
            {"source": "FromClass", "requests": [REQ2], **device_configuration(DRIVER_B, "classAttribute-B")}]),)),
    "claim-with-device-config": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), config=[device_configuration(DRIVER_A, "deviceAttribute")])],
        classes=A, slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), config=[
            {"source": "FromClaim", **device_configuration(DRIVER_A, "deviceAttribute")}]),)),
    "unknown-selector": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, selectors=[{}]))], classes=A,
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)], error="CEL expression empty (unsupported selector type?)"),
    "unknown-allocation-mode": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, mode="future-mode"))], classes=A,
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)], error="unsupported count mode future-mode"),
    "unknown-constraint": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), constraints=[{}])], classes=A,
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)], error="empty constraint (unsupported constraint type?)"),
    "invalid-CEL-one-device": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, "noSuchVar"))], classes=A,
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)], error="undeclared reference"),
    "invalid-CEL-one-device-class": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=[device_class(CLASS_A, DRIVER_A, expression="noSuchVar")],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)], error="undeclared reference"),
    "invalid-CEL-all-devices": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, selectors=[{"cel": {"expression": "noSuchVar"}}]))], classes=A,
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)], error="undeclared reference"),
    "too-many-devices-single-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 500))], classes=A, error="exceeds the claim limit"),
    "many-devices-okay": Case(claims=[claim(CLAIM0, request(REQ0, CLASS_A, 32))], classes=A),
    "all-devices-invalid-CEL": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 500))], classes=A, error="exceeds the claim limit"),
    "too-many-devices-total": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 32), request(REQ1, CLASS_A))], classes=A,
        slices=[many_devices(SLICE1, NODE1, POOL1, DRIVER_A, 33)], error="exceeds the claim limit"),
    "max-number-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 32))], classes=A, slices=[many_devices(SLICE1, NODE1, POOL1, DRIVER_A, 32)],
        expect=(allocation(local(NODE1), *(result(REQ0, DRIVER_A, POOL1, f"device-{i}") for i in range(32))),)),
    "multi-host-resource-pool-with-stale-slice-for-current-node": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
                slice_with(SLICE2, NODE2, pool(POOL1, 2, generation=2), DRIVER_A, device(DEVICE2))]),
    "multi-host-resource-pool-complete-update-from-node-1-to-node-2": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
                slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE2)),
                slice_with(SLICE2, NODE2, pool(POOL1, 2, generation=2), DRIVER_A, device(DEVICE1)),
                slice_with(SLICE2, NODE2, pool(POOL1, 2, generation=2), DRIVER_A, device(DEVICE2))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),)),
    "multi-host-resource-pool-complete-update-from-node-2-to-node-1": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE2, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
                slice_with(SLICE1, NODE2, pool(POOL1, 2), DRIVER_A, device(DEVICE2)),
                slice_with(SLICE2, NODE1, pool(POOL1, 2, generation=2), DRIVER_A, device(DEVICE1)),
                slice_with(SLICE2, NODE1, pool(POOL1, 2, generation=2), DRIVER_A, device(DEVICE2))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),)),
    "multi-host-resource-pool-incomplete-update-from-node-1-to-node-2": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
                slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE2)),
                slice_with(SLICE2, NODE2, pool(POOL1, 2, generation=2), DRIVER_A, device(DEVICE1))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),)),
    "multi-host-resource-pool-incomplete-update-from-node-2-to-node-1": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE2, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
                slice_with(SLICE1, NODE2, pool(POOL1, 2), DRIVER_A, device(DEVICE2)),
                slice_with(SLICE2, NODE1, pool(POOL1, 2, generation=2), DRIVER_A, device(DEVICE1))]),
    "different-resourceslices-in-pool-can-target-different-nodes": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE2, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
                slice_with(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE2))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE2)),)),
    "invalid-pool-is-ok-if-devices-can-be-allocated-from-other": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
                slice_with(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
                slice_with(SLICE3, NODE1, POOL2, DRIVER_A, device(DEVICE2))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL2, DEVICE2)),)),
    "invalid-pool-is-error-if-no-other-device-can-be-allocated": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
                slice_with(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
                slice_with(SLICE3, NODE1, POOL2, DRIVER_A, device(DEVICE2))],
        in_use=used((DRIVER_A, POOL2, DEVICE2)), error="invalid resource pools were encountered"),
    "no-allocation-from-incomplete-pools": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1))]),
    "check-combinations-within-single-request-single-pool-single-slice": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 5))], classes=A,
        slices=[slice_with(SLICE1, NODE1, POOL1, DRIVER_A, *FOUR)], steps=16),
    "check-combinations-within-single-request-single-pool-multiple-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 5))], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, *FOUR[:2]),
                slice_with(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, *FOUR[2:])], steps=16),
    "check-combinations-within-single-request-multiple-pools-multiple-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 5))], classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, FOUR[0]),
                slice_with(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, FOUR[1]),
                slice_with(SLICE3, NODE1, POOL2, DRIVER_A, *FOUR[2:])], steps=16),
    "check-combinations-within-single-request-many-pools": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 5))], classes=A,
        slices=[slice_with(f"slice-{i + 1}", NODE1, f"pool-{i + 1}", DRIVER_A, d) for i, d in enumerate(FOUR)], steps=16),
    "check-combinations-with-backtracking": Case(
        claims=[claim(CLAIM0, request(REQ1, CLASS_A, 2), request(REQ2, CLASS_A, 1, 'device.attributes["driver-a"].type == "X"'))],
        classes=A, slices=[XYY],
        expect=(allocation(local(NODE1), result(REQ1, DRIVER_A, POOL1, DEVICE2), result(REQ1, DRIVER_A, POOL1, DEVICE3),
                           result(REQ2, DRIVER_A, POOL1, DEVICE1)),), steps=12),
    "check-combinations-with-backtracking-across-slices-and-pools": Case(
        claims=[claim(CLAIM0, request(REQ1, CLASS_A, 2), request(REQ2, CLASS_A, 1, 'device.attributes["driver-a"].type == "X"'))],
        classes=A,
        slices=[slice_with(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1, attributes={"type": {"string": "X"}})),
                slice_with(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE2, attributes={"type": {"string": "Y"}})),
                slice_with(SLICE3, NODE1, POOL2, DRIVER_A, device(DEVICE3, attributes={"type": {"string": "Y"}},
                                                                  bindingConditions=["IsPrepare"], bindingFailureConditions=[]))],
        expect=(allocation(local(NODE1), result(REQ1, DRIVER_A, POOL1, DEVICE2),
                           result(REQ1, DRIVER_A, POOL2, DEVICE3, bindingConditions=["IsPrepare"]),
                           result(REQ2, DRIVER_A, POOL1, DEVICE1)),), steps=12),
}


@pytest.mark.parametrize("case", MORE.values(), ids=MORE.keys())
def test_more_upstream_cases(case: Case) -> None:
    run(case)
