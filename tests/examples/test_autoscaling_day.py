"""examples/autoscaling-day: the documented outcome (docs/autoscaling.md) of a day of diurnal load
on L4 nodes, autoscaled 1..6 and fixed at 6 (issue 11 "Done when")."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "examples" / "autoscaling-day" / "day.py"


def run_day(*args: str) -> dict[str, list[str]]:
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=1800)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["HOUR", "REPLICAS", "NODES", "PENDING(pod-min)", "COST(USD)"]
    return {line.split()[0]: line.split()[1:] for line in lines[1:]}


@pytest.mark.parametrize("args, nodes_at, pending, total", [
    # nodes follow the replicas (scale-down 10 minutes after unneeded), pods wait 3 minutes per
    # scale-up (the provisioning delay), node-hours 84.5 x 0.60.
    pytest.param((), {"03:00": "1", "15:00": "6", "23:00": "2"}, "18", "50.72", id="autoscaled"),
    pytest.param(("--fixed",), {"03:00": "6", "15:00": "6", "23:00": "6"}, "0", "86.40", id="fixed"),
])
def test_day(args, nodes_at, pending, total):
    rows = run_day(*args)
    assert len(rows) == 25
    for hour, nodes in nodes_at.items():
        assert rows[hour][1] == nodes
    assert rows["15:00"][0] == "6" and rows["03:00"][0] == "1"
    assert rows["TOTAL"] == [pending, total]
