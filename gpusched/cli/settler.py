"""The entry point of ``serve``'s controller process: ``python -m gpusched.cli.settler``.

``cli.serve`` starts it (``server.settler.ControllerProcess``) with the state file, the clock
mode and the event TTL; standard input is the API process's nudge pipe, standard output gets
one ``ready`` line once the state file is settled, standard error is ``serve``'s. The wall
clock is read here (the CLI layer), as ``cli.serve`` reads it: ``--pinned-start`` pins it (tests).

Neighbours: ``server.settler`` (the loop), ``cli.serve`` (the parent).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import time
from typing import Callable, Sequence

STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


def _wall_clock(pinned: float | None) -> Callable[[], float]:
    from gpusched.cluster.apiserver.store import EPOCH
    if pinned is not None:
        return lambda: pinned
    return lambda: time.time() - EPOCH.timestamp()


def main(argv: Sequence[str] | None = None) -> int:
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)   # before NumPy starts its threads
    parser = argparse.ArgumentParser(prog="gpusched-controllers")
    parser.add_argument("--state", required=True)
    parser.add_argument("--virtual-clock", action="store_true")
    parser.add_argument("--pinned-start", type=float, default=None)
    parser.add_argument("--event-ttl", type=float, required=True)
    parser.add_argument("-v", "--verbose", action="count", default=0)
    args = parser.parse_args(argv)
    level = logging.WARNING if args.verbose <= 0 else logging.INFO if args.verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(levelname)s %(name)s (controllers): %(message)s")
    from gpusched.errors import GpuschedError
    from gpusched.server.settler import run_controllers
    try:
        return run_controllers(args.state, args.virtual_clock, _wall_clock(args.pinned_start),
                               args.event_ttl, sys.stdin.fileno(), sys.stdout)
    except GpuschedError as error:
        print(f"error: controller process: {error.message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
