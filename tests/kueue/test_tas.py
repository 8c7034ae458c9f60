"""Kueue's TAS placement (``gpusched.kueue.tas``), case by case from Kueue's
``pkg/cache/scheduler/tas_cache_test.go`` ``TestFindTopologyAssignments`` (each id is the
upstream case name; node sets and expectations as upstream writes them)."""

from __future__ import annotations

import pytest

from gpusched.kueue.flavors import tas_mismatch
from gpusched.kueue.inputs import Flavor, PodSetRequest
from gpusched.kueue.tas import (DomainCount, PodSetTopology, TasNode, TopologyAssignment, TopologySnapshot, _Search,
                                count_in)
from gpusched.kueue.tas_request import TopologyRequest
from gpusched.objects.types import Taint, Toleration

BLOCK, RACK, HOST = "cloud.com/topology-block", "cloud.com/topology-rack", "kubernetes.io/hostname"
THREE, TWO, ONE = (BLOCK, RACK, HOST), (BLOCK, RACK), (HOST,)
GI = 1 << 30


def node(path: str, cpu: float, pods: int = 10, memory: int = GI, taints: tuple[Taint, ...] = (),
         **labels: str) -> TasNode:
    """``node("b1-r1-x3", 1)``: block, rack and hostname from the name (``x3`` alone: hostname)."""
    parts = path.split("-")
    found = dict(zip((BLOCK, RACK), parts[:-1]))
    return TasNode(path, {**found, HOST: parts[-1], **labels},
                   {"cpu": int(cpu * 1000), "memory": memory, "pods": pods}, taints)


# tas_cache_test.go defaultNodes:   b1: r1 [x3], r2 [x5 x1 x6];   b2: r1 [x2], r2 [x4 (2 cpu, 4Gi, 40 pods)]
DEFAULT = [node("b1-r1-x3", 1), node("b1-r2-x5", 1), node("b1-r2-x1", 1), node("b1-r2-x6", 1),
           node("b2-r1-x2", 1), node("b2-r2-x4", 2, 40, 4 * GI)]
# scatteredNodes: b1/r1 [x3 (4 cpu), x5, x1], b2/r1 [x6 (2 cpu), x2]
SCATTERED = [node("b1-r1-x3", 4), node("b1-r1-x5", 1), node("b1-r1-x1", 1), node("b2-r1-x6", 2), node("b2-r1-x2", 1)]
# binaryTreesNodes: two blocks of two racks of two hosts, 1 cpu each
BINARY = [node("b1-r1-x3", 1), node("b1-r1-x5", 1), node("b1-r2-x1", 1), node("b1-r2-x6", 1),
          node("b2-r1-x2", 1), node("b2-r1-x4", 1), node("b2-r2-x7", 1), node("b2-r2-x8", 1)]
MINIMISE_RACKS = [node("b1-r1-x3", 2), node("b1-r2-x5", 2, 20), node("b1-r3-x1", 1), node("b1-r3-x6", 1),
                  node("b1-r3-x2", 1), node("b1-r3-x4", 1)]
THREE_BLOCKS = [TasNode("b1", {BLOCK: "b1"}, {"cpu": 2000, "pods": 20}), TasNode("b2", {BLOCK: "b2"}, {"cpu": 1000, "pods": 10}),
                TasNode("b3", {BLOCK: "b3"}, {"cpu": 4000, "pods": 40})]
MISSING_LEVEL = 'Flavor "f" does not contain the requested level'
GPU_TAINT = Taint("example.com/gpu", "present", "NoSchedule")


def hosts(*pairs: tuple[str, int]) -> TopologyAssignment:
    return TopologyAssignment(ONE, tuple(DomainCount((h,), n) for h, n in pairs))


def racks(*triples: tuple[str, str, int]) -> TopologyAssignment:
    return TopologyAssignment(TWO, tuple(DomainCount((b, r), n) for b, r, n in triples))


CASES = [
    ("minimize the number of used racks before optimizing the number of nodes; BestFit", MINIMISE_RACKS, THREE,
     dict(required=BLOCK, count=4), hosts(("x1", 1), ("x2", 1), ("x4", 1), ("x6", 1))),
    ("choose the node that can accommodate all Pods", [node("b1-r1-x3", 2), node("b1-r1-x5", 1), node("b1-r1-x1", 1)],
     THREE, dict(required=BLOCK, count=2), hosts(("x3", 2))),
    ("no annotation; implied default to unconstrained; 6 pods fit into hosts scattered across the whole datacenter "
     "even they could fit into single rack; BestFit", SCATTERED, THREE, dict(count=6),
     hosts(("x1", 1), ("x3", 1), ("x5", 1), ("x2", 1), ("x6", 2))),
    ("unconstrained; 6 pods fit into hosts scattered across the whole datacenter even they could fit into single "
     "rack; BestFit", SCATTERED, THREE, dict(unconstrained=True, count=6),
     hosts(("x1", 1), ("x3", 1), ("x5", 1), ("x2", 1), ("x6", 2))),
    ("unconstrained; a single pod fits into each host; LeastFreeCapacity; TASProfileMixed", DEFAULT, THREE,
     dict(unconstrained=True, count=1), hosts(("x3", 1))),
    ("block required; 4 pods fit into one host each; BestFit", BINARY, THREE, dict(required=BLOCK, count=4),
     hosts(("x3", 1), ("x5", 1), ("x1", 1), ("x6", 1))),
    ("host required; single Pod fits in the host; BestFit", DEFAULT, THREE, dict(required=HOST, count=1), hosts(("x3", 1))),
    ("rack required; single Pod fits in a rack; BestFit", DEFAULT, TWO, dict(required=RACK, count=1),
     racks(("b1", "r1", 1))),
    ("rack required; multiple Pods fit in a rack; BestFit", DEFAULT, TWO, dict(required=RACK, count=3),
     racks(("b1", "r2", 3))),
    ("block preferred; Pods fit in 2 blocks; BestFit", THREE_BLOCKS, (BLOCK,), dict(preferred=BLOCK, count=5),
     TopologyAssignment((BLOCK,), (DomainCount(("b2",), 1), DomainCount(("b3",), 4)))),
    ("rack required; multiple Pods fit in some racks; BestFit", DEFAULT, TWO, dict(required=RACK, count=2),
     racks(("b2", "r2", 2))),
    ("block required; single Pod fits in a block spread across two racks; BestFit", DEFAULT, TWO,
     dict(required=BLOCK, count=4), racks(("b1", "r1", 1), ("b1", "r2", 3))),
    ("rack required; single Pod requiring memory; BestFit", DEFAULT, TWO,
     dict(required=RACK, count=4, per_pod={"memory": 1024}), racks(("b1", "r1", 4))),
    ("rack preferred; but only block can accommodate the workload; BestFit", DEFAULT, TWO,
     dict(preferred=RACK, count=4), racks(("b1", "r1", 1), ("b1", "r2", 3))),
    ("rack preferred; but only multiple blocks can accommodate the workload; BestFit", DEFAULT, TWO,
     dict(preferred=RACK, count=6), racks(("b1", "r1", 1), ("b1", "r2", 3), ("b2", "r2", 2))),
    ("block required for podset; host required for slices; BestFit",
     [node("b1-r1-x3", 3), node("b1-r1-x5", 3), node("b1-r1-x1", 3)], THREE,
     dict(required=BLOCK, slice_level=HOST, slice_size=2, count=6), hosts(("x1", 2), ("x3", 2), ("x5", 2))),
]

FAILURES = [
    ("rack required; too many pods to fit in any rack; BestFit", DEFAULT, TWO, dict(required=RACK, count=4),
     'topology "default" allows to fit only 3 out of 4 pod(s)'),
    ("block required; single Pod which cannot be split; BestFit", DEFAULT, TWO,
     dict(required=BLOCK, count=1, per_pod={"cpu": 4000}),
     'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 4; excluded: resource "cpu": 4'),
    ("block required; too many Pods to fit requested; BestFit", DEFAULT, TWO, dict(required=BLOCK, count=5),
     'topology "default" allows to fit only 4 out of 5 pod(s)'),
    ("block preferred; but the workload cannot be accommodate in entire topology; BestFit", DEFAULT, TWO,
     dict(preferred=BLOCK, count=10), 'topology "default" allows to fit only 7 out of 10 pod(s)'),
    ("skip node which has untolerated taint; BestFit", [node("x3", 1, taints=(GPU_TAINT,), zone="zone-a")], ONE,
     dict(required=HOST, count=1), 'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; '
     'excluded: taint "example.com/gpu=present:NoSchedule": 1'),
    ("detailed failure message with exclusion stats",
     [node("x1", 1, taints=(Taint("key", "value", "NoSchedule"),)), node("x2", 1, zone="zone-b"),
      node("x3", 2, zone="zone-b"), node("x4", 0.1, zone="zone-a")], ONE,
     dict(required=HOST, count=1, node_selector={"zone": "zone-a"}),
     'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 4; excluded: nodeSelector: 2, '
     'resource "cpu": 1, taint "key=value:NoSchedule": 1'),
    ("resource exclusion picks most restrictive resource", [node("dual-shortage", 0.5)], ONE,
     dict(required=HOST, count=1), 'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; '
     'excluded: resource "cpu": 1'),
    ("block required for podset; rack required for slices; only 1 out of 2 slices fit the topology",
     [node("b1-r1-x3", 3), node("b1-r2-x5", 1), node("b1-r3-x1", 1), node("b1-r4-x6", 1)], THREE,
     dict(required=BLOCK, slice_level=RACK, slice_size=3, count=6),
     'topology "default" allows to fit only 1 out of 2 slice(s)'),
    ("no requested topology level", DEFAULT, TWO, dict(required="cloud.com/zone", count=1),
     "no requested topology level: cloud.com/zone"),
    ("podset slice topology above the podset topology", DEFAULT, THREE,
     dict(required=HOST, slice_level=RACK, slice_size=1, count=1),
     f"podset slice topology {RACK} is above the podset topology {HOST}"),
]


def request(count: int, per_pod: dict[str, int] | None = None, **topology: object) -> PodSetTopology:
    return PodSetTopology("main", count, per_pod or {"cpu": 1000}, **topology)  # type: ignore[arg-type]


@pytest.mark.parametrize("nodes,levels,ask,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_find_topology_assignment(nodes, levels, ask, expected):
    found, reason = TopologySnapshot("default", levels, nodes).find(request(**ask))
    assert reason == ""
    assert found == expected


@pytest.mark.parametrize("nodes,levels,ask,message", [c[1:] for c in FAILURES], ids=[c[0] for c in FAILURES])
def test_find_topology_assignment_fails_with_upstream_message(nodes, levels, ask, message):
    assert TopologySnapshot("default", levels, nodes).find(request(**ask)) == (None, message)


def test_tolerated_taint_and_flavor_toleration_allow_the_node():
    """tas_cache_test.go "allow to schedule on node with tolerated taint; BestFit": the flavor's
    tolerations count as the PodSet's."""
    snapshot = TopologySnapshot("default", ONE, [node("x3", 1, taints=(GPU_TAINT,))],
                                flavor_tolerations=(Toleration("example.com/gpu", "Exists", "", "NoSchedule"),))
    assert snapshot.find(request(1, required=HOST)) == (hosts(("x3", 1)), "")


def test_admitted_usage_blocks_and_simulate_empty_frees():
    """scheduler_tas_test.go "workload does not get scheduled as the node capacity is already used
    by another TAS workload": the admitted workload's pod uses x1; with every TAS workload taken
    away (simulate empty) it would fit."""
    snapshot = TopologySnapshot("tas-single-level", ONE, [node("x1", 1)])
    snapshot.add_usage(hosts(("x1", 1)), {"cpu": 1000})
    assert snapshot.find(request(1, required=HOST)) == (
        None, 'topology "tas-single-level" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "cpu": 1')
    assert snapshot.find(request(1, required=HOST), simulate_empty=True) == (hosts(("x1", 1)), "")


@pytest.mark.parametrize("requests,capacity,expected", [
    ({"cpu": 1000, "pods": 1}, {"cpu": 2500, "pods": 10}, (2, "cpu")),
    ({"cpu": 1000, "memory": 1}, {"cpu": 1000, "memory": 1}, (1, "cpu")),     # tie: alphabetically first
    ({"cpu": 1000, "pods": 1}, {"cpu": 500, "pods": 10}, (0, "cpu")),
], ids=["cpu-limits", "tie-alphabetical", "none-fits"])
def test_count_in_names_the_limiting_resource(requests, capacity, expected):
    """``resources.CountInWithLimitingResource`` (pkg/resources/requests.go)."""
    assert count_in(requests, capacity) == expected


SORTED = [
    ("BestFit: sliceCount descending", False, {("a",): (3, 1), ("b",): (1, 1), ("c",): (2, 1)}, ["a", "c", "b"]),
    ("LeastFreeCapacity: sliceCount ascending", True, {("a",): (3, 1), ("b",): (1, 1), ("c",): (2, 1)},
     ["b", "c", "a"]),
    ("BestFit: podCount ascending as tiebreaker", False,
     {("a",): (5, 100), ("b",): (5, 10), ("c",): (5, 50)}, ["b", "c", "a"]),
    ("LeastFreeCapacity: podCount ascending as tiebreaker", True,
     {("a",): (5, 100), ("b",): (5, 10), ("c",): (5, 50)}, ["b", "c", "a"]),
    ("levelValues ascending as the last tiebreaker", False, {("c",): (5, 10), ("a",): (5, 10), ("b",): (5, 10)},
     ["a", "b", "c"]),
]


@pytest.mark.parametrize("unconstrained,counts,order", [c[1:] for c in SORTED], ids=[c[0] for c in SORTED])
def test_sorted_domains(unconstrained, counts, order):
    """tas_flavor_snapshot_test.go TestSortedDomains (domains named by their level value:
    upstream's "large/small/medium" are a/b/c here)."""
    search = _Search(request(1), unconstrained, 0,
                     pods={k: v[1] for k, v in counts.items()}, slices={k: v[0] for k, v in counts.items()})
    assert [d[0] for d in search.order(list(counts))] == order


@pytest.mark.parametrize("topology,want", [
    (TopologyRequest(required="level-1"), ""), (TopologyRequest(required="invalid-level"), MISSING_LEVEL),
    (TopologyRequest(preferred="level-1"), ""), (TopologyRequest(preferred="invalid-level"), MISSING_LEVEL),
    (TopologyRequest(required="level-1", slice_level="level-2"), ""),
    (TopologyRequest(required="level-1", slice_level="invalid-level"), MISSING_LEVEL),
], ids=["required level-1", "required invalid-level", "preferred level-1", "preferred invalid-level",
        "slice level-2", "slice invalid-level"])
def test_has_level(topology, want):
    """tas_flavor_snapshot_test.go TestHasLevel, through the flavor check that uses it
    (checkPodSetAndFlavorMatchForTAS: 'Flavor "f" does not contain the requested level')."""
    flavor = Flavor("f", {}, (), (), topology_name="dummy", topology_levels=("level-1", "level-2"))
    podset = PodSetRequest("main", 1, {"cpu": 1000}, topology=topology)
    assert tas_mismatch(flavor, podset, tas_only=False) == want
