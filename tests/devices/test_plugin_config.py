"""Device-plugin config v1 parsing (exact upstream messages), strategies, per-node selection."""

from __future__ import annotations

import logging

import pytest

from gpusched.devices.plugin_config import (DEFAULT_CONFIG, DevicePluginConfigError, check_for_node,
                                            find_device_plugin_configmap, mps_max_clients,
                                            parse_config, select_config)

TUTORIAL = """
version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
"""


def _ts(resources: str, extra: str = "") -> str:
    return f"version: v1\nsharing:\n  timeSlicing:\n{extra}    resources:\n{resources}"


ERRORS = [
    ("version: v2", "unknown version: v2"),
    (_ts("    - name: nvidia.com/gpu\n      replicas: 1\n"), "number of replicas must be >= 2"),
    (_ts("    - name: nvidia.com/gpu\n"), "no replicas specified"),
    (_ts("    - replicas: 4\n"), "no resource name specified"),
    ("version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n", "no resources specified"),
    ("version: v1\nsharing:\n  mps:\n    resources: []\n", "no resources specified"),
    ("flags:\n  migStrategy: half\n", "invalid --mig-strategy option: half"),
    (_ts("    - name: gpu\n      replicas: 2\n      devices: some\n"),
     "devices set as 'some' but the only valid string input is 'all'"),
    ("flags:\n  plugin:\n    deviceListStrategy: magic\n", "invalid strategy: magic"),
]


@pytest.mark.parametrize("text,message", ERRORS,
                         ids=["version", "replicas-1", "no-replicas", "no-name", "no-resources",
                              "mps-empty", "mig-strategy", "devices-string", "list-strategy"])
def test_parse_errors_exact(text, message):
    with pytest.raises(DevicePluginConfigError) as err:
        parse_config(text)
    assert str(err.value) == message


def test_error_names_where():
    with pytest.raises(DevicePluginConfigError) as err:
        parse_config("version: v3", where='ConfigMap gpu-operator/x key "a"')
    assert str(err.value) == 'ConfigMap gpu-operator/x key "a": unknown version: v3'


def test_tutorial_config():
    config = parse_config(TUTORIAL)
    assert config.version == "v1" and config.mig_strategy is None
    assert config.sharing_strategy == "time-slicing"
    assert config.replicas_for("nvidia.com/gpu") == 4
    assert config.advertised_name("nvidia.com/gpu") == "nvidia.com/gpu"
    assert config.fail_requests_greater_than_one is False
    assert config.allocation_policy == "distributed"


def test_json_and_dict_forms_agree():
    json_text = ('{"version": "v1", "sharing": {"timeSlicing": {"resources": '
                 '[{"name": "nvidia.com/gpu", "replicas": 4}]}}}')
    assert parse_config(json_text) == parse_config(TUTORIAL)
    assert parse_config({"sharing": {"timeSlicing": {"resources": [
        {"name": "gpu", "replicas": 4}]}}}) == parse_config(TUTORIAL)


def test_absent_config_is_default():
    assert parse_config(None) == DEFAULT_CONFIG == parse_config("")
    assert DEFAULT_CONFIG.sharing_strategy == "none"


def test_rename_by_default_and_prefix():
    config = parse_config(_ts("    - name: gpu\n      replicas: 10\n", "    renameByDefault: true\n"))
    assert config.advertised_name("nvidia.com/gpu") == "nvidia.com/gpu.shared"


@pytest.mark.parametrize("body,strategy,fail_gt_one", [
    ({"sharing": {"mps": {"resources": [{"name": "gpu", "replicas": 2}]}}}, "mps", True),
    ({"sharing": {"mps": {"failRequestsGreaterThanOne": False,
                          "resources": [{"name": "gpu", "replicas": 2}]}}}, "mps", False),
    ({"sharing": {"timeSlicing": {"failRequestsGreaterThanOne": True,
                                  "resources": [{"name": "gpu", "replicas": 2}]}}},
     "time-slicing", True),
    ({"sharing": {"timeSlicing": {"resources": [{"name": "gpu", "replicas": 3}]},
                  "mps": {"resources": [{"name": "gpu", "replicas": 2}]}}}, "mps", True),
], ids=["mps-default-on", "mps-explicit-false-honoured", "ts-explicit-true", "mps-beats-ts"])
def test_strategy_and_fail_flag(body, strategy, fail_gt_one):
    config = parse_config(body)
    assert config.sharing_strategy == strategy
    assert config.fail_requests_greater_than_one is fail_gt_one


def test_ignored_fields_warn(caplog):
    body = {"resources": {"gpus": [{"pattern": "*", "name": "x"}]},
            "sharing": {"timeSlicing": {"resources": [
                {"name": "gpu", "replicas": 2, "rename": "my-gpu", "devices": [0, 1]}]}}}
    with caplog.at_level(logging.WARNING):
        config = parse_config(body)
    assert config.advertised_name("nvidia.com/gpu") == "nvidia.com/gpu"   # rename ignored
    text = caplog.text
    assert "Customizing the 'resources' field is not yet supported in the config. Ignoring..." in text
    assert "Setting the 'rename' field in sharing.timeSlicing.resources is not yet supported" in text
    assert "Customizing the 'devices' field in sharing.timeSlicing.resources" in text


@pytest.mark.parametrize("compute,replicas,error", [
    ((7, 5), 48, None),
    ((7, 5), 49, "invalid device maximum allowed replicas exceeded: 49 > 48"),
    ((7, 0), 17, "invalid device maximum allowed replicas exceeded: 17 > 16"),
    ((6, 0), 16, None),
], ids=["turing-48", "turing-49", "volta-17", "pascal-16"])
def test_mps_client_limit(compute, replicas, error):
    config = parse_config({"sharing": {"mps": {"resources": [{"name": "gpu", "replicas": replicas}]}}})
    if error is None:
        check_for_node(config, compute, mig_enabled=False)
    else:
        with pytest.raises(DevicePluginConfigError) as err:
            check_for_node(config, compute, mig_enabled=False)
        assert str(err.value) == error


def test_mps_not_on_mig():
    config = parse_config({"sharing": {"mps": {"resources": [{"name": "gpu", "replicas": 2}]}}})
    with pytest.raises(DevicePluginConfigError, match="MIG"):
        check_for_node(config, (8, 0), mig_enabled=True)
    assert mps_max_clients(8, 0) == 48 and mps_max_clients(7, 0) == 16


CM_DATA = {"a100": TUTORIAL, "t4": TUTORIAL.replace("4", "8")}


@pytest.mark.parametrize("data,labels,default,key", [
    (CM_DATA, {"nvidia.com/device-plugin.config": "t4"}, None, "t4"),
    (CM_DATA, {"nvidia.com/device-plugin.config": "t4"}, "a100", "t4"),
    (CM_DATA, {}, "a100", "a100"),
    (CM_DATA, {}, None, ""),
    ({"any": TUTORIAL}, {}, None, "any"),
    ({}, {}, None, ""),
], ids=["label", "label-beats-default", "default", "ambiguous-none", "single-key", "empty"])
def test_select_config(data, labels, default, key):
    chosen, config = select_config(data, labels, default)
    assert chosen == key
    if key:
        assert config.sharing_strategy == "time-slicing"
    else:
        assert config == DEFAULT_CONFIG


def test_select_missing_key():
    with pytest.raises(DevicePluginConfigError, match='config "h100" selected by node label'):
        select_config(CM_DATA, {"nvidia.com/device-plugin.config": "h100"}, None)


def _cm(name, namespace="gpu-operator", annotated=False):
    meta = {"name": name, "namespace": namespace}
    if annotated:
        meta["annotations"] = {"gpusched.io/device-plugin-config": "true"}
    return {"kind": "ConfigMap", "metadata": meta, "data": {}}


@pytest.mark.parametrize("cms,expected", [
    ([_cm("time-slicing-config")], ("gpu-operator", "time-slicing-config")),
    ([_cm("time-slicing-config", "default"), _cm("device-plugin-config", "kube-system")],
     ("kube-system", "device-plugin-config")),
    ([_cm("time-slicing-config"), _cm("mine", "team", annotated=True)], ("team", "mine")),
    ([_cm("something-else")], None),
], ids=["tutorial", "namespace-order", "annotation-wins", "none"])
def test_find_configmap(cms, expected):
    found = find_device_plugin_configmap(cms)
    got = None if found is None else (found["metadata"]["namespace"], found["metadata"]["name"])
    assert got == expected
