"""The scheduling queue: activeQ, backoffQ and the unschedulable pods, on the cluster's clock.

The shape of kube-scheduler's ``PriorityQueue`` (``pkg/scheduler/backend/queue/
scheduling_queue.go``, ``active_queue.go``, ``backoff_queue.go``, ``unschedulable_pods.go``):

- **activeQ** (:attr:`SchedulingQueue._active`): a heap ordered by the QueueSort key
  (PrioritySort: higher priority first, then earlier creation, then namespace/name; the host
  passes :func:`queue_sort_key`), then a push counter. A pod enters on an add or update of an
  unscheduled pod (:meth:`SchedulingQueue.add`), never by listing the pending pods again.
- **unschedulable pods**: after a failed attempt (:meth:`SchedulingQueue.failed`) a pod waits
  with the plugins that rejected it (``record["plugins"]``). A cluster event (the capacity log,
  ``scheduler.queueing_hints``) moves it only when a rejecting plugin's queueing hint says the
  event may help (``MoveAllToActiveOrBackoffQueue``/``isPodWorthRequeuing``); a pod left there
  for 5 minutes is moved by the next event whatever its hints say
  (``podMaxInUnschedulablePodsDuration``, ``flushUnschedulablePodsLeftover``).
- **backoffQ** (:attr:`SchedulingQueue._backoff`): a moved pod waits until ``lastFailure +
  min(1s * 2^(failures-1), 10s)`` (``podInitialBackoffSeconds``/``podMaxBackoffSeconds``,
  ``calculateBackoffDuration``), then goes to activeQ.
- **Activate** (:meth:`SchedulingQueue.activate`, a plugin's ``PodsToActivate``) skips the
  back-off, as upstream; a cluster event (:meth:`SchedulingQueue.move`) does not. One rule of
  the virtual clock: a pod activated at the very instant it failed is still in flight and waits
  out its back-off, so a gang that can never fit costs each member one attempt per back-off
  instead of re-activating itself for ever at one instant (see :meth:`~SchedulingQueue.activate`).

One difference of timing, kept from the embedded cluster's first queue so that decisions repeat:
a hint is asked at the pod's turn in the scheduling loop (:meth:`SchedulingQueue.judge`, on the
scheduler's snapshot as the binds before it left it), not when the event is logged. Before the
loop (:meth:`SchedulingQueue.prepare`) the new events are screened for each waiting pod on the
snapshot as the loop starts (binds only shrink a node's room for the pods behind them, so a pod
the screen skips would be skipped at its turn too); only the pods an event may help enter
activeQ to be judged. A pass costs what its events and attempts cost, not the pending pods.

State: what must outlive a command is the host's (:class:`QueueStore`: the embedded cluster keeps
it in its state file): ``queue[uid]`` (``failures``, ``at``, ``plugins``, ``dry``, ``moved``,
``over``), ``attempts[uid]`` (the epoch of the capacity log the pod has judged), the log and its
``epoch``. The heaps are rebuilt from it (:meth:`SchedulingQueue.restore`).

Neighbours: ``scheduler.scheduling_loop`` (pops and judges), ``scheduler.queueing_hints``;
``cluster.scheduling.host`` feeds it from the change journal.
"""

from __future__ import annotations

import bisect
import heapq
from typing import TYPE_CHECKING, Any, Callable, Protocol

from gpusched.scheduler.queueing_hints import (ALWAYS, ANY_NODE, NEVER, RoomScreen, hint_kind,
                                               pod_left_hint)

if TYPE_CHECKING:
    from gpusched.objects.types import PodInfo
    from gpusched.scheduler.snapshot import Snapshot

INITIAL_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 10.0
MAX_UNSCHEDULABLE_SECONDS = 300.0
ACTIVE, BACKOFF, UNSCHEDULABLE = "active", "backoff", "unschedulable"

SortKey = tuple[Any, ...]


class QueueStore(Protocol):
    """Where the queue's lasting state lives (see the module docstring)."""

    clock: float
    epoch: int
    attempts: dict[str, int]
    queue: dict[str, dict[str, Any]]
    capacity_log: list[list[Any]]


def queue_sort_key(priority: int, creation_seq: int, namespace: str, name: str) -> SortKey:
    """PrioritySort's order (``plugins.prioritysort``) from a pod's fields."""
    return (-priority, creation_seq, namespace, name)


def backoff_seconds(failures: int) -> float:
    """``1s * 2^(failures-1)``, at most 10 s; 0 before the first failure (upstream
    ``calculateBackoffDuration``)."""
    if failures <= 0:
        return 0.0
    return float(min(INITIAL_BACKOFF_SECONDS * 2 ** min(failures - 1, 32), MAX_BACKOFF_SECONDS))


def backoff_end(record: dict[str, Any]) -> float:
    """When a pod's back-off ends: its last failure plus :func:`backoff_seconds`, or the failure
    itself once a later command has come (:meth:`SchedulingQueue.end_backoffs`)."""
    at = float(record["at"])
    return at if record.get("over") else at + backoff_seconds(int(record["failures"]))


def queue_of(store: QueueStore, uid: str) -> str:
    """Which queue a pending, ungated pod is in now (``scheduler_pending_pods{queue}``)."""
    record = store.queue.get(uid)
    if record is None:
        return ACTIVE if store.attempts.get(uid) != store.epoch else UNSCHEDULABLE
    if not record["moved"]:
        return UNSCHEDULABLE
    return BACKOFF if store.clock < backoff_end(record) else ACTIVE


def _after(log: list[list[Any]], epoch: int) -> int:
    """The index of the first log entry newer than ``epoch`` (the log is in epoch order)."""
    return bisect.bisect_right(log, epoch, key=lambda entry: int(entry[0]))


class SchedulingQueue:
    """activeQ, backoffQ and the unschedulable pods of one scheduler (see the module docstring).

    ``info_of(uid)``: the host's ``PodInfo`` of a queued pod (None: gone or unreadable);
    ``on_moved(uid)``: called when a pod's record changes (the host re-arms its timer)."""

    def __init__(self, store: QueueStore, info_of: Callable[[str], PodInfo | None],
                 on_moved: Callable[[str], None]) -> None:
        self.store = store
        self.info_of = info_of
        self.on_moved = on_moved
        self._sort: dict[str, SortKey] = {}           # every queued pod -> its QueueSort key
        self._token: dict[str, int] = {}              # the current heap entry of a pod
        self._active: list[tuple[SortKey, int, str, bool]] = []   # (key, token, uid, judge)
        self._backoff: list[tuple[float, int, str]] = []
        self._waiting: set[str] = set()               # unschedulable, not in a heap
        self._judging: set[str] = set()               # in activeQ to be judged
        self._stale: set[str] = set()                 # waiting, passed over by a screen
        self._moved_in_flight: set[str] = set()       # in flight, activated or moved meanwhile
        self._screened = store.epoch                  # events up to here were screened
        self._trim_at = 64
        self._seq = 0
        self._popped: SortKey | None = None

    # ---- entering and leaving ---------------------------------------------------------------

    def restore(self, pods: list[tuple[str, SortKey]]) -> None:
        """Rebuild the heaps for these pending pods from the store (a new process, a resync)."""
        store = self.store
        for uid, key in pods:
            self._sort[uid] = key
            seen, record = store.attempts.get(uid), store.queue.get(uid)
            if seen is None or (record is None and seen != store.epoch):
                self._push_active(uid, judge=False)
            elif record is None:
                self._waiting.add(uid)
            elif record["moved"]:
                self._push_backoff(uid, record)
            elif seen != store.epoch:
                self._push_active(uid, judge=True)
            else:
                self._waiting.add(uid)
        self._screened = store.epoch

    def add(self, uid: str, key: SortKey) -> None:
        """An unscheduled pod was added or updated: a new pod goes to activeQ; a known one keeps
        its place (its key follows the update)."""
        old = self._sort.get(uid)
        self._sort[uid] = key
        if old is None:
            self._push_active(uid, judge=False)
        elif old != key and self._token.get(uid, 0) > 0 and uid not in self._waiting:
            self._repush(uid)             # in activeQ: its place follows the new key

    def activate(self, uids: list[str] | set[str]) -> None:
        """Move these queued pods to activeQ now, from the unschedulable pods or backoffQ, their
        back-off skipped (upstream ``Activate``, ``ForceActivate``: a plugin's
        ``PodsToActivate``, e.g. a gang's siblings); a pod in activeQ stays where it is. A pod
        in flight (popped, or waiting at Permit) keeps the activation as an event: when it fails
        it waits out its back-off, then retries (``addEventsIfPodInFlight``; a wildcard event
        is ``queueAfterBackoff``).

        On the virtual clock a pod whose failure was recorded at this very instant is still in
        flight. Upstream, a pod rejected at Permit is requeued by its binding goroutine while the
        next cycles run, and each cycle takes wall time; here none takes any, and a gang that
        can never fit would activate its rejected members again at the same instant for ever
        (each round, a sibling still in activeQ reaches Permit first and activates the rest). So
        such a pod waits out its back-off (1 s doubling to 10 s of virtual time): a gang's round
        costs each member one attempt per back-off it waits."""
        for uid in sorted(uids):
            if uid not in self._sort:
                continue
            token, record = self._token.get(uid), self.store.queue.get(uid)
            queued = uid in self._waiting or (token is not None and token < 0)
            if not queued:
                if token == 0:
                    self._moved_in_flight.add(uid)
            elif record is not None and self._failed_now(record):
                self._requeue_after_backoff(uid, record)
            else:
                self._push_active(uid, judge=False)

    def move(self, uids: list[str] | set[str]) -> None:
        """A cluster event may help these pods (upstream ``MoveAllToActiveOrBackoffQueue`` with
        a ``Queue`` hint, ``queueAfterBackoff``): an unschedulable pod goes to backoffQ, or to
        activeQ once its back-off ended; pods in activeQ or backoffQ stay; a pod in flight is
        requeued so when it fails."""
        for uid in sorted(uids):
            if uid not in self._sort:
                continue
            record = self.store.queue.get(uid)
            if uid in self._waiting:
                if record is None:
                    self._push_active(uid, judge=False)
                else:
                    self._requeue_after_backoff(uid, record)
            elif self._token.get(uid) == 0:
                self._moved_in_flight.add(uid)

    def _failed_now(self, record: dict[str, Any]) -> bool:
        """Whether a pod's failure was recorded at this instant (and its back-off not ended by a
        new command: :meth:`end_backoffs`)."""
        return float(record["at"]) == self.store.clock and not record.get("over")

    def _requeue_after_backoff(self, uid: str, record: dict[str, Any]) -> None:
        """Moved: to backoffQ until its back-off ends (activeQ if it has)."""
        if not record["moved"]:
            record["moved"] = True
            self.on_moved(uid)
        self._push_backoff(uid, record)

    def delete(self, uid: str) -> None:
        """The pod was bound, deleted, finished or gated: it leaves every queue."""
        self._sort.pop(uid, None)
        self._token.pop(uid, None)
        self._waiting.discard(uid)
        self._judging.discard(uid)
        self._stale.discard(uid)
        self._moved_in_flight.discard(uid)
        self.store.attempts.pop(uid, None)
        self.store.queue.pop(uid, None)

    def __contains__(self, uid: str) -> bool:
        return uid in self._sort

    def __len__(self) -> int:
        return len(self._sort)

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def _push_active(self, uid: str, judge: bool) -> None:
        token = self._token[uid] = self._next()
        self._waiting.discard(uid)
        (self._judging.add if judge else self._judging.discard)(uid)
        heapq.heappush(self._active, (self._sort[uid], token, uid, judge))

    def _push_backoff(self, uid: str, record: dict[str, Any]) -> None:
        end = backoff_end(record)
        if end <= self.store.clock:
            self._push_active(uid, judge=False)
            return
        token = self._token[uid] = -self._next()      # negative: a backoffQ entry
        self._waiting.discard(uid)
        heapq.heappush(self._backoff, (end, token, uid))

    def _repush(self, uid: str) -> None:
        self._push_active(uid, uid in self._judging)

    # ---- the scheduling loop's side ---------------------------------------------------------

    def end_backoffs(self) -> None:
        """A command on a clock that stands still between commands (the CLI, ``serve
        --virtual-clock``): every back-off that began before it is over. On a real cluster the
        person typing the next command takes longer than the longest back-off (10 s), so a pod a
        fix moves (uncordon, a label, a removed taint) is retried at once."""
        for record in self.store.queue.values():
            record["over"] = True
        while self._backoff:
            _end, token, uid = heapq.heappop(self._backoff)
            if self._token.get(uid) == token:
                self._push_active(uid, judge=False)

    def prepare(self, snapshot: Snapshot | None) -> None:
        """Before a loop: back-offs that ended go to activeQ; the events since the last loop are
        screened for the waiting pods (see the module docstring). ``snapshot`` None: the host
        has none at hand; every waiting pod with new events is then judged at its turn."""
        now = self.store.clock
        while self._backoff and self._backoff[0][0] <= now:
            _end, token, uid = heapq.heappop(self._backoff)
            if self._token.get(uid) == token:
                self._push_active(uid, judge=False)
        self._popped = None
        self._screen(snapshot, None)

    def has_work(self) -> bool:
        """Whether a loop would find anything to do: a pod in activeQ or due in backoffQ, or
        events (or pods passed over) for the waiting pods to screen."""
        while self._active and self._token.get(self._active[0][2]) != self._active[0][1]:
            heapq.heappop(self._active)                 # stale entries
        due = bool(self._backoff) and self._backoff[0][0] <= self.store.clock
        screen = bool(self._waiting) and (self.store.epoch != self._screened or bool(self._stale))
        return bool(self._active) or due or screen

    def _screen(self, snapshot: Snapshot | None, after: SortKey | None) -> None:
        """Waiting pods with events they have not seen: to activeQ (judged at their turn) when
        an event may help, else marked as having seen them. With ``after`` (during a loop), the
        pods whose turn has passed are left to the next loop."""
        store = self.store
        if store.epoch != self._screened:
            todo, self._stale = self._waiting | self._stale, set()
        elif self._stale and after is None:
            todo, self._stale = set(self._stale), set()
        else:
            return
        self._screened = store.epoch
        screen = RoomScreen(snapshot) if snapshot is not None else None
        for uid in sorted(todo):
            if uid not in self._waiting:
                continue
            seen = store.attempts.get(uid)
            if seen == store.epoch:
                continue
            if after is not None and self._sort[uid] <= after:
                self._stale.add(uid)     # its turn in this loop has passed
            elif seen is None or self._may_help(uid, seen, screen):
                self._push_active(uid, judge=True)
            elif store.queue.get(uid) is not None:
                store.attempts[uid] = store.epoch
        self._trim_log()

    def _may_help(self, uid: str, seen: int, screen: RoomScreen | None) -> bool:
        record = self.store.queue.get(uid)
        if record is None:
            return True           # attempted outside the queue (a queue-order mode): retried
        if self.store.clock >= float(record["at"]) + MAX_UNSCHEDULABLE_SECONDS:
            return True
        kind = hint_kind(record.get("plugins") or ())
        if kind == ALWAYS or screen is None:
            return True
        log = self.store.capacity_log
        entries = log[_after(log, seen):]
        if any(node == ANY_NODE for _e, node, _p in entries):
            return True
        if kind == NEVER:
            return False
        info = self.info_of(uid)
        return info is None or any(screen.helps(info, record, str(node), int(priority))
                                   for _e, node, priority in entries)

    def pop(self, snapshot: Snapshot | None = None) -> tuple[str, bool] | None:
        """The next pod of activeQ and whether its hints must be judged first; None when
        activeQ is empty. Events logged during the loop are screened for the pods behind."""
        if self._popped is not None and self.store.epoch != self._screened:
            self._screen(snapshot, self._popped)
        while self._active:
            key, token, uid, judge = heapq.heappop(self._active)
            if self._token.get(uid) == token:
                self._token[uid] = 0                  # in flight
                self._judging.discard(uid)
                self._popped = key
                return uid, judge
        return None

    def judge(self, uid: str, info: PodInfo, snapshot: Snapshot) -> bool:
        """At a popped pod's turn: attempt it now? A waiting pod is moved when the 5-minute
        flush is due or an event since its last look may help (``pod_left_hint``, exact, on
        ``snapshot`` as it is now); a moved pod is attempted once its back-off ended, else it
        goes to backoffQ; an unmoved one waits again."""
        store = self.store
        seen, record = store.attempts.get(uid), store.queue.get(uid)
        if seen is None or record is None:
            if seen != store.epoch:
                return True
            self._waiting.add(uid)
            return False
        if not record["moved"] and seen != store.epoch:
            flush = store.clock >= float(record["at"]) + MAX_UNSCHEDULABLE_SECONDS
            if flush or self._event_helps(info, record, seen, snapshot):
                record["moved"] = True
                self.on_moved(uid)
            store.attempts[uid] = store.epoch        # every logged change so far has been judged
        if not record["moved"]:
            self._waiting.add(uid)
            return False
        if store.clock >= backoff_end(record):
            return True
        self._push_backoff(uid, record)
        return False

    def _event_helps(self, info: PodInfo, record: dict[str, Any], seen: int,
                     snapshot: Snapshot) -> bool:
        log = self.store.capacity_log
        judged: set[tuple[str, int]] = set()
        for _epoch, node, priority in log[_after(log, seen):]:
            if node == ANY_NODE:
                return True
            if (node, priority) in judged:
                continue
            judged.add((node, priority))
            if pod_left_hint(snapshot, info, record, node, int(priority)):
                return True
        return False

    def failed(self, uid: str, plugins: list[str], dry: bool) -> None:
        """After a failed attempt: one more failure at the current clock, the rejecting plugins;
        the pod waits for an event, or waits out its back-off when it was activated or moved
        while in flight (:meth:`activate`, :meth:`move`)."""
        store = self.store
        failures = int((store.queue.get(uid) or {}).get("failures", 0)) + 1
        record = store.queue[uid] = {"failures": failures, "at": store.clock, "plugins": plugins,
                                     "dry": dry, "moved": uid in self._moved_in_flight}
        self._moved_in_flight.discard(uid)
        store.attempts[uid] = store.epoch
        if uid in self._sort:
            if record["moved"]:
                self._push_backoff(uid, record)
            else:
                self._waiting.add(uid)
        self.on_moved(uid)

    def _trim_log(self) -> None:
        """Drop the log entries every queued pod has judged (amortised: when it doubled)."""
        log = self.store.capacity_log
        if len(log) < self._trim_at:
            return
        oldest = min(self.store.attempts.values(), default=self.store.epoch)
        if log[0][0] <= oldest:
            del log[: _after(log, oldest)]
        self._trim_at = max(64, 2 * len(log))
