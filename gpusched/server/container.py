"""``pods/log`` and ``pods/exec`` for kubectl: the simulated container view over HTTP.

- ``GET .../pods/NAME/log[?container=C][&tailLines=N]`` -> ``text/plain``, the answer of
  ``metrics.container_logs.pod_log`` (``kubectl logs``, also ``-l SELECTOR`` and ``-f``: the log is
  written and the response ends).
- ``GET .../pods/NAME/exec?command=...&container=C&stdout=true&stderr=true`` with a WebSocket
  upgrade (``Sec-WebSocket-Protocol: v5.channel.k8s.io``, what kubectl 1.30+ sends first; also
  v4): :func:`exec_session` gives the subprotocol and the messages, ``server.app`` speaks the
  WebSocket (starlette, uvicorn's wsproto): binary messages whose first byte is the channel (client-go
  tools/remotecommand websocket.go): ``1`` stdout with the simulated output, ``3`` the error
  channel with a ``metav1.Status`` (``Success``, or ``Failure`` reason ``NonZeroExitCode`` with
  an ``ExitCode`` cause: kubectl then prints ``command terminated with exit code N`` and exits N,
  v4.go ``errorDecoderV4``), then a normal close. Stdin and resize messages are ignored. A
  missing pod or container refuses the upgrade with its Status (404, 400).
- SPDY (``POST`` with ``Upgrade: SPDY/3.1``, kubectl before 1.30 and its fallback) is not
  spoken: 400 with a Status saying so. ``attach`` is 400 as well (nothing runs).

Neighbours: ``metrics.container`` (the answers); routed by ``server.app``; reads go through the
cluster worker (``server.worker``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from gpusched.errors import GpuschedError, NotFoundError
from gpusched.objects import limits
from gpusched.server.http import Request, Response, error_response, status_response

log = logging.getLogger(__name__)
PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDOUT, ERROR = 1, 3
MAX_COMMAND_WORDS = 64


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


def _pod_and_container(view: Any, target: Any, wanted: str) -> tuple[dict[str, Any], str]:
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
    from gpusched.metrics.container_logs import pod_log

    def read(view: Any) -> str:
        pod, container = _pod_and_container(view, target, req.query.get("container", ""))
        return pod_log(view, pod, container)

    text = worker.read(read)
    tail = limits.small_int(req.query.get("tailLines", ""))
    if tail is not None:
        lines = text.splitlines(keepends=True)
        text = "".join(lines[-tail:]) if tail else ""
    return Response(200, text.encode(), "text/plain")


@dataclass(frozen=True)
class ExecSession:
    """What an accepted exec WebSocket carries: the chosen subprotocol and the binary messages
    (channel byte first) to send before a normal close."""

    protocol: str
    messages: tuple[bytes, ...]


def _exec_result(worker: Any, req: Request, target: Any) -> tuple[list[str], Any]:
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

    return command, worker.read(read)       # a missing pod or container is reported first


def _exec(worker: Any, req: Request, target: Any) -> Response:
    """exec as a plain HTTP request (SPDY, kubectl before 1.30): refused after the pod checks."""
    _exec_result(worker, req, target)
    return status_response(400, "gpusched serve speaks the exec protocol over WebSocket "
                           "(v5.channel.k8s.io, kubectl 1.30 and later), not SPDY")


def exec_session(worker: Any, req: Request, target: Any) -> ExecSession | Response:
    """exec over WebSocket: the session to run, or the Status refusing the upgrade."""
    try:
        command, result = _exec_result(worker, req, target)
    except GpuschedError as err:
        return error_response(err)
    offered = [p.strip() for p in req.headers.get("sec-websocket-protocol", "").split(",")]
    protocol = next((p for p in PROTOCOLS if p in offered), None)
    if protocol is None:
        return status_response(400, "exec needs a WebSocket handshake offering "
                               f"{' or '.join(PROTOCOLS)}")
    status = _exit_status(result.exit_code, command)
    return ExecSession(protocol, (bytes([STDOUT]) + result.stdout.encode(),
                                  bytes([ERROR]) + json.dumps(status).encode()))


def _exit_status(code: int, command: list[str]) -> dict[str, Any]:
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: error executing command "
                       f"{command}, exit code {code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}
