"""Process helpers for the live tests: free ports, start/stop by PID, polling (no fixed sleeps)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from typing import Callable

from tests.conftest import CEILING_S

GPUSCHED = [sys.executable, "-m", "gpusched"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def poll(check: Callable[[], object], timeout: float = CEILING_S, what: str = "condition") -> object:
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = check()
        except OSError:
            result = None
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=CEILING_S) as response:
        return response.read()


def stop(proc: subprocess.Popen) -> int:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=CEILING_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=CEILING_S)
    return proc.returncode
