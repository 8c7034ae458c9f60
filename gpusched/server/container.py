"""``pods/log`` and ``pods/exec`` for kubectl: the simulated container view over HTTP.

- ``GET .../pods/NAME/log[?container=C][&tailLines=N]`` -> ``text/plain``, the answer of
  ``metrics.container.pod_log`` (``kubectl logs``, also ``-l SELECTOR`` and ``-f``: the log is
  written and the response ends).
- ``GET .../pods/NAME/exec?command=...&container=C&stdout=true&stderr=true`` with a WebSocket
  upgrade (``Sec-WebSocket-Protocol: v5.channel.k8s.io``, what kubectl 1.30+ sends first; also
  v4): the handshake of RFC 6455, then binary messages whose first byte is the channel (client-go
  tools/remotecommand websocket.go): ``1`` stdout with the simulated output, ``3`` the error
  channel with a ``metav1.Status`` (``Success``, or ``Failure`` reason ``NonZeroExitCode`` with
  an ``ExitCode`` cause: kubectl then prints ``command terminated with exit code N`` and exits N,
  v4.go ``errorDecoderV4``), then a normal close. Stdin and resize messages are read and ignored.
- SPDY (``POST`` with ``Upgrade: SPDY/3.1``, kubectl before 1.30 and its fallback) is not
  spoken: 400 with a Status saying so. ``attach`` is 400 as well (nothing runs).

Neighbours: ``metrics.container`` (the answers); routed by ``server.app``; reads go through the
cluster worker (``server.worker``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import socket
import struct
from typing import Any
from urllib.parse import parse_qs

from gpusched.errors import GpuschedError, NotFoundError
from gpusched.server.http import Request, Response, error_response, status_response

log = logging.getLogger(__name__)
WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDOUT, ERROR = 1, 3
MAX_COMMAND_WORDS = 64
CLOSE_WAIT_S = 5.0
MAX_CLIENT_FRAME = 1 << 20


def handle_container(worker: Any, req: Request, target: Any) -> Response:
    try:
        if target.subresource == "log":
            return _log(worker, req, target)
        if target.subresource == "attach":
            return status_response(400, "gpusched runs no containers: there is nothing to attach "
                                   "to (kubectl exec answers nvidia-smi, env, ls /dev/nvidia*)")
        return _exec(worker, req, target)
    except GpuschedError as err:
        return error_response(err)


def _pod_and_container(view: Any, target: Any, wanted: str) -> tuple[dict, str]:
    from gpusched.metrics.container import container_names
    pod = view.get("Pod", target.name, target.namespace or "default")
    if pod is None:
        raise NotFoundError("pods", target.name)
    names = container_names(pod)
    if wanted and wanted not in names:
        raise _BadRequest(f"container {wanted} is not valid for pod {target.name}")
    return pod, wanted or (names[0] if names else "")


class _BadRequest(GpuschedError):
    code, reason = 400, "BadRequest"


def _log(worker: Any, req: Request, target: Any) -> Response:
    from gpusched.metrics.container import pod_log

    def read(view: Any) -> str:
        pod, container = _pod_and_container(view, target, req.query.get("container", ""))
        return pod_log(view, pod, container)

    text = worker.read(read)
    tail = req.query.get("tailLines", "")
    if tail.isdigit():
        lines = text.splitlines(keepends=True)
        text = "".join(lines[-int(tail):]) if int(tail) else ""
    return Response(200, text.encode(), "text/plain")


def _exec(worker: Any, req: Request, target: Any) -> Response:
    from gpusched.metrics.container import exec_output

    query = parse_qs(req.raw_query, keep_blank_values=True)
    command = query.get("command", [])
    if not command:
        raise _BadRequest("you must specify at least one command for the container")
    if len(command) > MAX_COMMAND_WORDS:
        raise _BadRequest(f"at most {MAX_COMMAND_WORDS} command words")

    def read(view: Any) -> Any:
        pod, container = _pod_and_container(view, target, query.get("container", [""])[-1])
        return exec_output(view, pod, container, command)

    result = worker.read(read)          # a missing pod or container is reported first
    upgrade = req.headers.get("upgrade", "").lower()
    if upgrade != "websocket":
        return status_response(400, "gpusched serve speaks the exec protocol over WebSocket "
                               "(v5.channel.k8s.io, kubectl 1.30 and later), not SPDY")
    offered = [p.strip() for p in req.headers.get("sec-websocket-protocol", "").split(",")]
    protocol = next((p for p in PROTOCOLS if p in offered), None)
    key = req.headers.get("sec-websocket-key", "")
    if protocol is None or not key:
        return status_response(400, "exec needs a WebSocket handshake offering "
                               f"{' or '.join(PROTOCOLS)}")
    accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
    headers = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": accept,
               "Sec-WebSocket-Protocol": protocol}
    status = _exit_status(result.exit_code, command)

    def run(conn: socket.socket, rfile: Any, wfile: Any) -> None:
        wfile.write(frame(0x2, bytes([STDOUT]) + result.stdout.encode()))
        wfile.write(frame(0x2, bytes([ERROR]) + json.dumps(status).encode()))
        wfile.write(frame(0x8, struct.pack("!H", 1000)))
        wfile.flush()
        _await_close(conn, rfile)

    return Response(101, b"", "application/octet-stream", headers, upgrade=run)


def _exit_status(code: int, command: list[str]) -> dict:
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: error executing command "
                       f"{command}, exit code {code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


def frame(opcode: int, payload: bytes) -> bytes:
    """One unmasked, final WebSocket frame (servers never mask, RFC 6455 5.1)."""
    size = len(payload)
    if size < 126:
        header = struct.pack("!BB", 0x80 | opcode, size)
    elif size < 1 << 16:
        header = struct.pack("!BBH", 0x80 | opcode, 126, size)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 127, size)
    return header + payload


def read_frame(rfile: Any) -> tuple[int, bytes] | None:
    """(opcode, unmasked payload) of one client frame, or None at EOF / on an oversized frame."""
    head = rfile.read(2)
    if len(head) < 2:
        return None
    opcode, size = head[0] & 0x0F, head[1] & 0x7F
    if size == 126:
        size = struct.unpack("!H", rfile.read(2))[0]
    elif size == 127:
        size = struct.unpack("!Q", rfile.read(8))[0]
    if size > MAX_CLIENT_FRAME:
        return None
    mask = rfile.read(4) if head[1] & 0x80 else b""
    data = rfile.read(size)
    if mask:
        data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
    return opcode, data


def _await_close(conn: socket.socket, rfile: Any) -> None:
    """Read (and drop) client frames until its close frame, EOF or a quiet ``CLOSE_WAIT_S``."""
    try:
        conn.settimeout(CLOSE_WAIT_S)
        for _ in range(1000):
            got = read_frame(rfile)
            if got is None or got[0] == 0x8:
                return
    except (OSError, struct.error):
        return
