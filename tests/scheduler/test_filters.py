"""Filter plugins, one table per plugin, upstream's semantics (reasons per node)."""

import numpy as np
import pytest

from gpusched.scheduler import messages
from gpusched.scheduler.framework import Code, CycleState
from gpusched.scheduler.plugins import (gpu_devices, node_affinity, node_name, node_resources_fit,
                                        node_unschedulable, taint_toleration)
from tests.scheduler.builders import (make_node, make_pod, req, snapshot_of, taint, term,
                                      toleration)

AFFINITY = "node(s) didn't match Pod's node affinity/selector"


def run_filter(plugin, pod, *nodes):
    """{node name: [reasons]} for every node the plugin rejects, and the codes seen."""
    snap = snapshot_of(*nodes)
    state = CycleState()
    if hasattr(plugin, "pre_filter"):
        plugin.pre_filter(state, pod, snap)
    out: dict[str, list[str]] = {}
    codes = set()
    for r in plugin.filter(state, pod, snap, snap.all_nodes()):
        codes.add(r.code)
        for row in np.flatnonzero(r.nodes):
            out.setdefault(snap.names[row], []).append(r.reason)
    return out, codes


# ---- TaintToleration ------------------------------------------------------------------------

TAINT_CASES = [
    ("no-taints", (), (), {}),
    ("untolerated-noschedule", (taint("dedicated", "gpu"),), (),
     {"n": ["node(s) had untolerated taint {dedicated: gpu}"]}),
    ("equal-match", (taint("dedicated", "gpu"),), (toleration("dedicated", "Equal", "gpu", "NoSchedule"),), {}),
    ("equal-wrong-value", (taint("dedicated", "gpu"),), (toleration("dedicated", "Equal", "cpu", "NoSchedule"),),
     {"n": ["node(s) had untolerated taint {dedicated: gpu}"]}),
    ("exists-any-value", (taint("dedicated", "gpu"),), (toleration("dedicated", "Exists"),), {}),
    ("empty-key-exists-tolerates-all", (taint("a", "1"), taint("b", "2", "NoExecute")),
     (toleration("", "Exists"),), {}),
    ("effect-mismatch", (taint("dedicated", "gpu", "NoExecute"),),
     (toleration("dedicated", "Equal", "gpu", "NoSchedule"),),
     {"n": ["node(s) had untolerated taint {dedicated: gpu}"]}),
    ("empty-effect-matches-all", (taint("dedicated", "gpu", "NoExecute"),),
     (toleration("dedicated", "Equal", "gpu"),), {}),
    ("prefer-no-schedule-ignored", (taint("soft", "x", "PreferNoSchedule"),), (), {}),
    ("first-untolerated-reported", (taint("a", "1"), taint("b", "2")), (toleration("a", "Exists"),),
     {"n": ["node(s) had untolerated taint {b: 2}"]}),
]


@pytest.fixture(params=["v1.35", "with-key"])
def taint_style(request):
    """Both taint wordings: v1.35's default ``node(s) had untolerated taint(s)`` (tainttoleration
    ``ErrReasonNotMatch`` since kubernetes PR #134740) and the older keyed one, kept behind
    ``messages.set_taint_text``."""
    previous = messages.TAINT_TEXT
    messages.set_taint_text(messages.TAINT_TEXT_STYLES[request.param])
    yield request.param
    messages.set_taint_text(previous)


@pytest.mark.parametrize("taints,tolerations,expected", [c[1:] for c in TAINT_CASES],
                         ids=[c[0] for c in TAINT_CASES])
def test_taint_toleration_filter(taints, tolerations, expected, taint_style):
    got, codes = run_filter(taint_toleration.new(), make_pod(tolerations=tolerations),
                            make_node("n", taints=taints), make_node("clean"))
    if taint_style == "v1.35":
        expected = {n: [messages.TAINT_TEXT_V1_35] for n in expected}
    assert got == expected
    assert codes <= {Code.UNSCHEDULABLE_AND_UNRESOLVABLE}


def test_taint_text_defaults_to_v1_35():
    assert messages.TAINT_TEXT == messages.TAINT_TEXT_V1_35 == "node(s) had untolerated taint(s)"


# ---- NodeAffinity ---------------------------------------------------------------------------

ZONE_A = {"zone": "a", "gen": "3"}
ZONE_B = {"zone": "b", "gen": "10"}
NO_LABELS: dict = {}
AFFINITY_CASES = [
    ("node-selector", dict(node_selector={"zone": "a"}), ["b", "none"]),
    ("in", dict(required_terms=(term(req("zone", "In", "a", "b")),)), ["none"]),
    ("notin-absent-matches", dict(required_terms=(term(req("zone", "NotIn", "a")),)), ["a"]),
    ("exists", dict(required_terms=(term(req("zone", "Exists")),)), ["none"]),
    ("does-not-exist", dict(required_terms=(term(req("zone", "DoesNotExist")),)), ["a", "b"]),
    ("gt-numeric", dict(required_terms=(term(req("gen", "Gt", "5")),)), ["a", "none"]),
    ("lt-numeric", dict(required_terms=(term(req("gen", "Lt", "5")),)), ["b", "none"]),
    ("gt-non-integer-bound", dict(required_terms=(term(req("gen", "Gt", "x")),)), ["a", "b", "none"]),
    ("terms-ored", dict(required_terms=(term(req("zone", "In", "a")), term(req("zone", "In", "b")))), ["none"]),
    ("expressions-anded", dict(required_terms=(term(req("zone", "In", "a", "b"), req("gen", "Gt", "5")),)), ["a", "none"]),
    ("empty-term-matches-nothing", dict(required_terms=(term(),)), ["a", "b", "none"]),
    ("selector-and-terms", dict(node_selector={"zone": "b"}, required_terms=(term(req("gen", "Lt", "5")),)),
     ["a", "b", "none"]),
]


@pytest.mark.parametrize("fields,rejected", [c[1:] for c in AFFINITY_CASES], ids=[c[0] for c in AFFINITY_CASES])
def test_node_affinity_filter(fields, rejected):
    got, codes = run_filter(node_affinity.new(), make_pod(**fields), make_node("a", labels=ZONE_A),
                            make_node("b", labels=ZONE_B), make_node("none", labels=NO_LABELS))
    assert sorted(got) == rejected
    assert all(v == [AFFINITY] for v in got.values())
    assert codes <= {Code.UNSCHEDULABLE_AND_UNRESOLVABLE}


def test_node_affinity_match_fields_metadata_name():
    from gpusched.objects.types import NodeSelectorTerm
    pod = make_pod(required_terms=(NodeSelectorTerm((), (req("metadata.name", "In", "b"),)),))
    got, _ = run_filter(node_affinity.new(), pod, make_node("a"), make_node("b"))
    assert sorted(got) == ["a"]


# ---- NodeResourcesFit -----------------------------------------------------------------------

# pkg/scheduler/framework/plugins/noderesources/fit.go fitsRequest/Filter: a request above the
# node's whole allocatable sets InsufficientResource.Unresolvable, which makes the node's status
# UnschedulableAndUnresolvable (preemption: "Preemption is not helpful for scheduling").
U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
FIT_CASES = [
    ("fits", dict(cpu="1", memory="1Gi"), {}, set()),
    ("cpu-above-allocatable", dict(cpu="40"), {"n": ["Insufficient cpu"]}, {UU}),
    ("cpu-and-memory", dict(cpu="40", memory="1Ti"), {"n": ["Insufficient cpu", "Insufficient memory"]}, {UU}),
    ("gpu-not-advertised", dict(gpus=1), {"n": ["Insufficient nvidia.com/gpu"]}, {UU}),
    ("extended-missing", dict(extra={"example.com/foo": 1}), {"n": ["Insufficient example.com/foo"]}, {UU}),
    ("zero-request-not-checked", dict(extra={"example.com/foo": 0}), {}, set()),
    ("extended-present", dict(extra={"example.com/bar": 2}), {}, set()),
    ("extended-too-many", dict(extra={"example.com/bar": 3}), {"n": ["Insufficient example.com/bar"]}, {UU}),
]


@pytest.mark.parametrize("pod_fields,expected,codes_expected", [c[1:] for c in FIT_CASES],
                         ids=[c[0] for c in FIT_CASES])
def test_node_resources_fit_filter(pod_fields, expected, codes_expected):
    got, codes = run_filter(node_resources_fit.new(), make_pod(**pod_fields),
                            make_node("n", cpu="32", memory="256Gi", extra={"example.com/bar": 2}))
    assert got == expected
    assert codes == codes_expected


# fit.go Filter: one unresolvable resource makes every reason of that node unresolvable; a
# shortage removing pods could cure stays Unschedulable; "Too many pods" is never unresolvable.
FIT_CODE_CASES = [
    ("used-cpu-resolvable", 10, dict(cpu="3"), dict(cpu="2"), {"Insufficient cpu": U}),
    ("used-cpu-plus-gpu-above-allocatable", 10, dict(cpu="3"), dict(cpu="2", gpus=1),
     {"Insufficient cpu": UU, "Insufficient nvidia.com/gpu": UU}),
    ("too-many-pods-resolvable", 1, dict(), dict(), {"Too many pods": U}),
    ("too-many-pods-with-unresolvable-gpu", 1, dict(), dict(gpus=1),
     {"Too many pods": UU, "Insufficient nvidia.com/gpu": UU}),
]


@pytest.mark.parametrize("pods,running,pod_fields,expected", [c[1:] for c in FIT_CODE_CASES],
                         ids=[c[0] for c in FIT_CODE_CASES])
def test_node_resources_fit_unresolvable_per_node(pods, running, pod_fields, expected):
    snap = snapshot_of(make_node("n", cpu="4", pods=pods))
    snap.add_pod(make_pod(name="running", **running), "n")
    plugin, state, pod = node_resources_fit.new(), CycleState(), make_pod(**pod_fields)
    plugin.pre_filter(state, pod, snap)
    assert {r.reason: r.code for r in plugin.filter(state, pod, snap, snap.all_nodes())} == expected


def test_node_resources_fit_counts_used_and_pods():
    node = make_node("n", cpu="4", pods=2)
    snap = snapshot_of(node)
    snap.add_pod(make_pod(cpu="3"), "n")
    plugin, state, pod = node_resources_fit.new(), CycleState(), make_pod(cpu="2")
    plugin.pre_filter(state, pod, snap)
    assert [r.reason for r in plugin.filter(state, pod, snap, snap.all_nodes())] == ["Insufficient cpu"]
    snap.add_pod(make_pod(), "n")
    assert [r.reason for r in plugin.filter(state, pod, snap, snap.all_nodes())] == \
        ["Too many pods", "Insufficient cpu"]


def test_node_resources_fit_ignored_resources():
    plugin = node_resources_fit.new({"ignoredResources": ["example.com/foo"]})
    got, _ = run_filter(plugin, make_pod(extra={"example.com/foo": 1}), make_node("n"))
    assert got == {}


# ---- NodeUnschedulable / NodeName ----------------------------------------------------------

@pytest.mark.parametrize("tolerations,expected", [
    ((), {"cordoned": ["node(s) were unschedulable"]}),
    ((toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule"),), {}),
    ((toleration("", "Exists"),), {}),
], ids=["cordoned", "tolerates-unschedulable", "tolerates-everything"])
def test_node_unschedulable(tolerations, expected):
    got, codes = run_filter(node_unschedulable.new(), make_pod(tolerations=tolerations),
                            make_node("cordoned", unschedulable=True), make_node("ok"))
    assert got == expected
    assert codes <= {Code.UNSCHEDULABLE_AND_UNRESOLVABLE}


@pytest.mark.parametrize("wanted,rejected", [("", []), ("b", ["a"]), ("gone", ["a", "b"])],
                         ids=["unset", "named", "missing-node"])
def test_node_name(wanted, rejected):
    got, _ = run_filter(node_name.new(), make_pod(node_name=wanted), make_node("a"), make_node("b"))
    assert sorted(got) == rejected
    assert all(v == ["node(s) didn't match the requested node name"] for v in got.values())


# ---- GpuDevices -----------------------------------------------------------------------------

def test_gpu_devices_whole_gpus_need_fully_free_gpus():
    a100 = make_node("a", gpus=2)
    snap = snapshot_of(a100)
    snap.add_pod(make_pod(gpu_milli=300), "a", snap.devices[0].allocate(make_pod(gpu_milli=300), "binpack"))
    plugin, state = gpu_devices.new(), CycleState()
    two = make_pod(gpus=2)
    assert [r.reason for r in plugin.filter(state, two, snap, snap.all_nodes())] == ["Insufficient nvidia.com/gpu"]
    assert plugin.filter(state, make_pod(gpus=1), snap, snap.all_nodes()) == []
    assert plugin.filter(state, make_pod(gpu_milli=700), snap, snap.all_nodes()) == []
    assert [r.reason for r in plugin.filter(state, make_pod(gpu_milli=800), snap, snap.all_nodes())] == []
    snap.add_pod(make_pod(gpus=1, name="whole"), "a", snap.devices[0].allocate(make_pod(gpus=1), "binpack"))
    assert [r.reason for r in plugin.filter(state, make_pod(gpu_milli=800), snap, snap.all_nodes())] == \
        ["Insufficient nvidia.com/gpu"]


GPU_CASES = [
    ("model-allowed", dict(gpus=1, gpu_models=("A100-40GB",)), {"cpu": ["node(s) didn't match Pod's GPU model"],
                                                                "v100": ["node(s) didn't match Pod's GPU model"]}),
    ("model-list", dict(gpus=1, gpu_models=("V100-16GB", "A100-40GB")), {"cpu": ["node(s) didn't match Pod's GPU model"]}),
    ("fraction-cpu-node", dict(gpu_milli=500), {"cpu": ["Insufficient nvidia.com/gpu"]}),
    # a node without NodeDevices leaves whole-GPU counting to NodeResourcesFit
    ("too-many-gpus", dict(gpus=3), {"a100": ["Insufficient nvidia.com/gpu"], "v100": ["Insufficient nvidia.com/gpu"]}),
    ("cpu-pod-skipped", dict(cpu="1"), {}),
]


@pytest.mark.parametrize("pod_fields,expected", [c[1:] for c in GPU_CASES], ids=[c[0] for c in GPU_CASES])
def test_gpu_devices_filter(pod_fields, expected):
    plugin = gpu_devices.new()
    pod = make_pod(**pod_fields)
    nodes = (make_node("a100", gpus=2), make_node("v100", gpus=2, model="V100-16GB"), make_node("cpu"))
    snap = snapshot_of(*nodes)
    state = CycleState()
    if not plugin.pre_filter(state, pod, snap).ok:
        assert expected == {}
        return
    got, _ = run_filter(plugin, pod, *nodes)
    assert got == expected


def test_gpu_devices_time_sliced_node_asks_its_devices():
    node = make_node("ts", gpus=2, replicas=4)
    snap = snapshot_of(node)
    plugin = gpu_devices.new()
    for i in range(8):
        pod = make_pod(gpus=1)
        assert plugin.filter(CycleState(), pod, snap, snap.all_nodes()) == [], i
        snap.add_pod(pod, "ts", snap.devices[0].allocate(pod, "binpack"))
    reasons = [r.reason for r in plugin.filter(CycleState(), make_pod(gpus=1), snap, snap.all_nodes())]
    assert reasons == ["Insufficient nvidia.com/gpu"]
