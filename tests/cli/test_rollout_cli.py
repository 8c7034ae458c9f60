"""``gpusched rollout`` and ``scale`` through the console script: kubectl's lines
(kubectl polymorphichelpers/rollout_status.go DeploymentStatusViewer / DaemonSetStatusViewer).

``rollout status`` watches as kubectl's ``cmd/rollout/rollout_status.go`` Run does (UntilWithSync:
the status line at each change until done; ``--timeout`` ends it with "timed out waiting for the
condition"), the cluster clock following an injected wall clock (``GPUSCHED_CLOCK=file:PATH``)
while it waits: the test steps the wall, never sleeps.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

import pytest
import yaml

from tests.cli.runner import Gpusched, set_wall
from tests.conftest import CEILING_S, REPO_ROOT


@pytest.fixture
def g(tmp_path):
    return Gpusched(tmp_path)


def _apply(g: Gpusched, tmp_path, *bodies: dict) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump_all(bodies))
    assert g.run("apply", "-f", str(path)).code == 0


POOL = {"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "gpu"},
        "spec": {"count": 1, "cpu": "8", "memory": "32Gi", "gpu": {"model": "A100-40GB", "count": 3}}}


def _deploy(image: str, replicas: int = 3) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                         {"name": "c", "image": image,
                          "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}}


def test_status_while_the_surge_pod_waits_then_deadline(g, tmp_path):
    _apply(g, tmp_path, POOL, _deploy("v1"))
    _apply(g, tmp_path, _deploy("v2"))
    # rollout_status.go: updatedReplicas (1) < replicas (3); --watch=false: the line, no wait
    assert g.run("rollout", "status", "deployment/web", "--watch=false").out == (
        'Waiting for deployment "web" rollout to finish: 1 out of 3 new replicas have been '
        "updated...\n")
    g.run("advance", "11m")
    done = g.run("rollout", "status", "deployment/web")
    assert (done.code, done.err) == (1, 'error: deployment "web" exceeded its progress deadline\n')


@pytest.mark.parametrize("args, code, out, err", [
    pytest.param(("scale", "job/train", "--replicas=3"), 0, "job.batch/train scaled\n", "",
                 id="scale-job-parallelism"),
    pytest.param(("scale", "ds/agent", "--replicas=3"), 1, "",
                 "error: cannot scale a DaemonSet: only deployments, replicasets and jobs scale\n",
                 id="scale-daemonset-refused"),
    pytest.param(("rollout", "status", "job/train"), 1, "",
                 "error: no rollout has been implemented for {batch Job} in gpusched "
                 "(deployments and daemonsets)\n", id="rollout-of-a-job-refused"),
    pytest.param(("rollout", "undo", "deployment/nope"), 1, "",
                 'error: deployments.apps "nope" not found\n',
                 id="rollout-missing-object"),
    pytest.param(("rollout", "undo", "deployment/web"), 1, "",
                 'error: no rollout history found for deployment "web"\n',
                 id="rollback.go-no-previous-revision"),
])
def test_scale_and_rollout_errors(g, tmp_path, args, code, out, err):
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train"},
           "spec": {"template": {"spec": {"restartPolicy": "Never",
                                          "containers": [{"name": "c", "image": "x"}]}}}}
    agent = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
             "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": {
                 "metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "a", "image": "a"}]}}}}
    _apply(g, tmp_path, POOL, _deploy("v1", 1), job, agent)
    result = g.run(*args)
    assert (result.code, result.out, result.err) == (code, out, err)


def test_history_revision_shows_the_pod_template(g, tmp_path):
    _apply(g, tmp_path, POOL, _deploy("v1", 1))
    _apply(g, tmp_path, _deploy("v2", 1))
    out = g.run("rollout", "history", "deployment/web", "--revision=1").out
    assert out.startswith("deployment.apps/web with revision #1\nPod Template:\n")
    assert "image: v1" in out and "image: v2" not in out


# ---- status watches while the clock follows the wall clock ---------------------------------------


def _status_watch(g: Gpusched, tmp_path, wall_after: float, *flags: str) -> tuple[int, list[str], str]:
    """``rollout status deployment/web`` with the wall clock at 1000 until its first line, then
    at ``wall_after``; its exit code, stdout lines and stderr."""
    wall = tmp_path / "wall"
    set_wall(wall, 1000)
    env = dict(os.environ, GPUSCHED_CLOCK=f"file:{wall}")
    process = subprocess.Popen([g.exe, "--state", g.state, "rollout", "status", "deployment/web", *flags],
                               text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO_ROOT,
                               env=env)
    assert process.stdout is not None
    first = process.stdout.readline()      # the status before any wall time passes
    set_wall(wall, wall_after)
    out, err = process.communicate(timeout=CEILING_S)
    return process.returncode, [first.rstrip("\n")] + out.splitlines(), err


@dataclass(frozen=True)
class WatchCase:
    id: str
    gpus: int                 # the node's GPUs (one per replica)
    replicas: int
    wall_after: float         # wall seconds after 1000 when the watch has printed its first line
    flags: tuple[str, ...]
    code: int
    last: str                 # the last stdout line (code 0) or the stderr line (code 1)


WATCH_CASES = [
    # maxUnavailable 25 % of 4 = 1: an old pod is Terminating for its 30 s grace period before
    # each new pod fits; 1,000 s of wall time let the rollout finish.
    WatchCase("grace-periods-end-while-it-waits-then-done", 4, 4, 2000.0, (), 0,
              'deployment "web" successfully rolled out'),
    # 3 GPUs, 3 replicas: the surge pod never fits and nothing may be unavailable.
    WatchCase("progress-deadline-passes-while-it-waits", 3, 3, 1700.0, (), 1,
              'error: deployment "web" exceeded its progress deadline'),
    WatchCase("timeout-counts-wall-time", 3, 3, 1301.0, ("--timeout=5m",), 1,
              "error: timed out waiting for the condition"),
]


@pytest.mark.parametrize("case", WATCH_CASES, ids=lambda c: c.id)
def test_status_watches_while_the_clock_follows_the_wall_clock(g, tmp_path, case):
    pool = {**POOL, "spec": {**POOL["spec"], "gpu": {"model": "A100-40GB", "count": case.gpus}}}
    _apply(g, tmp_path, pool, _deploy("v1", case.replicas))
    _apply(g, tmp_path, _deploy("v2", case.replicas))
    code, lines, err = _status_watch(g, tmp_path, case.wall_after, *case.flags)
    assert lines[0].startswith('Waiting for deployment "web" rollout to finish: '), lines
    assert code == case.code, (lines, err)
    assert (lines[-1] if code == 0 else err.rstrip("\n")) == case.last, (lines, err)


@pytest.mark.parametrize("flag, message", [
    ("--watch=maybe", 'error: invalid argument "maybe" for "-w, --watch" flag: strconv.ParseBool: '
                      'parsing "maybe": invalid syntax'),
    ("--timeout=soon", 'error: invalid argument "soon" for "--timeout" flag: time: invalid duration '
                       '"soon"'),
], ids=["watch-not-a-bool", "timeout-not-a-duration"])
def test_status_flags_that_do_not_parse_are_pflags_line(g, tmp_path, flag, message):
    _apply(g, tmp_path, POOL, _deploy("v1", 1))
    assert g.fails("rollout", "status", "deployment/web", flag) == message
