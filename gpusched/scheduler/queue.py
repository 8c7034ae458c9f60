"""The scheduling queue: active, backoff and unschedulable pods, on the injected clock.

- **active**: a heap ordered by the QueueSort key (PrioritySort: higher priority first, then
  earlier ``creation_seq``, then namespace/name), then by a push counter, so order never depends
  on dict or hash order.
- **backoff**: pods that failed with an error, or that an event released before their backoff
  ended. Backoff per pod is ``1s * 2^(attempts-1)``, at most 10s (upstream
  ``podInitialBackoffDuration`` / ``podMaxBackoffDuration``); ``pop`` first moves the pods whose
  backoff has ended (by the clock) to active.
- **unschedulable**: pods no node fits. ``move_all_to_active(event)`` moves them back when the
  cluster changes in a way that may help (``EVENTS``: pod deleted or finished, node added or
  changed, device config changed): to active if their backoff has ended, else to backoff.
  ``flush_unschedulable(max_age=300)`` is upstream's 5-minute safety net.

Neighbours: ``runner.Scheduler`` owns one (``schedule_pending`` drives it); the cluster calls
``add``/``delete``/``move_all_to_active``.
"""

from __future__ import annotations

import heapq
import logging
from typing import Any, Callable

from gpusched.objects.types import PodInfo

log = logging.getLogger(__name__)

INITIAL_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 10.0
MAX_UNSCHEDULABLE_SECONDS = 300.0

POD_DELETED = "PodDeleted"
POD_FINISHED = "PodFinished"
NODE_ADDED = "NodeAdded"
NODE_CHANGED = "NodeChanged"
DEVICE_CONFIG_CHANGED = "DeviceConfigChanged"
EVENTS = (POD_DELETED, POD_FINISHED, NODE_ADDED, NODE_CHANGED, DEVICE_CONFIG_CHANGED)

ACTIVE, BACKOFF, UNSCHEDULABLE = "active", "backoff", "unschedulable"


def priority_sort_key(pod: PodInfo) -> tuple[Any, ...]:
    """PrioritySort's key (kept here too so a queue works without a profile)."""
    return (-pod.priority, pod.creation_seq, pod.namespace, pod.name)


class SchedulingQueue:
    """Active / backoff / unschedulable pods; see the module docstring."""

    def __init__(self, clock: Callable[[], float], sort_key: Callable[[PodInfo], tuple[Any, ...]] | None = None):
        self.clock = clock
        self.sort_key = sort_key or priority_sort_key
        self._pods: dict[str, PodInfo] = {}
        self._where: dict[str, str] = {}
        self._token: dict[str, int] = {}          # the heap entry that is current for a pod
        self._attempts: dict[str, int] = {}
        self._last_failure: dict[str, float] = {}
        self._active: list[tuple[Any, ...]] = []
        self._backoff: list[tuple[Any, ...]] = []
        self._unschedulable: dict[str, float] = {}   # uid -> time it became unschedulable
        self._seq = 0

    # ---- moves ----------------------------------------------------------------------------

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def _push_active(self, pod: PodInfo) -> None:
        token = self._next()
        self._pods[pod.uid], self._where[pod.uid], self._token[pod.uid] = pod, ACTIVE, token
        self._unschedulable.pop(pod.uid, None)
        heapq.heappush(self._active, (self.sort_key(pod), token, pod.uid))

    def _push_backoff(self, pod: PodInfo) -> None:
        token = self._next()
        self._pods[pod.uid], self._where[pod.uid], self._token[pod.uid] = pod, BACKOFF, token
        self._unschedulable.pop(pod.uid, None)
        heapq.heappush(self._backoff, (self.backoff_expiry(pod.uid), token, pod.uid))

    def add(self, pod: PodInfo) -> None:
        """A new (or updated) pending pod: straight to active."""
        self._push_active(pod)

    def add_unschedulable(self, pod: PodInfo) -> None:
        """After a cycle found no node: park the pod until a cluster event."""
        self._failed(pod.uid)
        self._pods[pod.uid], self._where[pod.uid] = pod, UNSCHEDULABLE
        self._token[pod.uid] = self._next()
        self._unschedulable[pod.uid] = self.clock()

    def add_backoff(self, pod: PodInfo) -> None:
        """After a cycle that errored: retry once the backoff has passed."""
        self._failed(pod.uid)
        self._push_backoff(pod)

    def _failed(self, uid: str) -> None:
        self._attempts[uid] = self._attempts.get(uid, 0) + 1
        self._last_failure[uid] = self.clock()

    def backoff_duration(self, uid: str) -> float:
        attempts = self._attempts.get(uid, 0)
        if attempts <= 0:
            return 0.0
        result: float = min(INITIAL_BACKOFF_SECONDS * 2 ** (attempts - 1), MAX_BACKOFF_SECONDS)
        return result

    def backoff_expiry(self, uid: str) -> float:
        return self._last_failure.get(uid, 0.0) + self.backoff_duration(uid)

    def move_all_to_active(self, event: str) -> int:
        """A cluster event happened: unschedulable pods go to active (or backoff). Returns count."""
        now = self.clock()
        moved = list(self._unschedulable)
        for uid in moved:
            pod = self._pods[uid]
            if self.backoff_expiry(uid) <= now:
                self._push_active(pod)
            else:
                self._push_backoff(pod)
        if moved:
            log.debug("event %s moved %d unschedulable pods", event, len(moved))
        return len(moved)

    def flush_backoff(self) -> None:
        """Backoff pods whose time has come go to active."""
        now = self.clock()
        while self._backoff and self._backoff[0][0] <= now:
            _, token, uid = heapq.heappop(self._backoff)
            if self._where.get(uid) == BACKOFF and self._token.get(uid) == token:
                self._push_active(self._pods[uid])

    def flush_unschedulable(self, max_age: float = MAX_UNSCHEDULABLE_SECONDS) -> int:
        """Pods unschedulable for longer than ``max_age`` go back (upstream's periodic flush)."""
        now = self.clock()
        old = [uid for uid, since in self._unschedulable.items() if now - since >= max_age]
        for uid in old:
            pod = self._pods[uid]
            (self._push_active if self.backoff_expiry(uid) <= now else self._push_backoff)(pod)
        return len(old)

    def pop(self) -> PodInfo | None:
        """The next pod to schedule, or None when no pod is active."""
        self.flush_backoff()
        while self._active:
            _, token, uid = heapq.heappop(self._active)
            if self._where.get(uid) == ACTIVE and self._token.get(uid) == token:
                self._where[uid] = "in-flight"
                return self._pods[uid]
        return None

    def done(self, uid: str) -> None:
        """The pod was bound (or deleted): forget it."""
        self.delete(uid)

    def delete(self, uid: str) -> None:
        for table in (self._pods, self._where, self._token, self._attempts, self._last_failure,
                      self._unschedulable):
            table.pop(uid, None)

    # ---- inspection -----------------------------------------------------------------------

    def where(self, uid: str) -> str | None:
        return self._where.get(uid)

    def attempts(self, uid: str) -> int:
        return self._attempts.get(uid, 0)

    def pending(self) -> list[PodInfo]:
        """Every pod the queue holds, sorted by the queue key."""
        return sorted(self._pods.values(), key=self.sort_key)

    def counts(self) -> dict[str, int]:
        out = {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0}
        for where in self._where.values():
            if where in out:
                out[where] += 1
        return out

    def next_backoff_expiry(self) -> float | None:
        """When the earliest backoff ends (for event-driven callers), or None."""
        live = [t for t, token, uid in self._backoff
                if self._where.get(uid) == BACKOFF and self._token.get(uid) == token]
        return min(live) if live else None

    def __len__(self) -> int:
        return len(self._pods)
