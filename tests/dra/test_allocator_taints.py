"""Device taints and request tolerations (KEP-5055, beta and on in v1.36). Each case is named
after the case of upstream's table it reproduces (``kubernetes/dynamic-resource-allocation``
v0.36.2, ``structured/internal/allocatortesting/allocator_testing.go``; the ``*-disabled`` cases
are left out)."""

from __future__ import annotations

import pytest

from tests.dra.builders import (CLAIM0, CLASS_A, CLASS_B, DEVICE1, DEVICE2, DRIVER_A, DRIVER_B, NODE1, POOL1, REQ0,
                                SUB0, SUB1, Case, all_request, allocation, claim, device, device_class, local,
                                prioritized, request, result, run, slice_with, sub_request, used)

A = [device_class(CLASS_A, DRIVER_A)]
NONE = {"key": "taint-key", "value": "taint-value", "effect": "None"}
NO_SCHEDULE = {"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}
NO_EXECUTE = {"key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}
TOLERATE_NO_SCHEDULE = {"operator": "Exists", "key": "taint-key", "effect": "NoSchedule"}
TOLERATE_NO_EXECUTE = {"operator": "Equal", "key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}
TWO_TAINTED = slice_with("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[NO_SCHEDULE]),
                         device(DEVICE2, taints=[NO_EXECUTE]))

CASES = {
    "tainted-two-devices": Case(claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A, slices=[TWO_TAINTED]),
    "tainted-one-device-two-taints": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[NO_SCHEDULE, NO_EXECUTE]))]),
    "tainted-two-devices-tolerated": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, tolerations=[TOLERATE_NO_EXECUTE]))], classes=A, slices=[TWO_TAINTED],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE2, tolerations=[TOLERATE_NO_EXECUTE])),)),
    "tainted-two-devices-prioritized-list-tolerated": Case(
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A), sub_request(SUB1, CLASS_A, tolerations=[TOLERATE_NO_EXECUTE])))],
        classes=A, slices=[TWO_TAINTED],
        expect=(allocation(local(NODE1), result("req-0/subReq-1", DRIVER_A, POOL1, DEVICE2, tolerations=[TOLERATE_NO_EXECUTE])),)),
    "tainted-no-effect": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[NONE]))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),)),
    "tainted-one-device-two-taints-both-tolerated": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, tolerations=[TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE]))], classes=A,
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[NO_SCHEDULE, NO_EXECUTE]))],
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1,
                                                tolerations=[TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE])),)),
    "tainted-prioritized-list": Case(
        claims=[claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1, CLASS_A)))],
        classes=[device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[NO_SCHEDULE]))]),
    "tainted-admin-access": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, adminAccess=True))], classes=A,
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[NO_SCHEDULE]))],
        in_use=used((DRIVER_A, POOL1, DEVICE1), (DRIVER_A, POOL1, DEVICE2))),
    "tainted-all-devices-single": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=A,
        slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[NO_SCHEDULE]))]),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_upstream_case(case: Case) -> None:
    run(case)


@pytest.mark.parametrize("toleration,tolerated", [
    pytest.param({"operator": "Exists"}, True, id="empty-key-exists-tolerates-all"),
    pytest.param({"key": "taint-key", "operator": "Equal", "value": "taint-value"}, True, id="equal-any-effect"),
    pytest.param({"key": "taint-key", "value": "taint-value"}, True, id="operator-defaults-to-equal"),
    pytest.param({"key": "taint-key", "value": "other"}, False, id="equal-other-value"),
    pytest.param({"key": "other", "operator": "Exists"}, False, id="other-key"),
    pytest.param({"key": "taint-key", "operator": "Exists", "effect": "NoExecute"}, False, id="other-effect"),
])
def test_toleration_matching(toleration: dict[str, str], tolerated: bool) -> None:
    """``resourceclaim.ToleratesTaint`` (``resourceclaim/devicetoleration.go``) against a
    NoSchedule taint ``taint-key=taint-value``."""
    case = Case(claims=[claim(CLAIM0, request(REQ0, CLASS_A, tolerations=[toleration]))], classes=A,
                slices=[slice_with("slice-1", NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[NO_SCHEDULE]))],
                expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1, tolerations=[toleration])),)
                if tolerated else ())
    run(case)
