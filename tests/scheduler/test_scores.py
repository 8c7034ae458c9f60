"""Score plugins: upstream formulas checked against hand-computed values."""

import numpy as np
import pytest

from gpusched.objects.types import NodeSelectorTerm, PreferredTerm
from gpusched.scheduler.framework import CycleState
from gpusched.scheduler.plugins import (balanced_allocation, gpu_devices, node_affinity,
                                        node_resources_fit, taint_toleration)
from tests.scheduler.builders import make_node, make_pod, req, snapshot_of, taint, toleration

GI = 2**30


def scores(plugin, pod, snap, normalize=True):
    state, nodes = CycleState(), snap.all_nodes()
    if hasattr(plugin, "pre_filter"):
        plugin.pre_filter(state, pod, snap)
    raw = plugin.score(state, pod, snap, nodes)
    if normalize and hasattr(plugin, "normalize"):
        raw = plugin.normalize(state, pod, nodes, raw)
    return raw.tolist()


def used_snapshot():
    """n0: 4 cpu / 8Gi with 1 cpu / 2Gi used; n1: 8 cpu / 8Gi empty."""
    snap = snapshot_of(make_node("n0", cpu="4", memory="8Gi"), make_node("n1", cpu="8", memory="8Gi"))
    snap.add_pod(make_pod(cpu="1", memory="2Gi"), "n0")
    return snap


FIT_CASES = [
    # n0: cpu (4000-2000)*100//4000=50, mem (8-4)*100//8=50 -> 50; n1: cpu 87, mem 75 -> (87+75)//2=81
    ("least-allocated", {}, dict(cpu="1", memory="2Gi"), [50, 81]),
    # n0: cpu 2000*100//4000=50, mem 50 -> 50; n1: cpu 12, mem 25 -> 18
    ("most-allocated", {"scoringStrategy": {"type": "MostAllocated"}}, dict(cpu="1", memory="2Gi"), [50, 18]),
    # no requests: non-zero defaults 100m / 200Mi; n0 cpu 2900*100//4000=72, mem 5944Mi*100//8192Mi=72;
    # n1 cpu 7900*100//8000=98, mem 7992Mi*100//8192Mi=97 -> 97
    ("least-allocated-nonzero-defaults", {}, dict(), [72, 97]),
    # cpu weight 3, memory 1: n0 (50*3+50)//4=50, n1 (87*3+75)//4=84
    ("weights", {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]}},
     dict(cpu="1", memory="2Gi"), [50, 84]),
    # shape 0->0, 100->10 (x10): n0 util cpu 50 mem 50 -> 50; n1 cpu 12 -> 12, mem 25 -> 25 -> round(18.5)=19
    ("requested-to-capacity-ratio", {"scoringStrategy": {"type": "RequestedToCapacityRatio",
                                                         "requestedToCapacityRatio": {"shape": [
                                                             {"utilization": 0, "score": 0},
                                                             {"utilization": 100, "score": 10}]}}},
     dict(cpu="1", memory="2Gi"), [50, 19]),
]


@pytest.mark.parametrize("args,pod_fields,expected", [c[1:] for c in FIT_CASES], ids=[c[0] for c in FIT_CASES])
def test_node_resources_fit_score(args, pod_fields, expected):
    assert scores(node_resources_fit.new(args), make_pod(**pod_fields), used_snapshot()) == expected


def test_fit_score_gpu_resource_skipped_when_pod_does_not_request_it():
    plugin = node_resources_fit.new({"scoringStrategy": {"type": "MostAllocated", "resources": [
        {"name": "cpu", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 1}]}})
    snap = snapshot_of(make_node("g", cpu="4", gpus=4))
    # cpu only: 1000*100//4000 = 25, the gpu column is skipped
    assert scores(plugin, make_pod(cpu="1"), snap) == [25]
    # with 2 GPUs: gpu 2*100//4=50 -> (25+50)//2 = 37
    assert scores(plugin, make_pod(cpu="1", gpus=2), snap) == [37]


def test_broken_linear_truncates_like_go():
    util = np.array([0, 100]); score = np.array([100, 0])
    assert node_resources_fit.broken_linear(np.array([0, 33, 50, 100, 120]), util, score).tolist() == [100, 67, 50, 0, 0]


BALANCED_CASES = [
    # n0 after: cpu 2/4=0.5, mem 4/8=0.5 -> 100; n1: cpu 1/8=.125, mem 2/8=.25 -> 1-.0625 -> 93
    ("two-resources", dict(cpu="1", memory="2Gi"), [100, 93]),
    # cpu 2/4=.5, mem 2/8=.25 -> 87 ; n1 cpu .125 mem 0 -> 93
    ("cpu-only", dict(cpu="1"), [87, 93]),
]


@pytest.mark.parametrize("pod_fields,expected", [c[1:] for c in BALANCED_CASES], ids=[c[0] for c in BALANCED_CASES])
def test_balanced_allocation(pod_fields, expected):
    assert scores(balanced_allocation.new(), make_pod(**pod_fields), used_snapshot()) == expected


def test_balanced_allocation_three_resources_uses_std():
    plugin = balanced_allocation.new({"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "example.com/x"}]})
    snap = snapshot_of(make_node("n", cpu="4", memory="8Gi", extra={"example.com/x": 4}))
    # fractions .25 .25 1.0 -> mean .5, std sqrt((.0625*2+.25)/3)=.3536 -> 64
    assert scores(plugin, make_pod(cpu="1", memory="2Gi", extra={"example.com/x": 4}), snap) == [64]


def test_balanced_allocation_skips_best_effort():
    plugin = balanced_allocation.new()
    assert plugin.pre_score(CycleState(), make_pod(), used_snapshot(), np.arange(2)).code.name == "SKIP"


def test_node_affinity_score_normalized_by_max():
    snap = snapshot_of(make_node("a", labels={"gpu": "a100", "zone": "z1"}), make_node("b", labels={"gpu": "a100"}),
                       make_node("c"))
    pod = make_pod(preferred_terms=(PreferredTerm(3, NodeSelectorTerm((req("gpu", "In", "a100"),))),
                                    PreferredTerm(1, NodeSelectorTerm((req("zone", "Exists"),)))))
    # raw 4, 3, 0 -> 100, 75, 0
    assert scores(node_affinity.new(), pod, snap) == [100, 75, 0]


def test_taint_toleration_score_reversed():
    snap = snapshot_of(make_node("two", taints=(taint("a", "1", "PreferNoSchedule"), taint("b", "1", "PreferNoSchedule"))),
                       make_node("one", taints=(taint("a", "1", "PreferNoSchedule"),)), make_node("none"))
    assert scores(taint_toleration.new(), make_pod(), snap) == [0, 50, 100]
    tolerant = make_pod(tolerations=(toleration("a", "Exists", effect="PreferNoSchedule"),))
    assert scores(taint_toleration.new(), tolerant, snap) == [0, 100, 100]
    # a toleration for another effect does not count
    wrong_effect = make_pod(tolerations=(toleration("a", "Exists", effect="NoSchedule"),))
    assert scores(taint_toleration.new(), wrong_effect, snap) == [0, 50, 100]


@pytest.mark.parametrize("strategy,expected", [("binpack", [90, 30]), ("spread", [10, 70])], ids=["binpack", "spread"])
def test_gpu_devices_fractional_best_fit(strategy, expected):
    snap = snapshot_of(make_node("partly", gpus=1), make_node("empty", gpus=1))
    first = make_pod(gpu_milli=600)
    snap.add_pod(first, "partly", snap.devices[0].allocate(first, "binpack"))
    # share 300: 'partly' has 400 free -> 100 - (400-300)/10 = 90; 'empty' 1000 free -> 30
    assert scores(gpu_devices.new({"strategy": strategy}), make_pod(gpu_milli=300), snap) == expected


def test_gpu_devices_whole_gpus_most_allocated():
    snap = snapshot_of(make_node("busy", gpus=4), make_node("idle", gpus=4))
    one = make_pod(gpus=1)
    snap.add_pod(one, "busy", snap.devices[0].allocate(one, "binpack"))
    # after placing 1 GPU: busy 2/4 -> 50, idle 1/4 -> 25
    assert scores(gpu_devices.new(), make_pod(gpus=1), snap) == [50, 25]
