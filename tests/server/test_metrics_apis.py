"""The metrics APIs of ``serve`` with real kubectl 1.32: ``kubectl top`` over metrics.k8s.io
(metrics-server's NodeMetrics/PodMetrics), the custom metrics API the seed queries
(``kubectl get --raw /apis/custom.metrics.k8s.io/v1beta1/namespaces/*/pods/*/gpu_utilization``,
a MetricValueList as prometheus-adapter answers), the external metrics API, their discovery, and
an HPA reading the same source (``cluster.usage``) through ``kubectl get hpa``."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.server.conftest import Served

LOAD = '{"shape": "constant", "rps": 90, "perPodRPS": 30}'


def inference(replicas: int = 2) -> str:
    return yaml.safe_dump_all([
        {"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "l4"},
         "spec": {"count": 2, "cpu": "64", "memory": "256Gi", "gpu": {"model": "L4", "count": 4}}},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "web", "annotations": {"gpusched.io/load": LOAD}},
         "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                  "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                      {"name": "c", "image": "x", "resources": {"limits": {
                          "nvidia.com/gpu": 1, "cpu": "1", "memory": "1Gi"}}}]}}}}])


@pytest.fixture
def served(serve: Served, tmp_path) -> Served:
    manifest = tmp_path / "inference.yaml"
    manifest.write_text(inference())
    serve.cli("apply", "-f", str(manifest))
    return serve


def test_kubectl_top_nodes_and_pods(served):
    """Each pod: 45 req/s of 30 per pod -> activity 1 -> CPU = its 1 CPU request; memory 30 %
    of 1Gi (inference); a node adds 100m / 512Mi of system baseline (cluster.usage)."""
    nodes = served.kubectl("top", "nodes").stdout.splitlines()
    assert nodes[0].split() == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    assert sorted(line.split()[1:] for line in nodes[1:]) == [["1100m", "1%", "819Mi", "0%"]] * 2
    pods = served.kubectl("top", "pods", "--containers").stdout.splitlines()
    assert pods[0].split() == ["POD", "NAME", "CPU(cores)", "MEMORY(bytes)"]
    assert [line.split()[1:] for line in pods[1:]] == [["c", "1000m", "307Mi"]] * 2
    assert served.kubectl("top", "pods", "-l", "app=none", check=False).stderr.strip() == (
        "No resources found in default namespace.")


def test_seed_custom_metrics_query_returns_metric_value_list(served):
    out = served.kubectl("get", "--raw",
                         "/apis/custom.metrics.k8s.io/v1beta1/namespaces/*/pods/*/gpu_utilization")
    reply = json.loads(out.stdout)
    assert (reply["kind"], reply["apiVersion"]) == ("MetricValueList", "custom.metrics.k8s.io/v1beta1")
    assert [(i["describedObject"]["kind"], i["metricName"], i["value"]) for i in reply["items"]] == [
        ("Pod", "gpu_utilization", "100")] * 2


def test_object_metric_and_unknown_metric(served):
    reply = json.loads(served.kubectl(
        "get", "--raw",
        "/apis/custom.metrics.k8s.io/v1beta1/namespaces/default/deployments.apps/web/requests_per_second").stdout)
    assert [(i["describedObject"]["name"], i["value"]) for i in reply["items"]] == [("web", "90")]
    done = served.kubectl("get", "--raw",
                          "/apis/custom.metrics.k8s.io/v1beta1/namespaces/default/pods/*/gpu_nope",
                          check=False)
    assert done.returncode == 1
    assert done.stderr.strip() == ("Error from server (NotFound): the server could not find the "
                                   "metric gpu_nope for pods")


def test_external_pending_pods_by_selector(served, tmp_path):
    pod = tmp_path / "big.yaml"
    pod.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "big", "labels": {"queue": "batch"}}, "spec": {"containers": [
            {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}}))
    served.cli("apply", "-f", str(pod))
    base = "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/pending_pods"
    for query, value in (("", "1"), ("?labelSelector=queue%3Dbatch", "1"),
                         ("?labelSelector=queue%3Donline", "0")):
        reply = json.loads(served.kubectl("get", "--raw", base + query).stdout)
        assert reply["kind"] == "ExternalMetricValueList"
        assert [i["value"] for i in reply["items"]] == [value]


def test_discovery_lists_the_metrics_groups(served):
    out = served.kubectl("api-resources", "--api-group=metrics.k8s.io", "--no-headers").stdout
    assert [line.split()[0] for line in out.splitlines()] == ["nodes", "pods"]
    versions = served.kubectl("api-versions").stdout.split()
    for gv in ("metrics.k8s.io/v1beta1", "custom.metrics.k8s.io/v1beta1",
               "external.metrics.k8s.io/v1beta1"):
        assert gv in versions


def test_hpa_reads_the_same_source_and_kubectl_prints_it(served, tmp_path):
    """kubectl get hpa through serve (TARGETS as printers.go formatHPAMetrics, 1.32) equals
    gpusched get hpa, after the controller scaled 2 -> 6 on the GPU utilization the custom
    metrics API reports."""
    hpa = tmp_path / "hpa.yaml"
    hpa.write_text(yaml.safe_dump({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "minReplicas": 1, "maxReplicas": 6, "metrics": [
                     {"type": "Pods", "pods": {"metric": {"name": "gpu_utilization"},
                                               "target": {"type": "AverageValue",
                                                          "averageValue": "50"}}},
                     {"type": "Resource", "resource": {"name": "cpu", "target": {
                         "type": "Utilization", "averageUtilization": 80}}}]}}))
    served.cli("apply", "-f", str(hpa))
    served.cli("advance", "60s")
    theirs = served.kubectl("get", "hpa").stdout
    ours = served.cli("get", "hpa")
    assert theirs.splitlines() == ours.splitlines()
    assert theirs.splitlines()[1].split()[:7] == ["web", "Deployment/web", "50/50,", "cpu:",
                                                  "50%/80%", "1", "6"]
    reply = json.loads(served.kubectl(
        "get", "--raw",
        "/apis/custom.metrics.k8s.io/v1beta1/namespaces/default/pods/*/gpu_utilization").stdout)
    assert sorted(i["value"] for i in reply["items"]) == ["50"] * 6


def test_describe_hpa_matches_kubectl(served, tmp_path):
    """gpusched describe hpa == kubectl 1.32 describe hpa (describe.go
    describeHorizontalPodAutoscalerV2: metric lines, behavior, conditions), events compared
    without their Age column (kubectl measures ages against the wall clock)."""
    hpa = tmp_path / "hpa.yaml"
    hpa.write_text(yaml.safe_dump({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "labels": {"team": "ml"}},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "maxReplicas": 6,
                 "behavior": {"scaleDown": {"policies": [
                     {"type": "Pods", "value": 1, "periodSeconds": 60}]}},
                 "metrics": [
                     {"type": "Pods", "pods": {"metric": {"name": "gpu_utilization"},
                                               "target": {"type": "AverageValue", "averageValue": "50"}}},
                     {"type": "Resource", "resource": {"name": "cpu", "target": {
                         "type": "Utilization", "averageUtilization": 60}}},
                     {"type": "Resource", "resource": {"name": "memory", "target": {
                         "type": "AverageValue", "averageValue": "1Gi"}}},
                     {"type": "Object", "object": {
                         "describedObject": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                         "metric": {"name": "requests_per_second"},
                         "target": {"type": "Value", "value": "100"}}},
                     {"type": "External", "external": {"metric": {"name": "pending_pods"},
                                                       "target": {"type": "AverageValue",
                                                                  "averageValue": "2"}}},
                     {"type": "Pods", "pods": {"metric": {"name": "gpu_nope"},
                                               "target": {"type": "AverageValue", "averageValue": "5"}}},
                     {"type": "ContainerResource", "containerResource": {
                         "name": "cpu", "container": "c",
                         "target": {"type": "Utilization", "averageUtilization": 50}}}]}}))
    served.cli("apply", "-f", str(hpa))
    served.cli("advance", "45s")
    theirs = served.kubectl("describe", "hpa", "web").stdout.splitlines()
    ours = served.cli("describe", "hpa", "web").splitlines()

    def without_ages(lines: list[str]) -> list[list[str]]:
        start = lines.index("Events:")
        rows = [line.split() for line in lines[start + 3:]]
        return [row[:2] + row[row.index("horizontal-pod-autoscaler"):] for row in rows]

    assert ours[:ours.index("Events:")] == theirs[:theirs.index("Events:")]
    assert without_ages(ours) == without_ages(theirs)
    assert '  "gpu_nope" on pods:' in "\n".join(ours)
    assert '  resource cpu of container "c" on pods  (as a percentage of request):' in "\n".join(ours)
    assert served.kubectl("get", "hpa").stdout.splitlines() == served.cli("get", "hpa").splitlines()
