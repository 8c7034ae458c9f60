"""The GPU-scheduling lab walk-through with real kubectl against ``gpusched serve``.

Run with kubectl 1.32 (preinstalled dispatcher) and Debian's kubectl 1.20 (which validates
against the protobuf ``/openapi/v2``; gpusched serves a minimal one, so plain ``apply`` works).
Each step's output is asserted.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest

from tests.conftest import CEILING_S, run_process
from tests.server.conftest import DEBIAN_KUBECTL, REPO_ROOT, wait_for

WAIT_SECONDS = CEILING_S


def _kubectl_binaries() -> list:
    params = []
    modern = shutil.which("kubectl")
    params.append(pytest.param(modern, [], id="kubectl-1.32", marks=pytest.mark.skipif(
        modern is None, reason="kubectl is not installed")))
    params.append(pytest.param(str(DEBIAN_KUBECTL), [], id="kubectl-1.20",
                               marks=pytest.mark.skipif(not DEBIAN_KUBECTL.exists(), reason=(
                                   f"Debian kubectl 1.20 not found at {DEBIAN_KUBECTL} "
                                   "(scripts/install-system-deps.sh fetches it)"))))
    return params


def _wait_for(path, predicate, what: str) -> str:
    deadline = time.monotonic() + WAIT_SECONDS
    text = ""
    while time.monotonic() < deadline:
        text = path.read_text()
        if predicate(text):
            return text
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}; output so far:\n{text}")


def _rows(output: str) -> dict[str, list[str]]:
    """kubectl table output -> first cell -> cells."""
    return {line.split()[0]: line.split() for line in output.strip().splitlines()[1:]}


@pytest.mark.slow
@pytest.mark.parametrize(("binary", "apply_flags"), _kubectl_binaries())
def test_lab_walkthrough(serve, binary, apply_flags):
    def k(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        return serve.kubectl(*args, binary=binary, check=check)

    out = k("apply", *apply_flags, "-f", "examples/cluster.yaml", "-f",
            "examples/priority-classes.yaml").stdout
    assert "nodepool.gpusched.io/a100 created" in out
    assert "priorityclass.scheduling.k8s.io/high created" in out
    nodes = _rows(k("get", "nodes").stdout)
    assert sorted(nodes) == ["cpu-node-1", "gpu-node-1", "gpu-node-2", "gpu-node-3"]
    assert nodes["gpu-node-1"][1] == "Ready"
    assert _rows(k("get", "priorityclasses").stdout)["high"][1] == "100000"

    # get pods -w sees the preemption: low-batch deleted, urgent-training running on gpu-node-1
    watch_out = serve.home / "watch.out"
    with watch_out.open("w") as sink:
        watcher = subprocess.Popen([binary, "get", "pods", "-w", "--output-watch-events"],
                                   stdout=sink, stderr=subprocess.STDOUT, env=serve.kubectl_env())
    try:
        assert "pod/low-batch created" in k(
            "apply", *apply_flags, "-f", "examples/preemption/1-low-priority-batch.yaml").stdout
        _wait_for(watch_out, lambda t: "low-batch" in t and "Running" in t, "low-batch Running")
        k("apply", *apply_flags, "-f", "examples/preemption/2-high-priority-training.yaml")
        # the victim is Terminating (MODIFIED with deletionTimestamp) for its 30 s grace period
        # (virtual here: the CLI advances the served clock); then DELETED, and the preemptor runs
        _wait_for(watch_out, lambda t: any(
            line.startswith("MODIFIED") and "low-batch" in line and "Terminating" in line
            for line in t.splitlines()), "low-batch Terminating")
        serve.cli("advance", "30s")
        text = _wait_for(watch_out, lambda t: any(
            "urgent-training" in line and "Running" in line for line in t.splitlines())
            and any(line.startswith("DELETED") and "low-batch" in line for line in t.splitlines()),
            "the preemption")
    finally:
        watcher.terminate()
        watcher.wait(timeout=CEILING_S)
    lines = text.splitlines()
    deleted = next(i for i, line in enumerate(lines) if line.startswith("DELETED") and "low-batch" in line)
    running = max(i for i, line in enumerate(lines) if "urgent-training" in line and "Running" in line)
    assert deleted < running or "urgent-training" in lines[running]
    pods = _rows(k("get", "pods", "-o", "wide").stdout)
    assert "low-batch" not in pods and pods["urgent-training"][2] == "Running"
    assert pods["urgent-training"][6] == "gpu-node-1"

    listed = json.loads(k("get", "nodes", "-o", "json").stdout)
    jq = run_process(["jq", '.items[].status.allocatable["nvidia.com/gpu"]'], input=json.dumps(listed), check=True)
    assert jq.stdout.split() == ["null", '"8"', '"4"', '"2"']

    described = k("describe", "node", "gpu-node-1").stdout
    assert "Name:               gpu-node-1" in described
    assert "nvidia.com/gpu:     8" in described
    assert "urgent-training" in described and "Allocated resources:" in described

    events = k("get", "events", "--sort-by=.lastTimestamp").stdout
    assert "Preempted" in events and "pod/low-batch" in events
    assert "Successfully assigned default/urgent-training to gpu-node-1" in events

    k("apply", *apply_flags, "-f", "examples/time-slicing/")
    assert "time-slicing-config-all" in _rows(k("get", "configmaps").stdout)
    k("apply", *apply_flags, "-f", "examples/inference-deployment/deployment.yaml")
    assert "llm-inference" in _rows(k("get", "deployments").stdout)

    assert k("label", "node", "gpu-node-2", "team=a").stdout.strip() == "node/gpu-node-2 labeled"
    assert "team=a" in k("get", "nodes", "-l", "team=a", "--show-labels").stdout
    assert k("taint", "node", "gpu-node-3", "dedicated=ml:NoSchedule").stdout.strip() == \
        "node/gpu-node-3 tainted"
    taints = json.loads(k("get", "node", "gpu-node-3", "-o", "json").stdout)["spec"]["taints"]
    assert {"key": "dedicated", "value": "ml", "effect": "NoSchedule"} in taints
    assert k("cordon", "gpu-node-2").stdout.strip() == "node/gpu-node-2 cordoned"
    assert "SchedulingDisabled" in _rows(k("get", "nodes").stdout)["gpu-node-2"][1]

    # kubectl drain waits for the evicted pods to be gone: their grace period runs on the
    # served (virtual) clock, so the drain finishes once the CLI advances it past 30 s.
    drain = subprocess.Popen([binary, "drain", "gpu-node-1", "--ignore-daemonsets", "--force"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=serve.kubectl_env(), cwd=REPO_ROOT)
    try:
        wait_for(lambda: serve.pod("urgent-training")["metadata"].get("deletionTimestamp"),
                 "urgent-training evicted (Terminating)")
        serve.cli("advance", "30s")
        drained = drain.communicate(timeout=CEILING_S)[0]
    finally:
        drain.kill()
    assert drain.returncode == 0, drained
    assert "node/gpu-node-1 cordoned" in drained and "pod/urgent-training evicted" in drained
    assert drained.strip().splitlines()[-1] in ("node/gpu-node-1 drained",
                                                "node/gpu-node-1 evicted")   # 1.20 says evicted
    on_node = k("get", "pods", "-A", "--field-selector", "spec.nodeName=gpu-node-1").stdout
    assert "urgent-training" not in on_node

    assert 'configmap "time-slicing-config-all" deleted' in k(
        "delete", "configmap", "time-slicing-config-all").stdout
    missing = k("get", "configmap", "time-slicing-config-all", check=False)
    assert missing.returncode != 0
    assert 'configmaps "time-slicing-config-all" not found' in missing.stderr
