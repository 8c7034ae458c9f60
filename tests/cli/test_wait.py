"""``gpusched wait`` through the console script: kubectl's ``cmd/wait`` (``wait.go`` IsDeleted and
conditionFuncFor, ``condition.go`` checkCondition, ``json.go`` JSONPathWait) on the preemption lab,
the cluster clock following an injected wall clock while it waits.

A thread steps the injected wall clock (``GPUSCHED_CLOCK=file:PATH``) by 5 s until the command
ends, so each case's outcome does not depend on when the command read its start: the victim's
30 s grace period ends after some steps, and a condition that never comes meets ``--timeout``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.cli.runner import Gpusched, run_stepping_wall

LOW = "examples/preemption/1-low-priority-batch.yaml"
HIGH = "examples/preemption/2-high-priority-training.yaml"


@pytest.fixture(scope="module")
def lab_state(tmp_path_factory):
    """The lab after step 2 (low-batch Terminating, urgent-training Pending), copied per case."""
    g = Gpusched(tmp_path_factory.mktemp("lab"))
    g.cluster()
    g.ok("apply", "-f", LOW)
    g.ok("apply", "-f", HIGH)
    return g.state


@pytest.fixture
def g(tmp_path, lab_state):
    import sqlite3

    g = Gpusched(tmp_path)
    with sqlite3.connect(lab_state) as source, sqlite3.connect(g.state) as target:
        source.backup(target)
    source.close()
    target.close()
    return g


@dataclass(frozen=True)
class WaitCase:
    id: str
    args: tuple[str, ...]
    code: int
    out: str
    err: str = ""


WAIT_CASES = [
    WaitCase("IsDeleted-the-victim-goes-after-its-grace-period",
             ("--for=delete", "pod/low-batch", "--timeout=5m"), 0, "pod/low-batch condition met\n"),
    WaitCase("condition-Ready-of-the-preemptor", ("--for=condition=Ready", "pod/urgent-training",
                                                  "--timeout=5m"), 0,
             "pod/urgent-training condition met\n"),
    WaitCase("jsonpath-phase-Running", ("--for=jsonpath={.status.phase}=Running", "pod",
                                        "urgent-training", "--timeout=5m"), 0,
             "pod/urgent-training condition met\n"),
    WaitCase("timeout-on-a-condition-that-never-comes",
             ("--for=condition=Ready=false", "pod/urgent-training", "--timeout=20s"), 1, "",
             "error: timed out waiting for the condition on pods/urgent-training\n"),
    WaitCase("timeout-zero-checks-once", ("--for=condition=Ready", "pod/urgent-training",
                                          "--timeout=0"), 1, "",
             "error: condition not met for pods/urgent-training\n"),
    WaitCase("delete-of-an-object-never-there-prints-nothing", ("--for=delete", "pod/nope"), 0, ""),
    WaitCase("condition-on-a-missing-object", ("--for=condition=Ready", "pod/nope"), 1, "",
             'error: pods "nope" not found\n'),
    WaitCase("conditionFuncFor-unrecognized", ("--for=ready", "pod/low-batch"), 1, "",
             'error: unrecognized condition: "ready"\n'),
    WaitCase("jsonpath-value-missing-after-equals", ("--for=jsonpath={.status.phase}=", "pod/x"), 1,
             "", "error: jsonpath wait has to have a value after equal sign, like "
                 "--for=jsonpath='{.status.readyReplicas}'=3\n"),
    WaitCase("timeout-not-a-duration", ("--for=delete", "pod/low-batch", "--timeout=soon"), 1, "",
             'error: invalid argument "soon" for "--timeout" flag: time: invalid duration "soon"\n'),
]


@pytest.mark.parametrize("case", WAIT_CASES, ids=lambda c: c.id)
def test_wait_as_kubectls_while_the_clock_follows_the_wall_clock(g, tmp_path, case):
    result = run_stepping_wall(g, tmp_path, "wait", *case.args)
    assert (result.returncode, result.stdout, result.stderr) == (case.code, case.out, case.err)
