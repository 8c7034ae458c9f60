"""Suite-wide fixtures: where the repository and the shared data live.

CI runs a fresh clone with ``../shared`` beside it, so shared data is found relative to the
repository root, never by an absolute path.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# A new state file's clock starts at the wall-clock time unless pinned (gpusched --start /
# $GPUSCHED_START): the suite pins it, since many cases read timestamps of the 2026-01-01 epoch
# (tests/cli/test_commands.py "now 2026-01-01T01:30:00Z", test_controllers completionTime, ...).
# Subprocesses (the CLI, serve) inherit it; tests/cli/test_clock_start.py and
# tests/server/test_realtime_clock.py remove it.
os.environ.setdefault("GPUSCHED_START", "2026-01-01T00:00:00Z")
# Bytecode: with PYTHONDONTWRITEBYTECODE set (some shells and CI images set it), each of the
# suite's thousands of `gpusched` subprocesses compiles its ~140 modules again, about half of a
# short command's CPU time (0.5 of 1.05 s for `apply -f examples/cluster.yaml`). The suite
# writes bytecode instead to a cache outside the source folders (.cache/pycache, ignored by
# git), for its subprocesses (the environment) and for this process (sys.*).
if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
    os.environ["PYTHONPYCACHEPREFIX"] = str(REPO_ROOT / ".cache" / "pycache")
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]
    sys.dont_write_bytecode = False
SHARED_DIR = Path(os.environ.get("GPUSCHED_SHARED", REPO_ROOT.parent / "shared"))
TRACE_DIR = SHARED_DIR / "data" / "alibaba-gpu-v2023"
PUBLISHED_DIR = SHARED_DIR / "data" / "fgd-published"


# Ceilings, not budgets. On a loaded CI machine (load 6-12 on 2 cores) a command that
# takes one second on a quiet one can take a minute, so no test gives a subprocess, a wait or an
# HTTP call a budget that load can exceed: each gets this one ceiling, which only a state that
# never comes (a hang, a deadlock, a lost event) reaches, and then fails naming the state it saw.
CEILING_S = 600.0
CEILING_MS = int(CEILING_S * 1000)          # Playwright counts in milliseconds
POLL_S = 0.05                               # polling interval while waiting for a state


def wait_until(check: Callable[[], Any], what: str, seen: Callable[[], object] | None = None,
               ceiling: float = CEILING_S, interval: float = POLL_S) -> Any:
    """Poll ``check`` until it returns something truthy and return that. Past ``ceiling`` fail
    with ``what`` was awaited and the state seen: ``seen()`` if given, else the last value."""
    end = time.monotonic() + ceiling
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            state = seen() if seen is not None else value
            raise AssertionError(f"waited {ceiling:.0f} s for {what}; last seen: {state!r}")
        time.sleep(interval)


def run_process(argv: list[str], ceiling: float = CEILING_S, **kwargs: Any) -> subprocess.CompletedProcess:
    """``subprocess.run(argv, capture_output=True, text=True, **kwargs)`` under the ceiling (a
    few commands that take minutes when quiet pass a multiple of it); one still running at the
    ceiling fails naming the command and what it had written."""
    kwargs.setdefault("text", True)
    if "stdout" not in kwargs and "stderr" not in kwargs:
        kwargs["capture_output"] = True
    try:
        return subprocess.run(argv, timeout=ceiling, **kwargs)
    except subprocess.TimeoutExpired as err:
        raise AssertionError(f"{' '.join(map(str, argv))} still running after {ceiling:.0f} s; "
                             f"stdout: {_tail(err.stdout)!r}; stderr: {_tail(err.stderr)!r}") from None


def _tail(output: str | bytes | None, chars: int = 2000) -> str:
    if isinstance(output, bytes):
        output = output.decode(errors="replace")
    return (output or "")[-chars:]


def gpusched_executable() -> str:
    """The console script of the interpreter running the tests (the venv's)."""
    candidate = Path(sys.executable).with_name("gpusched")
    if candidate.exists():
        return str(candidate)
    found = shutil.which("gpusched")
    if not found:
        raise RuntimeError("the gpusched console script is not installed (run `make test`)")
    return found


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED_DIR.is_dir():
        pytest.fail(f"shared data folder {SHARED_DIR} is missing (expected ../shared beside the repo)")
    return SHARED_DIR


@pytest.fixture(scope="session")
def trace_dir(shared_dir: Path) -> Path:
    return shared_dir / "data" / "alibaba-gpu-v2023"


@pytest.fixture(scope="session")
def published_dir(shared_dir: Path) -> Path:
    return shared_dir / "data" / "fgd-published"



SHARED_WORDS = re.compile(r"\b(shared_dir|trace_dir|published_dir|TRACE_DIR|PUBLISHED_DIR)\b")


def _files_reading_shared() -> list[Path]:
    here = Path(__file__).resolve()
    return [p for p in sorted(REPO_ROOT.joinpath("tests").rglob("test_*.py"))
            if p != here and SHARED_WORDS.search(p.read_text(encoding="utf-8"))]


def _selected(config, path: Path) -> bool:
    args = [a.split("::", 1)[0] for a in config.args] or ["."]
    roots = [Path(config.invocation_params.dir, a).resolve() for a in args]
    return any(path == root or root in path.parents for root in roots)


def pytest_configure(config) -> None:
    """Without the shared data folder, a run that selects tests reading it stops with one line
    (as ``make test`` does before pytest starts) instead of one error per test. Checked once, in
    the main process (before xdist starts its workers)."""
    if hasattr(config, "workerinput") or (SHARED_DIR / "data").is_dir():
        return
    if any(_selected(config, path) for path in _files_reading_shared()):
        pytest.exit(f"{SHARED_DIR / 'data'} not found: clone the shared data folder beside the "
                    "repository as ../shared (or set GPUSCHED_SHARED=/path); see README, Getting "
                    "started", returncode=1)
