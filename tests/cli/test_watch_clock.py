"""A waiting ``get -w`` lets the cluster clock follow the wall clock (``cluster.clock.wall``).

The lab (examples/preemption): a high-priority pod preempts a low-priority one, which stays
Terminating for its 30 s grace period (kubelet: ``terminationGracePeriodSeconds`` defaults to 30,
k8s.io/api core/v1 ``DefaultTerminationGracePeriodSeconds``) while the preemptor waits Pending,
nominated to the node. On a real cluster ``kubectl get pods -w`` then shows the victim go and the
preemptor bound and Running about 30 s later; before this change the embedded CLI's watch showed
them Terminating and Pending for ever, as only ``gpusched advance`` moved the clock.

The wall clock is injected (``GPUSCHED_CLOCK=file:PATH``): the test writes 1000 then 1031, so
exactly 31 s pass on the cluster clock, whatever the machine's load; every wait has the suite's
ceiling and names the lines seen.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from tests.cli.runner import Gpusched, set_wall
from tests.conftest import CEILING_S, REPO_ROOT, wait_until

LOW = "examples/preemption/1-low-priority-batch.yaml"
HIGH = "examples/preemption/2-high-priority-training.yaml"


class Watcher:
    """``gpusched get pods -w`` in a subprocess, its stdout lines gathered on a thread."""

    def __init__(self, g: Gpusched, wall_file: Path, *args: str) -> None:
        env = dict(os.environ, GPUSCHED_CLOCK=f"file:{wall_file}")
        self.process = subprocess.Popen([g.exe, "--state", g.state, "get", "pods", "-w", *args],
                                        text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        cwd=REPO_ROOT, env=env)
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def rows(self, name: str) -> list[list[str]]:
        return [line.split() for line in list(self.lines) if line.split()[:1] == [name]]

    def wait_for(self, what: str, check) -> None:
        wait_until(lambda: check() or self.process.poll() is not None, what, lambda: self.lines)
        assert self.process.poll() is None, f"get -w ended: {self.process.stderr.read()}"

    def stop(self) -> str:
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=CEILING_S)
        assert self.process.stderr is not None
        return self.process.stderr.read()


@pytest.fixture
def preempted(tmp_path):
    """The lab after step 2: low-batch Terminating, urgent-training Pending, nominated."""
    g = Gpusched(tmp_path)
    g.cluster()
    g.ok("apply", "-f", LOW)
    g.ok("apply", "-f", HIGH)
    pods = g.pods()
    assert pods["low-batch"]["metadata"].get("deletionTimestamp")
    assert pods["urgent-training"]["status"]["phase"] == "Pending"
    wall = tmp_path / "wall"
    set_wall(wall, 1000)
    return g, wall


def _status(row: list[str]) -> str:
    return row[2]       # NAME READY STATUS RESTARTS AGE


def test_watch_after_preemption_shows_the_victim_gone_and_the_preemptor_running(preempted):
    g, wall = preempted
    watcher = Watcher(g, wall)
    try:
        watcher.wait_for("the listed pods", lambda: watcher.rows("low-batch") and watcher.rows("urgent-training"))
        assert _status(watcher.rows("low-batch")[0]) == "Terminating"
        assert _status(watcher.rows("urgent-training")[0]) == "Pending"
        set_wall(wall, 1031)      # the grace period (30 s) ends while the watch waits
        watcher.wait_for("urgent-training Running",
                         lambda: any(_status(r) == "Running" for r in watcher.rows("urgent-training")))
    finally:
        stderr = watcher.stop()
    assert "Traceback" not in stderr
    assert "low-batch" not in g.pods()
    assert g.pods()["urgent-training"]["spec"]["nodeName"] == "gpu-node-1"
    assert g.ok("advance", "0s").out.endswith("now 2026-01-01T00:00:31Z\n")


def test_two_waiting_commands_move_the_clock_once(preempted):
    """The state file records the wall time the clock last followed: two watches waiting at
    once let 31 s pass, not 62."""
    g, wall = preempted
    watchers = [Watcher(g, wall), Watcher(g, wall, "-o", "name")]
    try:
        watchers[0].wait_for("the listed pods", lambda: watchers[0].rows("urgent-training"))
        watchers[1].wait_for("the listed pods", lambda: "pod/urgent-training" in watchers[1].lines)
        set_wall(wall, 1031)
        watchers[0].wait_for("urgent-training Running",
                             lambda: any(_status(r) == "Running" for r in watchers[0].rows("urgent-training")))
    finally:
        for watcher in watchers:
            assert "Traceback" not in watcher.stop()
    assert g.ok("advance", "0s").out.endswith("now 2026-01-01T00:00:31Z\n")


@pytest.mark.parametrize("setting, message", [
    ("sometimes", "error: GPUSCHED_CLOCK must be wall, frozen or file:PATH, got 'sometimes'"),
    ("file:", "error: GPUSCHED_CLOCK must be wall, frozen or file:PATH, got 'file:'"),
], ids=["unknown-word", "file-without-path"])
def test_a_bad_clock_setting_is_one_line_before_anything_is_printed(tmp_path, setting, message):
    g = Gpusched(tmp_path)
    g.cluster()
    result = subprocess.run([g.exe, "--state", g.state, "get", "pods", "-w"], text=True,
                            capture_output=True, cwd=REPO_ROOT, timeout=CEILING_S,
                            env=dict(os.environ, GPUSCHED_CLOCK=setting))
    assert (result.returncode, result.stdout, result.stderr) == (1, "", message + "\n")
