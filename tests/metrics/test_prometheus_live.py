"""Integration: a real Prometheus on loopback scrapes ``gpusched serve`` every second; after a
scenario is applied, its HTTP API returns the GPU utilization with pod labels and the
scheduler's pending count."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse

import pytest

from tests.metrics.conftest import NODES, TIME_SLICING, pod
from tests.metrics.procs import GPUSCHED, free_port, get, poll, stop
from tests.conftest import CEILING_S

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("prometheus") is None,
                                 reason="prometheus not installed (make test installs it)")]


def query(port: int, expr: str) -> list[dict]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    return json.loads(get(url))["data"]["result"]


@pytest.fixture
def served(tmp_path):
    state = tmp_path / "cluster.db"
    env_args = ["--state", str(state)]
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("\n---\n".join([NODES, TIME_SLICING, pod("ts-a", node="t4-node", util=30),
                                        pod("ts-b", node="t4-node", util=20),
                                        pod("waits", gpus=8)]))
    api_port, prom_port = free_port(), free_port()
    server = subprocess.Popen([*GPUSCHED, *env_args, "serve", "--virtual-clock", "--port",
                               str(api_port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    config = tmp_path / "prometheus.yml"
    config.write_text(f"global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n"
                      f"scrape_configs:\n- job_name: gpusched\n  static_configs:\n"
                      f"  - targets: ['127.0.0.1:{api_port}']\n")
    prometheus = subprocess.Popen(
        ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{prom_port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert "listening on" in server.stdout.readline()
        subprocess.run([*GPUSCHED, *env_args, "apply", "-f", str(scenario)], check=True,
                       capture_output=True, timeout=CEILING_S)
        poll(lambda: get(f"http://127.0.0.1:{prom_port}/-/ready"), what="prometheus ready")
        yield prom_port
    finally:
        stop(prometheus)
        stop(server)


def test_prometheus_reads_gpu_metrics_with_pods_and_pending_count(served):
    def both_pods() -> list[dict]:
        # apply -f creates the node before its pods (one object at a time, as kubectl), so a
        # scrape may see the GPU without pod labels first: wait until both pods are on it
        rows = query(served, 'DCGM_FI_DEV_GPU_UTIL{Hostname="t4-node",pod!=""}')
        return rows if len(rows) == 2 else []

    util = poll(both_pods, what="DCGM_FI_DEV_GPU_UTIL with both pods in Prometheus")
    by_pod = {r["metric"]["pod"]: r["value"][1] for r in util}
    assert by_pod == {"ts-a": "50", "ts-b": "50"}
    assert all(r["metric"]["job"] == "gpusched" and r["metric"]["modelName"] == "Tesla T4"
               for r in util)
    pending = poll(lambda: [r for r in query(served, 'scheduler_pending_pods{queue="unschedulable"}')
                            if r["value"][1] != "0"], what="scheduler_pending_pods above 0")
    assert pending[0]["value"][1] == "1"
