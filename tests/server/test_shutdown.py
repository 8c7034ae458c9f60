"""SIGTERM ends ``gpusched serve`` gracefully: the listener closes, and a write already in flight
(its body still arriving) is completed, answered and committed before the process exits 0.

The request is known to be in flight when the server answers its ``Expect: 100-continue``
(RFC 9110 10.1.1: the server sends 100 when it starts reading the body), so no timing is assumed.
"""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import CEILING_S
from tests.server.conftest import lines_until_url, start_serve, stop

pytestmark = pytest.mark.slow
DEADLINE_S = CEILING_S
CM = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late"}}).encode()


def refuses_connections(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S).close()
    except OSError:
        return True
    return False


def test_sigterm_completes_the_write_in_flight(tmp_path):
    served = start_serve(tmp_path, "--virtual-clock")
    port = served.host_port[1]
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S) as sock:
        sock.sendall(b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: localhost\r\n"
                     b"Content-Type: application/json\r\nExpect: 100-continue\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(CM))
        assert sock.recv(1024).startswith(b"HTTP/1.1 100 ")       # the server reads the body now
        served.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + DEADLINE_S
        while not refuses_connections(port):                       # shutdown has begun
            assert time.monotonic() < deadline, "the listener stayed open after SIGTERM"
            time.sleep(0.05)
        sock.sendall(CM)
        response = http.client.HTTPResponse(sock)
        response.begin()
        body = json.loads(response.read())
    assert (response.status, body["metadata"]["name"]) == (201, "late")
    assert served.process.wait(timeout=DEADLINE_S) == 0
    listed = served.cli("get", "configmaps", "-o", "name")
    assert "configmap/late" in listed


# serve with a stop that never ends (ApiServer.stop replaced) and a stop deadline of 1 s. The
# stop signals are blocked before the imports, as gpusched's entry point blocks them (cli.serve):
# NumPy's threads would otherwise take a SIGTERM sent before the main thread reaches sigwait.
HANGING_STOP = """
import signal, sys, threading; signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
from gpusched.cli import serve
from gpusched.cli.main import main
from gpusched.server.app import ApiServer
serve.STOP_DEADLINE_S = 1.0
ApiServer.stop = lambda self: threading.Event().wait()
sys.exit(main(sys.argv[1:]))
"""


def test_a_stop_that_hangs_exits_1_with_every_threads_stack(tmp_path):
    """The graceful stop is bounded (cli.serve.STOP_DEADLINE_S): past it serve writes what was
    still running (faulthandler: every thread's stack) and exits 1, instead of waiting for a
    SIGKILL that a supervisor may never send."""
    process = subprocess.Popen([sys.executable, "-c", HANGING_STOP, "--state", str(tmp_path / "s.db"),
                                "serve", "--port", "0", "--virtual-clock"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    assert "listening on " in lines_until_url(process)[-1]
    assert stop(process) == 1
    stacks = process.stop_stderr
    assert "Timeout (0:00:01)!" in stacks and "Thread 0x" in stacks, stacks
    assert 'line 7 in <lambda>' in stacks, stacks              # the stop that hung


def _blocked(status: str) -> int:
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigBlk:")), 16)


def test_every_thread_of_serve_blocks_the_stop_signals(tmp_path):
    """serve takes SIGTERM/SIGINT with sigwait in its main thread; any thread that left them
    unblocked could be handed a SIGTERM and die of its default action (exit -15, no graceful stop).
    Threads inherit the mask when they start, so it is set before NumPy's import starts
    OpenBLAS's threads (Linux: /proc/PID/task/TID/status, SigBlk). The main thread is left out:
    inside sigwait the kernel shows the awaited signals as unblocked for it."""
    served = start_serve(tmp_path, "--virtual-clock")
    try:
        pid = served.process.pid
        tasks = [task for task in Path(f"/proc/{pid}/task").iterdir() if task.name != str(pid)]
        unblocked = [task.name for task in tasks
                     if not all(_blocked((task / "status").read_text()) >> (sig - 1) & 1
                                for sig in (signal.SIGTERM, signal.SIGINT))]
        assert tasks and unblocked == [], f"threads with SIGTERM/SIGINT unblocked: {unblocked}"
    finally:
        assert stop(served.process) == 0
