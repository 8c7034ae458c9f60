"""Suite-wide fixtures: where the repository and the shared data live.

CI runs a fresh clone with ``../shared`` beside it, so shared data is found relative to the
repository root, never by an absolute path.
"""

from __future__ import annotations

import os
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
