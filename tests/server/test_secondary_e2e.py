"""End to end: ``gpusched scheduler --kubeconfig`` against a freshly started ``gpusched serve``.

The embedded scheduler in ``serve`` handles only ``default-scheduler`` pods; the secondary
scheduler binds the ``schedulerName: gpusched`` pods (device annotations, events from source
``gpusched``, PodScheduled=False with kube-scheduler's message when nothing fits) and leaves the
others alone. Processes run on free ports in a temp dir and are stopped by PID.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GPUSCHED = [sys.executable, "-m", "gpusched"]
DEADLINE_S = 30

pytestmark = pytest.mark.slow


def wait_for(predicate, what: str, timeout: float = DEADLINE_S):
    """Poll ``predicate`` until it returns something truthy (no fixed sleeps)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def stop(proc: subprocess.Popen) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()


class Served:
    """A running ``gpusched serve`` on a state file in ``tmp``, with its URL and kubeconfig."""

    def __init__(self, tmp: Path) -> None:
        self.state = tmp / "state.db"
        self.proc = subprocess.Popen([*GPUSCHED, "--state", str(self.state), "serve", "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     cwd=REPO)
        line = self.proc.stdout.readline()        # "... listening on http://127.0.0.1:PORT"
        if "listening on " not in line:
            stop(self.proc)
            raise AssertionError(f"gpusched serve did not start: {line}{self.proc.stdout.read()}")
        self.url = line.rsplit(" ", 1)[1].strip()
        self.kubeconfig = tmp / "kubeconfig"
        port = self.url.rsplit(":", 1)[1]
        self.kubeconfig.write_text(self.cli("kubeconfig", "--port", port))

    def cli(self, *args: str) -> str:
        out = subprocess.run([*GPUSCHED, "--state", str(self.state), *args], capture_output=True,
                             text=True, timeout=60, cwd=REPO)
        assert out.returncode == 0, out.stderr
        return out.stdout

    def request(self, path: str, body: dict | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as response:
            return json.loads(response.read())

    def pod(self, name: str) -> dict:
        return self.request(f"/api/v1/namespaces/default/pods/{name}")

    def create_pod(self, name: str, gpus: int, scheduler: str = "") -> None:
        spec = {"containers": [{"name": "c", "image": "busybox",
                                "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}
        if scheduler:
            spec["schedulerName"] = scheduler
        self.request("/api/v1/namespaces/default/pods",
                     {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})


@pytest.fixture
def served(tmp_path):
    server = Served(tmp_path)
    try:
        server.cli("apply", "-f", str(REPO / "examples" / "cluster.yaml"))
        yield server
    finally:
        stop(server.proc)


def condition(pod: dict, type_: str) -> dict:
    return next((c for c in pod.get("status", {}).get("conditions", []) if c["type"] == type_), {})


def test_secondary_scheduler_binds_its_pods_and_leaves_the_others(served):
    scheduler = subprocess.Popen([*GPUSCHED, "-v", "scheduler", "--kubeconfig",
                                  str(served.kubeconfig), "--scheduler-name", "gpusched"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 cwd=REPO, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        served.create_pod("mine", gpus=2, scheduler="gpusched")
        served.create_pod("too-big", gpus=16, scheduler="gpusched")
        served.create_pod("theirs", gpus=1)
        mine = wait_for(lambda: (p := served.pod("mine"))["spec"].get("nodeName") and p, "mine bound")
        annotations = mine["metadata"]["annotations"]
        assert len(annotations["gpusched.io/assigned-gpus"].split(",")) == 2
        assert len(annotations["gpusched.io/assigned-devices"].split(",")) == 2
        assert condition(mine, "PodScheduled")["status"] == "True"
        too_big = wait_for(lambda: condition(p := served.pod("too-big"), "PodScheduled") and p,
                           "too-big marked unschedulable")
        message = ("0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes "
                   "are available: 4 No preemption victims found for incoming pod.")
        assert condition(too_big, "PodScheduled") == {
            **condition(too_big, "PodScheduled"), "status": "False", "reason": "Unschedulable",
            "message": message}
        events = served.request("/api/v1/namespaces/default/events")["items"]
        ours = {(e["involvedObject"]["name"], e["reason"]): e for e in events
                if e.get("source", {}).get("component") == "gpusched"}
        assert ours[("mine", "Scheduled")]["message"] == (
            f"Successfully assigned default/mine to {mine['spec']['nodeName']}")
        assert ours[("too-big", "FailedScheduling")]["message"] == message
        assert ours[("too-big", "FailedScheduling")]["type"] == "Warning"
        assert not any(name == "theirs" for name, _ in ours)
        theirs = served.pod("theirs")
        assert "gpusched.io/assigned-gpus" in theirs["metadata"]["annotations"]   # the embedded one
        by_default = [e for e in events if e["involvedObject"]["name"] == "theirs"
                      and e["reason"] == "Scheduled"]
        assert by_default[0]["source"]["component"] == "default-scheduler"
    finally:
        code = stop(scheduler)
        output = scheduler.stdout.read()
    assert code == 0, output                      # SIGTERM: clean exit
    assert "bound default/mine to" in output
