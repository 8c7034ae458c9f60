"""The Cluster Autoscaler's traces through real kubectl against ``gpusched serve``: the pod events
(TriggeredScaleUp), the status ConfigMap in kube-system, and the NodePool's new nodes."""

from __future__ import annotations

import yaml

from tests.conftest import REPO_ROOT

DAY = REPO_ROOT / "examples" / "autoscaling-day"


def test_kubectl_sees_scale_up_events_status_configmap_and_nodes(serve):
    serve.kubectl("apply", "-f", str(DAY / "nodepool-autoscaled.yaml"), "-f", str(DAY / "deployment.yaml"))
    serve.kubectl("scale", "deployment", "inference", "--replicas=2")
    serve.settled()          # serve's controller process settles after the write is answered
    events = serve.kubectl("get", "events", "--field-selector", "reason=TriggeredScaleUp",
                           "-o", "jsonpath={.items[*].message}").stdout
    assert events == "pod triggered scale-up: [{l4 1->2 (max: 6)}]"
    status = yaml.safe_load(serve.kubectl("get", "configmap", "cluster-autoscaler-status", "-n",
                                          "kube-system", "-o", "jsonpath={.data.status}").stdout)
    assert status["nodeGroups"][0]["health"]["cloudProviderTarget"] == 2
    assert status["nodeGroups"][0]["scaleUp"]["status"] == "InProgress"
    serve.cli("advance", "3m")
    serve.settled()
    nodes = serve.kubectl("get", "nodes", "-l", "gpusched.io/nodepool=l4", "-o",
                          "jsonpath={.items[*].metadata.name}").stdout.split()
    assert nodes == ["l4-1", "l4-2"]
