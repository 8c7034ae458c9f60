"""The cycle's order with fair sharing on (``gpusched.kueue.fair_iterator`` through
``cycle.run_cycle``): cases of Kueue's ``pkg/scheduler/scheduler_fs_test.go``
(``TestScheduleForFairSharing``), same queues, cohorts, workloads and outcomes: which head is
admitted and which one "no longer fits". Each case also runs with fair sharing off, where the
classical order picks the other head, so the case shows the tournament decided.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpusched.kueue.cycle import ADMITTED, PENDING, Pending, Snapshot, run_cycle
from gpusched.kueue.fair_sharing import FairSharing
from gpusched.kueue.inputs import flavor_of, podset_request, queue_policy
from gpusched.kueue.ordering import QueuedWorkload
from gpusched.kueue.preemption import Admitted
from gpusched.kueue.quota import build_forest
from tests.kueue.builders import flavor_quota, make_cohort, make_cq, make_flavor, make_podset

NO_LONGER_FITS = "Workload no longer fits after processing another workload"
FLAVORS = {name: flavor_of(make_flavor(name)) for name in ("default", "on-demand", "spot", "model-a")}
ENG = [make_cq("eng-alpha", flavor_quota("on-demand", cpu=("50", "50", None)), flavor_quota("spot", cpu=("100", "0", None)),
               cohort="eng"),
       make_cq("eng-beta", flavor_quota("on-demand", cpu=("50", "10", None)), flavor_quota("spot", cpu=("0", "100", None)),
               cohort="eng", preemption={"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}),
       make_cq("eng-shared", flavor_quota("on-demand", cpu=("10", "0", None)), cohort="eng")]
TOURNAMENT = [make_cohort("A", flavor_quota("on-demand", cpu="200")), make_cohort("B", parent="A"),
              make_cohort("C", parent="A")]
ZERO_QUOTA = {name: make_cq(name, flavor_quota("on-demand", cpu="0"), cohort=parent)
              for name, parent in (("d", "B"), ("e", "B"), ("f", "C"), ("g", "C"), ("b", "A"), ("c", "A"))}


def admitted(name: str, cq: str, cpus: int, flavor: str = "on-demand") -> Admitted:
    return Admitted(f"eng-alpha/{name}", cq, {(flavor, "cpu"): cpus * 1000}, uid=name)


def head(name: str, cq: str, cpus: int, priority: int = 0, created: float = 0.0) -> Pending:
    return Pending(QueuedWorkload(f"ns/{name}", cq, priority, created, name), (podset_request(make_podset(cpu=str(cpus))),))


# (id = upstream case, queues, cohorts, admitted, heads, fair-sharing outcome {head: outcome or message})
CASES: list[tuple[Any, ...]] = [
    ("with fair sharing: schedule workload with lowest share first", ENG, [],
     [admitted("all_nominal", "eng-alpha", 50), admitted("borrowing", "eng-beta", 55)],
     [head("older_new", "eng-beta", 1, created=-60), head("new", "eng-alpha", 5)],
     {"ns/new": ADMITTED, "ns/older_new": NO_LONGER_FITS}),
    ("hierarchical fair sharing schedule workload which wins tournament",
     [ZERO_QUOTA[q] for q in "defg"], TOURNAMENT,
     [admitted("d0", "d", 10), admitted("e0", "e", 20), admitted("g0", "g", 100)],
     [head("d1", "d", 70), head("e1", "e", 61), head("f1", "f", 1), head("g1", "g", 1)],
     {"ns/d1": ADMITTED, "ns/e1": NO_LONGER_FITS, "ns/f1": NO_LONGER_FITS, "ns/g1": NO_LONGER_FITS}),
    ("fair sharing schedule highest priority first", [ZERO_QUOTA["b"], ZERO_QUOTA["c"]],
     [make_cohort("A", flavor_quota("on-demand", cpu="10"))], [],
     [head("b1", "b", 10, priority=99), head("c1", "c", 10, priority=101)],
     {"ns/c1": ADMITTED, "ns/b1": NO_LONGER_FITS}),
    ("fair sharing schedule earliest timestamp first", [ZERO_QUOTA["b"], ZERO_QUOTA["c"]],
     [make_cohort("A", flavor_quota("on-demand", cpu="10"))], [],
     [head("b1", "b", 10, created=1), head("c1", "c", 10, created=0)],
     {"ns/c1": ADMITTED, "ns/b1": NO_LONGER_FITS}),
]


def outcomes(queues, cohorts, workloads, heads, fair: bool) -> dict[str, str]:
    snap = Snapshot(build_forest(queues, cohorts), {q["metadata"]["name"]: queue_policy(q) for q in queues}, FLAVORS,
                    fair_sharing=FairSharing() if fair else None)
    for item in workloads:
        snap.admit(item)
    return {d.key: d.outcome if d.outcome == ADMITTED else d.message for d in run_cycle(snap, heads)}


@pytest.mark.parametrize("queues,cohorts,workloads,heads,want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_schedule_for_fair_sharing(queues, cohorts, workloads, heads, want) -> None:
    assert outcomes(queues, cohorts, workloads, heads, fair=True) == want


def test_classical_order_differs_where_the_share_decides() -> None:
    """The first case without fair sharing: both heads borrow, so FIFO admits the older one."""
    _, queues, cohorts, workloads, heads, _ = CASES[0]
    got = outcomes(queues, cohorts, workloads, heads, fair=False)
    assert got == {"ns/older_new": ADMITTED, "ns/new": NO_LONGER_FITS}
    assert PENDING not in got.values()
