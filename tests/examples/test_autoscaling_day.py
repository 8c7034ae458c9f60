"""examples/autoscaling-day: the documented outcome (docs/autoscaling.md) of a day of diurnal
inference load with an HPA on gpu_utilization, on L4 nodes autoscaled 1..6 and fixed at 6
(issue 11 "Done when")."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import CEILING_S, REPO_ROOT, run_process

SCRIPT = REPO_ROOT / "examples" / "autoscaling-day" / "day.py"


def run_day(*args: str) -> dict[str, list[str]]:
    done = run_process([sys.executable, str(SCRIPT), *args], cwd=REPO_ROOT,
                       ceiling=5 * CEILING_S)     # a simulated day: minutes of CPU on a loaded machine
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["HOUR", "REPLICAS", "NODES", "PENDING(pod-min)", "COST(USD)"]
    return {line.split()[0]: line.split()[1:] for line in lines[1:]}


@pytest.mark.parametrize("args, nodes_at, pending, total", [
    # The nodes follow the HPA's replicas; a pod waits the 3-minute provisioning delay at each
    # scale-up (6 steps up over the day: 18 pod-minutes); 80.8 node-hours x 0.60.
    pytest.param((), {"03:00": "1", "16:00": "6", "23:00": "2"}, "18", "48.47", id="autoscaled"),
    pytest.param(("--fixed",), {"03:00": "6", "16:00": "6", "23:00": "6"}, "0", "86.40", id="fixed"),
])
def test_day(args, nodes_at, pending, total):
    rows = run_day(*args)
    assert len(rows) == 25
    replicas = [int(rows[f"{h:02d}:00"][0]) for h in range(24)]
    assert min(replicas) == 1 and max(replicas) == 6          # the HPA's range over the day
    assert rows["03:00"][0] == "1" and rows["16:00"][0] == "6"
    for hour, nodes in nodes_at.items():
        assert rows[hour][1] == nodes
    assert rows["TOTAL"] == [pending, total]
