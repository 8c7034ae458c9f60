"""A tiny driver for the real ``gpusched`` console script, shared by the CLI and example tests.

``Gpusched(tmp_path)`` runs ``gpusched --state <tmp>/state.db ARGS...`` in a subprocess from the
repository root (so ``examples/...`` paths work) and returns a ``Result`` with the exit code,
stdout and stderr; ``.json(...)`` parses ``-o json`` output.

``.cluster()`` on a new state file copies (SQLite's backup) a state file on which the base
cluster was applied once per test process, instead of applying it again: the same rows, and the
same output as that apply; on an existing state file it applies for real.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import CEILING_S, POLL_S, REPO_ROOT, gpusched_executable, run_process

BASE_CLUSTER = ("apply", "-f", "examples/cluster.yaml", "-f", "examples/priority-classes.yaml")


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()


class Gpusched:
    def __init__(self, tmp_path: Path) -> None:
        self.state = str(tmp_path / "state.db")
        self.exe = gpusched_executable()
        self.cwd = REPO_ROOT      # where commands run (sbatch writes its slurm-%j.out here)

    def run(self, *args: str, stdin: str | None = None, state: bool = True) -> Result:
        argv = [self.exe, *(("--state", self.state) if state else ()), *args]
        proc = run_process(argv, input=stdin, cwd=self.cwd)
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def ok(self, *args: str, stdin: str | None = None) -> Result:
        result = self.run(*args, stdin=stdin)
        assert result.code == 0, f"gpusched {' '.join(args)} failed: {result.err}"
        return result

    def json(self, *args: str) -> dict:
        return json.loads(self.ok(*args, "-o", "json").out)

    def fails(self, *args: str, stdin: str | None = None, code: int = 1) -> str:
        """Run a command that must fail with ``code`` and one line on stderr; return that line."""
        result = self.run(*args, stdin=stdin)
        assert result.code == code, f"expected exit {code}, got {result.code}: {result.out}{result.err}"
        assert "Traceback" not in result.err
        if code == 1:
            assert result.err.count("\n") == 1 and result.err.startswith("error: "), result.err
        return result.err.strip()

    def cluster(self) -> Result:
        if Path(self.state).exists():
            return self.ok(*BASE_CLUSTER)
        template, applied = _base_cluster()
        with sqlite3.connect(template) as source, sqlite3.connect(self.state) as target:
            source.backup(target)
        source.close()
        target.close()
        return applied

    def pods(self, namespace: str = "default") -> dict[str, dict]:
        items = self.json("get", "pods", "-n", namespace)["items"]
        return {p["metadata"]["name"]: p for p in items}


_BASE: list[tuple[str, Result]] = []     # this process's base-cluster state file, built once


def _base_cluster() -> tuple[str, Result]:
    if not _BASE:
        folder = Path(tempfile.mkdtemp(prefix="gpusched-base-cluster-"))
        atexit.register(shutil.rmtree, folder, True)
        _BASE.append((str(folder / "state.db"), Gpusched(folder).ok(*BASE_CLUSTER)))
    return _BASE[0]


def pod_scheduled_condition(pod: dict) -> dict:
    return next(c for c in pod["status"].get("conditions", []) if c["type"] == "PodScheduled")


def set_wall(path: Path, seconds: float) -> None:
    """Write an injected wall clock (``GPUSCHED_CLOCK=file:PATH``) whole: a reader never sees a
    half-written file."""
    partial = path.with_suffix(".partial")
    partial.write_text(f"{seconds}\n")
    os.replace(partial, path)


def run_stepping_wall(g: Gpusched, tmp_path: Path, *args: str,
                      step: float = 5.0) -> subprocess.CompletedProcess:
    """``gpusched ARGS`` on an injected wall clock that a thread steps by ``step`` seconds
    until the command ends (a waiting command's outcome then does not depend on when it read
    its start); under the suite's ceiling."""
    wall = tmp_path / "wall"
    set_wall(wall, 1000)
    process = subprocess.Popen([g.exe, "--state", g.state, *args], text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO_ROOT,
                               env=dict(os.environ, GPUSCHED_CLOCK=f"file:{wall}"))
    done = threading.Event()

    def stepping() -> None:
        now = 1000.0
        while not done.wait(POLL_S):
            now += step
            set_wall(wall, now)

    threading.Thread(target=stepping, daemon=True).start()
    try:
        out, err = process.communicate(timeout=CEILING_S)
    finally:
        done.set()
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)
