"""The default profile is kube-scheduler v1.35's; GPU-aware scoring is gpusched's opt-in profile.

Upstream reference, transcribed here as data (not imported from the module under test):
kubernetes ``pkg/scheduler/apis/config/v1/default_plugins.go`` ``getDefaultPlugins`` with
``applyFeatureGates`` (DynamicResourceAllocation GA and on since v1.34, so DynamicResources is
inserted before DefaultPreemption); the EBSLimits/GCEPDLimits/AzureDiskLimits plugins left the
default list in v1.31 (kubernetes PR #124500). Extension points per plugin: the plugins'
``framework.*Plugin`` implementations (docs: reference/scheduling/config.md "Scheduling plugins").
"""

import pytest

from gpusched.scheduler import profile
from gpusched.scheduler.profile import build_frameworks, default_profile
from tests.scheduler.builders import make_node, make_pod, scheduler_of

# default_plugins.go getDefaultPlugins (v1.35), MultiPoint.Enabled in order: (name, weight or 0).
UPSTREAM_V1_35 = [
    ("SchedulingGates", 0), ("PrioritySort", 0), ("NodeUnschedulable", 0), ("NodeName", 0),
    ("TaintToleration", 3), ("NodeAffinity", 2), ("NodePorts", 0), ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0), ("NodeVolumeLimits", 0), ("VolumeBinding", 0), ("VolumeZone", 0),
    ("PodTopologySpread", 2), ("InterPodAffinity", 2), ("DynamicResources", 0),
    ("DefaultPreemption", 0), ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1),
    ("DefaultBinder", 0),
]
# Upstream's expanded default profile per extension point (multiPoint expansion keeps the list's
# order), as far as the plugin names go.
UPSTREAM_POINTS = {
    "queueSort": ["PrioritySort"],
    "filter": ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
               "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding",
               "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources"],
    "postFilter": ["DynamicResources", "DefaultPreemption"],
    "score": [("TaintToleration", 3), ("NodeAffinity", 2), ("NodeResourcesFit", 1),
              ("PodTopologySpread", 2), ("InterPodAffinity", 2), ("DynamicResources", 1),
              ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1)],
}


def test_multipoint_list_is_upstream_v1_35():
    assert list(profile.UPSTREAM_DEFAULT_PLUGINS) == UPSTREAM_V1_35
    modelled = [p for p in UPSTREAM_V1_35 if p[0] not in profile.NOT_MODELLED]
    assert list(profile.DEFAULT_PLUGINS) == modelled + [("GpuDevices", 1)]
    assert set(profile.NOT_MODELLED) <= {n for n, _ in UPSTREAM_V1_35}


def _names(point):
    return [s.name for s in default_profile().points[point]]


@pytest.mark.parametrize("point", ["queueSort", "filter", "postFilter"])
def test_point_order_is_upstream_order(point):
    expected = [n for n in UPSTREAM_POINTS[point] if n not in profile.NOT_MODELLED]
    got = [n for n in _names(point) if n != "GpuDevices"]
    assert got == expected
    if point == "filter":       # gpusched's device-level fit runs after every upstream filter
        assert _names(point)[-1] == "GpuDevices"


def test_score_plugins_and_weights_are_upstream_gpus_not_scored():
    got = [(s.name, s.weight) for s in default_profile().points["score"]]
    assert got == [p for p in UPSTREAM_POINTS["score"] if p[0] not in profile.NOT_MODELLED]
    assert "GpuDevices" not in _names("preScore")
    fit = build_frameworks()["default-scheduler"].plugins["NodeResourcesFit"]
    assert (fit.strategy, fit.resources) == ("LeastAllocated", (("cpu", 1), ("memory", 1)))


@pytest.mark.parametrize("name,strategy", [("gpusched-binpack", "binpack"), ("gpusched-spread", "spread")])
def test_gpusched_profiles_add_gpu_scoring(name, strategy):
    frameworks = build_frameworks()
    assert list(frameworks) == ["default-scheduler", "gpusched-binpack", "gpusched-spread",
                                "scheduler-plugins-scheduler"]
    config = frameworks[name].config
    assert [s.name for s in config.points["score"]][-1] == "GpuDevices"
    assert "GpuDevices" in [s.name for s in config.points["preScore"]]
    assert frameworks[name].plugins["GpuDevices"].strategy == strategy


def test_configured_profile_replaces_a_gpusched_profile_of_the_same_name():
    mine = profile.parse_config({"profiles": [{"schedulerName": "gpusched-binpack"}]})
    frameworks = build_frameworks(mine)
    assert list(frameworks) == ["gpusched-binpack", "gpusched-spread", "scheduler-plugins-scheduler"]
    assert "GpuDevices" not in [s.name for s in frameworks["gpusched-binpack"].config.points["score"]]


# Scoring outcome: "busy" already runs a one-GPU pod, "idle" runs nothing; both have 4 GPUs.
# Upstream LeastAllocated over cpu/memory (fit.go, least_allocated.go) prefers idle - GPUs do not
# count; gpusched-binpack packs the GPU pod next to the running one, gpusched-spread does not.
SCORING_CASES = [
    ("default-scheduler-least-allocated-cpu-memory", "default-scheduler", "idle"),
    ("gpusched-binpack-fills-busy-gpus", "gpusched-binpack", "busy"),
    ("gpusched-spread-prefers-free-gpus", "gpusched-spread", "idle"),
]


@pytest.mark.parametrize("scheduler_name,expected", [c[1:] for c in SCORING_CASES],
                         ids=[c[0] for c in SCORING_CASES])
def test_gpu_pod_placement_by_profile(scheduler_name, expected):
    scheduler = scheduler_of(make_node("busy", gpus=4), make_node("idle", gpus=4))
    running = make_pod(name="running", gpus=1, cpu="1", node_selector={"kubernetes.io/hostname": "busy"})
    assert scheduler.schedule_one(running).node == "busy"
    pod = make_pod(name="new", gpus=1, cpu="1", scheduler_name=scheduler_name)
    assert scheduler.schedule_one(pod).node == expected
