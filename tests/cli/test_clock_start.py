"""Where a new state file's clock starts (issue 14 point 9): the wall-clock time, so AGE columns
and timestamps are real, unless ``--start`` / ``$GPUSCHED_START`` pins it (as the suite does)."""

from __future__ import annotations

import os
from datetime import datetime, timezone

import pytest

from tests.conftest import REPO_ROOT, gpusched_executable, run_process

POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n"


def run(tmp_path, *args: str, env_start: str | None = None, stdin: str | None = None):
    env = {k: v for k, v in os.environ.items() if k != "GPUSCHED_START"}
    if env_start is not None:
        env["GPUSCHED_START"] = env_start
    return run_process([gpusched_executable(), "--state", str(tmp_path / "s.db"), *args],
                       input=stdin, cwd=REPO_ROOT, env=env)


def created(tmp_path, **kw) -> str:
    import json
    done = run(tmp_path, "get", "pod", "p", "-o", "json", **kw)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["metadata"]["creationTimestamp"]


@pytest.mark.parametrize("flags, env_start, want", [
    pytest.param(("--start", "2030-05-06T07:08:09Z"), None, "2030-05-06T07:08:09Z", id="start-flag"),
    pytest.param((), "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", id="GPUSCHED_START"),
    pytest.param(("--start", "2027-01-01T00:00:00+00:00"), "2026-01-01T00:00:00Z",
                 "2027-01-01T00:00:00Z", id="flag-over-environment"),
])
def test_pinned_start(tmp_path, flags, env_start, want):
    done = run(tmp_path, *flags, "apply", "-f", "-", env_start=env_start, stdin=POD)
    assert done.returncode == 0, done.stderr
    assert created(tmp_path, env_start=env_start) == want
    # an existing file keeps its clock whatever --start says
    assert run(tmp_path, "--start", "2040-01-01T00:00:00Z", "advance", "1s").returncode == 0
    assert created(tmp_path) == want


def test_unpinned_new_state_starts_at_the_wall_clock(tmp_path):
    before = datetime.now(timezone.utc).replace(microsecond=0)
    done = run(tmp_path, "apply", "-f", "-", stdin=POD)
    assert done.returncode == 0, done.stderr
    stamp = datetime.strptime(created(tmp_path), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    assert before <= stamp <= datetime.now(timezone.utc)


def test_bad_start_is_one_line(tmp_path):
    done = run(tmp_path, "--start", "yesterday", "get", "pods")
    assert done.returncode == 1
    assert done.stderr == ('error: invalid start time "yesterday": want RFC 3339, e.g. '
                           '2026-01-01T00:00:00Z\n')
    assert not (tmp_path / "s.db").exists()
