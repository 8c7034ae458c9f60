"""The Cluster Autoscaler through the console script: apply refusals as one line, get nodepools
columns, events and ``gpusched cost --by nodepool`` (issue 11 points 1 and 5)."""

from __future__ import annotations

import pytest

from tests.cli.runner import Gpusched
from tests.conftest import REPO_ROOT

DAY = REPO_ROOT / "examples" / "autoscaling-day"


@pytest.fixture
def g(tmp_path) -> Gpusched:
    return Gpusched(tmp_path)


def test_scale_up_shows_in_get_nodepools_events_and_cost(g):
    g.ok("apply", "-f", str(DAY / "nodepool-autoscaled.yaml"), "-f", str(DAY / "deployment.yaml"))
    g.ok("scale", "deployment", "inference", "--replicas", "3")
    assert g.ok("get", "nodepools").lines[1].split()[:4] == ["l4", "1", "1", "6"]
    events = g.ok("get", "events").out
    assert "TriggeredScaleUp" in events and "pod triggered scale-up: [{l4 1->3 (max: 6)}]" in events
    g.ok("advance", "3m")
    assert g.ok("get", "nodepools").lines[1].split()[:4] == ["l4", "3", "1", "6"]
    g.ok("advance", "57m")
    lines = g.ok("cost", "--by", "nodepool").lines
    assert lines[0].split() == ["NODEPOOL", "MODEL", "NODES", "NODE-HOURS", "GPU-HOURS", "COST(USD)"]
    # l4-1 for 1 h, l4-2 and l4-3 for 57 min each: 2.90 node-hours at 0.60 USD.
    assert lines[1].split() == ["l4", "L4", "3", "2.90", "2.90", "1.74"]


def test_invalid_bounds_are_one_line(g, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text((DAY / "nodepool-autoscaled.yaml").read_text().replace("maxNodes: 6", "maxNodes: 0"))
    line = g.fails("apply", "-f", str(bad))
    assert "spec.minNodes: Invalid value: 1: must be less than or equal to spec.maxNodes (0)" in line
    assert g.ok("get", "nodepools").out == ""
