"""Dominant resource share (``gpusched.kueue.fair_sharing``): the cases of Kueue's
``pkg/cache/scheduler/fair_sharing_test.go`` (``TestDominantResourceShare``), same fixtures:
queue ``cq`` in ``test-cohort`` beside ``lending-cq``, flavor ``default``.
"""

from __future__ import annotations

import pytest

from gpusched.kueue.fair_sharing import MAX_INT64, dominant_resource_share
from gpusched.kueue.quota import add_usage, build_forest
from tests.kueue.builders import flavor_quota, make_cq

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
