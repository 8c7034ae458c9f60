"""Records the web page's allocation/fragmentation history in the server, browser or not.

:class:`HistoryRecorder` runs one thread per ``gpusched serve``: it waits on the change feed
(``server.feed``: the server's own writes and other processes' writes to the same state file)
and, after a change to a kind the chart depends on (:data:`CHART_KINDS`: pods, nodes, node
pools, ConfigMaps; Lease renewals and Events are not), reads the page's index (``current()``:
``routes.WebRoutes.current``, built on the cluster worker and shared with the page's requests, so
a summary right after a point costs no rebuild) and appends a point to the shared
:class:`~gpusched.server.web.summary.History`.

Throttled: at most one point per ``interval`` (0.5 s), or per ``COST_FACTOR`` (30) times what
the last point cost to build when that is longer (a point reads every node and pod on the
cluster thread: at 1,000 nodes under a burst of writes it took a third of that thread's CPU
unthrottled, a tenth at 10 times), so the history takes about a thirtieth of the server's time;
under such a burst a point comes every second or two. Changes that arrive during the pause are
not lost: the feed cursor has not moved past them, so the next point (trailing edge) shows the
state after all of them. A point is also recorded at start. The thread ends when the feed closes
(the server stops) or :meth:`close` is called; a reset of the state file (``gpusched reset``)
resynchronises the cursor.

Neighbours: ``server.feed`` (``wait``, ``floor``), ``server.web.query`` (``point``),
``server.web.summary`` (``History``); started by ``server.web.routes.mount``.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

from gpusched.errors import GpuschedError
from gpusched.server.feed import OBJECTS
from gpusched.server.web.query import point
from gpusched.server.web.summary import History

log = logging.getLogger(__name__)

CHART_KINDS = frozenset({"Pod", "Node", "NodePool", "ConfigMap"})
INTERVAL_SECONDS = 0.5
WAIT_SECONDS = 1.0
COST_FACTOR = 30.0        # pause at least this many times a point's build time


class HistoryRecorder:
    """See the module docstring. ``start()`` begins recording; ``close()`` ends it."""

    def __init__(self, feed: Any, current: Callable[[], Any], history: History,
                 interval: float = INTERVAL_SECONDS) -> None:
        self.feed, self.current, self.history, self.interval = feed, current, history, interval
        self._closed = threading.Event()
        self.cursor = 0          # the resourceVersion up to which changes have been handled
        self.cost = 0.0          # seconds the last point took to build
        self._thread = threading.Thread(target=self._run, name="gpusched-history", daemon=True)

    def start(self) -> "HistoryRecorder":
        self._thread.start()
        return self

    def close(self) -> None:
        self._closed.set()
        self._thread.join(timeout=5)

    def _done(self) -> bool:
        return self._closed.is_set() or self.feed.closed

    def _run(self) -> None:
        resets, (_, self.cursor) = self.feed.resets, self.feed.floor(OBJECTS)
        if not self._record():
            return
        while not self._done():
            changes = self.feed.wait(OBJECTS, self.cursor, WAIT_SECONDS, resets)
            if changes is None:                     # closed, reset, or fell behind the floor
                resets, (_, cursor) = self.feed.resets, self.feed.floor(OBJECTS)
                if not self._record():
                    return
                self.cursor = cursor
                continue
            if not changes:
                continue
            charted = any(change.kind in CHART_KINDS for change in changes)
            if charted and not self._record():
                return
            self.cursor = changes[-1].rv            # handled (tests wait for it)
            if charted:                             # throttle; later changes wait in the feed
                self._closed.wait(max(self.interval, COST_FACTOR * self.cost))

    def _record(self) -> bool:
        """One point from the current state; False once the server is shutting down."""
        if self._done():
            return False
        began = time.perf_counter()
        try:
            self.history.record(point(self.current()))
        except GpuschedError:                       # "the server is shutting down"
            return False
        except Exception:  # noqa: BLE001 - a bug in the summary must not end the server
            log.exception("web history: recording a point failed")
        self.cost = time.perf_counter() - began
        return True
