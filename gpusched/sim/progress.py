"""Experiment runs with a progress bar that advances per batch of pods, not per finished run.

- ``RunProgress(runs, enabled, done=0)``: a rich progress bar over ``runs`` runs (``done`` of them
  already finished, e.g. cached); its completed amount is the sum over runs of pods done / pods in
  the run, next to a count of pods scheduled so far. ``pods(i, done, total)`` records run ``i``'s
  progress (called every ``experiment.PROGRESS_BATCH`` pods); ``finished(i)`` marks it done. Late
  reports of a finished run are ignored.
- ``run_local(items, jobs, finished, progress)``: ``sim.experiment.run`` over ``(index, spec)``
  items, in this process (``jobs`` 1) or a ``spawn`` process pool. Workers send
  ``(index, done, total)`` through a queue that the parent drains while it waits for results;
  when a result arrives the parent also takes that run's final report (sent before the result,
  so it is on its way) before it calls ``finished(index, result)``: no report is left behind.

Neighbours: ``sim.experiment`` (``run`` and its ``progress`` hook); used by ``sim.report.run_all``
and ``sim.sweep`` (local executor; the Ray executor reports per finished run).
"""

from __future__ import annotations

import functools
import multiprocessing
import queue as queue_module
from collections.abc import Callable
from multiprocessing.queues import Queue
from types import TracebackType
from typing import Any

from gpusched.sim.experiment import RunResult, RunSpec, run

POLL_SECONDS = 0.2      # how often the parent looks at the workers' progress while it waits
FINAL_REPORT_POLLS = 150   # at most 150 x 0.2 s for a run's final report after its result

Finished = Callable[[int, RunResult], None]


class RunProgress:
    """A progress bar over runs that moves as each run's pods are scheduled."""

    def __init__(self, runs: int, enabled: bool = True, done: int = 0) -> None:
        self.runs, self.enabled, self.done = runs, enabled, done
        self._fraction: dict[int, float] = {}
        self._pods: dict[int, int] = {}
        self._finished: set[int] = set()
        self.reported: set[int] = set()      # runs whose final report (done == total) arrived
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> "RunProgress":
        from rich.progress import (BarColumn, Progress, TextColumn, TimeElapsedColumn,
                                   TimeRemainingColumn)

        self._bar = Progress(TextColumn("{task.description}"), BarColumn(),
                             TextColumn("{task.completed:.1f}/{task.total:.0f} runs"),
                             TextColumn("{task.fields[pods]:,} pods"), TimeElapsedColumn(),
                             TimeRemainingColumn(), disable=not self.enabled, transient=False)
        self._bar.__enter__()
        self._task = self._bar.add_task("runs", total=self.runs, completed=self.done, pods=0)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._bar.__exit__(kind, error, trace)

    def pods(self, index: int, done: int, total: int) -> None:
        if index in self._finished:
            return
        self._fraction[index] = done / total if total else 1.0
        self._pods[index] = done
        if done == total:
            self.reported.add(index)
        self._update()

    def finished(self, index: int, pods: int | None = None) -> None:
        self._finished.add(index)
        self._fraction[index] = 1.0
        if pods is not None:
            self._pods[index] = pods
        self._update()

    @property
    def completed(self) -> float:
        """Runs done so far, fractions of runs in progress included."""
        return self.done + sum(self._fraction.values())

    def _update(self) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=self.completed, pods=sum(self._pods.values()))


# ---- running --------------------------------------------------------------------------------

_QUEUE: "Queue[tuple[int, int, int]] | None" = None     # a pool worker's channel to the parent


def _init_worker(channel: "Queue[tuple[int, int, int]] | None") -> None:
    global _QUEUE
    _QUEUE = channel


def _report(index: int, done: int, total: int) -> None:
    if _QUEUE is not None:
        _QUEUE.put((index, done, total))


def _run_item(item: tuple[int, RunSpec]) -> tuple[int, RunResult]:
    index, spec = item
    hook = functools.partial(_report, index) if _QUEUE is not None else None
    return index, run(spec, progress=hook)


def run_local(items: list[tuple[int, RunSpec]], jobs: int, finished: Finished,
              progress: RunProgress) -> None:
    """Run the items here (``jobs`` <= 1) or in a spawn pool, reporting pod batches to
    ``progress`` and each result to ``finished`` (then ``progress.finished``)."""
    def done(index: int, result: RunResult) -> None:
        finished(index, result)
        progress.finished(index, result.pods)

    if jobs <= 1:
        for index, spec in items:
            done(index, run(spec, progress=functools.partial(progress.pods, index)))
        return
    context = multiprocessing.get_context("spawn")
    channel = context.Queue() if progress.enabled else None
    with context.Pool(jobs, initializer=_init_worker, initargs=(channel,)) as pool:
        results = pool.imap_unordered(_run_item, items)
        for _ in items:
            while True:
                _drain(channel, progress)
                try:
                    index, result = results.next(timeout=POLL_SECONDS)
                except multiprocessing.TimeoutError:
                    continue
                break
            _await_final(channel, progress, index)
            done(index, result)


def _await_final(channel: "Queue[tuple[int, int, int]] | None", progress: RunProgress,
                 index: int) -> None:
    """Take reports until run ``index``'s final one (bounded: it is only a display)."""
    for _ in range(FINAL_REPORT_POLLS):
        if channel is None or index in progress.reported:
            return
        try:
            progress.pods(*channel.get(timeout=POLL_SECONDS))
        except queue_module.Empty:
            continue


def _drain(channel: "Queue[tuple[int, int, int]] | None", progress: RunProgress) -> None:
    while channel is not None:
        try:
            index, count, total = channel.get_nowait()
        except queue_module.Empty:
            return
        progress.pods(index, count, total)
