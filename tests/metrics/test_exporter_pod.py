"""What a dcgm-exporter pod serves on its metrics port (``metrics.exporter_pod``): which pods
run dcgm-exporter, the port it listens on (NVIDIA/dcgm-exporter pkg/cmd/app.go: ``--address``
/ ``-a``, env ``DCGM_EXPORTER_LISTEN``, default ``:9400``; a flag wins over the environment,
urfave/cli), and its node's GPUs only on ``/metrics``."""

from __future__ import annotations

import pytest

from gpusched.devices.operator import COMPONENTS
from gpusched.metrics.exporter_pod import exporter_container, listen_port, node_metrics
from tests.metrics.conftest import NODES, apply, pod

OPERATOR_EXPORTER = next(c for c in COMPONENTS if c.spec_key == "dcgmExporter")


def make_pod(*containers: dict) -> dict:
    return {"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": list(containers)}}


@pytest.mark.parametrize("containers,found", [
    ([{"name": "dcgm-exporter", "image": "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04"}], 0),
    ([{"name": "sidecar", "image": "busybox"},
      {"name": OPERATOR_EXPORTER.container, "image": OPERATOR_EXPORTER.image}], 1),
    ([{"name": "exporter", "image": "example.com/dcgm-exporter:1"}], 0),
    ([{"name": "app", "image": "nginx"}], None),
], ids=["lab-daemonset", "gpu-operator-operand", "image-only", "not-an-exporter"])
def test_exporter_container(containers, found):
    container = exporter_container(make_pod(*containers))
    assert container == (containers[found] if found is not None else None)


@pytest.mark.parametrize("container,port", [
    ({}, 9400),
    ({"args": ["-f", "/etc/dcgm-exporter/dcp-metrics-included.csv"]}, 9400),
    ({"env": [{"name": "DCGM_EXPORTER_LISTEN", "value": ":9500"}]}, 9500),
    ({"args": ["--address", "127.0.0.1:9600"], "env": [{"name": "DCGM_EXPORTER_LISTEN", "value": ":9500"}]}, 9600),
    ({"command": ["dcgm-exporter", "-a=[::]:9700"]}, 9700),
    ({"args": ["-a", ":0"]}, None),
    ({"args": ["-a", ":99999"]}, None),
], ids=["default", "other-flags", "env", "flag-wins-over-env", "command-equals-ipv6", "port-zero",
        "port-too-large"])
def test_listen_port(container, port):
    assert listen_port(container) == port


def test_node_metrics_are_its_node_only(cluster):
    apply(cluster, NODES, pod("train", gpus=2, node="gpu-node-1", util=80))
    cluster.settle()
    view = cluster.view()
    text = node_metrics(view, make_pod({"name": "dcgm-exporter", "image": "dcgm-exporter"}), "gpu-node-1").decode()
    util = [line for line in text.splitlines() if line.startswith("DCGM_FI_DEV_GPU_UTIL{")]
    assert len(util) == 2 and all('Hostname="gpu-node-1"' in line and 'pod="train"' in line for line in util)
    assert 'Hostname="t4-node"' not in text and "# TYPE DCGM_FI_DEV_GPU_UTIL gauge" in text
