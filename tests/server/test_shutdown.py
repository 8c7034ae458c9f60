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
import time

import pytest

from tests.conftest import CEILING_S
from tests.server.conftest import start_serve

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
