"""Topology-aware scheduling in a Kueue cycle (``gpusched.kueue.tas_cycle`` through
``cycle.run_cycle``), case by case from Kueue's ``pkg/scheduler/scheduler_tas_test.go``
(``TestScheduleForTAS``): tas-main with one flavor tas-default on a single-level (hostname)
Topology, node x1 with 1 cpu, 1Gi and 10 pods."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from gpusched.kueue.cycle import ADMITTED, PENDING, Pending, Snapshot, run_cycle
from gpusched.kueue.inputs import Flavor, podset_request, queue_policy
from gpusched.kueue.ordering import QueuedWorkload
from gpusched.kueue.quota import build_forest
from gpusched.kueue.tas import DomainCount, TasNode, TopologyAssignment, TopologySnapshot
from gpusched.kueue.tas_request import REQUIRED, topology_request_field
from tests.kueue.builders import flavor_quota, make_cq, make_podset

HOST = "kubernetes.io/hostname"
TAS_FLAVOR = replace(Flavor("tas-default", {"tas-node": "true"}, (), ()), topology_name="tas-single-level",
                     topology_levels=(HOST,))
PLAIN_FLAVOR = Flavor("default", {}, (), ())


def x1() -> TasNode:
    return TasNode("x1", {"tas-node": "true", HOST: "x1"}, {"cpu": 1000, "memory": 1 << 30, "pods": 10})


def snapshot(*flavors: str, admitted_on_x1: int = 0) -> Snapshot:
    cq = make_cq("tas-main", *(flavor_quota(f, cpu=50) for f in flavors))
    topology = TopologySnapshot("tas-single-level", (HOST,), [x1()])
    if admitted_on_x1:
        topology.add_usage(TopologyAssignment((HOST,), (DomainCount(("x1",), admitted_on_x1),)), {"cpu": 1000})
    known = {"tas-default": TAS_FLAVOR, "default": PLAIN_FLAVOR}
    return Snapshot(build_forest([cq]), {"tas-main": queue_policy(cq)}, {f: known[f] for f in flavors},
                    topologies={"tas-default": topology})


def workload(count: int = 1, cpu: str = "1", annotations: dict[str, str] | None = None) -> Pending:
    podset: dict[str, Any] = make_podset("one", count, cpu=cpu)
    request = topology_request_field(annotations or {}, None)
    if request:
        podset["topologyRequest"] = request
    return Pending(QueuedWorkload("default/foo", "tas-main", 0, 0.0, "foo"), (podset_request(podset),))


CASES = [
    ("workload in CQ with only TAS flavors is admitted (implied TAS)", ("tas-default",), 0, dict(),
     (ADMITTED, "", "")),
    ("workload requests topology level which is not present in topology", ("tas-default",), 0,
     dict(annotations={REQUIRED: "cloud.com/non-existing"}),
     (PENDING, "NoMatchingFlavor", 'couldn\'t assign flavors to pod set one: Flavor "tas-default" does not contain '
                                   'the requested level')),
    ("workload does not get scheduled as it does not fit within the node capacity", ("tas-default",), 0,
     dict(count=2, annotations={REQUIRED: HOST}),
     (PENDING, "TopologyPlacementFailed",
      'couldn\'t assign flavors to pod set one: topology "tas-single-level" allows to fit only 1 out of 2 pod(s)')),
    ("workload does not get scheduled as the node capacity is already used by another TAS workload",
     ("tas-default",), 1, dict(annotations={REQUIRED: HOST}),
     (PENDING, "WaitingForQuota", 'couldn\'t assign flavors to pod set one: topology "tas-single-level" doesn\'t '
                                  'allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "cpu": 1')),
    ("a flavor without topology is skipped for a TAS PodSet (does not support TopologyAwareScheduling)",
     ("default", "tas-default"), 0, dict(annotations={REQUIRED: HOST}), (ADMITTED, "", "")),
    ("a TAS flavor refuses a PodSet that asks for no topology (supports only TopologyAwareScheduling)",
     ("tas-default", "default"), 0, dict(), (ADMITTED, "", "")),
]


@pytest.mark.parametrize("flavors,used,ask,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_schedule_for_tas(flavors, used, ask, expected):
    [decision] = run_cycle(snapshot(*flavors, admitted_on_x1=used), [workload(**ask)])
    assert (decision.outcome, decision.reason, decision.message) == expected


def test_admitted_podset_carries_its_topology_and_the_flavor_it_chose():
    """scheduler_tas_test.go "workload requests topology level which is only present in second
    flavor": the TAS PodSet skips the plain flavor and is placed on x1."""
    [decision] = run_cycle(snapshot("default", "tas-default"), [workload(annotations={REQUIRED: HOST})])
    [podset] = decision.assignment.podsets
    assert {c.name for c in podset.flavors.values()} == {"tas-default"}
    assert podset.topology == TopologyAssignment((HOST,), (DomainCount(("x1",), 1),))


def test_second_workload_of_the_cycle_sees_the_first_ones_pods():
    """Two heads of one cycle on one node with room for one: the second no longer fits."""
    snap = snapshot("tas-default")
    first = workload(annotations={REQUIRED: HOST})
    second = Pending(QueuedWorkload("default/bar", "tas-main", 0, 1.0, "bar"), first.podsets)
    decisions = run_cycle(snap, [first, second])
    assert [(d.key, d.outcome) for d in decisions] == [("default/foo", ADMITTED), ("default/bar", PENDING)]
