"""Fixtures for the API server tests: a real ``gpusched serve`` process on a free port.

``serve`` starts the console script on a fresh state file with ``--port 0`` (the server binds a
free port and prints its URL), waits until ``GET /version`` answers, and stops it by PID
(SIGTERM, then SIGKILL at the suite's ceiling) at teardown, asserting a clean exit 0; a stop
that fails names what serve wrote to stderr (past its own stop deadline, every thread's stack).
``start_serve(tmp_path, *args)`` does the same for tests that need other options.

kubectl runs with a fresh ``HOME`` and its own kubeconfig, so nothing is cached between tests.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import sqlite3
import ssl
import subprocess
import threading
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gpusched.server.security import kubeconfig as local_kubeconfig
from gpusched.server.security import kubeconfig_text
from tests.conftest import CEILING_S, REPO_ROOT, gpusched_executable, run_process, wait_until

# Ceilings (tests/conftest.py): serve starts in about a second and stops in under one on a quiet
# machine; a loaded one is given the suite's ceiling. Stopping waits longer than serve's own
# stop deadline (cli.serve.STOP_DEADLINE_S), so a stop that hangs is reported by serve itself.
READY_SECONDS = CEILING_S
STOP_SECONDS = CEILING_S
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
                host, port, timeout=CEILING_S, context=ssl._create_unverified_context())
        else:
            conn = http.client.HTTPConnection(host, port, timeout=CEILING_S)
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
        return run_process([gpusched_executable(), "--state", str(self.state), *args])

    def kubectl(self, *args: str, binary: str = "kubectl", check: bool = True) -> subprocess.CompletedProcess:
        env = {**os.environ, "HOME": str(self.home), "KUBECONFIG": str(self.kubeconfig)}
        done = run_process([binary, *args], env=env, cwd=REPO_ROOT)
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({done.returncode}):\n"
                                 f"{done.stdout}\n{done.stderr}")
        return done

    def exec(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """``kubectl exec ARGS`` whose output frame reached kubectl (:func:`delivered`)."""
        return delivered(lambda: self.kubectl("exec", *args, check=check))

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

    def settled(self) -> None:
        """Wait until serve's controller process has settled every write so far: the store's
        resourceVersion is the one its last settle left (``settled_rv``), so nothing the
        controllers, kubelet or scheduler would still write is pending."""
        def done() -> tuple[str, str] | None:
            with closing(sqlite3.connect(self.state, timeout=CEILING_S)) as conn:
                meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN "
                                         "('rv', 'settled_rv')").fetchall())
            return None if meta.get("rv") != meta.get("settled_rv") else (meta["rv"], meta["rv"])
        wait_until(done, "serve's controller process to settle every write")

    def pod(self, name: str, namespace: str = "default") -> dict:
        return self.json(f"/api/v1/namespaces/{namespace}/pods/{name}")

    def create_pod(self, name: str, gpus: int, scheduler: str = "") -> dict:
        spec: dict = {"containers": [{"name": "c", "image": "busybox",
                                      "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}
        if scheduler:
            spec["schedulerName"] = scheduler
        return self.json("/api/v1/namespaces/default/pods",
                         {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})


def wait_for(predicate, what: str, seen=None):
    """Poll ``predicate`` until it returns something truthy, up to the suite's ceiling; the
    failure names ``what`` and the state seen (``seen()``, else the last value)."""
    return wait_until(predicate, what, seen)


def delivered(run: Callable[[], subprocess.CompletedProcess]) -> subprocess.CompletedProcess:
    """Run a ``kubectl exec`` again while kubectl dropped its stdout: kubectl 1.32's WebSocket
    client starts reading before it has made its streams and discards a message for a stream it
    has not made yet, saying ``Unknown stream id 1, discarding message`` (client-go
    tools/remotecommand websocket.go ``readDemuxLoop``); on a loaded machine the output, sent at
    once after the handshake, can arrive first. Only that case is run again."""
    def attempt() -> subprocess.CompletedProcess | None:
        done = run()
        return None if "Unknown stream id 1, discarding message" in done.stderr else done
    return wait_until(attempt, "kubectl exec to receive its output")


def _wait_ready(served: Served) -> None:
    answers: list[object] = []

    def answered() -> bool:
        if served.process.poll() is not None:
            raise AssertionError(f"gpusched serve exited early: {served.process.stderr.read()}")
        try:
            status, _ = served.request("GET", "/version")
        except OSError as err:
            answers.append(err)
            return False
        answers.append(status)
        return status in (200, 401)

    wait_until(answered, "gpusched serve to answer GET /version", lambda: answers[-1:])


def lines_until_url(process: subprocess.Popen) -> list[str]:
    """serve's stdout up to its ``listening on URL`` line, read on a thread so that a serve that
    neither prints nor exits fails at the ceiling (a plain readline would wait for ever)."""
    lines: list[str] = []
    found = threading.Event()

    def read() -> None:
        for line in process.stdout:
            lines.append(line.strip())
            if "listening on " in line:
                break
        found.set()

    threading.Thread(target=read, daemon=True).start()
    if not found.wait(READY_SECONDS):
        stop(process)
        raise AssertionError(f"gpusched serve printed no URL in {READY_SECONDS:.0f} s: {lines}")
    if not lines or "listening on " not in lines[-1]:
        stop(process)
        raise AssertionError(f"gpusched serve printed no URL: {lines}; {process.stop_stderr}")
    return lines


def start_serve(tmp_path: Path, *args: str, preexec_fn=None) -> Served:
    """Start ``gpusched serve --port 0 ARGS`` and wait for its URL line and for /version
    (``preexec_fn``: run in the child before exec, e.g. to set a memory limit)."""
    state = tmp_path / "cluster.db"
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    process = subprocess.Popen(
        [gpusched_executable(), "--state", str(state), "serve", "--port", "0", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, preexec_fn=preexec_fn)
    lines = lines_until_url(process)
    url = lines[-1].split("listening on ")[1].split()[0]
    kubeconfig = tmp_path / "kubeconfig"    # what `gpusched kubeconfig --port PORT` prints (tests/cli)
    kubeconfig.write_text(kubeconfig_text(local_kubeconfig(f"http://127.0.0.1:{url.rpartition(':')[2]}")))
    served = Served(url, state, process, home, kubeconfig, lines)
    _wait_ready(served)
    return served


def stop(process: subprocess.Popen) -> int:
    """SIGTERM by PID and wait for the exit, reading serve's output meanwhile (a full pipe would
    block it); returns the exit code. Still running at the ceiling: SIGKILL and fail with what it
    wrote. Use :func:`stops_cleanly` where the exit must be 0."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        out, err = process.communicate(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGKILL)
        _, err = process.communicate()
        raise AssertionError(f"pid {process.pid} ({' '.join(map(str, process.args))}) was still "
                             f"running {STOP_SECONDS:.0f} s after SIGTERM and was killed; "
                             f"its stderr ends: {(err or '')[-4000:]}") from None
    process.stop_stdout, process.stop_stderr = out or "", err or ""   # what the pipes still held
    return process.returncode


def stops_cleanly(process: subprocess.Popen) -> None:
    """SIGTERM, and the process exits 0; otherwise fail with the code and its stderr."""
    code = stop(process)
    assert code == 0, f"exit code {code} after SIGTERM; stderr ends: {process.stop_stderr[-4000:]}"


@pytest.fixture
def serve(tmp_path: Path):
    served = start_serve(tmp_path, "--virtual-clock")
    yield served
    stops_cleanly(served.process)


@pytest.fixture
def realtime_serve(tmp_path: Path):
    served = start_serve(tmp_path)
    yield served
    stops_cleanly(served.process)


@pytest.fixture
def lab_serve(realtime_serve: Served) -> Served:
    """A real-time ``gpusched serve`` holding the lab cluster of ``examples/cluster.yaml``."""
    realtime_serve.cli("apply", "-f", str(REPO_ROOT / "examples" / "cluster.yaml"))
    return realtime_serve
