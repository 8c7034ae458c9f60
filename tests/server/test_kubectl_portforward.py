"""``kubectl port-forward`` to a dcgm-exporter pod through ``gpusched serve``, with real kubectl.

The lab's troubleshooting step: ``kubectl port-forward -n gpu-monitoring <dcgm-exporter pod>
9400:9400``, then ``curl localhost:9400/metrics | grep DCGM``. kubectl 1.32 dials a WebSocket
first (client-go tools/portforward/tunneling_dialer.go: ``GET`` with subprotocol
``SPDY/3.1+portforward.k8s.io``, SPDY frames in binary messages, tunneling_connection.go);
Debian's kubectl 1.20 speaks SPDY/3.1 after ``POST`` + ``Upgrade: SPDY/3.1``
(apimachinery httpstream/spdy/roundtripper.go). Per local connection kubectl opens an
``error`` and a ``data`` stream (client-go tools/portforward/portforward.go
``handleConnection``); what the kubelet writes on the error stream
(pkg/kubelet/cri/streaming/portforward/httpstream.go ``portForward``: ``error forwarding port
P to pod ...``) kubectl prints as ``an error occurred forwarding L -> P: ...``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import CEILING_S, REPO_ROOT, wait_until
from tests.server.conftest import DEBIAN_KUBECTL, Served, start_serve, stops_cleanly

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")]
NAMESPACE = "gpu-monitoring"
KUBECTLS = [pytest.param("kubectl", id="kubectl-1.32-websocket"),
            pytest.param(str(DEBIAN_KUBECTL), id="kubectl-1.20-spdy", marks=pytest.mark.skipif(
                not DEBIAN_KUBECTL.exists(), reason="Debian kubectl 1.20 not fetched"))]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The lab cluster with the lab's dcgm-exporter DaemonSet running on the three GPU nodes, and
    a plain pod (``plain``) running on the CPU node."""
    served = start_serve(tmp_path_factory.mktemp("portforward"))
    served.kubectl("apply", "-f", "examples/cluster.yaml", "-f", "examples/gpu-lab/2-dcgm-exporter.yaml")
    served.kubectl("label", "nodes", "-l", "nvidia.com/gpu.present=true", "nvidia.com/gpu=true")
    served.json("/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain"},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": "cpu-node-1"},
                 "containers": [{"name": "c", "image": "busybox"}]}})

    def running() -> list[str]:
        out = served.kubectl("get", "pods", "-A", "--no-headers").stdout.splitlines()
        rows = [line.split() for line in out]
        names = [r[1] for r in rows if r[3] == "Running"]
        return names if len(names) == 4 else []

    wait_until(running, "three dcgm-exporter pods and the plain pod Running")
    yield served
    stops_cleanly(served.process)


def exporter_pod(lab: Served, node: str) -> str:
    out = lab.kubectl("get", "pods", "-n", NAMESPACE, "-o", "wide", "--no-headers").stdout
    return next(line.split()[0] for line in out.splitlines() if line.split()[6] == node)


class PortForward:
    """``kubectl port-forward ARGS :REMOTE`` in the background: its local port once it prints
    ``Forwarding from``, its output files, stopped by PID."""

    def __init__(self, lab: Served, binary: str, folder: Path, *args: str) -> None:
        self.out, self.err = folder / "pf.out", folder / "pf.err"
        with self.out.open("w") as out, self.err.open("w") as err:
            self.process = subprocess.Popen([binary, "port-forward", "-v=6", *args], stdout=out, stderr=err,
                                            env=lab.kubectl_env(), cwd=REPO_ROOT)
        line = wait_until(self._forwarding, "kubectl port-forward to print 'Forwarding from'", self.output)
        self.port = int(re.search(r"127\.0\.0\.1:(\d+) ->", line).group(1))

    def _forwarding(self) -> str | None:
        if self.process.poll() is not None:
            raise AssertionError(f"kubectl port-forward exited {self.process.returncode}: {self.output()}")
        return next((line for line in self.out.read_text().splitlines() if "Forwarding from 127.0.0.1" in line), None)

    def output(self) -> str:
        return self.out.read_text() + self.err.read_text()

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=CEILING_S) as reply:
                return reply.status, reply.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
        self.process.wait(CEILING_S)


@pytest.fixture
def forward(lab, tmp_path):
    started: list[PortForward] = []

    def start(binary: str, *args: str) -> PortForward:
        started.append(PortForward(lab, binary, tmp_path, *args))
        return started[-1]

    yield start
    for pf in started:
        pf.stop()


@pytest.mark.parametrize("binary", KUBECTLS)
def test_lab_port_forward_then_curl_metrics(lab, forward, binary):
    pod = exporter_pod(lab, "gpu-node-2")
    pf = forward(binary, "-n", NAMESPACE, pod, ":9400")
    status, body = pf.get("/metrics")
    assert status == 200
    util = [line for line in body.splitlines() if line.startswith("DCGM_FI_DEV_GPU_UTIL{")]
    assert len(util) == 4 and all('Hostname="gpu-node-2"' in line for line in util)   # 4 x V100
    assert pf.get("/other") == (404, "404 page not found\n")           # Go's http.NotFound
    # 1.32 dials the WebSocket tunnel (GET); 1.20 the SPDY upgrade (POST)
    verb = "POST" if binary == str(DEBIAN_KUBECTL) else "GET"
    assert re.search(rf"{verb} http://\S+/pods/{pod}/portforward 101 Switching Protocols", pf.output())


@pytest.mark.parametrize("binary", KUBECTLS)
@pytest.mark.parametrize("pod,port,limit", [
    ("exporter", "8080", "only dcgm-exporter's metrics port 9400 is"),
    ("plain", "9400", "only a dcgm-exporter pod's metrics port answers"),
], ids=["exporter-other-port", "plain-pod"])
def test_unsimulated_port_is_one_line_kubectl_prints(lab, forward, binary, pod, port, limit):
    name = exporter_pod(lab, "gpu-node-1") if pod == "exporter" else "plain"
    namespace = NAMESPACE if pod == "exporter" else "default"
    pf = forward(binary, "-n", namespace, name, f":{port}")
    with pytest.raises((urllib.error.URLError, ConnectionError)):   # the connection ends, empty
        pf.get("/metrics")
    expected = (f"error forwarding port {port} to pod {name}_{namespace}, uid "
                rf"[0-9a-f-]+: gpusched: port {port} of pod {namespace}/{name} is not simulated")
    line = wait_until(lambda: re.search(expected + ".*", pf.err.read_text()), "kubectl to print the error",
                      pf.output)
    assert limit in line.group(0)


def test_gpu_operator_dcgm_exporter_pod(realtime_serve, tmp_path):
    """``kubectl port-forward -n gpu-operator <nvidia-dcgm-exporter pod> 9400:9400``: the GPU
    Operator's operand (NVIDIA/gpu-operator assets/state-dcgm-exporter) once its device plugin
    advertises the GPUs (time-slicing config applied, as tests/server/test_kubectl_operator.py)."""
    serve = realtime_serve
    serve.kubectl("apply", "-f", "examples/cluster.yaml", "-f", "examples/gpu-operator/1-cluster-policy.yaml",
                  "-f", "examples/gpu-operator/2-time-slicing-config.yaml")

    def exporter_on_gpu_node_1() -> str | None:
        out = serve.kubectl("get", "pods", "-n", "gpu-operator", "-o", "wide", "--no-headers").stdout
        rows = [line.split() for line in out.splitlines()]
        allocatable = serve.kubectl("get", "node", "gpu-node-1", "-o",
                                    "jsonpath={.status.allocatable.nvidia\\.com/gpu}").stdout
        return next((r[0] for r in rows if r[0].startswith("nvidia-dcgm-exporter-") and r[2] == "Running"
                     and r[6] == "gpu-node-1"), None) if allocatable == "32" else None

    pod = wait_until(exporter_on_gpu_node_1, "a Running nvidia-dcgm-exporter pod on gpu-node-1 with its GPUs advertised")
    pf = PortForward(serve, "kubectl", tmp_path, "-n", "gpu-operator", pod, ":9400")
    try:
        status, body = pf.get("/metrics")
    finally:
        pf.stop()
    util = [line for line in body.splitlines() if line.startswith("DCGM_FI_DEV_GPU_UTIL{")]
    assert status == 200 and len(util) == 8 and all('Hostname="gpu-node-1"' in line for line in util)
