"""Where the device plugin's config comes from without the GPU Operator (the standalone Helm chart)
and with it (the ClusterPolicy).

Sources: k8s-device-plugin deployments/helm/nvidia-device-plugin/templates/_helpers.tpl
(``configMapName``: ``config.name``, else ``<fullname>-configs``), values.yaml
(``fallbackStrategies: ["named", "single"]``), README (``kubectl create cm -n
nvidia-device-plugin nvidia-plugin-configs``), cmd/config-manager/main.go (``updateConfigName``:
label, default, then fallbacks named -> key ``default``, single -> the only key, empty);
gpu-operator controllers/object_controls.go (``FALLBACK_STRATEGIES=empty``).
"""

from __future__ import annotations

import pytest

from gpusched.devices.operator import policy_config
from gpusched.devices.plugin_config import (DEFAULT_CONFIG, config_source,
                                            find_device_plugin_configmap, select_config)

TS = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 2}\n"


def cm(name: str, namespace: str, **data: str) -> dict:
    return {"kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": dict(data) or {"config": TS}}


@pytest.mark.parametrize("configmaps,expected", [
    ([cm("nvidia-device-plugin", "kube-system")], "kube-system/nvidia-device-plugin"),
    ([cm("nvidia-plugin-configs", "nvidia-device-plugin")], "nvidia-device-plugin/nvidia-plugin-configs"),
    ([cm("nvdp-nvidia-device-plugin-configs", "nvidia-device-plugin")],
     "nvidia-device-plugin/nvdp-nvidia-device-plugin-configs"),          # release "nvdp", config.map
    ([cm("nvidia-device-plugin-configs", "kube-system")], "kube-system/nvidia-device-plugin-configs"),
    ([cm("unrelated", "kube-system")], None),
], ids=["kube-system-name", "readme-precreated", "chart-config-map", "release-named-chart", "none"])
def test_helm_configmap_names(configmaps, expected):
    found = find_device_plugin_configmap(configmaps)
    got = None if found is None else f'{found["metadata"]["namespace"]}/{found["metadata"]["name"]}'
    assert got == expected


@pytest.mark.parametrize("data,fallbacks,key", [
    ({"default": TS, "other": TS}, ("named", "single"), "default"),
    ({"only": TS}, ("named", "single"), "only"),
    ({"a": TS, "b": TS}, ("named", "single"), ""),
    ({"only": TS}, ("empty",), ""),
    ({"default": TS}, ("empty",), ""),
], ids=["named", "single", "ambiguous", "operator-empty", "operator-ignores-default-key"])
def test_fallback_strategies(data, fallbacks, key):
    chosen, config = select_config(data, {}, None, "", fallbacks)
    assert chosen == key
    assert (config == DEFAULT_CONFIG) == (not key)


def test_cluster_policy_source_uses_its_namespace_and_default():
    policy = policy_config({"metadata": {"name": "cluster-policy"}, "spec": {
        "devicePlugin": {"config": {"name": "ts", "default": "any"}}}})
    source = config_source([cm("ts", "default"), cm("ts", "gpu-operator", any=TS)], policy)
    assert source.configmap["metadata"]["namespace"] == "gpu-operator"
    assert (source.default_key, source.fallbacks, source.error) == ("any", ("empty",), "")
    missing = config_source([cm("ts", "default")], policy)
    assert missing.error == ('ClusterPolicy cluster-policy: spec.devicePlugin.config.name: '
                             'configmap "ts" not found in namespace gpu-operator')


def test_cluster_policy_without_config_name_reads_no_configmap():
    policy = policy_config({"metadata": {"name": "cluster-policy"}, "spec": {}})
    assert config_source([cm("time-slicing-config", "gpu-operator")], policy).configmap is None
