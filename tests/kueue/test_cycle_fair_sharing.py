"""The cycle's order with fair sharing on (``gpusched.kueue.fair_iterator`` through
``cycle.run_cycle``): cases of Kueue's ``pkg/scheduler/scheduler_fs_test.go``
(``TestScheduleForFairSharing``), same queues, cohorts, workloads and outcomes: which head is
admitted and which one "no longer fits". Each case also runs with fair sharing off, where the
classical order picks the other head, so the case shows the tournament decided.

Left out: "multiple preemptions within cq when fair sharing", whose queues set only
``withinClusterQueue``: upstream's test builds them without defaults, so ``reclaimWithinCohort``
is the empty string, which ``canPreemptWhileBorrowing`` reads as "not Never". A ClusterQueue
applied to a cluster gets the CRD default ``Never``, and its 3-CPU request past a 2-CPU nominal
quota then waits, as ``test_cycle.py`` shows for the classical case "A workload is only eligible
to do preemptions if it fits fully within nominal quota".
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
from tests.kueue.builders import flavor_quota, make_cohort, make_cq, make_flavor, make_podset, queue, raw_quota, using, wanting

NO_LONGER_FITS = "Workload no longer fits after processing another workload"
FLAVORS = {name: flavor_of(make_flavor(name)) for name in ("default", "on-demand", "spot", "model-a")}
ENG = [make_cq("eng-alpha", flavor_quota("on-demand", cpu=("50", "50", None)), flavor_quota("spot", cpu=("100", "0", None)),
               cohort="eng"),
       make_cq("eng-beta", flavor_quota("on-demand", cpu=("50", "10", None)), flavor_quota("spot", cpu=("0", "100", None)),
               cohort="eng", preemption={"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}),
       make_cq("eng-shared", flavor_quota("on-demand", cpu=("10", "0", None)), cohort="eng")]
TOURNAMENT = [make_cohort("A", flavor_quota("on-demand", cpu="200")), make_cohort("B", parent="A"),
              make_cohort("C", parent="A")]
FS_NOM = [make_cq("fs-nom-a", flavor_quota("on-demand", cpu=("50", "0", None)), flavor_quota("spot", cpu=("50", "50", None)),
                  cohort="fs-nom"),
          make_cq("fs-nom-b", flavor_quota("on-demand", cpu=("10", "50", None)), flavor_quota("spot", cpu=("50", "0", None)),
                  cohort="fs-nom")]


def od(name: str, cpu: str, cohort: str) -> dict[str, Any]:
    return make_cq(name, flavor_quota("on-demand", cpu=cpu), cohort=cohort)


def cohorts(*specs: tuple[str, str | None, str | None]) -> list[dict[str, Any]]:
    """(name, parent, on-demand CPUs) per cohort."""
    return [make_cohort(name, *([flavor_quota("on-demand", cpu=cpu)] if cpu else []), parent=parent)
            for name, parent, cpu in specs]


def weighted(weight: str) -> list[dict[str, Any]]:
    policy = {"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"}
    return [make_cq(q, flavor_quota("on-demand", cpu="0"), cohort="A", preemption=policy,
                    fairSharing={"weight": weight}) for q in ("b", "c")]


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
    ("with fair sharing: nominal-first ordering admits workload fitting within nominal despite higher CQ DRS", FS_NOM,
     [], [admitted("spot-heavy", "fs-nom-a", 80, "spot"), admitted("light-usage", "fs-nom-b", 5)],
     [head("borrow-wl", "fs-nom-b", 15, created=-60), head("nom-wl", "fs-nom-a", 45)],
     {"ns/nom-wl": ADMITTED, "ns/borrow-wl": NO_LONGER_FITS}),
    ("with fair sharing: hierarchical nominal-first prefers non-borrowing subtree",
     [od("cq-a", "0", "Cohort-A"), od("cq-b", "5", "Cohort-B"), od("cq-c", "0", "Cohort-B")],
     cohorts(("root", None, None), ("Cohort-A", "root", "10"), ("Cohort-B", "root", None)),
     [admitted("c0", "cq-c", 10)], [head("wl-a", "cq-a", 5), head("wl-b", "cq-b", 5)],
     {"ns/wl-a": ADMITTED, "ns/wl-b": NO_LONGER_FITS}),
    ("with fair sharing: hierarchical nominal-first with deeper nesting",
     [od("cq-a", "0", "SUB-A"), od("cq-b", "5", "Cohort-B"), od("cq-c", "0", "Cohort-B")],
     cohorts(("root", None, None), ("Cohort-A", "root", None), ("SUB-A", "Cohort-A", "10"), ("Cohort-B", "root", None)),
     [admitted("c0", "cq-c", 10)], [head("wl-a", "cq-a", 5), head("wl-b", "cq-b", 5)],
     {"ns/wl-a": ADMITTED, "ns/wl-b": NO_LONGER_FITS}),
    ("with fair sharing: hierarchical nominal-first with mixed CQ and cohort quotas",
     [od("cq-a1", "5", "Cohort-A"), od("cq-a2", "3", "Cohort-A"), od("cq-b", "5", "Cohort-B"), od("cq-c", "3", "Cohort-B")],
     cohorts(("root", None, None), ("Cohort-A", "root", "10"), ("Cohort-B", "root", "10")),
     [admitted("a2-admitted", "cq-a2", 6), admitted("c-admitted", "cq-c", 20)],
     [head("wl-a1", "cq-a1", 7), head("wl-b", "cq-b", 4)], {"ns/wl-a1": ADMITTED, "ns/wl-b": NO_LONGER_FITS}),
    ("with fair sharing: hierarchical nominal-first per-flavor ignores cross-flavor borrowing",
     [make_cq("cq-a", flavor_quota("on-demand", cpu="0"), flavor_quota("spot", cpu="0"), cohort="Cohort-A"),
      make_cq("cq-b", flavor_quota("on-demand", cpu="5"), flavor_quota("spot", cpu="0"), cohort="Cohort-B")],
     [make_cohort("root"), make_cohort("Cohort-A", flavor_quota("on-demand", cpu="10"), parent="root"),
      make_cohort("Cohort-B", flavor_quota("spot", cpu="10"), parent="root")],
     [admitted("spot-admitted", "cq-a", 5, "spot"), admitted("od-admitted", "cq-b", 8)],
     [head("wl-a", "cq-a", 4), head("wl-b", "cq-b", 4)], {"ns/wl-a": ADMITTED, "ns/wl-b": NO_LONGER_FITS}),
    ("fair sharing schedule workload with lowest drf after admission", [ZERO_QUOTA["b"], ZERO_QUOTA["c"]],
     cohorts(("A", None, "100")), [admitted("b0", "b", 10)], [head("b1", "b", 50), head("c1", "c", 75)],
     {"ns/b1": ADMITTED, "ns/c1": NO_LONGER_FITS}),
    ("fair sharing two queues with weight 0 schedules workload which borrows less", weighted("0"),
     cohorts(("A", None, "8")), [admitted("b0", "b", 4)], [head("b1", "b", 4, priority=9001), head("c1", "c", 4)],
     {"ns/c1": ADMITTED, "ns/b1": NO_LONGER_FITS}),
    ("fair sharing two queues with high weight schedules workload which borrows less", weighted("123456789"),
     cohorts(("A", None, "8")), [admitted("b0", "b", 4)], [head("b1", "b", 4, priority=9001), head("c1", "c", 4)],
     {"ns/c1": ADMITTED, "ns/b1": NO_LONGER_FITS}),
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


LP = {"withinClusterQueue": "LowerPriority"}
OVERLAP = [queue(f"other-{n}", raw_quota("default", cpu="0", **{f"{n}_resource": "1"}), cohort="other",
                 preemption={**LP, "reclaimWithinCohort": "Any"}) for n in ("alpha", "beta", "gamma")] + [
    queue("resource-bank", raw_quota("default", cpu="9"), cohort="other")]
RECLAIM_OVER_PRIORITY = [
    queue("other-alpha", raw_quota("on-demand", gpu="7"), raw_quota("spot", gpu="7"), cohort="other",
          preemption={**LP, "reclaimWithinCohort": "LowerPriority"}),
    queue("other-beta", raw_quota("on-demand", gpu="3"), raw_quota("spot", gpu="3"), cohort="other")]
POB = [queue("fs-pob-cq", raw_quota("on-demand", cpu=("5", "0")), raw_quota("spot", cpu=("0", "5")),
             cohort="fs-pob-cohort", preemption=LP, fairSharing={"weight": "1"},
             flavorFungibility={"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor",
                                "preference": "PreemptionOverBorrowing"}),
       queue("fs-pob-lender", raw_quota("on-demand", cpu="0"), raw_quota("spot", cpu="5"), cohort="fs-pob-cohort")]
GAMMA = ENG[:2] + [make_cq("eng-gamma", flavor_quota("on-demand", cpu=("50", "0", None)), cohort="eng")]
PENDING_1 = ". Pending the preemption of 1 workload(s)"
CPU_MSG = "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor {}, {} more needed"

# (id = upstream case, queues, admitted, heads, want {head: (reason, message, {victim: Preempted reason})})
PREEMPTION_CASES: list[tuple[Any, ...]] = [
    ("with fair sharing: preempt workload from CQ with the highest share", GAMMA,
     [using("eng-alpha/all_spot", "eng-alpha", cpu=("spot", "100"))]
     + [using(f"eng-alpha/alpha{i}", "eng-alpha", cpu=("on-demand", "20")) for i in range(1, 5)]
     + [using("eng-gamma/gamma1", "eng-gamma", cpu=("on-demand", "10"))]
     + [using(f"eng-gamma/gamma{i}", "eng-gamma", cpu=("on-demand", "20")) for i in range(2, 5)],
     [wanting("eng-beta/preemptor", "eng-beta", cpu="30")],
     {"eng-beta/preemptor": ("WaitingForPreemptedWorkloads", CPU_MSG.format("on-demand", 30)
                             + ", insufficient unused quota for cpu in flavor spot, 30 more needed. Pending the "
                               "preemption of 2 workload(s)",
                             {"eng-alpha/alpha1": "InCohortReclamation", "eng-gamma/gamma1": "InCohortReclamation"})}),
    ("multiple preemptions skip overlapping preemption targets", OVERLAP,
     [using("eng-alpha/a1", "other-alpha", alpha_resource=("default", "1")),
      using("eng-beta/b1", "other-beta", beta_resource=("default", "1")),
      using("eng-gamma/c1", "other-gamma", cpu=("default", "9"))],
     [wanting("eng-alpha/preemptor", "other-alpha", 100, cpu="3", alpha_resource="1"),
      wanting("eng-beta/pretending-preemptor", "other-beta", 99, cpu="3", beta_resource="1")],
     {"eng-alpha/preemptor": ("WaitingForPreemptedWorkloads",
                              "couldn't assign flavors to pod set main: insufficient unused quota for alpha-resource in "
                              "flavor default, 1 more needed, insufficient unused quota for cpu in flavor default, 3 "
                              "more needed. Pending the preemption of 2 workload(s)",
                              {"eng-alpha/a1": "InClusterQueue", "eng-gamma/c1": "InCohortFairSharing"}),
      "eng-beta/pretending-preemptor": ("WaitingForQuota",
                                        "Workload has overlapping preemption targets with another workload", {})}),
    ("with fair sharing: prefer reclamation over cq priority based preemption; with preemption while borrowing",
     RECLAIM_OVER_PRIORITY,
     [using("eng-alpha/a1", "other-alpha", 50, gpu=("on-demand", "5")),
      using("eng-beta/b1", "other-beta", 50, gpu=("spot", "5"))],
     [wanting("eng-alpha/preemptor", "other-alpha", 100, gpu="8")],
     {"eng-alpha/preemptor": ("WaitingForPreemptedWorkloads",
                              "couldn't assign flavors to pod set main: insufficient unused quota for gpu in flavor "
                              "on-demand, 3 more needed, insufficient unused quota for gpu in flavor spot, 3 more "
                              "needed" + PENDING_1, {"eng-beta/b1": "InCohortFairSharing"})}),
    ("fair sharing: in-CQ preemption for CQ without cohort; repro for nil pointer panic",
     [queue("no-cohort-cq", raw_quota("default", cpu="4"), preemption=LP)],
     [using("default/nc-low", "no-cohort-cq", -1, cpu=("default", "4"))],
     [wanting("default/nc-high", "no-cohort-cq", 100, cpu="4")],
     {"default/nc-high": ("WaitingForPreemptedWorkloads", CPU_MSG.format("default", 4) + PENDING_1,
                          {"default/nc-low": "InClusterQueue"})}),
    ("PreemptionOverBorrowing with fair sharing: preempt in first flavor instead of borrowing in second", POB,
     [using("default/fs-low-pob", "fs-pob-cq", -1, cpu=("on-demand", "5000m"))],
     [wanting("default/fs-high-pob", "fs-pob-cq", 0, cpu="5")],
     {"default/fs-high-pob": ("WaitingForPreemptedWorkloads", CPU_MSG.format("on-demand", 5) + PENDING_1,
                              {"default/fs-low-pob": "InClusterQueue"})}),
]


@pytest.mark.parametrize("queues,workloads,heads,want", [c[1:] for c in PREEMPTION_CASES],
                         ids=[c[0] for c in PREEMPTION_CASES])
def test_schedule_for_fair_sharing_preemptions(queues, workloads, heads, want) -> None:
    """The preemptor's QuotaReserved=False reason and message, and each victim's Preempted reason."""
    snap = Snapshot(build_forest(queues), {q["metadata"]["name"]: queue_policy(q) for q in queues}, FLAVORS,
                    fair_sharing=FairSharing())
    for item in workloads:
        snap.admit(item)
    got = {d.key: (d.reason, d.message, {t.workload.key: t.reason for t in d.targets}) for d in run_cycle(snap, heads)}
    assert got == want
