"""The GPU Operator and Slurm steps of the guides with kubectl 1.32 against ``gpusched serve``.

- ``kubectl get pods -n gpu-operator`` lists the operand pods by their upstream DaemonSet names
  (NVIDIA/gpu-operator assets/state-*); ``kubectl logs -n gpu-operator -l
  app=nvidia-device-plugin-daemonset`` prints the plugin's simulated start;
- an edited time-slicing ConfigMap applies only once the plugin pods are replaced (NVIDIA's
  "Updating a Time-Slicing Config Map"): by deleting them, or by ``kubectl rollout restart``;
- ``gpusched sbatch`` on the served state, then ``cat slurm-*.out`` and the job's pod in kubectl.
"""

from __future__ import annotations

import json
import shutil
import time

import pytest

from tests.conftest import CEILING_S, REPO_ROOT, gpusched_executable, run_process

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")]
WAIT_SECONDS = CEILING_S


def wait_until(check, what: str):
    deadline = time.monotonic() + WAIT_SECONDS
    value = None
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}; last: {value!r}")


def allocatable(serve, node: str) -> str:
    body = json.loads(serve.kubectl("get", "node", node, "-o", "json").stdout)
    return body["status"]["allocatable"].get("nvidia.com/gpu", "")


@pytest.fixture
def operator(realtime_serve):
    serve = realtime_serve
    serve.kubectl("apply", "-f", "examples/cluster.yaml")
    serve.kubectl("apply", "-f", "examples/gpu-operator/1-cluster-policy.yaml")
    serve.kubectl("apply", "-f", "examples/gpu-operator/2-time-slicing-config.yaml")
    wait_until(lambda: allocatable(serve, "gpu-node-1") == "32", "time-slicing on gpu-node-1")
    return serve


def test_get_pods_and_plugin_logs(operator):
    def plugin_rows():
        out = operator.kubectl("get", "pods", "-n", "gpu-operator").stdout.splitlines()
        rows = [line.split() for line in out[1:] if line.startswith("nvidia-device-plugin-daemonset-")]
        return rows if len(rows) == 3 and all(r[2] == "Running" for r in rows) else None

    rows = wait_until(plugin_rows, "three Running device-plugin pods")
    assert all(r[1] == "2/2" for r in rows)                   # plugin + config-manager
    listing = operator.kubectl("get", "pods", "-n", "gpu-operator").stdout
    for name in ("gpu-feature-discovery-", "nvidia-dcgm-exporter-", "nvidia-driver-daemonset-",
                 "nvidia-container-toolkit-daemonset-", "nvidia-operator-validator-",
                 "nvidia-mig-manager-"):
        assert name in listing
    tail = operator.kubectl("logs", "-n", "gpu-operator", "-l",
                            "app=nvidia-device-plugin-daemonset").stdout
    # with a selector kubectl asks for the last 10 lines of each pod (``--tail`` default)
    assert tail.count("Registered device plugin for 'nvidia.com/gpu' with Kubelet") == 3
    logs = operator.kubectl("logs", "-n", "gpu-operator", "-l",
                            "app=nvidia-device-plugin-daemonset", "--tail=-1").stdout
    assert logs.startswith("[gpusched: simulated log")
    assert logs.count("Running with config:") == 3 and '"replicas": 4' in logs
    out = operator.kubectl("get", "clusterpolicies").stdout.splitlines()
    assert out[0].split() == ["NAME", "STATUS", "AGE"] and out[1].split()[1] == "ready"


def test_changed_config_applies_after_the_plugin_pods_restart(operator):
    text = (REPO_ROOT / "examples/gpu-operator/2-time-slicing-config.yaml").read_text()
    changed = operator.home / "ts8.yaml"
    changed.write_text(text.replace("replicas: 4", "replicas: 8"))
    operator.kubectl("apply", "-f", str(changed))
    assert allocatable(operator, "gpu-node-1") == "32"
    operator.kubectl("delete", "pods", "-n", "gpu-operator", "-l",
                     "app=nvidia-device-plugin-daemonset")
    wait_until(lambda: allocatable(operator, "gpu-node-1") == "64", "the new config")


def test_rollout_restart_rereads_the_config(operator):
    text = (REPO_ROOT / "examples/gpu-operator/2-time-slicing-config.yaml").read_text()
    changed = operator.home / "ts2.yaml"
    changed.write_text(text.replace("replicas: 4", "replicas: 2"))
    operator.kubectl("apply", "-f", str(changed))
    assert allocatable(operator, "gpu-node-3") == "8"
    out = operator.kubectl("rollout", "restart", "daemonset", "nvidia-device-plugin-daemonset",
                           "-n", "gpu-operator").stdout
    assert out == "daemonset.apps/nvidia-device-plugin-daemonset restarted\n"
    # real time: the old pods' 30 s grace periods pass before the last node is replaced
    wait_until(lambda: allocatable(operator, "gpu-node-1") == "16",
               "gpu-node-1's allocatable nvidia.com/gpu back to 16")


def test_sbatch_then_cat_output(realtime_serve, tmp_path):
    serve = realtime_serve
    serve.kubectl("apply", "-f", "examples/cluster.yaml")
    done = run_process([gpusched_executable(), "--state", str(serve.state), "sbatch",
                        str(REPO_ROOT / "examples/slurm/nvidia-smi-job.sh")], cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == "Submitted batch job 1\n", done.stderr
    text = (tmp_path / "slurm-1.out").read_text()
    assert text.startswith("[gpusched: simulated output of batch job 1 (nvidia-smi)")
    assert "| NVIDIA-SMI 550.54.15" in text
    pods = json.loads(serve.kubectl("get", "pods", "-l", "gpusched.io/slurm-job-id=1",
                                    "-o", "json").stdout)["items"]
    assert pods and pods[0]["spec"]["nodeName"] == "gpu-node-1"
