"""``gpusched serve`` and ``gpusched kubeconfig``: the Kubernetes-compatible API server.

``serve`` runs ``server.app.ApiServer`` (uvicorn + starlette) on the state file until SIGTERM
or Ctrl-C (exit 0, after requests in flight are answered; a stop that takes over
``STOP_DEADLINE_S`` prints its threads' stacks and exits 1), printing one line with its URL once
ready (``GET /version`` answers from then on). On loopback it serves plain HTTP without
credentials; on any other address it makes a self-signed certificate (0600, like its key) and
two tokens, and writes two kubeconfigs (0600) whose paths it prints: ``kubeconfig`` (admin) and
``kubeconfig-readonly`` (get, list and watch only). Tokens and keys are never printed or logged.
With a wildcard bind (``0.0.0.0``, ``::``) the certificate names every local address and the
kubeconfigs name ``--advertise-address`` (default: the first non-loopback IPv4 address).
``--require-token`` asks for tokens on loopback too; ``--client-ca-file`` also accepts client
certificates signed by that CA; ``--cors-allowed-origins`` (regular expressions, as
kube-apiserver's flag) is the only way a browser page of another origin gets CORS headers. The
embedded controllers and scheduler follow the real clock unless ``--virtual-clock`` (then only
``gpusched advance`` moves it).

Tables use the CLI's columns (``cli.columns``), handed to the server as its column source. A web
page module, when present (``gpusched.server.web`` with ``mount(app)``), is mounted.

Neighbours: ``cli.main`` registers :func:`add_commands`; ``server`` does the work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import argparse
import faulthandler
import importlib.util
import signal
import ssl
import sys
from pathlib import Path

if TYPE_CHECKING:
    from gpusched.server.app import ApiServer
    from gpusched.server.security import Credentials

DEFAULT_PORT = 8080
STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}
# The graceful stop is bounded: uvicorn's graceful shutdown (30 s for requests in flight) plus
# the cluster thread's last commit. Past this, serve writes every thread's stack to stderr (what
# was still running) and exits 1; SQLite's journal keeps the state file whole.
STOP_DEADLINE_S = 90.0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser("serve", help="serve a Kubernetes-compatible API (kubectl, clients)",
                           description="Serve the cluster over a Kubernetes-compatible REST API.")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to bind (default 127.0.0.1; others need TLS and a token)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT,
                       help=f"port (default {DEFAULT_PORT}; 0 picks a free one)")
    serve.add_argument("--virtual-clock", action="store_true",
                       help="do not follow real time: the clock moves only with `gpusched advance`")
    serve.add_argument("--require-token", action="store_true",
                       help="require a bearer token on loopback too (written to a kubeconfig)")
    serve.add_argument("--kubeconfig-out", default=None, metavar="PATH",
                       help="where to write the kubeconfig when credentials are needed "
                            "(default: next to the state file)")
    serve.add_argument("--watch-cache-size", type=int, default=10_000, metavar="N",
                       help="changes kept for watch resumption (default 10000)")
    serve.add_argument("--event-ttl", default="1h", metavar="DURATION",
                       help="how long an event is kept after its last write, on the cluster "
                            "clock (kube-apiserver --event-ttl; default 1h)")
    serve.add_argument("--advertise-address", default=None, metavar="IP",
                       help="the address clients use, put in the certificate and kubeconfigs "
                            "(default: the bind address; with 0.0.0.0 or :: the first "
                            "non-loopback IPv4 address)")
    serve.add_argument("--cors-allowed-origins", default="", metavar="REGEX,...",
                       help="origins (regular expressions) that get CORS headers; none by default")
    serve.add_argument("--client-ca-file", default=None, metavar="PATH",
                       help="accept client certificates signed by this CA (CN: user; O "
                            "system:masters: admin, otherwise read-only)")
    serve.set_defaults(handler=run_serve)
    config = sub.add_parser("kubeconfig", help="print a kubeconfig for `gpusched serve`",
                            description="Print a kubeconfig for a local `gpusched serve`.")
    config.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    config.set_defaults(handler=run_kubeconfig)


def table_columns(kind: str, objects: list[dict[str, Any]], now: str) -> tuple[list[str], list[int], list[list[str]]]:
    """The server's column source: kubectl's columns as ``gpusched get`` prints them."""
    from gpusched.cli.columns import table_rows
    from gpusched.cli.output import Clock

    clock = Clock(now)
    narrow, _ = table_rows(kind, [], clock, wide=False, with_namespace=False)
    header, rows = table_rows(kind, objects, clock, wide=True, with_namespace=False)
    return header, [0 if name in narrow else 1 for name in header], rows


def run_kubeconfig(args: argparse.Namespace) -> int:
    from gpusched.server.security import kubeconfig, kubeconfig_text

    sys.stdout.write(kubeconfig_text(kubeconfig(f"http://127.0.0.1:{args.port}")))
    return 0


def _mount_web(app: ApiServer) -> None:
    if importlib.util.find_spec("gpusched.server.web") is None:
        return
    from gpusched.server import web

    mount = getattr(web, "mount", None)
    if mount is not None:
        mount(app)


def _wall_clock(args: argparse.Namespace) -> Callable[[], float]:
    """Seconds on the cluster clock now: ``--start``/``$GPUSCHED_START`` pins it (tests), else
    the wall clock (read here, in the CLI, never below)."""
    import os
    import time
    if getattr(args, "start", None) or os.environ.get("GPUSCHED_START"):
        pinned = float(args.start_seconds)
        return lambda: pinned
    from gpusched.cluster.apiserver.store import EPOCH
    return lambda: time.time() - EPOCH.timestamp()


def _cors_origins(text: str) -> tuple[str, ...]:
    import re

    from gpusched.errors import UsageError
    origins = tuple(o.strip() for o in text.split(",") if o.strip())
    for origin in origins:
        try:
            re.compile(origin)
        except re.error as err:
            raise UsageError(f'--cors-allowed-origins: "{origin}" is not a regular expression: {err}') from None
    return origins


def _client_ca(path: str | None) -> Path | None:
    from gpusched.errors import UsageError
    if path is None:
        return None
    if not Path(path).is_file():
        raise UsageError(f"--client-ca-file {path}: no such file")
    return Path(path)


def _write_kubeconfigs(args: argparse.Namespace, app: ApiServer, credentials: Credentials,
                      secrets_dir: Path) -> None:
    """The admin and read-only kubeconfigs (0600), naming the advertised address."""
    from gpusched.server.security import advertised_address, kubeconfig, write_kubeconfig

    host = advertised_address(args.host, args.advertise_address)
    url = f"{app.scheme}://[{host}]:{app.port}" if ":" in host else f"{app.scheme}://{host}:{app.port}"
    path = Path(args.kubeconfig_out) if args.kubeconfig_out else secrets_dir / "kubeconfig"
    readonly = path.with_name(path.name + "-readonly")
    write_kubeconfig(path, kubeconfig(url, credentials.token, credentials.cert_file))
    write_kubeconfig(readonly, kubeconfig(url, credentials.readonly_token, credentials.cert_file))
    print(f"kubeconfig (token and certificate): {path}", flush=True)
    print(f"kubeconfig (read-only token): {readonly}", flush=True)


def _event_ttl(text: str) -> float:
    """``--event-ttl`` in seconds: a positive duration (``1h``, ``30m``, ``90s``)."""
    from gpusched.errors import UsageError
    from gpusched.objects.duration import parse_duration
    try:
        seconds = parse_duration(text)
    except UsageError:
        seconds = 0.0
    if seconds <= 0:
        raise UsageError(f'--event-ttl: invalid duration "{text}": a positive duration such as 1h or 30m')
    return seconds


def run_serve(args: argparse.Namespace) -> int:
    # SIGTERM/SIGINT stay blocked in every thread and are taken by sigwait below: a signal
    # handler would only run once the kernel happened to deliver the signal to the main thread,
    # which with the server's many threads may be never. Blocked before anything is imported:
    # threads inherit the mask when they start, and NumPy's import starts OpenBLAS's threads,
    # which would otherwise take a SIGTERM with its default action (the process dies, -15).
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    from gpusched.cluster.apiserver.store import default_state_path
    from gpusched.errors import UsageError
    import os
    from gpusched.server.app import ApiServer
    from gpusched.server.security import authenticator, is_loopback, prepare
    from gpusched.server.settler import ControllerProcess

    state = default_state_path(args.state)
    state.parent.mkdir(parents=True, exist_ok=True)
    if args.watch_cache_size < 1:
        raise UsageError("--watch-cache-size must be at least 1")
    event_ttl = _event_ttl(args.event_ttl)
    origins = _cors_origins(args.cors_allowed_origins)
    client_ca = _client_ca(args.client_ca_file)
    secrets_dir = state.parent / f"{state.stem}-serve"
    credentials = prepare(secrets_dir, args.host, args.require_token, args.advertise_address, client_ca)
    controllers = ControllerProcess(_controller_argv(args, state, event_ttl),
                                    on_exit=lambda code: os.kill(os.getpid(), signal.SIGTERM))
    try:
        app = ApiServer(str(state), args.host, args.port, tls=credentials.ssl_context(),
                        virtual_clock=args.virtual_clock, columns=table_columns,
                        watch_capacity=args.watch_cache_size, wall_clock=_wall_clock(args),
                        authenticator=authenticator(credentials), cors_origins=origins,
                        event_ttl=event_ttl, controllers=controllers)
    except OSError as err:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {err.strerror or err}") from None
    except ssl.SSLError as err:
        raise UsageError(f"--client-ca-file {args.client_ca_file}: not a PEM CA certificate ({err})") from None
    _mount_web(app)
    app.start()
    try:
        if credentials.token is not None:
            _write_kubeconfigs(args, app, credentials, secrets_dir)
        where = "" if is_loopback(args.host) else " (TLS, bearer token required)"
        print(f"gpusched serve: listening on {app.url}{where}", flush=True)
        signal.sigwait(STOP_SIGNALS)
    finally:
        faulthandler.dump_traceback_later(STOP_DEADLINE_S, exit=True)
        app.stop()
    if controllers.failed is not None:
        print(f"error: the controller process exited with status {controllers.failed}",
              file=sys.stderr)
        return 1
    return 0


def _controller_argv(args: argparse.Namespace, state: Path, event_ttl: float) -> list[str]:
    """The controller process's command line (``cli.settler``): same state, clock and TTL."""
    import os
    argv = [sys.executable, "-m", "gpusched.cli.settler", "--state", str(state),
            "--event-ttl", repr(event_ttl)] + ["-v"] * int(getattr(args, "verbose", 0) or 0)
    if args.virtual_clock:
        argv.append("--virtual-clock")
    if getattr(args, "start", None) or os.environ.get("GPUSCHED_START"):
        argv += ["--pinned-start", repr(float(args.start_seconds))]
    return argv
