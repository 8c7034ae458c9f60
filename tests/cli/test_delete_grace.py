"""``gpusched delete`` --grace-period / --force / --now, as kubectl's delete
(kubernetes ``staging/src/k8s.io/kubectl/pkg/cmd/delete/delete.go``: ``Complete`` turns
--grace-period=0 without --force into 1 and --force alone into 0, ``Validate`` refuses
--force with a positive period and prints the immediate-deletion warning, ``PrintObj`` says
``force deleted`` for period 0). Output checked against kubectl 1.32 itself."""

from __future__ import annotations

import pytest

from tests.cli.runner import Gpusched

WARNING = ("Warning: Immediate deletion does not wait for confirmation that the running resource "
           "has been terminated. The resource may continue to run on the cluster indefinitely.")


@pytest.fixture
def g(tmp_path) -> Gpusched:
    runner = Gpusched(tmp_path)
    runner.ok("apply", "-f", "examples/cluster.yaml")
    runner.ok("apply", "-f", "-", stdin="apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
                                  "spec: {containers: [{name: c, image: busybox}]}\n")
    return runner


@pytest.mark.parametrize("flags, line, warning, period", [
    pytest.param((), 'pod "p" deleted', False, 30, id="default-pod-terminationGracePeriodSeconds"),
    pytest.param(("--grace-period", "7"), 'pod "p" deleted', False, 7, id="grace-period-7"),
    pytest.param(("--now",), 'pod "p" deleted', False, 1, id="now-is-grace-period-1"),
    pytest.param(("--grace-period=0",), 'pod "p" deleted', False, 1,
                 id="Complete-grace-period-0-without-force-becomes-1"),
    pytest.param(("--force",), 'pod "p" force deleted', True, None, id="Complete-force-alone-is-0"),
    pytest.param(("--grace-period=0", "--force"), 'pod "p" force deleted', True, None,
                 id="Validate-immediate-deletion-warning"),
])
def test_delete_grace_flags(g, flags, line, warning, period):
    result = g.ok("delete", "pod", "p", *flags)
    assert result.out.strip() == line
    assert (WARNING in result.err) == warning
    pods = g.pods()
    if period is None:
        assert pods == {}
        return
    meta = pods["p"]["metadata"]
    assert meta["deletionGracePeriodSeconds"] == period
    status = {row.split()[0]: row.split()[2] for row in g.ok("get", "pods").lines[1:]}
    assert status == {"p": "Terminating"}
    g.ok("advance", f"{period}s")
    assert g.pods() == {}


@pytest.mark.parametrize("flags, message", [
    pytest.param(("--force", "--grace-period=5"),
                 "error: --force and --grace-period greater than 0 cannot be specified together",
                 id="Validate-force-with-positive-period"),
    pytest.param(("--now", "--grace-period=3"),
                 "error: --now and --grace-period cannot be specified together",
                 id="Complete-now-with-grace-period"),
])
def test_delete_refuses_conflicting_flags(g, flags, message):
    assert g.fails("delete", "pod", "p", *flags) == message
    assert "deletionTimestamp" not in g.pods()["p"]["metadata"]
