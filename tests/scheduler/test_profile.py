"""KubeSchedulerConfiguration profiles over the default profile."""

import pytest

from gpusched.errors import UsageError
from gpusched.scheduler.profile import (build_frameworks, default_profile, num_feasible_nodes_to_find,
                                        parse_config)


def names(config, point):
    return [s.name for s in config.points[point]]


def weights(config):
    return {s.name: s.weight for s in config.points["score"]}


def test_default_profile_has_upstream_weights_and_gpu_plugin():
    # full comparison with default_plugins.go: tests/scheduler/test_default_profile.py
    config = default_profile()
    w = weights(config)
    assert (w["NodeResourcesFit"], w["NodeResourcesBalancedAllocation"], w["NodeAffinity"],
            w["TaintToleration"]) == (1, 1, 2, 3)
    assert "GpuDevices" not in w
    assert names(config, "filter")[:4] == ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity"]
    assert names(config, "queueSort") == ["PrioritySort"]
    assert names(config, "reserve") == ["DynamicResources", "GpuDevices"]   # upstream: VolumeBinding, DynamicResources


YAML = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 30
profiles:
- schedulerName: default-scheduler
- schedulerName: binpack
  plugins:
    score:
      enabled: [{name: NodeResourcesFit, weight: 5}]
      disabled: [{name: NodeResourcesBalancedAllocation}]
    postFilter:
      disabled: [{name: "*"}]
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
"""


def test_yaml_profiles():
    default, binpack = parse_config(YAML)
    assert default.percentage_of_nodes_to_score == binpack.percentage_of_nodes_to_score == 30
    assert weights(binpack)["NodeResourcesFit"] == 5
    assert names(binpack, "score")[0] == "NodeResourcesFit"
    assert "NodeResourcesBalancedAllocation" not in weights(binpack)
    assert names(binpack, "postFilter") == []
    frameworks = build_frameworks([default, binpack])
    assert frameworks["binpack"].plugins["NodeResourcesFit"].strategy == "MostAllocated"
    assert frameworks["default-scheduler"].plugins["NodeResourcesFit"].strategy == "LeastAllocated"


def test_disable_all_scores_and_enable_custom_weight():
    (config,) = parse_config({"profiles": [{"plugins": {"score": {
        "disabled": [{"name": "*"}], "enabled": [{"name": "GpuDevices", "weight": 10000}]}}}]})
    assert weights(config) == {"GpuDevices": 10000}
    assert "TaintToleration" in names(config, "filter")


def test_multipoint_disable_removes_everywhere():
    (config,) = parse_config({"profiles": [{"plugins": {"multiPoint": {"disabled": [{"name": "TaintToleration"}]}}}]})
    assert "TaintToleration" not in names(config, "filter") and "TaintToleration" not in weights(config)


ERRORS = [
    ("unknown-plugin", {"profiles": [{"plugins": {"score": {"enabled": [{"name": "Nope"}]}}}]},
     'profiles[0].plugins.score.enabled[0].name: Invalid value: "Nope": unknown plugin'),
    ("wrong-point", {"profiles": [{"plugins": {"score": {"enabled": [{"name": "NodeName"}]}}}]},
     "plugin does not extend score"),
    # pkg/scheduler/framework/runtime/framework.go updatePluginList: a name twice at one point
    ("enabled-twice", {"profiles": [{"plugins": {"filter": {"enabled": [{"name": "NodeName"}, {"name": "NodeName"}]}}}]},
     'profiles[0].plugins.filter.enabled: plugin "NodeName" already registered as "FilterPlugin"'),
    ("score-enabled-twice", {"profiles": [{"plugins": {"score": {"enabled": [
        {"name": "NodeAffinity", "weight": 2}, {"name": "NodeAffinity", "weight": 3}]}}}]},
     'plugin "NodeAffinity" already registered as "ScorePlugin"'),
    ("bad-api-version", {"apiVersion": "v2"}, 'apiVersion: Unsupported value: "v2"'),
    ("bad-percentage", {"percentageOfNodesToScore": 150}, "not in valid range [0-100]"),
    ("negative-weight", {"profiles": [{"plugins": {"score": {"enabled": [{"name": "NodeAffinity", "weight": -1}]}}}]},
     "must be a non-negative integer"),
    ("duplicate-name", {"profiles": [{}, {}]}, 'profiles[1].schedulerName: Duplicate value: "default-scheduler"'),
    ("unknown-point", {"profiles": [{"plugins": {"scroe": {}}}]}, 'unknown extension point "scroe"'),
    ("bad-strategy", {"profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {
        "scoringStrategy": {"type": "Fancy"}}}]}]}, 'Unsupported value: "Fancy"'),
    # kube-scheduler decodes --config strictly (kubernetes#83030, cmd/kube-scheduler/app/options/
    # configfile.go loadConfig with the scheme's EnableStrict codecs): a misspelt key is an error
    ("unknown-top-level-field", {"percentageOfNodeToScore": 50},
     'strict decoding error: unknown field "percentageOfNodeToScore"'),
    ("unknown-profile-field", {"profiles": [{"schedulerName": "a", "plugin": {}}]},
     'strict decoding error: unknown field "profiles[0].plugin"'),
]


@pytest.mark.parametrize("config,fragment", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_config_errors(config, fragment):
    with pytest.raises(UsageError) as err:
        build_frameworks(parse_config(config))
    assert fragment in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("nodes,percentage,expected", [
    (50, 0, 50), (100, 0, 100), (1000, 0, 420), (5000, 0, 500), (10000, 0, 500), (6000, 0, 300),
    (200, 10, 100), (5000, 100, 5000), (5000, 30, 1500),
], ids=lambda v: str(v))
def test_num_feasible_nodes_to_find(nodes, percentage, expected):
    assert num_feasible_nodes_to_find(nodes, percentage) == expected


def test_multipoint_reconfigured_default_keeps_its_place():
    # upstream mergePluginSet (apis/config/v1/default_plugins.go): "Update the default plugin in
    # place to preserve order"; the new weight applies at score
    (config,) = parse_config({"profiles": [{"plugins": {"multiPoint": {
        "enabled": [{"name": "TaintToleration", "weight": 7}]}}}]})
    assert names(config, "filter") == names(default_profile(), "filter")
    assert names(config, "score") == names(default_profile(), "score")
    assert weights(config)["TaintToleration"] == 7
