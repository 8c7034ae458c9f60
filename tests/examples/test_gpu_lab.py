"""examples/gpu-lab through the embedded CLI: what each file's header promises.

The lab's steps: device-plugin ConfigMap in kube-system, the lab's nvidia.com/gpu=true label
and a label-selector taint on it, a dcgm-exporter DaemonSet on GPU nodes, and a Deployment with
its Service and PVC.
"""

from __future__ import annotations

import pytest

from tests.cli.runner import Gpusched

LAB = "examples/gpu-lab"


@pytest.fixture
def g(tmp_path) -> Gpusched:
    cli = Gpusched(tmp_path)
    cli.cluster()
    cli.ok("apply", "-f", f"{LAB}/1-device-plugin-config.yaml")
    cli.ok("label", "nodes", "-l", "nvidia.com/gpu.present=true", "nvidia.com/gpu=true")
    cli.ok("taint", "nodes", "-l", "nvidia.com/gpu=true", "nvidia.com/gpu=true:NoSchedule")
    return cli


def test_namespaces_and_cluster_furniture(tmp_path):
    cli = Gpusched(tmp_path)
    assert [line.split()[0] for line in cli.ok("get", "ns").lines[1:]] == [
        "default", "kube-node-lease", "kube-public", "kube-system"]


def test_device_plugin_config_in_kube_system_and_the_lab_label(g):
    nodes = {n["metadata"]["name"]: n for n in g.json("get", "nodes", "-l", "nvidia.com/gpu=true")["items"]}
    assert sorted(nodes) == ["gpu-node-1", "gpu-node-2", "gpu-node-3"]
    a100 = nodes["gpu-node-1"]
    assert a100["status"]["allocatable"]["nvidia.com/gpu"] == "16"
    assert a100["metadata"]["labels"]["nvidia.com/gpu.replicas"] == "2"
    assert a100["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB-SHARED"
    assert {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"} in a100["spec"]["taints"]
    g.ok("delete", "cm", "time-slicing-config-all", "-n", "kube-system")      # config changes again
    labels = g.json("get", "node", "gpu-node-1")["metadata"]["labels"]
    assert labels["nvidia.com/gpu"] == "true" and labels["nvidia.com/gpu.replicas"] == "1"


def test_taint_keeps_plain_pods_off_gpu_nodes(g):
    g.ok("apply", "-f", "examples/node-selector/pods.yaml")
    pods = g.json("get", "pods")["items"]
    placed = {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in pods}
    assert all(node in ("", "cpu-node-1") for node in placed.values()), placed


def test_dcgm_exporter_daemonset_on_gpu_nodes_only(g):
    g.ok("apply", "-f", f"{LAB}/2-dcgm-exporter.yaml")
    ds = g.ok("get", "ds", "-n", "gpu-monitoring").lines
    assert ds[1].split()[:6] == ["dcgm-exporter", "3", "3", "3", "3", "3"]
    assert "nvidia.com/gpu=true" in ds[1]
    pods = g.json("get", "pods", "-n", "gpu-monitoring")["items"]
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["gpu-node-1", "gpu-node-2", "gpu-node-3"]
    # the DaemonSet controller's own not-ready toleration has no tolerationSeconds, so
    # DefaultTolerationSeconds adds nothing (pkg/controller/daemon/util AddOrUpdateDaemonPodTolerations)
    assert {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
            "effect": "NoExecute"} in pods[0]["spec"]["tolerations"]
    endpoints = g.json("get", "endpoints", "dcgm-exporter", "-n", "gpu-monitoring")
    assert len(endpoints["subsets"][0]["addresses"]) == 3
    assert endpoints["subsets"][0]["ports"] == [{"name": "metrics", "port": 9400, "protocol": "TCP"}]


def test_deployment_with_service_and_pvc(g):
    out = g.ok("apply", "-f", f"{LAB}/3-inference-app.yaml").lines
    assert out == ["persistentvolumeclaim/model-cache created", "deployment.apps/inference created",
                   "service/inference created"]
    claim = g.json("get", "pvc", "model-cache")
    assert claim["status"]["phase"] == "Bound"
    assert claim["spec"]["storageClassName"] == "standard"
    pods = g.json("get", "pods", "-l", "app=inference")["items"]
    nodes = {p["spec"]["nodeName"] for p in pods}
    assert len(pods) == 2 and len(nodes) == 1          # the RWO local volume pins both replicas
    assert {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
            "tolerationSeconds": 300} in pods[0]["spec"]["tolerations"]   # DefaultTolerationSeconds
    assert claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] in nodes
    reasons = [line.split()[2] for line in g.ok("get", "events", "--field-selector",
                                                  "involvedObject.name=model-cache").lines[1:]]
    assert reasons == ["WaitForFirstConsumer", "ExternalProvisioning", "Provisioning",
                       "ProvisioningSucceeded"]
    svc = g.ok("get", "svc", "inference").lines[1].split()
    assert svc[1] == "ClusterIP" and svc[2].startswith("10.") and svc[4] == "80/TCP"
    endpoints = g.ok("get", "endpoints", "inference").lines[1].split()[1].split(",")
    assert sorted(endpoints) == sorted(f"{p['status']['podIP']}:8000" for p in pods)


@pytest.mark.parametrize("document,message", [
    ("apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  ports: [{port: 80, nodePort: 30080}]\n",
     "error: bad.yaml: document 0: The Service \"web\" is invalid: spec.ports[0].nodePort: Forbidden: "
     "may not be used when `type` is 'ClusterIP'"),
    ("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\nspec:\n  resources: {requests: {storage: 1Gi}}\n",
     "error: bad.yaml: document 0: The PersistentVolumeClaim \"c\" is invalid: spec.accessModes: "
     "Required value: at least 1 access mode is required"),
], ids=["service-nodeport", "pvc-access-modes"])
def test_bad_input_is_one_line_and_changes_nothing(tmp_path, document, message):
    cli = Gpusched(tmp_path)
    path = tmp_path / "bad.yaml"
    path.write_text(document)
    assert cli.fails("apply", "-f", str(path)).endswith(message.split("bad.yaml: ")[1])
    assert cli.ok("get", "svc").lines[1:] == [cli.ok("get", "svc").lines[1]]    # only kubernetes
