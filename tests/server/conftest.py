"""Fixtures for the API server tests: a real ``gpusched serve`` process on a free port.

``serve`` starts the console script on a fresh state file with ``--port 0`` (the server binds a
free port and prints its URL), waits until ``GET /version`` answers, and stops it by PID
(SIGTERM, then SIGKILL after a grace period) at teardown, asserting a clean exit 0.
``start_serve(tmp_path, *args)`` does the same for tests that need other options.

kubectl runs with a fresh ``HOME`` and its own kubeconfig, so nothing is cached between tests.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import ssl
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, gpusched_executable

READY_SECONDS = 30
STOP_SECONDS = 10
DEBIAN_KUBECTL = REPO_ROOT / ".cache/debian/kubernetes-client/usr/bin/kubectl"


@dataclass
class Served:
    """A running ``gpusched serve``: its URL, state file, process and a kubeconfig."""

    url: str
    state: Path
    process: subprocess.Popen
    home: Path
    kubeconfig: Path
    lines: list[str] = field(default_factory=list)

    @property
    def host_port(self) -> tuple[str, int]:
        host, _, port = self.url.split("://")[1].rpartition(":")
        return host, int(port)

    def request(self, method: str, path: str, body: object = None, headers: dict | None = None,
                token: str | None = None, raw: bytes | None = None) -> tuple[int, dict | str]:
        """One HTTP request; returns (status, parsed JSON body or text)."""
        host, port = self.host_port
        if self.url.startswith("https"):
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                host, port, timeout=30, context=ssl._create_unverified_context())
        else:
            conn = http.client.HTTPConnection(host, port, timeout=30)
        sent_headers = {"Content-Type": "application/json", **(headers or {})}
        if token:
            sent_headers["Authorization"] = f"Bearer {token}"
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        try:
            conn.request(method, path, body=data, headers=sent_headers)
            response = conn.getresponse()
            text = response.read().decode()
        finally:
            conn.close()
        try:
            return response.status, json.loads(text)
        except ValueError:
            return response.status, text

    def gpusched(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([gpusched_executable(), "--state", str(self.state), *args],
                              capture_output=True, text=True, timeout=60, check=False)

    def kubectl(self, *args: str, binary: str = "kubectl", check: bool = True,
                timeout: int = 60) -> subprocess.CompletedProcess:
        env = {**os.environ, "HOME": str(self.home), "KUBECONFIG": str(self.kubeconfig)}
        done = subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout,
                              env=env, cwd=REPO_ROOT, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({done.returncode}):\n"
                                 f"{done.stdout}\n{done.stderr}")
        return done

    def kubectl_env(self) -> dict[str, str]:
        return {**os.environ, "HOME": str(self.home), "KUBECONFIG": str(self.kubeconfig)}

    def cli(self, *args: str) -> str:
        """``gpusched --state STATE ARGS`` that must succeed; returns its stdout."""
        done = self.gpusched(*args)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def json(self, path: str, body: object = None) -> dict:
        """GET (or POST with a body) that must succeed; returns the parsed object."""
        status, reply = self.request("POST" if body is not None else "GET", path, body)
        assert 200 <= status < 300 and isinstance(reply, dict), (status, reply)
        return reply

    def pod(self, name: str, namespace: str = "default") -> dict:
        return self.json(f"/api/v1/namespaces/{namespace}/pods/{name}")

    def create_pod(self, name: str, gpus: int, scheduler: str = "") -> dict:
        spec: dict = {"containers": [{"name": "c", "image": "busybox",
                                      "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}
        if scheduler:
            spec["schedulerName"] = scheduler
        return self.json("/api/v1/namespaces/default/pods",
                         {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})


def wait_for(predicate, what: str, timeout: float = READY_SECONDS):
    """Poll ``predicate`` until it returns something truthy (no fixed sleeps)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _wait_ready(served: Served) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if served.process.poll() is not None:
            raise AssertionError(f"gpusched serve exited early: {served.process.stderr.read()}")
        try:
            status, _ = served.request("GET", "/version")
            if status in (200, 401):
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError("gpusched serve did not answer /version in time")


def start_serve(tmp_path: Path, *args: str, preexec_fn=None) -> Served:
    """Start ``gpusched serve --port 0 ARGS`` and wait for its URL line and for /version
    (``preexec_fn``: run in the child before exec, e.g. to set a memory limit)."""
    state = tmp_path / "cluster.db"
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    process = subprocess.Popen(
        [gpusched_executable(), "--state", str(state), "serve", "--port", "0", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, preexec_fn=preexec_fn)
    lines: list[str] = []
    url = ""
    deadline = time.monotonic() + READY_SECONDS
    while not url and time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            stop(process)
            raise AssertionError(f"gpusched serve printed no URL: {process.stderr.read()}")
        lines.append(line.strip())
        if "listening on " in line:
            url = line.split("listening on ")[1].split()[0]
    kubeconfig = tmp_path / "kubeconfig"
    subprocess.run([gpusched_executable(), "kubeconfig", "--port", url.rpartition(":")[2]],
                   stdout=kubeconfig.open("w"), check=True, timeout=30)
    served = Served(url, state, process, home, kubeconfig, lines)
    _wait_ready(served)
    return served


def stop(process: subprocess.Popen) -> int:
    """SIGTERM by PID, SIGKILL after a grace period; returns the exit code."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
    return process.returncode


@pytest.fixture
def serve(tmp_path: Path):
    served = start_serve(tmp_path, "--virtual-clock")
    yield served
    assert stop(served.process) == 0


@pytest.fixture
def realtime_serve(tmp_path: Path):
    served = start_serve(tmp_path)
    yield served
    assert stop(served.process) == 0


@pytest.fixture
def lab_serve(realtime_serve: Served) -> Served:
    """A real-time ``gpusched serve`` holding the lab cluster of ``examples/cluster.yaml``."""
    realtime_serve.cli("apply", "-f", str(REPO_ROOT / "examples" / "cluster.yaml"))
    return realtime_serve
