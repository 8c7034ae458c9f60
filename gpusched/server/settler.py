"""``serve``'s controller process: the controllers, the kubelet and the scheduler beside the API.

kube-apiserver stores a write and answers; kube-scheduler, kube-controller-manager and the
kubelets are other processes that follow the store's changes and write their results back
through the API. ``serve`` is arranged the same way, with the same components the embedded CLI
runs in one process:

- the **API process** (``server.app``): HTTP, decoding, admission (the plugins that read cluster
  state read the store), validation, the store and the change feed. Its cluster thread
  (``server.worker``, ``settles=False``) group-commits writes and never settles: a create is
  answered once it is admitted and committed. After each commit it nudges the controller process
  (one byte on a pipe).
- the **controller process** (:func:`run_controllers`, started by :class:`ControllerProcess`):
  a cluster thread of its own (``server.worker`` with the defaults) that owns the clock (real
  time, or ``--virtual-clock``). At each nudge, and whenever the store's resourceVersion moved
  past what it settled (a CLI writer on the same file, polled every 0.1 s), it runs one
  settled write: the kept view
  is brought up to what was committed (``apiserver.refresh``: the change log since its
  resourceVersion), the controllers, kubelet and scheduler reconcile exactly those changes
  (``clock.settle.settle_changed``), and the bindings, statuses and objects they make are
  committed through the same write path. Nudges that arrive during a settle are answered by one
  settle after it: under a burst, each settle takes every pod created during the one before.

The two share only the state file (SQLite, WAL; writers serialise on ``BEGIN IMMEDIATE``) and
the nudge pipe. The child reads the pipe as its standard input: the API process exiting, however
it exits, closes it, and the child stops (no orphan). SIGTERM stops the child gracefully (its
last write commits); the API process stops it after its own requests are answered. A child that
exits on its own is reported (``on_exit``), and ``cli.serve`` then stops and exits 1.

Neighbours: ``server.worker`` (both processes' cluster threads), ``server.app`` (which starts
this), ``cli.settler`` (the child's entry point), ``cluster.apiserver.refresh``.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import subprocess
import threading
from typing import IO, Any, Callable

from gpusched.cluster.apiserver.store import DEFAULT_EVENT_TTL, Store
from gpusched.errors import GpuschedError
from gpusched.server.worker import ClusterWorker

log = logging.getLogger(__name__)

READY_LINE = "ready"
POLL_SECONDS = 0.1          # how often the child looks for writes of other processes (the CLI)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class ControllerProcess:
    """The child process, seen from the API process: start, nudge, stop, and its exit."""

    def __init__(self, argv: list[str], on_exit: Callable[[int], None] | None = None,
                 ready_timeout: float = 600.0) -> None:
        self.argv = argv
        self.on_exit = on_exit or (lambda code: None)
        self.ready_timeout = ready_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.failed: int | None = None       # the exit status of a child that ended on its own
        self._stopping = False
        self._nudges: int | None = None

    def start(self) -> "ControllerProcess":
        """Start the child and wait until it has settled the state file once (the furniture:
        namespaces, the default PriorityClasses ... exist before the API admits anything)."""
        self.process = process = subprocess.Popen(self.argv, stdin=subprocess.PIPE,
                                                  stdout=subprocess.PIPE)
        assert process.stdin is not None and process.stdout is not None
        line = _read_line(process.stdout, self.ready_timeout)
        if line.strip() != READY_LINE:
            code = process.poll()
            if code is None:
                process.kill()
                code = process.wait()
            raise GpuschedError(f"the controller process did not start (exit status {code})")
        self._nudges = process.stdin.fileno()
        os.set_blocking(self._nudges, False)
        threading.Thread(target=self._watch, name="gpusched-controllers-watch", daemon=True).start()
        return self

    def nudge(self) -> None:
        """Tell the child the store changed (after each commit). A full pipe already holds a
        nudge the child has not read: this one adds nothing."""
        if self._nudges is None:
            return
        try:
            os.write(self._nudges, b".")
        except (BlockingIOError, BrokenPipeError, OSError):
            pass

    def stop(self, timeout: float = 60.0) -> int | None:
        """SIGTERM, wait (the child's last write commits), SIGKILL past ``timeout``."""
        self._stopping = True
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            log.error("the controller process did not stop within %.0f s: killed", timeout)
            process.kill()
            code = process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()
        return code

    def _watch(self) -> None:
        assert self.process is not None
        code = self.process.wait()
        if not self._stopping:
            self.failed = code
            log.error("the controller process (controllers, kubelet, scheduler) exited with "
                      "status %d", code)
            self.on_exit(code)


def _read_line(stream: IO[bytes], timeout: float) -> str:
    """One line of the child's stdout, or "" at EOF or past ``timeout``."""
    ready, _, _ = select.select([stream], [], [], timeout)
    return stream.readline().decode(errors="replace") if ready else ""


def run_controllers(state_path: str, virtual_clock: bool, wall_clock: Callable[[], float] | None,
                    event_ttl: float = DEFAULT_EVENT_TTL, nudges: int = 0,
                    ready: IO[str] | None = None) -> int:
    """The child's main loop (see the module docstring); returns its exit status. ``nudges``:
    the pipe the API process writes (standard input); ``ready`` gets one line once settled."""
    worker = ClusterWorker(state_path, virtual_clock, wall_clock=wall_clock,
                           event_ttl=event_ttl).start()
    watcher = Store(state_path)       # reads the store's resourceVersion
    wake_read, wake_write = os.pipe()
    stopping = threading.Event()
    _take_signals(wake_write, stopping)
    if ready is not None:
        ready.write(READY_LINE + "\n")
        ready.flush()
    try:
        settled = _stored_rv(watcher)
        while not stopping.is_set():
            readable, _, _ = select.select([nudges, wake_read], [], [], POLL_SECONDS)
            if nudges in readable and not os.read(nudges, 65536):
                log.info("the API process is gone: stopping")
                break
            if nudges in readable or _stored_rv(watcher) != settled:   # moved on, or a reset
                _settle(worker)
                # what moved the store since was settled too: the CLI settles its own writes,
                # and the API process's next write nudges again
                settled = _stored_rv(watcher)
    finally:
        worker.stop()
        watcher.close()
    return 0


def _take_signals(wake_write: int, stopping: threading.Event) -> None:
    """SIGTERM/SIGINT set ``stopping`` and wake the loop; they stay blocked in every other
    thread (the mask inherited from ``serve``), taken here by the main thread only."""
    def handler(signum: int, _frame: Any) -> None:
        stopping.set()

    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    for signum in STOP_SIGNALS:
        signal.signal(signum, handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def _settle(worker: ClusterWorker) -> None:
    """One settled write that changes nothing itself: the settle takes what others committed."""
    try:
        worker.write(_nothing)
    except GpuschedError as err:          # a full disk: one line; the next nudge retries
        log.error("controller process: settle failed: %s", err)


def _nothing(view: Any) -> None:
    return None


def _stored_rv(store: Store) -> int:
    """The store's resourceVersion: a write of another process (the CLI) moved it."""
    return int(store.read_meta("rv").get("rv", 0))
