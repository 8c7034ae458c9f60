"""``kubectl exec`` and ``kubectl logs`` (kubectl 1.32) against ``gpusched serve``.

kubectl 1.32 speaks exec over WebSocket first (client-go tools/remotecommand websocket.go,
subprotocol ``v5.channel.k8s.io``; channel 1 stdout, 3 the error Status) and falls back to SPDY
only when the upgrade fails; a non-zero exit code arrives as Status reason ``NonZeroExitCode``
with an ``ExitCode`` cause and kubectl exits with it (v4.go ``errorDecoderV4``).
"""

from __future__ import annotations

import re
import shutil

import pytest

from tests.server.conftest import DEBIAN_KUBECTL

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")]
EXAMPLE = "examples/exec-nvidia-smi"


@pytest.fixture
def cluster(serve):
    serve.kubectl("apply", "-f", f"{EXAMPLE}/1-time-sliced.yaml", "-f", f"{EXAMPLE}/2-mig.yaml")
    return serve


def test_exec_nvidia_smi_on_time_sliced_and_mig_pods(cluster):
    out = cluster.exec("infer-a", "--", "nvidia-smi").stdout
    assert out.startswith("[gpusched: simulated output of `nvidia-smi`")
    assert "|   0  NVIDIA L4 " in out and "|     80%      Default |" in out
    assert len(re.findall(r"^\|    0   N/A  N/A +\d+      C   python ", out, re.M)) == 2
    mig = cluster.exec("mig-pod", "--", "nvidia-smi").stdout
    assert "| MIG devices:" in mig and "NVIDIA H100 80GB HBM3" in mig
    listing = cluster.exec("mig-pod", "--", "nvidia-smi", "-L").stdout.splitlines()
    assert re.fullmatch(r"  MIG 1g\.10gb     Device  0: \(UUID: MIG-[0-9a-f-]{36}\)", listing[2])


def test_exec_env_and_exit_codes(cluster):
    env = cluster.exec("infer-a", "-c", "server", "--", "env").stdout
    assert re.search(r"^NVIDIA_VISIBLE_DEVICES=GPU-[0-9a-f-]{36}$", env, re.M)
    done = cluster.exec("infer-a", "--", "python", "train.py", check=False)
    assert done.returncode == 126
    assert "command terminated with exit code 126" in done.stderr
    assert "gpusched runs no containers" in done.stdout


@pytest.mark.parametrize("args,message", [
    (("exec", "nope", "--", "env"), 'pods "nope" not found'),
    (("exec", "infer-a", "-c", "sidecar", "--", "env"), "container sidecar is not valid for pod infer-a"),
], ids=["missing-pod", "missing-container"])
def test_exec_errors(cluster, args, message):
    done = cluster.kubectl(*args, check=False)
    assert done.returncode == 1 and message in done.stderr


def test_logs_of_a_pod_and_by_selector(cluster):
    out = cluster.kubectl("logs", "infer-b").stdout
    assert out.startswith("[gpusched: simulated log of container server in pod default/infer-b")
    assert re.search(r"DevicesAllocated: GPU-[0-9a-f-]{36}::\d", out)


@pytest.mark.skipif(not DEBIAN_KUBECTL.exists(), reason="Debian kubectl 1.20 not fetched")
def test_spdy_only_kubectl_gets_a_clear_refusal(cluster):
    done = cluster.kubectl("exec", "infer-a", "--", "env", binary=str(DEBIAN_KUBECTL), check=False)
    assert done.returncode == 1 and "not SPDY" in done.stderr
