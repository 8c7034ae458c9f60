"""What the serve benchmarks share: running one source tree's ``gpusched serve`` on a free
loopback port and stopping it (bench_serve_load, bench_serve_stack, bench_serve_throughput)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path


def env_for(tree: Path) -> dict[str, str]:
    """The environment that makes ``python -m gpusched`` import ``tree``'s package."""
    return {**os.environ, "PYTHONPATH": str(tree)}


def start(tree: Path, state: Path, virtual: bool = True) -> tuple[subprocess.Popen[str], int]:
    """Start ``tree``'s ``gpusched serve --port 0`` on ``state``; return it and its port."""
    command = [sys.executable, "-m", "gpusched", "--state", str(state), "serve", "--port", "0"]
    process = subprocess.Popen(command + (["--virtual-clock"] if virtual else []),
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               env=env_for(tree), cwd=tree)
    assert process.stdout is not None
    line = process.stdout.readline()
    return process, int(line.split("listening on ")[1].split()[0].rpartition(":")[2])


def stop(process: subprocess.Popen[str], timeout: float = 30) -> None:
    """SIGTERM (serve's graceful shutdown), then kill if it has not ended in ``timeout`` s."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
