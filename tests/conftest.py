"""Suite-wide fixtures: where the repository and the shared data live.

CI runs a fresh clone with ``../shared`` beside it, so shared data is found relative to the
repository root, never by an absolute path.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# A new state file's clock starts at the wall-clock time unless pinned (gpusched --start /
# $GPUSCHED_START): the suite pins it, since many cases read timestamps of the 2026-01-01 epoch
# (tests/cli/test_commands.py "now 2026-01-01T01:30:00Z", test_controllers completionTime, ...).
# Subprocesses (the CLI, serve) inherit it; tests/cli/test_clock_start.py and
# tests/server/test_realtime_clock.py remove it.
os.environ.setdefault("GPUSCHED_START", "2026-01-01T00:00:00Z")
SHARED_DIR = Path(os.environ.get("GPUSCHED_SHARED", REPO_ROOT.parent / "shared"))
TRACE_DIR = SHARED_DIR / "data" / "alibaba-gpu-v2023"
PUBLISHED_DIR = SHARED_DIR / "data" / "fgd-published"


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
