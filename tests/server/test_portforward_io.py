"""The port-forward :class:`~gpusched.server.portforward_io.Driver` on an event loop, without a
server: metrics read through the cluster worker's ``read`` (the interface exec uses), the
worker's failures answered as HTTP 500s, malformed frames and idle connections closed (the
kubelet closes a connection idle for ``--streaming-connection-idle-timeout``,
apimachinery httpstream/spdy ``SetIdleTimeout``)."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor

import pytest

from gpusched.errors import GpuschedError
from gpusched.server import spdy
from gpusched.server.portforward_io import Driver
from tests.conftest import CEILING_S
from tests.server.test_spdy import Client, headers, target


class Worker:
    """``read(fn)`` as ``server.worker.ClusterWorker`` offers it: here a fixed answer or error."""

    def __init__(self, answer: bytes | Exception) -> None:
        self.answer = answer

    def read(self, fn):
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


async def session(worker: Worker, wire: bytes, until: bytes, idle_timeout: float = 3600.0) -> tuple[bytes, bool]:
    """Feed ``wire`` to a Driver; wait until its output holds ``until`` (or it closes)."""
    out, closed = bytearray(), asyncio.Event()
    with ThreadPoolExecutor(1) as pool:
        driver = Driver(target(), worker, pool, out.extend, closed.set, idle_timeout)
        driver.received(wire)
        async with asyncio.timeout(CEILING_S):
            while until not in out and not closed.is_set():
                await asyncio.sleep(0.01)
        ended = closed.is_set()
        driver.close()
    return bytes(out), ended


def get_metrics(client: Client) -> bytes:
    return (client.syn_stream(1, headers()) + client.syn_stream(3, headers(kind="data"))
            + spdy.data_frame(3, b"GET /metrics HTTP/1.1\r\nHost: localhost:9400\r\n\r\n"))


@pytest.mark.parametrize("answer,expected", [
    (b"DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 7\n", b"HTTP/1.1 200 OK"),
    (GpuschedError("the server is shutting down"), b"HTTP/1.1 500 Internal Server Error"),
    (KeyError("a bug"), b"internal error: KeyError"),
], ids=["metrics", "worker-stopping", "bug-answered-500"])
def test_metrics_through_the_worker(answer, expected, caplog):
    out, closed = asyncio.run(session(Worker(answer), get_metrics(Client()), expected))
    assert expected in out and not closed


def test_malformed_frame_closes_with_one_line(caplog):
    caplog.set_level(logging.INFO, "gpusched.server.portforward_io")
    out, closed = asyncio.run(session(Worker(b""), spdy.client_frame(5, b""), b"never"))
    assert closed and out == b""
    assert [r.getMessage() for r in caplog.records] == [
        "port-forward to pod gpu-monitoring/dcgm-x: closing the connection: unknown control frame type 5"]


def test_idle_connection_is_closed():
    out, closed = asyncio.run(session(Worker(b""), b"", b"never", idle_timeout=0.01))
    assert closed
