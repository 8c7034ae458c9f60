"""A real local Ray cluster for tests: a head and one worker node on loopback.

Both run ``ray start --block`` in their own process group with ports chosen free for this test
process (two suites side by side never share a port) and a private temp dir, so teardown stops
exactly this cluster (``ray stop`` would stop every Ray on the machine). Readiness is waited for:
the GCS port answers, then the driver sees both nodes alive.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from tests.conftest import CEILING_S

START_DEADLINE_S = CEILING_S    # a loaded 2-core machine can take a minute per Ray node


def free_ports(count: int) -> list[int]:
    sockets = []
    for _ in range(count):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sockets.append(sock)
    ports = [s.getsockname()[1] for s in sockets]
    for sock in sockets:
        sock.close()
    return ports


def _node_args(ports: list[int]) -> list[str]:
    node_manager, object_manager, agent_grpc, agent_listen, runtime_env, metrics, *workers = ports
    return ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--object-store-memory=78643200",
            "--disable-usage-stats", f"--node-manager-port={node_manager}",
            f"--object-manager-port={object_manager}", f"--dashboard-agent-grpc-port={agent_grpc}",
            f"--dashboard-agent-listen-port={agent_listen}", f"--runtime-env-agent-port={runtime_env}",
            f"--metrics-export-port={metrics}", f"--worker-port-list={','.join(map(str, workers))}"]


def _wait_port(port: int, procs: list[subprocess.Popen], deadline: float) -> None:
    while time.monotonic() < deadline:
        for proc in procs:
            if proc.poll() is not None:
                raise RuntimeError(f"ray start exited with {proc.returncode}")
        with socket.socket() as sock:
            sock.settimeout(1)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)     # polling interval while waiting for a state, not a synchronisation
    raise TimeoutError(f"Ray head did not open port {port} within {START_DEADLINE_S} s")


def _stop(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 30)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue


@contextmanager
def local_ray_cluster() -> Iterator[str]:
    """Yield ``127.0.0.1:PORT`` of a running head + worker cluster; the driver is connected."""
    import ray

    ray_bin = str(Path(sys.executable).with_name("ray"))
    gcs, *head_ports = free_ports(11)
    worker_ports = free_ports(10)
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")    # short: Ray's unix sockets live there
    log = open(Path(temp) / "start.log", "w")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    procs: list[subprocess.Popen] = []
    try:
        procs.append(subprocess.Popen(
            [ray_bin, "start", "--head", "--block", f"--port={gcs}",
             "--include-dashboard=false", f"--temp-dir={temp}", *_node_args(head_ports)],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        deadline = time.monotonic() + START_DEADLINE_S
        _wait_port(gcs, procs, deadline)
        address = f"127.0.0.1:{gcs}"
        procs.append(subprocess.Popen(
            [ray_bin, "start", "--block", f"--address={address}", *_node_args(worker_ports)],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        ray.init(address=address, log_to_driver=False, logging_level="ERROR")
        while sum(1 for n in ray.nodes() if n["Alive"]) < 2:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the Ray worker node did not join within {START_DEADLINE_S} s")
            if any(p.poll() is not None for p in procs):
                raise RuntimeError("a ray start process exited")
            time.sleep(0.2)
        yield address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        for proc in reversed(procs):
            _stop(proc)
        log.close()
        shutil.rmtree(temp, ignore_errors=True)
