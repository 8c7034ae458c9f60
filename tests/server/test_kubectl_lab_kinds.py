"""examples/gpu-lab with real kubectl 1.32 against ``gpusched serve``: the cluster's furniture
(get ns, cluster-info), the device-plugin ConfigMap in kube-system, ``kubectl label/taint nodes
-l``, a dcgm-exporter DaemonSet on GPU nodes, a Deployment with its Service and PVC, and bad
input answered with upstream's messages."""

from __future__ import annotations

import json
import shutil

import pytest

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")]
LAB = "examples/gpu-lab"


def rows(output: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in output.strip().splitlines()[1:]}


def test_furniture_and_cluster_info(serve):
    assert list(rows(serve.kubectl("get", "ns").stdout)) == [
        "default", "kube-node-lease", "kube-public", "kube-system"]
    info = serve.kubectl("cluster-info").stdout
    assert f"Kubernetes control plane is running at {serve.url}" in info
    pcs = rows(serve.kubectl("get", "priorityclasses").stdout)
    assert pcs["system-node-critical"][1] == "2000001000"
    assert pcs["system-cluster-critical"][1] == "2000000000"
    svc = rows(serve.kubectl("get", "svc", "kubernetes").stdout)["kubernetes"]
    assert svc[1:5] == ["ClusterIP", "10.96.0.1", "<none>", "443/TCP"]
    assert list(rows(serve.kubectl("get", "sc").stdout)) == ["standard"]
    assert "(default)" in serve.kubectl("get", "sc").stdout
    denied = serve.kubectl("delete", "ns", "kube-system", check=False)
    assert denied.returncode == 1
    assert 'namespaces "kube-system" is forbidden: this namespace may not be deleted' in denied.stderr


@pytest.fixture
def lab(serve):
    serve.kubectl("apply", "-f", "examples/cluster.yaml")
    out = serve.kubectl("apply", "-f", f"{LAB}/1-device-plugin-config.yaml").stdout
    assert out.strip() == "configmap/time-slicing-config-all created"
    labeled = serve.kubectl("label", "nodes", "-l", "nvidia.com/gpu.present=true",
                            "nvidia.com/gpu=true").stdout.split("\n")
    assert sorted(filter(None, labeled)) == [f"node/gpu-node-{i} labeled" for i in (1, 2, 3)]
    tainted = serve.kubectl("taint", "nodes", "-l", "nvidia.com/gpu=true",
                            "nvidia.com/gpu=true:NoSchedule").stdout.split("\n")
    assert sorted(filter(None, tainted)) == [f"node/gpu-node-{i} tainted" for i in (1, 2, 3)]
    serve.settled()          # the controller process has acted on every write (device plugin)
    return serve


def test_device_plugin_config_and_lab_label(lab):
    nodes = json.loads(lab.kubectl("get", "nodes", "-l", "nvidia.com/gpu=true", "-o", "json").stdout)
    by_name = {n["metadata"]["name"]: n for n in nodes["items"]}
    assert sorted(by_name) == ["gpu-node-1", "gpu-node-2", "gpu-node-3"]
    assert by_name["gpu-node-1"]["status"]["allocatable"]["nvidia.com/gpu"] == "16"
    labels = by_name["gpu-node-3"]["metadata"]["labels"]
    assert labels["nvidia.com/gpu.product"] == "Tesla-T4-SHARED"
    assert labels["nvidia.com/cuda.driver-version.full"] and labels["nvidia.com/gpu.family"] == "turing"


def test_dcgm_exporter_on_gpu_nodes(lab):
    lab.kubectl("apply", "-f", f"{LAB}/2-dcgm-exporter.yaml")
    lab.settled()
    ds = rows(lab.kubectl("get", "ds", "-n", "gpu-monitoring").stdout)["dcgm-exporter"]
    assert ds[1:6] == ["3", "3", "3", "3", "3"] and ds[6] == "nvidia.com/gpu=true"
    pods = json.loads(lab.kubectl("get", "pods", "-n", "gpu-monitoring", "-o", "json").stdout)
    assert sorted(p["spec"]["nodeName"] for p in pods["items"]) == [
        "gpu-node-1", "gpu-node-2", "gpu-node-3"]


def test_deployment_service_and_pvc(lab):
    out = lab.kubectl("apply", "-f", f"{LAB}/3-inference-app.yaml").stdout.split("\n")
    assert list(filter(None, out)) == ["persistentvolumeclaim/model-cache created",
                                       "deployment.apps/inference created",
                                       "service/inference created"]
    lab.settled()
    pvc = rows(lab.kubectl("get", "pvc").stdout)["model-cache"]
    assert pvc[1] == "Bound" and pvc[2].startswith("pvc-") and pvc[3:6] == ["20Gi", "RWO", "standard"]
    pv = rows(lab.kubectl("get", "pv").stdout)[pvc[2]]
    assert pv[1:6] == ["20Gi", "RWO", "Delete", "Bound", "default/model-cache"]
    svc = rows(lab.kubectl("get", "svc", "inference", "-o", "wide").stdout)["inference"]
    assert svc[1] == "ClusterIP" and svc[4] == "80/TCP" and svc[6] == "app=inference"
    pods = json.loads(lab.kubectl("get", "pods", "-l", "app=inference", "-o", "json").stdout)["items"]
    endpoints = rows(lab.kubectl("get", "endpoints", "inference").stdout)["inference"][1]
    assert sorted(endpoints.split(",")) == sorted(f"{p['status']['podIP']}:8000" for p in pods)
    slices = json.loads(lab.kubectl("get", "endpointslices", "-l",
                                    "kubernetes.io/service-name=inference", "-o", "json").stdout)
    assert len(slices["items"][0]["endpoints"]) == 2
    described = lab.kubectl("describe", "pvc", "model-cache").stdout
    assert "ProvisioningSucceeded" in described and "WaitForFirstConsumer" in described


@pytest.mark.parametrize("document,message", [
    ({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
      "spec": {"ports": [{"port": 80, "nodePort": 30080}]}},
     "The Service \"web\" is invalid: spec.ports[0].nodePort: Forbidden: may not be used when "
     "`type` is 'ClusterIP'"),
    ({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
      "spec": {"resources": {"requests": {"storage": "1Gi"}}}},
     'The PersistentVolumeClaim "c" is invalid: spec.accessModes: Required value: at least 1 '
     "access mode is required"),
    ({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "s"},
      "provisioner": "x", "volumeBindingMode": "Later"},
     'The StorageClass "s" is invalid: volumeBindingMode: Unsupported value: "Later": supported '
     'values: "Immediate", "WaitForFirstConsumer"'),
], ids=["service-nodeport", "pvc-access-modes", "storageclass-binding-mode"])
def test_bad_input_gets_upstream_messages(serve, tmp_path, document, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    done = serve.kubectl("apply", "-f", str(path), check=False)
    assert done.returncode == 1 and message in done.stderr, done.stderr
