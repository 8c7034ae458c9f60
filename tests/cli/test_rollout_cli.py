"""``gpusched rollout`` and ``scale`` through the console script: kubectl's lines
(kubectl polymorphichelpers/rollout_status.go DeploymentStatusViewer / DaemonSetStatusViewer)."""

from __future__ import annotations

import pytest
import yaml

from tests.cli.runner import Gpusched


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
    # rollout_status.go: updatedReplicas (1) < replicas (3)
    assert g.run("rollout", "status", "deployment/web").out == (
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
