"""VolumeBinding: claims pin pods to the nodes of their node-local volumes."""

from __future__ import annotations

import numpy as np
import pytest

from gpusched.objects.types import NodeInfo, NodeSelectorTerm, PodInfo, Requirement
from gpusched.scheduler.framework import Code, CycleState, SKIP
from gpusched.scheduler.plugins import volume_binding as vb
from gpusched.scheduler.snapshot import Snapshot

ZONE = "topology.kubernetes.io/zone"
NODES = {"a1": {ZONE: "a"}, "a2": {ZONE: "a"}, "b1": {ZONE: "b"}}


def make_snapshot() -> Snapshot:
    snap = Snapshot()
    for name, labels in NODES.items():
        snap.add_node(NodeInfo(name, {"cpu": 8000}, {}, labels=labels))
    return snap


def make_pod(*claims: str, ns: str = "default") -> PodInfo:
    return PodInfo(ns, "train", "uid-train", {}, pvc_names=tuple(claims))


ZONE_A = (NodeSelectorTerm((Requirement(ZONE, "In", ("a",)),)),)
CLAIMS = [
    vb.ClaimInfo("default", "local-a2", node_name="a2"),
    vb.ClaimInfo("default", "zone-a", node_terms=ZONE_A),
    vb.ClaimInfo("default", "network"),
    vb.ClaimInfo("default", "pending-wffc", bound=False),
    vb.ClaimInfo("default", "pending-now", bound=False, immediate=True),
    vb.ClaimInfo("other", "local-b1", node_name="b1"),
]
CONFLICT = (vb.REASON_NODE_CONFLICT, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

CASES = [
    ("local-volume-pins-node", make_pod("local-a2"), None, {"a1": CONFLICT, "b1": CONFLICT}),
    ("pv-node-affinity-zone", make_pod("zone-a"), None, {"b1": CONFLICT}),
    ("two-claims-intersect", make_pod("zone-a", "local-a2"), None, {"a1": CONFLICT, "b1": CONFLICT}),
    ("network-volume-no-restriction", make_pod("network"), "skip", {}),
    ("wait-for-first-consumer-no-restriction", make_pod("pending-wffc"), "skip", {}),
    ("no-claims-skip", make_pod(), "skip", {}),
    ("missing-claim", make_pod("nope"),
     (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('persistentvolumeclaim "nope" not found',)), {}),
    ("claim-in-other-namespace-is-missing", make_pod("local-b1"),
     (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('persistentvolumeclaim "local-b1" not found',)), {}),
    ("unbound-immediate", make_pod("pending-now"),
     (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (vb.REASON_UNBOUND_IMMEDIATE,)), {}),
    ("namespace-scoped-claim", make_pod("local-b1", ns="other"), None, {"a1": CONFLICT, "a2": CONFLICT}),
]


@pytest.mark.parametrize("pod,pre,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_volume_binding(pod, pre, expected):
    snap = make_snapshot()
    plugin = vb.new({"claims": CLAIMS})
    state = CycleState()
    status = plugin.pre_filter(state, pod, snap)
    if pre == "skip":
        assert status == SKIP
    elif pre is not None:
        assert (status.code, status.reasons) == pre
        return
    else:
        assert status.ok
    out = {}
    for r in plugin.filter(state, pod, snap, snap.all_nodes()):
        for row in np.flatnonzero(r.nodes):
            out[snap.names[row]] = (r.reason, r.code)
    assert out == expected


def test_set_claims_replaces_the_set():
    plugin = vb.new({"claims": CLAIMS})
    plugin.set_claims([vb.ClaimInfo("default", "fresh")])
    assert plugin.pre_filter(CycleState(), make_pod("fresh"), make_snapshot()) == SKIP
    status = plugin.pre_filter(CycleState(), make_pod("network"), make_snapshot())
    assert status.reasons == ('persistentvolumeclaim "network" not found',)
