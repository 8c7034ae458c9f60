"""A tiny driver for the real ``gpusched`` console script, shared by the CLI and example tests.

``Gpusched(tmp_path)`` runs ``gpusched --state <tmp>/state.db ARGS...`` in a subprocess from the
repository root (so ``examples/...`` paths work) and returns a ``Result`` with the exit code,
stdout and stderr; ``.json(...)`` parses ``-o json`` output.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO_ROOT, gpusched_executable, run_process

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
        return self.ok(*BASE_CLUSTER)

    def pods(self, namespace: str = "default") -> dict[str, dict]:
        items = self.json("get", "pods", "-n", namespace)["items"]
        return {p["metadata"]["name"]: p for p in items}


def pod_scheduled_condition(pod: dict) -> dict:
    return next(c for c in pod["status"].get("conditions", []) if c["type"] == "PodScheduled")
