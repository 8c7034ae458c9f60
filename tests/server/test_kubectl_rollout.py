"""Real kubectl 1.32 ``rollout`` and ``scale`` against ``gpusched serve``, compared line for line
with the embedded CLI on the same state file (kubectl staging/src/k8s.io/kubectl/pkg/cmd/rollout
and polymorphichelpers: rollout_status.go, objectrestarter.go, rollback.go, history.go; the
``scale`` subresource, autoscaling/v1 Scale)."""

from __future__ import annotations

import pytest
import yaml

pytestmark = pytest.mark.slow

CLUSTER = [
    {"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "gpu"},
     "spec": {"count": 2, "cpu": "8", "memory": "32Gi", "gpu": {"model": "A100-40GB", "count": 2}}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
     "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
              "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                  {"name": "c", "image": "v1",
                   "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}},
    {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
     "spec": {"selector": {"matchLabels": {"app": "agent"}},
              "template": {"metadata": {"labels": {"app": "agent"}},
                           "spec": {"containers": [{"name": "a", "image": "a1"}]}}}},
]

# (who runs it, arguments, expected stdout); "both" = kubectl and the embedded CLI print the same
STEPS = [
    ("both", ("rollout", "status", "deployment/web"), 'deployment "web" successfully rolled out\n'),
    ("both", ("rollout", "status", "ds/agent"), 'daemon set "agent" successfully rolled out\n'),
    ("both", ("rollout", "history", "deployment/web"),
     "deployment.apps/web \nREVISION  CHANGE-CAUSE\n1         <none>\n\n"),
    ("kubectl", ("rollout", "restart", "deployment/web"), "deployment.apps/web restarted\n"),
    ("gpusched", ("rollout", "restart", "deployment", "web"), "deployment.apps/web restarted\n"),
    ("both", ("rollout", "history", "deployment/web"),
     "deployment.apps/web \nREVISION  CHANGE-CAUSE\n1         <none>\n2         <none>\n"
     "3         <none>\n\n"),
    ("kubectl", ("rollout", "undo", "deployment/web", "--to-revision=1"),
     "deployment.apps/web rolled back\n"),
    ("both", ("rollout", "history", "deployment/web"),
     "deployment.apps/web \nREVISION  CHANGE-CAUSE\n2         <none>\n3         <none>\n"
     "4         <none>\n\n"),
    ("gpusched", ("rollout", "undo", "deployment/web"), "deployment.apps/web rolled back\n"),
    ("kubectl", ("rollout", "undo", "deployment/web", "--to-revision=5"),
     "deployment.apps/web skipped rollback (current template already matches revision 5)\n"),
    ("kubectl", ("rollout", "restart", "daemonset", "agent"), "daemonset.apps/agent restarted\n"),
    ("both", ("rollout", "history", "ds/agent"),
     "daemonset.apps/agent \nREVISION  CHANGE-CAUSE\n1         <none>\n2         <none>\n\n"),
    ("gpusched", ("rollout", "undo", "ds/agent"), "daemonset.apps/agent rolled back\n"),
    ("both", ("rollout", "status", "ds/agent"), 'daemon set "agent" successfully rolled out\n'),
    ("kubectl", ("scale", "deployment/web", "--replicas=2"), "deployment.apps/web scaled\n"),
    ("gpusched", ("scale", "deployment/web", "--replicas=1"), "deployment.apps/web scaled\n"),
]


def test_rollout_and_scale_match_kubectl(serve, tmp_path):
    manifest = tmp_path / "cluster.yaml"
    manifest.write_text(yaml.safe_dump_all(CLUSTER))
    serve.kubectl("apply", "-f", str(manifest))
    for who, args, expected in STEPS:
        if who in ("both", "kubectl"):
            assert serve.kubectl(*args).stdout == expected, ("kubectl", args)
        if who in ("both", "gpusched"):
            done = serve.gpusched(*args)
            assert (done.returncode, done.stdout, done.stderr) == (0, expected, ""), args
    serve.gpusched("advance", "1m")   # replaced pods finish their 30 s grace period
    pods = serve.kubectl("get", "pods", "-l", "app=web", "-o", "name").stdout.split()
    assert len(pods) == 1
    errors = serve.kubectl("rollout", "undo", "deployment/web", "--to-revision=99", check=False)
    assert errors.stderr.strip() == "error: unable to find specified revision 99 in history"
    mine = serve.gpusched("rollout", "undo", "deployment/web", "--to-revision=99")
    assert (mine.returncode, mine.stderr.strip()) == (1, errors.stderr.strip())
