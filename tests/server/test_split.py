"""``gpusched serve`` runs the API in one process and the controllers, kubelet and scheduler in
another (``server.settler``), as kube-apiserver and kube-scheduler are separate processes:

- a create is answered once admitted and stored, even while the controller process is stopped
  (SIGSTOP): the pod is stored unbound, and binds once the controller process runs again;
- SIGTERM stops both processes (exit 0, no process left);
- the controller process dying is reported: serve stops and exits 1, naming it;
- serve dying (SIGKILL) leaves no orphan: the controller process sees its nudge pipe close.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.server.conftest import Served, start_serve, stop, stops_cleanly, wait_for

pytestmark = pytest.mark.slow
POOL = """apiVersion: gpusched.io/v1alpha1
kind: NodePool
metadata: {name: gpu}
spec: {count: 1, cpu: "64", memory: 256Gi, gpu: {model: A100-40GB, count: 8}}
"""


def children(pid: int) -> list[int]:
    """Processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except (OSError, ValueError):
            continue
        if entry.name.isdigit() and int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def controller_process(served: Served) -> int:
    """serve's one child, checked to be the controller process."""
    pids = children(served.process.pid)
    assert len(pids) == 1, pids
    command = Path(f"/proc/{pids[0]}/cmdline").read_bytes().split(b"\0")
    assert b"gpusched.cli.settler" in command, command
    return pids[0]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def one_gpu_pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                                     "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}


def test_a_create_is_answered_while_the_controllers_are_stopped(tmp_path):
    served = start_serve(tmp_path, "--virtual-clock")
    try:
        (tmp_path / "pool.yaml").write_text(POOL)
        served.cli("apply", "-f", str(tmp_path / "pool.yaml"))
        child = controller_process(served)
        os.kill(child, signal.SIGSTOP)
        try:
            status, created = served.request("POST", "/api/v1/namespaces/default/pods",
                                             one_gpu_pod("waits"))
            assert status == 201, created
            assert "nodeName" not in created["spec"]
            assert "nodeName" not in served.pod("waits")["spec"]
        finally:
            os.kill(child, signal.SIGCONT)
        wait_for(lambda: served.pod("waits")["spec"].get("nodeName"), "the pod to be bound",
                 lambda: served.pod("waits")["status"])
    finally:
        stops_cleanly(served.process)
    assert not alive(child)


def test_the_controller_process_dying_stops_serve_with_exit_1(tmp_path):
    served = start_serve(tmp_path, "--virtual-clock")
    os.kill(controller_process(served), signal.SIGKILL)
    wait_for(lambda: served.process.poll() is not None, "serve to exit")
    code = stop(served.process)
    assert code == 1, served.process.stop_stderr
    assert "the controller process exited with status -9" in served.process.stop_stderr


def test_serve_killed_leaves_no_controller_process(tmp_path):
    served = start_serve(tmp_path, "--virtual-clock")
    child = controller_process(served)
    os.kill(served.process.pid, signal.SIGKILL)
    served.process.wait()
    wait_for(lambda: not alive(child), "the controller process to exit")
