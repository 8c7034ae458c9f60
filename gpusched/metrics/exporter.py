"""``gpusched exporter``: this host's GPUs (NVML) on ``/metrics``, like dcgm-exporter.

A stdlib ``ThreadingHTTPServer`` on loopback by default (``--host 0.0.0.0`` in the DaemonSet)
answers ``/metrics`` with the DCGM families of :class:`~gpusched.metrics.nvml_source.NvmlSource`
followed by the exporter's own ``prometheus_client`` families: ``gpusched_exporter_nvml_up``
(1 when NVML initialised, else 0) and ``gpusched_exporter_gpus``. Without a GPU the NVML error is
logged once and the exporter keeps serving its own metrics. SIGTERM and SIGINT stop it cleanly
(exit 0).

Neighbours: ``nvml_source``, ``dcgm``; started by ``cli.monitor``.
"""

from __future__ import annotations

import logging
import signal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import Any, Callable, Iterator, NoReturn

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily

from gpusched.metrics import dcgm
from gpusched.metrics.dcgm import CONTENT_TYPE
from gpusched.metrics.dcgm import GpuSource

log = logging.getLogger(__name__)


class _Stop(BaseException):
    """Raised by the SIGTERM/SIGINT handler. A BaseException, like KeyboardInterrupt: when the
    signal lands while serve_forever is inside a request, socketserver's ``except Exception``
    in _handle_request_noblock would swallow an Exception and keep serving (seen once in a
    loaded CI run: the exporter never stopped and was killed)."""


def exporter_body(source: GpuSource, available: bool) -> bytes:
    samples = source.samples()

    class Own:
        def collect(self) -> Iterator[GaugeMetricFamily]:
            yield GaugeMetricFamily("gpusched_exporter_nvml_up",
                                    "1 when NVML initialised on this host, else 0",
                                    value=1 if available else 0)
            yield GaugeMetricFamily("gpusched_exporter_gpus", "GPUs (and MIG devices) exported",
                                    value=len(samples))

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Own())
    return dcgm.render(samples).encode() + generate_latest(registry)


def make_server(host: str, port: int, body: Callable[[], bytes]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404, "only /metrics is served")
                return
            data = body()
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # quiet: logging, debug level
            log.debug("%s " + format, self.address_string(), *args)

    return ThreadingHTTPServer((host, port), Handler)


def serve(host: str, port: int, source: GpuSource, available: bool,
          ready: Callable[[int], None] | None = None) -> int:
    """Serve until SIGTERM/SIGINT; ``ready(port)`` is called once listening (port 0 = any)."""
    server = make_server(host, port, lambda: exporter_body(source, available))

    def stop(signum: int, _frame: FrameType | None) -> NoReturn:
        raise _Stop()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        if ready is not None:
            ready(server.server_address[1])
        server.serve_forever(poll_interval=0.2)
    except _Stop:
        log.info("exporter: stopping")
    finally:
        server.server_close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
