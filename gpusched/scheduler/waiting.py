"""The waiting pods: pods a Permit plugin told to Wait, holding their node's room until allowed.

kube-scheduler's ``waitingPodsMap`` (``pkg/scheduler/framework/runtime/waiting_pods_map.go``)
on the cluster's clock instead of Go timers:

- a pod whose Permit returned Wait (``Status.wait(timeout)``) stays assumed in the snapshot on
  the node it was given (its requests and devices held) and enters :class:`WaitingPods` with one
  deadline per waiting plugin (``now + timeout``);
- ``allow(uid, plugin)`` clears that plugin; with none left the pod is *allowed* and binds;
- ``reject(uid, plugin, message)`` makes it *rejected*: the caller forgets it in the snapshot,
  runs every Unreserve and records the failure;
- :meth:`WaitingPods.expire_first` rejects the pod whose deadline passed first with upstream's
  ``rejected due to timeout after waiting <Go duration> at plugin <name>``.

Plugins reach the map through the cycle state (``framework.WAITING_PODS_KEY``), as upstream's
plugins reach ``IterateOverWaitingPods`` / ``GetWaitingPod`` through their framework handle. The
runner adds pods (``Scheduler._reserve_and_assume``); the loop hands resolved ones to its
binder (``scheduling_loop.resolve_waiting``).

Neighbours: ``scheduler.framework`` (Status, CycleState), ``scheduler.runner``,
``scheduler.scheduling_loop``; ``cluster.scheduling.host`` keeps the map between passes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from gpusched.objects.duration import go_duration
from gpusched.objects.types import DeviceAssignment, PodInfo
from gpusched.scheduler import messages
from gpusched.scheduler.framework import CycleState, Diagnosis, Rejection, ScheduleResult, Status

ALLOWED, REJECTED, WAITING = "allowed", "rejected", "waiting"


def timeout_message(seconds: float, plugin: str) -> str:
    """Upstream ``waitingPod`` timer's rejection (``waiting_pods_map.go`` ``newWaitingPod``)."""
    return f"rejected due to timeout after waiting {go_duration(seconds)} at plugin {plugin}"


@dataclass
class WaitingPod:
    """One pod waiting at Permit: where it is assumed and what each waiting plugin allows."""

    result: ScheduleResult                       # the cycle's result: node and devices
    row: int
    state: CycleState                            # its cycle state (Unreserve reads it)
    deadlines: dict[str, float]                  # waiting plugin -> when its wait ends
    timeouts: dict[str, float]                   # waiting plugin -> the wait it asked for
    outcome: str = WAITING
    plugin: str = ""                             # the rejecting plugin
    message: str = ""                            # the rejection's message

    @property
    def pod(self) -> PodInfo:
        return self.result.pod

    @property
    def node(self) -> str:
        return self.result.node

    @property
    def assignment(self) -> DeviceAssignment:
        return self.result.assignment

    @property
    def deadline(self) -> float:
        return min(self.deadlines.values(), default=float("inf"))


@dataclass
class WaitingPods:
    """The scheduler's waiting pods by uid (see the module docstring)."""

    pods: dict[str, WaitingPod] = field(default_factory=dict)

    def add(self, waiting: WaitingPod) -> None:
        self.pods[waiting.pod.uid] = waiting

    def get(self, uid: str) -> WaitingPod | None:
        """``GetWaitingPod``: a pod still waiting (None once allowed or rejected)."""
        waiting = self.pods.get(uid)
        return waiting if waiting is not None and waiting.outcome == WAITING else None

    def __iter__(self) -> Iterator[WaitingPod]:
        """``IterateOverWaitingPods``: the pods still waiting, in the order they came."""
        return iter([w for w in self.pods.values() if w.outcome == WAITING])

    def __len__(self) -> int:
        return len(self.pods)

    def allow(self, uid: str, plugin: str) -> None:
        waiting = self.get(uid)
        if waiting is None:
            return
        waiting.deadlines.pop(plugin, None)
        if not waiting.deadlines:
            waiting.outcome = ALLOWED

    def reject(self, uid: str, plugin: str, message: str) -> None:
        waiting = self.get(uid)
        if waiting is not None:
            waiting.outcome, waiting.plugin, waiting.message = REJECTED, plugin, message

    def expire_first(self, now: float) -> bool:
        """Reject the pod whose wait ended first by ``now`` (ties: the one that came first), if
        any. One at a time: its Unreserve may reject the others before their own time-out
        (a gang's siblings get ``rejection in Unreserve``), as the first timer to fire does."""
        due = [(at, n, waiting, plugin) for n, waiting in enumerate(self)
               for plugin, at in waiting.deadlines.items() if at <= now]
        if not due:
            return False
        _at, _n, waiting, plugin = min(due, key=lambda entry: (entry[0], entry[1]))
        self.reject(waiting.pod.uid, plugin, timeout_message(waiting.timeouts[plugin], plugin))
        return True

    def take_resolved(self) -> list[WaitingPod]:
        """The pods allowed or rejected since the last call, removed from the map."""
        done = [w for w in self.pods.values() if w.outcome != WAITING]
        for waiting in done:
            del self.pods[waiting.pod.uid]
        return done

    def resolved(self) -> bool:
        """Whether a pod was allowed or rejected since the last ``take_resolved``."""
        return any(w.outcome != WAITING for w in self.pods.values())

    def next_deadline(self) -> float | None:
        deadlines = [w.deadline for w in self]
        return min(deadlines) if deadlines else None


def permit_failure(result: ScheduleResult, status: Status) -> ScheduleResult:
    """A Permit rejection as upstream reports it: a FitError over the one node the pod was
    assumed on (``schedule_one.go``: ``NumAllNodes: 1``, that node's status)."""
    diagnosis = Diagnosis(1, [Rejection(np.ones(1, dtype=bool), status.message, status.code,
                                        status.plugin)])
    return ScheduleResult(result.pod, status=status, message=messages.fit_error(diagnosis),
                          diagnosis=diagnosis, feasible_nodes=result.feasible_nodes,
                          evaluated_nodes=result.evaluated_nodes, scores=result.scores)
