"""The one thread that owns the :class:`~gpusched.cluster.cluster.Cluster` inside ``serve``.

HTTP handler threads hand it work (:meth:`ClusterWorker.read`, :meth:`ClusterWorker.write`) and
wait for the answer; SQLite connections and the cached view never cross threads.

Group commit: writes queued while the worker was busy run in one transaction, one settle, one
commit (a burst of 1,000 pod creations costs a few dozen transactions, not 1,000). Each write
checks everything before it changes the view (``apiserver.api_ops``), so a rejected one fails
alone; an unexpected exception (a bug) rolls the batch back and the writes are retried one by
one, so only the failing one fails. A batch made only of unsettled writes (``write(fn,
settle=False)``: Leases, which neither controllers nor the scheduler read) skips the settle.

Real time: unless ``virtual_clock``, the cluster's clock follows the real elapsed time
(``time.monotonic``, the only clock read, here and nowhere else): every ``tick`` seconds the
worker calls ``Cluster.advance`` by the time elapsed since the last tick (controllers and the
scheduler run at each due event). ``wall_clock`` (given by ``cli.serve``: the wall-clock time on
the cluster clock) starts a new state file's clock and, in real-time mode, moves an older
file's clock forward to it at start, so timestamps (creation, events, conditions) are
wall-clock times and kubectl's AGE is right.

``settles=False`` (``serve``'s API process): the cluster never settles and the clock is left
alone: the controller process (``server.settler``), which runs a worker of its own with the
default, settles what this one commits and moves the clock.

Neighbours: ``cluster.cluster`` (write/read/advance); used by ``server.app`` and
``server.resources``; ``on_commit`` pokes ``server.feed``.
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable

from gpusched.cluster.cluster import Cluster
from gpusched.cluster.apiserver.store import DEFAULT_EVENT_TTL
from gpusched.errors import GpuschedError

log = logging.getLogger(__name__)

TICK_SECONDS = 0.25
MAX_BATCH = 200
WRITE, WRITE_UNSETTLED = "write", "write-unsettled"


class ClusterWorker:
    """See the module docstring."""

    def __init__(self, state_path: str, virtual_clock: bool = False, tick: float = TICK_SECONDS,
                 on_commit: Callable[[], None] | None = None,
                 wall_clock: Callable[[], float] | None = None,
                 event_ttl: float = DEFAULT_EVENT_TTL, settles: bool = True) -> None:
        self.state_path = state_path
        self.settles = settles      # False: serve's API process (no settle, no clock; see above)
        self.event_ttl = event_ttl
        self.virtual_clock = virtual_clock
        self.tick = tick
        self.on_commit = on_commit or (lambda: None)
        self.wall_clock = wall_clock
        self._queue: queue.Queue[Any] = queue.Queue()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._tick_error: str | None = None
        self._thread = threading.Thread(target=self._run, name="gpusched-cluster", daemon=True)

    @property
    def ticks(self) -> bool:
        """Whether this worker moves the clock with real time."""
        return self.settles and not self.virtual_clock

    def start(self) -> "ClusterWorker":
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        self._stop.set()
        self._queue.put(None)
        self._thread.join(timeout=10)

    # ---- calls from other threads ------------------------------------------------------------

    def read(self, fn: Callable[[Any], Any]) -> Any:
        """``fn(view)`` in a read transaction on the worker thread; returns its result."""
        return self._call("read", fn)

    def write(self, fn: Callable[[Any], Any], settle: bool = True) -> Any:
        """``fn(view)`` in a (possibly shared) settled write transaction; returns its result.
        ``settle=False`` for writes no controller or the scheduler reads (Leases): a batch of
        only such writes commits without settling."""
        return self._call(WRITE if settle else WRITE_UNSETTLED, fn)

    def cluster_call(self, fn: Callable[[Cluster], Any]) -> Any:
        """``fn(cluster)`` alone on the worker thread (facade methods: drain, explain, ...)."""
        return self._call("cluster", fn)

    def _call(self, mode: str, fn: Callable[..., Any]) -> Any:
        if self._stop.is_set():
            raise GpuschedError("the server is shutting down")
        future: Future[Any] = Future()
        self._queue.put((mode, fn, future))
        return future.result()

    # ---- the worker thread -------------------------------------------------------------------

    def _run(self) -> None:
        try:
            start = self.wall_clock() if self.wall_clock is not None else None
            cluster = Cluster.open(self.state_path, start=start, event_ttl=self.event_ttl)
            cluster.frozen_clock = self.virtual_clock   # real time: back-offs run on the clock
            cluster.settles = self.settles
            cluster.store.take_turns()    # serve's processes hand the write lock over at once
            if self.settles:
                cluster.settle()
            if self.ticks and start is not None and start > cluster.now():
                cluster.advance(start - cluster.now())   # catch up with the wall clock
        except BaseException as err:   # reported to start()
            self._error = err
            self._ready.set()
            return
        self._ready.set()
        last = time.monotonic()
        try:
            while not self._stop.is_set():
                timeout = max(0.0, last + self.tick - time.monotonic()) if self.ticks else None
                try:
                    first = self._queue.get(timeout=timeout)
                except queue.Empty:
                    first = ()
                if first is None:
                    break
                if first:
                    self._serve(cluster, first)
                if self.ticks and time.monotonic() - last >= self.tick:
                    now = time.monotonic()
                    self._advance(cluster, now - last)
                    last = now
        finally:
            cluster.close()
            self._fail_pending()

    def _advance(self, cluster: Cluster, seconds: float) -> None:
        """One clock tick. A failure (a full disk, say) is logged once, not at every tick,
        and its recovery once; the next tick retries."""
        try:
            cluster.advance(seconds)
        except GpuschedError as err:        # expected (StoreFullError): one line, no traceback
            self._tick_failed(str(err), None)
        except Exception as err:
            self._tick_failed(f"{type(err).__name__}: {err}", err)
        else:
            if self._tick_error is not None:
                log.warning("real-time clock: advancing again (%s is over)", self._tick_error)
                self._tick_error = None
        self.on_commit()

    def _tick_failed(self, text: str, err: BaseException | None) -> None:
        if text == self._tick_error:
            return
        self._tick_error = text
        log.error("real-time clock: advance failed: %s (retried at every tick, logged once)", text,
                  exc_info=err)

    def _serve(self, cluster: Cluster, first: tuple[Any, ...]) -> None:
        mode, fn, future = first
        if mode not in (WRITE, WRITE_UNSETTLED):
            _run_into(future, lambda: cluster.read(fn) if mode == "read" else fn(cluster))
            if mode == "cluster":
                self.on_commit()
            return
        batch = [first]
        while len(batch) < MAX_BATCH:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None or item[0] not in (WRITE, WRITE_UNSETTLED):
                self._queue.put(item)   # handled after this batch (order among reads is kept)
                break
            batch.append(item)
        self._write_batch(cluster, batch)
        self.on_commit()

    def _write_batch(self, cluster: Cluster, batch: list[Any]) -> None:
        results: list[tuple[bool, Any]] = []
        settle = any(mode == WRITE for mode, _fn, _future in batch)

        def run_all(view: Any) -> None:
            for _mode, fn, _future in batch:
                try:
                    results.append((True, fn(view)))
                except GpuschedError as err:
                    results.append((False, err))

        try:
            cluster.write(run_all, settle)
        except Exception:
            if len(batch) == 1:
                _run_into(batch[0][2], lambda: cluster.write(batch[0][1], settle))
                return
            log.debug("group commit failed; retrying the writes one by one", exc_info=True)
            for mode, fn, future in batch:
                _run_into(future, functools.partial(cluster.write, fn, mode == WRITE))
            return
        for (ok, value), (_mode, _fn, future) in zip(results, batch):
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    def _fail_pending(self) -> None:
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item:
                item[2].set_exception(GpuschedError("the server is shutting down"))


def _run_into(future: Future[Any], fn: Callable[[], Any]) -> None:
    try:
        future.set_result(fn())
    except BaseException as err:   # delivered to the waiting handler thread
        future.set_exception(err)
