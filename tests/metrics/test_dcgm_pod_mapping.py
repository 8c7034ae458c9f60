"""dcgm-exporter's pod attribution: which resource names get namespace/pod/container on a GPU line.

Upstream: NVIDIA/dcgm-exporter internal/pkg/transformation/kubernetes.go (toDeviceToPod,
iterateGPUDevices: appconfig.NvidiaResourceName, NvidiaMigResourcePrefix, Config.NvidiaResourceNames),
internal/pkg/collector/types.go (Metric.GetIDOfType), pkg/cmd/app.go (flags
--nvidia-resource-names / NVIDIA_RESOURCE_NAMES, --kubernetes-gpu-id-type /
DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE).
"""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpusched.metrics.dcgm import PodMapping, mapping_from_container
from gpusched.metrics.exposition import render_cluster
from tests.metrics.conftest import NODES, apply, pod

MAPPING_CASES = [
    # (id, mapping, resource, MIG instance?, attributed)
    ("gpu-default", PodMapping(), "nvidia.com/gpu", False, True),
    ("mig-prefix-default", PodMapping(), "nvidia.com/mig-1g.5gb", True, True),
    ("renamed-shared-not-mapped", PodMapping(), "nvidia.com/gpu.shared", False, False),
    ("other-vendor-not-mapped", PodMapping(), "example.com/gpu", False, False),
    ("resource-names-flag-maps-shared", PodMapping(("nvidia.com/gpu.shared",)), "nvidia.com/gpu.shared",
     False, True),
    ("device-name-ids-never-match-uuids", PodMapping(gpu_id_type="device-name"), "nvidia.com/gpu", False,
     False),
    ("device-name-still-maps-mig", PodMapping(gpu_id_type="device-name"), "nvidia.com/mig-1g.5gb", True,
     True),
    ("unknown-id-type-maps-no-whole-gpu", PodMapping(gpu_id_type="bogus"), "nvidia.com/gpu", False, False),
]


@pytest.mark.parametrize("mapping,resource,mig,attributed", [c[1:] for c in MAPPING_CASES],
                         ids=[c[0] for c in MAPPING_CASES])
def test_pod_mapping(mapping, resource, mig, attributed):
    assert mapping.maps(resource, mig) is attributed


FLAG_CASES = [
    ("defaults", [], {}, PodMapping()),
    ("flag-equals", ["--nvidia-resource-names=nvidia.com/a100,nvidia.com/gpu.shared"], {},
     PodMapping(("nvidia.com/a100", "nvidia.com/gpu.shared"))),
    ("flag-repeated-separate-value", ["--nvidia-resource-names", "a/b", "--nvidia-resource-names", "c/d"], {},
     PodMapping(("a/b", "c/d"))),
    ("env", [], {"NVIDIA_RESOURCE_NAMES": "nvidia.com/gpu.shared",
                 "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE": "device-name"},
     PodMapping(("nvidia.com/gpu.shared",), "device-name")),
    ("flag-over-env", ["--kubernetes-gpu-id-type=uid"], {"DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE": "device-name"},
     PodMapping()),
]


@pytest.mark.parametrize("args,env,expected", [c[1:] for c in FLAG_CASES], ids=[c[0] for c in FLAG_CASES])
def test_mapping_from_container(args, env, expected):
    assert mapping_from_container(args, env) == expected


RENAMED = """
apiVersion: v1
kind: ConfigMap
metadata: {name: time-slicing-config-all, namespace: default}
data:
  t4: |-
    version: v1
    sharing:
      timeSlicing:
        renameByDefault: true
        resources:
        - name: nvidia.com/gpu
          replicas: 4
"""


def exporter(*args: str) -> str:
    arg_text = "".join(f"\n        - {a}" for a in args)
    return f"""
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: dcgm-exporter, namespace: default}}
spec:
  selector: {{matchLabels: {{app: dcgm-exporter}}}}
  template:
    metadata: {{labels: {{app: dcgm-exporter}}}}
    spec:
      nodeSelector: {{no-such-label: "true"}}
      containers:
      - name: dcgm-exporter
        image: nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04
        args:{arg_text or " []"}
"""


def _t4_util_lines(cluster) -> list[dict]:
    families = text_string_to_metric_families(render_cluster(cluster)[1].decode())
    return [s.labels for f in families if f.name == "DCGM_FI_DEV_GPU_UTIL" for s in f.samples
            if s.labels["Hostname"] == "t4-node"]


@pytest.mark.parametrize("extra,pods_on_line", [
    ((), []),                                                              # default: not mapped
    ((exporter("--nvidia-resource-names=nvidia.com/gpu.shared"),), ["ts-a", "ts-b"]),
], ids=["renamed-shared-unattributed-by-default", "mapped-with-nvidia-resource-names"])
def test_renamed_time_slicing_pods_on_the_gpu_line(cluster, extra, pods_on_line):
    apply(cluster, NODES, RENAMED, *extra)
    apply(cluster, pod("ts-a", resource="nvidia.com/gpu.shared", node="t4-node", util=30),
          pod("ts-b", resource="nvidia.com/gpu.shared", node="t4-node", util=30))
    lines = _t4_util_lines(cluster)
    assert sorted(line.get("pod", "") for line in lines) == (pods_on_line or [""])
    assert all(line.get("namespace") is None for line in lines) == (not pods_on_line)
