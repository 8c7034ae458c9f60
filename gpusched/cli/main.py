"""The ``gpusched`` command line: run one command, and error handling.

``main(argv)`` parses the command line (``cli.parser``: the command's grammar, built for the
command named), runs its handler and turns every expected failure into one line on stderr:

- ``GpuschedError`` (bad manifest, unknown kind, not found, forbidden, ...) -> ``error: <message>``, exit 1;
- usage mistakes -> the command's own usage, ``error: <what>`` and where help is, exit 1 (as kubectl);
- Ctrl-C and a closed pipe (``gpusched get pods | head``) -> a quiet exit.

Global options may stand anywhere on the line, as kubectl's do (``cli.parser.normalize_argv``):
``--state PATH`` (else ``$GPUSCHED_STATE``, else the per-user default chosen by ``Cluster.open``)
and ``-n NAMESPACE``; ``-v`` (repeat for debug logging) comes before the command. A command
imports what it uses when it runs: ``get`` and ``describe`` of stored objects load the store and
the view, not NumPy, the scheduler or the controllers (tests/cli/test_startup_imports.py).

Neighbours: ``cli.parser``; ``gpusched.cluster.cluster.Cluster`` below.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import logging
import os
import sys
from typing import Sequence

from gpusched.cli.parser import build_parser, normalize_argv
from gpusched.errors import GpuschedError


def _start_seconds(args: argparse.Namespace) -> float:
    """``--start``, else ``$GPUSCHED_START``, else the wall-clock time (the CLI is the one
    place that reads it): where a new state file's clock starts."""
    import time
    from gpusched.cluster.apiserver.store import EPOCH, parse_start
    from gpusched.errors import UsageError
    text = getattr(args, "start", None) or os.environ.get("GPUSCHED_START")
    if not text:
        return time.time() - EPOCH.timestamp()
    try:
        return parse_start(text)
    except ValueError as err:
        raise UsageError(str(err)) from None


def _configure_logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse; words no option claims are reported by the command's own parser (its usage)."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        owner = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction) and args.command in action.choices:
                owner = action.choices[args.command]
        owner.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _one_blas_thread() -> None:
    """NumPy's OpenBLAS starts a thread per core when NumPy is imported (about 20 ms of CPU for
    a one-pod ``apply``); gpusched's BLAS calls are matrix-vector products over a node's few GPUs
    (``scheduler.rowops.row_counts``, exact whatever the threads), so one thread does, unless the
    environment asks for more. Set before anything imports NumPy."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _fewer_full_collections() -> None:
    """A full collection of cyclic garbage after 100 younger ones, not 10 (CPython's default;
    the young generations keep theirs): a command builds many objects that live to its end
    (the view's bodies, each pod's manifest and PodInfo, events) and each full collection walks
    them all. A bulk ``apply`` of 5,000 pods onto 1,000 nodes ran seven, 0.6-0.7 s of its
    9-10 s of CPU (timed by ``gc.callbacks``); now none. Reference counting frees what is
    acyclic at once and the young collections still find new cycles; no decision depends on
    when the collector runs."""
    gen0, gen1, _gen2 = gc.get_threshold()
    gc.set_threshold(gen0, gen1, 100)


def _no_collection_at_exit() -> None:
    """The interpreter's last act is a full garbage collection over every object still alive
    (the modules a command imported, its cluster): 15-20 ms of CPU at the end of a one-pod
    ``apply``, a tenth of its whole, to free memory the exiting process hands back anyway.
    Frozen objects are left out of every collection (``gc.freeze``), so freezing them at exit
    skips it. Registered at import, before the command's own exit handlers (``atexit`` runs
    the last registered first): the command's files and connections are closed by their
    owners or by ``logging.shutdown``, not by the collector, as before."""
    atexit.register(gc.freeze)


_no_collection_at_exit()


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the process exit code (0 success, 1 error or usage error)."""
    _one_blas_thread()
    _fewer_full_collections()
    argv = normalize_argv(sys.argv[1:] if argv is None else list(argv))
    parser = build_parser(argv)
    try:
        args = _parse(parser, argv)
    except SystemExit as exit_:  # argparse already printed usage and its one-line message
        return int(exit_.code or 0)
    if args.state is None and os.environ.get("GPUSCHED_STATE"):
        args.state = os.environ["GPUSCHED_STATE"]
    _configure_logging(args.verbose)
    try:
        args.start_seconds = _start_seconds(args)
        handler = getattr(args, "handler", None) or args.func   # sim commands set ``func``
        return int(handler(args) or 0)
    except GpuschedError as error:
        print(f"error: {error.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # Reader went away (| head): silence the flush at interpreter exit too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as error:  # unreadable state file, permission denied, disk full
        print(f"error: {error.strerror or error}: {error.filename or ''}".rstrip(": "), file=sys.stderr)
        return 1
    except Exception as error:  # a bug: one line unless -v asks for the traceback
        logging.getLogger("gpusched.cli").debug("unexpected failure", exc_info=True)
        print(f"error: internal error: {type(error).__name__}: {error} (rerun with -vv for the traceback)",
              file=sys.stderr)
        return 1


def run_demo(args: argparse.Namespace) -> int:
    """``gpusched demo``: the tour runs each of its commands through :func:`main`."""
    from gpusched.cli.demo import run_demo as tour

    return tour(main)
