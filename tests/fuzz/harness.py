"""What every fuzz surface shares: processes under a memory limit, hang detection by CPU-idle
time, the in-process CLI worker, and the tally of failure classes.

Hang: a case is a hang when, while its answer is pending, the process that owes it is neither
running nor waiting to run (``/proc/PID/task/*/schedstat``: run and run-queue nanoseconds grow by
less than ``IDLE_SHARE`` of the window, so serve's background tickers, about 1 % of a core, do
not count as work) for ``IDLE_HANG_S`` in all, or burns more than ``BUSY_CEILING_S`` of CPU, or
``WALL_CEILING_S`` pass. CPU-idle time, not wall time: on a loaded machine a slow answer is one
that waits for a core, which is no hang. The ceilings are generous and classify (never fail the
run), so a hang in one case is counted and the next case goes on.

The CLI worker (``tests.fuzz.cli_worker``) runs ``gpusched.cli.main.main(argv)`` in one process
for many cases (a fresh interpreter per case costs about 0.8 s of CPU here; the command itself
tens of milliseconds); it is restarted when a case kills it or hangs.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from tests.conftest import REPO_ROOT

MEMORY_LIMIT_BYTES = 2 * 1024 ** 3      # RLIMIT_AS of every process the suite starts
IDLE_HANG_S = 2.0
BUSY_CEILING_S = 10.0
WALL_CEILING_S = 120.0
POLL_S = 0.05
IDLE_SHARE = 0.1     # a window in which the process ran or waited to run less than this is idle

CRASH = "crash"
HANG = "hang"
ACCEPTED_INVALID = "accepted-invalid"
DOUBLE_HELD = "double-held device"
OVER_COMMITTED = "over-committed node"
POISONED = "poisoned read"
CLASSES = (CRASH, HANG, ACCEPTED_INVALID, DOUBLE_HELD, OVER_COMMITTED, POISONED)
EXAMPLE_CHARS = 600
_RECORDING = threading.Lock()


class OutOfTime(BaseException):
    """Raised inside a hypothesis run when the bench's time budget is spent (a BaseException,
    so hypothesis stops at once instead of shrinking); the tally so far is the result."""


def check_time(stop_at: float | None) -> None:
    if stop_at is not None and time.monotonic() > stop_at:
        raise OutOfTime


def run_budget(fuzz: Callable[[], None], derandomize: bool, seed: int) -> None:
    """Run a ``@given`` test: derandomised (the suite's fixed cases) or under ``seed`` (the
    bench); a spent time budget (``OutOfTime``) ends it with the tally so far."""
    from hypothesis import seed as fixed_seed
    try:
        (fuzz if derandomize else fixed_seed(seed)(fuzz))()
    except OutOfTime:
        pass


def limit_memory() -> None:
    """``preexec_fn`` of every child: a regression that allocates without bound dies alone."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))


def child_env() -> dict[str, str]:
    """The environment of a child: the repository importable (``tests.fuzz.cli_worker``), a pinned
    clock start (as ``tests/conftest.py``), and few malloc arenas and BLAS threads, whose address
    space reservations would otherwise count against RLIMIT_AS."""
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT), "GPUSCHED_START": os.environ.get(
        "GPUSCHED_START", "2026-01-01T00:00:00Z"), "MALLOC_ARENA_MAX": "2",
        "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def sched_ns(*pids: int) -> int:
    """Nanoseconds the threads of ``pids`` have run or waited to run (0 for one that is gone)."""
    total = 0
    for pid in pids:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/schedstat", encoding="ascii") as stat:
                    run, wait = stat.read().split()[:2]
            except (OSError, ValueError):
                continue
            total += int(run) + int(wait)
    return total


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of ``pid`` so far."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Waited:
    """How a wait for an answer ended: ``hang`` names why when it did not end in an answer."""

    wall_s: float = 0.0
    cpu_s: float = 0.0
    idle_s: float = 0.0
    hang: str = ""


def wait_for_answer(pid: int, answered: Callable[[float], bool], idle_limit: float = IDLE_HANG_S,
                    also: tuple[int, ...] = ()) -> Waited:
    """Call ``answered(POLL_S)`` (blocks at most that long, True once the answer is there) until
    it is True or the case counts as a hang (module docstring). ``idle_limit``: a CLI that waits
    for the state file's lock while ``serve`` writes is idle by design (concurrent writers);
    ``also``: processes whose work the answer may wait for (a CLI writer holding the state file's
    lock), so the wait is idle only while they are idle too."""
    start, start_cpu = time.monotonic(), cpu_s(pid)
    last_sched, last_t, idle = sched_ns(pid, *also), start, 0.0
    while not answered(POLL_S):
        now, sched = time.monotonic(), sched_ns(pid, *also)
        if sched - last_sched < IDLE_SHARE * (now - last_t) * 1e9:
            idle += now - last_t
        last_sched, last_t = sched, now
        used = cpu_s(pid) - start_cpu
        why = (f"no answer after {idle:.1f} s of CPU-idle time" if idle >= idle_limit else
               f"no answer after {used:.1f} s of CPU" if used >= BUSY_CEILING_S else
               f"no answer after {now - start:.0f} s" if now - start >= WALL_CEILING_S else "")
        if why:
            return Waited(now - start, used, idle, why)
    return Waited(time.monotonic() - start, cpu_s(pid) - start_cpu, idle)


def kill(process: subprocess.Popen[Any]) -> None:
    """SIGKILL by PID (the process is one this suite started) and reap it."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
    process.wait()


@dataclass
class Tally:
    """Cases run on one surface and the failures by class, with the first example of each."""

    surface: str
    cases: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLASSES, 0))
    first: dict[str, str] = field(default_factory=dict)
    slowest_s: float = 0.0
    checks: int = 0                  # invariant and poisoned-read checks run

    def add_case(self) -> None:
        with _RECORDING:
            self.cases += 1

    def record(self, cls: str, example: str) -> None:
        with _RECORDING:                   # concurrent writers record from several threads
            self.counts[cls] += 1
            self.first.setdefault(cls, example[:EXAMPLE_CHARS])

    def report(self) -> str:
        """One line per failure class with its count and first example ("" when clean)."""
        return "\n".join(f"{self.surface} / {cls}: {text}" for cls, text in self.failures().items())

    def failures(self) -> dict[str, str]:
        """Class -> "count; first example" for each class that has failures (empty: clean)."""
        return {cls: f"{self.counts[cls]}; first: {self.first[cls]}"
                for cls in CLASSES if self.counts[cls]}


def classify_violations(tally: Tally, lines: list[str], after: str) -> None:
    """Invariant checker lines -> classes: a request past allocatable or a device the node does
    not advertise (a MIG instance a layout change removed) is an over-committed node; one device
    or GPU share held twice a double-held device; an unreadable record a poisoned read."""
    for line in lines:
        cls = (POISONED if "cannot be read" in line or "unreadable" in line else
               OVER_COMMITTED if " requested " in line or "does not advertise" in line else DOUBLE_HELD)
        tally.record(cls, f"{line} (after {after})")


def crash_text(text: str) -> bool:
    return "Traceback" in text or "internal error" in text


class CliWorker:
    """One ``tests.fuzz.cli_worker`` child under the memory limit; ``call`` sends one request."""

    def __init__(self) -> None:
        self.log = tempfile.NamedTemporaryFile(prefix="gpusched-fuzz-worker-", suffix=".log")
        self.process = self._start()

    def _start(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", "tests.fuzz.cli_worker"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=self.log, cwd=REPO_ROOT,
                                env=child_env(), preexec_fn=limit_memory)

    def call(self, request: dict[str, Any], idle_limit: float = IDLE_HANG_S) -> tuple[dict[str, Any], Waited]:
        """The worker's answer (``{"died": ...}`` when it died, ``{}`` on a hang) and the wait."""
        assert self.process.stdin is not None and self.process.stdout is not None
        if self.process.poll() is not None:
            self.process = self._start()
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass
        stdout = self.process.stdout

        def answered(timeout: float) -> bool:
            return bool(select.select([stdout], [], [], timeout)[0])

        waited = wait_for_answer(self.process.pid, answered, idle_limit)
        if waited.hang:
            kill(self.process)
            return {}, waited
        line = stdout.readline()
        if not line:
            code = self.process.wait()
            self.log.seek(0)
            tail = self.log.read().decode(errors="replace")[-400:]
            self.log.truncate(0)
            return {"died": f"worker exited {code}: {tail}"}, waited
        return json.loads(line), waited

    def cli(self, *argv: str, idle_limit: float = IDLE_HANG_S) -> tuple[dict[str, Any], Waited]:
        return self.call({"op": "cli", "argv": list(argv)}, idle_limit)

    def close(self) -> None:
        if self.process.poll() is None and self.process.stdin is not None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                kill(self.process)
        self.log.close()


def state_copy(base: Path, to: Path) -> Path:
    """A fresh copy of a prepared state file (and nothing of an older one at ``to``)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{to}{suffix}").unlink(missing_ok=True)
    to.write_bytes(base.read_bytes())
    return to
