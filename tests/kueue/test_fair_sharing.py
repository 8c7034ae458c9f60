"""Dominant resource share (``gpusched.kueue.fair_sharing``): the cases of Kueue's
``pkg/cache/scheduler/fair_sharing_test.go`` (``TestDominantResourceShare``), same fixtures:
queue ``cq`` in ``test-cohort`` beside ``lending-cq``, flavor ``default``.
"""

from __future__ import annotations

import math

import pytest

from gpusched.kueue.fair_sharing import MAX_INT64, FairSharing, Share, dominant_resource_share, fair_sharing_config
from gpusched.kueue.quota import add_usage, build_forest
from tests.kueue.builders import flavor_quota, make_cohort, make_cq

GPU = "example.com/gpu"


def share_of(weight: str, cq_quota: dict[str, str], lender_quota: dict[str, str], usage: dict[str, int]):
    cq = make_cq("cq", flavor_quota("default", **cq_quota), cohort="test-cohort", fairSharing={"weight": weight})
    lender = make_cq("lending-cq", flavor_quota("default", **lender_quota), cohort="test-cohort")
    forest = build_forest([cq, lender])
    for resource, amount in usage.items():
        add_usage(forest.queues["cq"], ("default", resource), amount)
    return dominant_resource_share(forest.queues["cq"])


CPU_GPU = {"cpu": "2", GPU: "5"}
LENDER = {"cpu": "8", GPU: "5"}
# (id = upstream case, weight, cq quota, lender quota, usage, want (dominant resource, weighted share))
CASES = [
    ("usage below nominal", "1", CPU_GPU, LENDER, {"cpu": 1000, GPU: 2}, ("", 0)),
    ("usage above nominal", "1", CPU_GPU, LENDER, {"cpu": 3000, GPU: 7}, (GPU, 200)),
    ("one resource above nominal", "1", CPU_GPU, LENDER, {"cpu": 3000, GPU: 3}, ("cpu", 100)),
    ("above nominal with integer weight", "2", {GPU: "5"}, {GPU: "5"}, {GPU: 7}, (GPU, 100)),
    ("above nominal with decimal weight", "0.5", {GPU: "5"}, {GPU: "5"}, {GPU: 7}, (GPU, 400)),
    ("above nominal with zero weight", "0", {GPU: "5"}, {GPU: "10"}, {GPU: 7}, (GPU, MAX_INT64)),
]


@pytest.mark.parametrize("weight,cq_quota,lender_quota,usage,want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_dominant_resource_share(weight, cq_quota, lender_quota, usage, want) -> None:
    share = share_of(weight, cq_quota, lender_quota, usage)
    assert (share.resource, share.weighted_share()) == want


def test_no_cohort_has_no_share() -> None:
    """fair_sharing_test.go "no cohort": a root node's share is 0."""
    forest = build_forest([make_cq("cq", flavor_quota("default", cpu="2"))])
    add_usage(forest.queues["cq"], ("default", "cpu"), 5000)
    assert dominant_resource_share(forest.queues["cq"]).weighted_share() == 0


def test_zero_weight_borrowers_sort_last() -> None:
    """CompareDRS: a zero-weight borrower sorts after any finite share."""
    zero = share_of("0", {GPU: "5"}, {GPU: "10"}, {GPU: 6})
    heavy = share_of("1", {GPU: "5"}, {GPU: "10"}, {GPU: 15})
    assert sorted([zero, heavy], key=lambda s: s.sort_key()) == [heavy, zero]


def tree_shares(queues, cohorts, usage: dict[tuple[str, str], int], request=None) -> dict[str, tuple[str, int, bool]]:
    forest = build_forest(queues, cohorts)
    for fr, amount in usage.items():
        add_usage(forest.queues["cq"], fr, amount)
    nodes = {**forest.queues, **forest.cohorts}
    shares = {name: dominant_resource_share(node, request if name == "cq" else None) for name, node in nodes.items()}
    return {name: (s.resource, s.weighted_share(), s.borrowing) for name, s in shares.items()}


CPU_D, GPU_D = ("default", "cpu"), ("default", GPU)
ZERO_LENDING = [make_cq("cq", flavor_quota("default", cpu="2", **{GPU: ("2", None, "0")}), cohort="test-cohort"),
                make_cq("lending-cq", flavor_quota("default", cpu="8", **{GPU: ("64", None, "0")}), cohort="test-cohort")]
FLAVORED = [make_cq("cq", flavor_quota("on-demand", cpu="20"), flavor_quota("spot", cpu="80"), cohort="test-cohort"),
            make_cq("lending-cq", flavor_quota("default", cpu="100"), cohort="test-cohort")]
CHILD = make_cohort("child-cohort", parent="root", weight="2")
# (id = upstream case, queues, cohorts, cq usage, request, want {node: (dominant resource, share, borrowing)})
TREE_CASES = [
    ("A resource with zero lendable", ZERO_LENDING, [], {CPU_D: 1000, GPU_D: 1}, {CPU_D: 4000, GPU_D: 4},
     {"cq": ("cpu", 300, True), "lending-cq": ("", 0, False), "test-cohort": ("", 0, False)}),
    ("multiple flavors", FLAVORED, [], {("on-demand", "cpu"): 15000, ("spot", "cpu"): 5000},
     {("on-demand", "cpu"): 10000}, {"cq": ("cpu", 25, True), "lending-cq": ("", 0, False),
                                     "test-cohort": ("", 0, False)}),
    ("cohort has resource share", [make_cq("cq", flavor_quota("default", **{GPU: "5"}), cohort="child-cohort")],
     [CHILD, make_cohort("root", flavor_quota("default", **{GPU: "45"}))], {GPU_D: 10}, None,
     {"cq": (GPU, 100, True), "child-cohort": (GPU, 50, True), "root": ("", 0, False)}),
    ("resource share defined for resources only available at the root cohort",
     [make_cq("cq", flavor_quota("default", **{GPU: "0"}), cohort="child-cohort")],
     [CHILD, make_cohort("root", flavor_quota("default", **{GPU: "50"}))], {GPU_D: 10}, None,
     {"cq": (GPU, 200, True), "child-cohort": (GPU, 100, True), "root": ("", 0, False)}),
    ("resource share affected by borrowing limit",
     [make_cq("cq", flavor_quota("default", **{GPU: "0"}), cohort="child-cohort")],
     [make_cohort("child-cohort", flavor_quota("default", **{GPU: ("0", "10", None)}), parent="root"),
      make_cohort("root", flavor_quota("default", **{GPU: "50"}))], {GPU_D: 10}, None,
     {"cq": (GPU, 1000, True), "child-cohort": (GPU, 200, True), "root": ("", 0, False)}),
]


@pytest.mark.parametrize("queues,cohorts,usage,wl_request,want", [c[1:] for c in TREE_CASES], ids=[c[0] for c in TREE_CASES])
def test_dominant_resource_share_in_trees(queues, cohorts, usage, wl_request, want) -> None:
    """fair_sharing_test.go ``TestDominantResourceShare``, every node of the tree."""
    assert tree_shares(queues, cohorts, usage, wl_request) == want


BORROW_ON = [make_cq("cq", flavor_quota("default", cpu="2", **{GPU: "5"}), cohort="cohort"),
             make_cq("lending-cq", flavor_quota("default", cpu="8", **{GPU: "5"}), cohort="cohort")]


@pytest.mark.parametrize("usage,requested,want_on,want_borrowing", [
    ({CPU_D: 3000}, {CPU_D: 1000}, True, True),
    ({CPU_D: 1000, GPU_D: 7}, {CPU_D: 1000}, False, True),
    ({CPU_D: 3000, GPU_D: 7}, {GPU_D: 1}, True, True),
    ({CPU_D: 1000, GPU_D: 2}, {CPU_D: 1000}, False, False),
    ({CPU_D: 3000}, {}, False, True),
], ids=["borrows on requested flavor", "borrows on unrequested flavor only", "borrows on both, requests one",
        "no borrowing", "nil requestedFRs"])
def test_is_borrowing_on(usage, requested, want_on, want_borrowing) -> None:
    """fair_sharing_test.go ``TestIsBorrowingOn``: what ``FairSharingPrioritizeNonBorrowing`` reads."""
    forest = build_forest(BORROW_ON)
    for fr, amount in usage.items():
        add_usage(forest.queues["cq"], fr, amount)
    share = dominant_resource_share(forest.queues["cq"])
    assert (share.borrowing_on(requested), share.borrowing) == (want_on, want_borrowing)


@pytest.mark.parametrize("ratio,weight,want", [(100, 0, math.inf), (0, 1, 0.0), (400, 2, 200.0), (10, 4, 2.5)],
                         ids=["zero weight returning Inf", "zero unweighted ratio returns 0",
                              "regular integer division", "decimal division"])
def test_precise_weighted_share(ratio, weight, want) -> None:
    """fair_sharing_test.go ``TestPreciseWeightedShareSerialized``."""
    assert Share(ratio, weight).precise() == want


@pytest.mark.parametrize("section,want", [
    (None, None), ({}, FairSharing()), ({"preemptionStrategies": ["LessThanInitialShare"]},
                                        FairSharing(("LessThanInitialShare",))),
    ({"preemptionStrategies": ["LessThanInitialShare", "LessThanOrEqualToFinalShare"]}, FairSharing()),
], ids=["absent: off", "empty: both strategies", "one strategy", "an order validation refuses: default"])
def test_fair_sharing_config(section, want) -> None:
    """The Configuration's ``fairSharing`` (``configuration_types.go``, ``parseStrategies``)."""
    config = {} if section is None else {"fairSharing": section}
    assert fair_sharing_config(config) == want
