"""The cohort tree's quota arithmetic (``gpusched.kueue.quota``): subtree quota, usage through
lending limits, available/potentialAvailable through borrowing limits, the borrowing level.

Each case follows the rules of Kueue's ``pkg/cache/scheduler/resource_node.go`` as its tests
exercise them (``resource_node_test.go``, ``cache_test.go`` "hierarchical cohorts" cases,
``pkg/scheduler/preemption/classical/hierarchical_preemption_test.go`` for the borrowing level).
"""

from __future__ import annotations

import pytest

from gpusched.kueue.quota import (add_usage, available, build_forest, lowest_fitting_subtree,
                                  potential_available, remove_usage)
from tests.kueue.builders import flavor_quota, make_cohort, make_cq

GPU = ("a100", "nvidia.com/gpu")

# (id, queues, cohorts, usage {cq: gpus}, asked cq, available, potentialAvailable)
CASES = [
    ("no cohort: nominal minus usage",
     [make_cq("a", flavor_quota("a100", gpu=8))], [], {"a": 3}, "a", 5, 8),
    ("cohort: borrow the sibling's unused quota",
     [make_cq("a", flavor_quota("a100", gpu=10), cohort="c"),
      make_cq("b", flavor_quota("a100", gpu=10), cohort="c")], [], {"b": 4}, "a", 16, 20),
    ("borrowingLimit caps what comes from the cohort",
     [make_cq("a", flavor_quota("a100", gpu=(10, 2, None)), cohort="c"),
      make_cq("b", flavor_quota("a100", gpu=10), cohort="c")], [], {"b": 4}, "a", 12, 12),
    ("borrowingLimit counts usage already in the cohort",
     [make_cq("a", flavor_quota("a100", gpu=(10, 2, None)), cohort="c"),
      make_cq("b", flavor_quota("a100", gpu=10), cohort="c")], [], {"a": 11}, "a", 1, 12),
    ("lendingLimit keeps the rest from the sibling",
     [make_cq("a", flavor_quota("a100", gpu=(10, None, 4)), cohort="c"),
      make_cq("b", flavor_quota("a100", gpu=10), cohort="c")], [], {}, "b", 14, 14),
    ("lendingLimit: usage past the local part counts in the cohort",
     [make_cq("a", flavor_quota("a100", gpu=(10, None, 4)), cohort="c"),
      make_cq("b", flavor_quota("a100", gpu=10), cohort="c")], [], {"a": 8}, "b", 12, 14),
    ("lending queue sees its local part plus the cohort",
     [make_cq("a", flavor_quota("a100", gpu=(10, None, 4)), cohort="c"),
      make_cq("b", flavor_quota("a100", gpu=10), cohort="c")], [], {"b": 10}, "a", 10, 20),
    ("hierarchy: the root cohort's own nominal is shared quota",
     [make_cq("a", flavor_quota("a100", gpu=10), cohort="team"),
      make_cq("x", cohort="org")],
     [make_cohort("team", parent="org"), make_cohort("org", flavor_quota("a100", gpu=5))],
     {"a": 7}, "x", 8, 15),
    ("hierarchy: a cohort's borrowingLimit bounds its subtree",
     [make_cq("a", flavor_quota("a100", gpu=4), cohort="team"),
      make_cq("x", flavor_quota("a100", gpu=20), cohort="org")],
     [make_cohort("team", flavor_quota("a100", gpu=(0, 6, None)), parent="org"), make_cohort("org")],
     {}, "a", 10, 10),
    ("a parent that names no Cohort object is an implicit cohort without limits",
     [make_cq("a", flavor_quota("a100", gpu=4), cohort="team"),
      make_cq("b", flavor_quota("a100", gpu=4), cohort="ghost")],
     [make_cohort("team", parent="ghost")], {}, "a", 8, 8),
]


@pytest.mark.parametrize("queues,cohorts,usage,asked,want_available,want_potential",
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_available_and_potential(queues, cohorts, usage, asked, want_available, want_potential) -> None:
    forest = build_forest(queues, cohorts)
    for name, gpus in usage.items():
        add_usage(forest.queues[name], GPU, gpus)
    cq = forest.queues[asked]
    assert (available(cq, GPU), potential_available(cq, GPU)) == (want_available, want_potential)


def test_remove_usage_undoes_add_usage_through_the_tree() -> None:
    forest = build_forest([make_cq("a", flavor_quota("a100", gpu=(10, None, 4)), cohort="c"),
                           make_cq("b", flavor_quota("a100", gpu=10), cohort="c")])
    a, cohort = forest.queues["a"], forest.cohorts["c"]
    add_usage(a, GPU, 9)
    assert cohort.usage[GPU] == 3
    remove_usage(a, GPU, 9)
    assert (a.usage[GPU], cohort.usage[GPU]) == (0, 0)


# (id, request, want (borrowing level, may reclaim in hierarchy)); a=10 and b=10 in "team",
# "team" and x=0 under "org" with 5 of its own.
LEVELS = [
    ("within nominal: no borrowing", 6, (0, True)),
    ("fits in the team cohort: level 1, below the root", 15, (1, True)),
    ("needs the org's quota: level 2, the whole tree", 24, (2, False)),
    ("fits nowhere: the root's height", 40, (2, False)),
]


@pytest.mark.parametrize("request_gpus,want", [case[1:] for case in LEVELS], ids=[case[0] for case in LEVELS])
def test_borrowing_level_is_the_lowest_fitting_subtree(request_gpus, want) -> None:
    forest = build_forest(
        [make_cq("a", flavor_quota("a100", gpu=10), cohort="team"),
         make_cq("b", flavor_quota("a100", gpu=10), cohort="team"), make_cq("x", cohort="org")],
        [make_cohort("team", parent="org"), make_cohort("org", flavor_quota("a100", gpu=5))])
    assert lowest_fitting_subtree(forest.queues["a"], GPU, request_gpus) == want


def test_a_cohort_cycle_disables_its_members_and_nothing_crashes() -> None:
    forest = build_forest([make_cq("a", flavor_quota("a100", gpu=4), cohort="p")],
                          [make_cohort("p", parent="q"), make_cohort("q", parent="p")])
    assert forest.cyclic == {"p", "q"}
    assert forest.in_cycle(forest.queues["a"])
