"""A ``gpusched serve --virtual-clock`` under the memory limit, and requests to it whose wait is
measured by the server's CPU-idle time (``harness.wait_for_answer``).

``send`` classifies nothing; ``Reply.failure`` says whether a reply is a crash (a 5xx other than
kube-apiserver's own, a traceback or "internal error" in the body, a dropped connection) or a
hang, for the surfaces to record.
"""

from __future__ import annotations

import http.client
import json
import os
import select
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import gpusched_executable
from tests.fuzz import harness

READY_S = 60.0
# kube-apiserver's own 5xx answers (its storage size limit: etcd's "request is too large").
UPSTREAM_5XX = ("etcdserver: request is too large",)


@dataclass
class Reply:
    status: int = 0
    body: Any = None
    waited: harness.Waited = field(default_factory=harness.Waited)
    error: str = ""

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def failure(self) -> tuple[str, str] | None:
        """(class, why) when this reply is a crash or a hang, else None."""
        if self.waited.hang:
            return harness.HANG, self.waited.hang
        text = self.body if isinstance(self.body, str) else json.dumps(self.body)
        if self.error:
            return harness.CRASH, f"no answer: {self.error}"
        if self.status >= 500 and not any(own in text for own in UPSTREAM_5XX):
            return harness.CRASH, f"{self.status} {text[:300]}"
        if harness.crash_text(text):
            return harness.CRASH, f"{self.status} {text[:300]}"
        return None


@dataclass
class Server:
    state: Path
    process: subprocess.Popen[bytes]
    host: str = "127.0.0.1"
    port: int = 0
    also_busy: tuple[int, ...] = ()     # other writers to the state file (harness.wait_for_answer)

    def send(self, method: str, path: str, body: bytes | None = None,
             headers: dict[str, str] | None = None) -> Reply:
        """One request on a new connection; ``headers`` with an empty value are not sent."""
        sent = {k: v for k, v in {"Content-Type": "application/json", **(headers or {})}.items() if v}
        reply, box = Reply(), {}

        def request() -> None:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=harness.WALL_CEILING_S)
            box["conn"] = conn
            try:
                conn.request(method, path, body=body, headers=sent)
                response = conn.getresponse()
                reply.status, text = response.status, response.read().decode("utf-8", "replace")
                try:
                    reply.body = json.loads(text)
                except ValueError:
                    reply.body = text
            except (OSError, http.client.HTTPException) as error:
                reply.error = f"{type(error).__name__}: {error}"
            finally:
                conn.close()

        worker = threading.Thread(target=request, daemon=True)
        worker.start()

        def answered(timeout: float) -> bool:
            worker.join(timeout)
            return not worker.is_alive()

        reply.waited = harness.wait_for_answer(self.process.pid, answered, also=self.also_busy)
        if reply.waited.hang and box.get("conn") is not None and box["conn"].sock is not None:
            _shut(box["conn"].sock)
        return reply

    def json(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Reply:
        return self.send(method, path, None if body is None else json.dumps(body).encode(), headers)

    def send_raw(self, data: bytes) -> Reply:
        """``data`` as the whole request; answered when the server writes or closes."""
        sock = socket.create_connection((self.host, self.port), timeout=harness.WALL_CEILING_S)
        try:
            sock.sendall(data)
            waited = harness.wait_for_answer(self.process.pid,
                                             lambda timeout: bool(select.select([sock], [], [], timeout)[0]))
            if waited.hang:
                return Reply(waited=waited)
            try:
                head = sock.recv(65536).decode("latin-1")
            except OSError as error:
                head = f"(connection reset: {error})"
            if not head.startswith("HTTP/"):
                # closed without a status line: a hang when the client waited for it (the
                # server's own idle timeout closed it), else a dropped connection
                why = f"closed after {waited.wall_s:.1f} s without an answer ({head[:80]!r})"
                if waited.wall_s >= harness.IDLE_HANG_S:
                    waited.hang = why
                return Reply(0, head, waited, error=why)
            return Reply(int(head.split()[1]), head, waited)
        finally:
            _shut(sock)
            sock.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                harness.kill(self.process)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def start(state: Path, workdir: Path) -> Server:
    """``gpusched --state STATE serve --port 0 --virtual-clock`` under the memory limit, ready."""
    out = workdir / "serve.out"
    process = subprocess.Popen(
        [gpusched_executable(), "--state", str(state), "serve", "--port", "0", "--virtual-clock"],
        stdout=out.open("wb"), stderr=(workdir / "serve.err").open("wb"), cwd=workdir,
        env=harness.child_env(), preexec_fn=harness.limit_memory)
    server = Server(state, process)
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline and process.poll() is None:
        text = out.read_text(errors="replace")
        if "listening on " in text:
            server.port = int(text.split("listening on ")[1].split()[0].rpartition(":")[2])
            if server.send("GET", "/version").status == 200:
                return server
        time.sleep(0.05)
    server.stop()
    raise AssertionError(f"gpusched serve did not start: {(workdir / 'serve.err').read_text()[-2000:]}")
