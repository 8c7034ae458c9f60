"""The flavor assigner (``gpusched.kueue.flavors``): modes, borrowing levels, fungibility and
the exact reason strings. Each case is named after the case of Kueue's
``pkg/scheduler/flavorassigner/flavorassigner_test.go`` (``TestAssignFlavors``) it reproduces;
the oracle, as that test's default ``simulationResult``, answers Preempt with no borrowing.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpusched.kueue.flavors import FIT, NO_FIT, PREEMPT, FlavorAssigner
from gpusched.kueue.inputs import flavor_of, podset_request, queue_policy
from gpusched.kueue.quota import add_usage, build_forest
from tests.kueue.builders import FLAVORS, SPOT_TOLERATION, flavor_quota, make_cq, make_podset


def preempt_oracle(fr: tuple[str, str], val: int) -> tuple[int, int]:
    return PREEMPT, 0


def assign(cq: dict[str, Any], podsets: list[dict[str, Any]], usage: dict[tuple[str, str, str], int] | None = None,
           others: list[dict[str, Any]] | None = None):
    forest = build_forest([cq, *(others or [])])
    for (queue, flavor, resource), amount in (usage or {}).items():
        add_usage(forest.queues[queue], (flavor, resource), amount)
    assigner = FlavorAssigner(queue_policy(cq), forest.queues[cq["metadata"]["name"]],
                              {f["metadata"]["name"]: flavor_of(f) for f in FLAVORS}, preempt_oracle)
    return assigner.assign([podset_request(p) for p in podsets])


def flavors_of(assignment) -> dict[str, str]:
    return {res: choice.name for ps in assignment.podsets for res, choice in ps.flavors.items()}


TRY_NEXT = {"flavorFungibility": {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}}

# (id = upstream case name, cq, podsets, usage, other queues, want mode, want {resource: flavor},
#  want borrowing, want message)
CASES = [
    ("single flavor, fits",
     make_cq("cq", flavor_quota("default", cpu="4")), [make_podset(cpu="1")], None, None,
     FIT, {"cpu": "default"}, 0, ""),
    ("single flavor, fits tainted flavor",
     make_cq("cq", flavor_quota("tainted", cpu="4")), [make_podset(cpu="1", tolerations=[SPOT_TOLERATION])],
     None, None, FIT, {"cpu": "tainted"}, 0, ""),
    ("single flavor, fits tainted flavor with toleration",
     make_cq("cq", flavor_quota("taint_and_toleration", cpu="4")), [make_podset(cpu="1")], None, None,
     FIT, {"cpu": "taint_and_toleration"}, 0, ""),
    ("single flavor, used resources, doesn't fit",
     make_cq("cq", flavor_quota("default", cpu="4")), [make_podset(cpu="2")],
     {("cq", "default", "cpu"): 3000}, None, PREEMPT, {"cpu": "default"}, 0,
     "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 1 more needed"),
    ("multiple flavors, fits while skipping tainted flavor",
     make_cq("cq", flavor_quota("tainted", cpu="4"), flavor_quota("two", cpu="4")), [make_podset(cpu="3")],
     None, None, FIT, {"cpu": "two"}, 0, ""),
    ("multiple flavors, fits a node selector",
     make_cq("cq", flavor_quota("one", cpu="4"), flavor_quota("two", cpu="4")),
     [make_podset(cpu="1", node_selector={"type": "two", "ignored": "label"})], None, None,
     FIT, {"cpu": "two"}, 0, ""),
    ("not enough space to borrow",
     make_cq("cq", flavor_quota("one", cpu="1"), cohort="test-cohort"), [make_podset(cpu="2")],
     {("other", "one", "cpu"): 9000}, [make_cq("other", flavor_quota("one", cpu=("10", None, "0")), cohort="test-cohort")],
     NO_FIT, {}, 0,
     "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor one, previously considered "
     "podsets requests (0) + current podset request (2) > maximum capacity (1)"),
    ("resource not listed in clusterQueue",
     make_cq("cq", flavor_quota("one", cpu="4")), [make_podset(**{"example.com/gpu": "2"})], None, None,
     NO_FIT, {}, 0, "couldn't assign flavors to pod set main: resource example.com/gpu unavailable in ClusterQueue"),
    ("zero resource request not in clusterQueue should succeed",
     make_cq("cq", flavor_quota("one", cpu="4")), [make_podset(cpu="1", **{"example.com/gpu": "0"})], None, None,
     FIT, {"cpu": "one"}, 0, ""),
    ("preempt try next flavor",
     make_cq("cq", flavor_quota("one", pods="10", cpu="10"), flavor_quota("two", pods="10", cpu="10")),
     [make_podset(cpu="9")], {("cq", "one", "cpu"): 2000}, None, FIT, {"cpu": "two", "pods": "two"}, 0, ""),
    ("borrow try next flavor, found the first flavor",
     make_cq("cq", flavor_quota("one", pods="10", cpu=("10", "1", None)), flavor_quota("two", pods="10", cpu="1"),
             cohort="test-cohort", **TRY_NEXT),
     [make_podset(cpu="9")], {("cq", "one", "cpu"): 2000},
     [make_cq("other", flavor_quota("one", cpu="1"), cohort="test-cohort")],
     FIT, {"cpu": "one", "pods": "one"}, 1, ""),
    ("borrow try next flavor, found the second flavor",
     make_cq("cq", flavor_quota("one", pods="10", cpu=("10", "1", None)), flavor_quota("two", pods="10", cpu="10"),
             cohort="test-cohort", **TRY_NEXT),
     [make_podset(cpu="9")], {("cq", "one", "cpu"): 2000},
     [make_cq("other", flavor_quota("one", cpu="1"), cohort="test-cohort")],
     FIT, {"cpu": "two", "pods": "two"}, 0, ""),
    ("multiple specs, fit different flavors",
     make_cq("cq", flavor_quota("one", cpu="4"), flavor_quota("two", cpu="10")),
     [make_podset("driver", cpu="5"), make_podset("worker", cpu="3")], None, None, FIT, {"cpu": "one"}, 0, ""),
    ("flavor not found",
     make_cq("cq", flavor_quota("nonexistent-flavor", cpu="4")), [make_podset(cpu="1")], None, None,
     NO_FIT, {}, 0, "couldn't assign flavors to pod set main: flavor nonexistent-flavor not found"),
    ("gpu: insufficient unused quota, reasons sorted across flavors",
     make_cq("cq", flavor_quota("h100", gpu=8), flavor_quota("a100", gpu=8)), [make_podset(gpu=8)],
     {("cq", "h100", "nvidia.com/gpu"): 4, ("cq", "a100", "nvidia.com/gpu"): 4}, None, PREEMPT,
     {"nvidia.com/gpu": "h100"}, 0,
     "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor a100, "
     "4 more needed, insufficient unused quota for nvidia.com/gpu in flavor h100, 4 more needed"),
]


@pytest.mark.parametrize("cq,podsets,usage,others,want_mode,want_flavors,want_borrow,want_message",
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_assign_flavors(cq, podsets, usage, others, want_mode, want_flavors, want_borrow, want_message) -> None:
    got = assign(cq, podsets, usage, others)
    assert (got.mode(), got.borrowing(), got.message()) == (want_mode, want_borrow, want_message)
    if len(podsets) == 1:
        assert flavors_of(got) == want_flavors


def test_multiple_specs_land_on_different_flavors() -> None:
    """flavorassigner_test.go "multiple specs, fit different flavors": 5 CPUs are past flavor
    one's 4, so the driver takes two; the worker's 3 fit in one."""
    got = assign(make_cq("cq", flavor_quota("one", cpu="4"), flavor_quota("two", cpu="10")),
                 [make_podset("driver", cpu="5"), make_podset("worker", cpu="3")])
    assert [ps.flavors["cpu"].name for ps in got.podsets] == ["two", "one"]


@pytest.mark.parametrize("usage,want_reason", [
    ({}, "ExceedsMaxQuota"),
    ({("other", "a100", "nvidia.com/gpu"): 4}, "WaitingForQuota"),
], ids=["past the maximum capacity", "waiting for quota, no preemption possible"])
def test_no_fit_reason(usage, want_reason) -> None:
    """The QuotaReserved=False reason: ExceedsMaxQuota past potentialAvailable, WaitingForQuota
    when only usage is in the way and preemption could not help (borrowing past nominal)."""
    cq = make_cq("cq", flavor_quota("a100", gpu=4), cohort="c")
    other = make_cq("other", flavor_quota("a100", gpu=4), cohort="c")
    request = 9 if not usage else 6
    got = assign(cq, [make_podset(gpu=request)], usage, [other])
    assert (got.mode(), got.no_fit_reason()) == (NO_FIT, want_reason)
