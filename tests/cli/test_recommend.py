"""``gpusched recommend`` through the console script: VPA rows and the GPU suggestion
(cluster.controllers.autoscaling.vpa, cluster.controllers.autoscaling.gpu_fit), and the line when nothing was sampled yet."""

from __future__ import annotations


import yaml

from tests.conftest import gpusched_executable, run_process

MANIFESTS = yaml.safe_dump_all([
    {"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "a100"},
     "spec": {"count": 1, "cpu": "64", "memory": "256Gi", "gpu": {"model": "A100-40GB", "count": 8}}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
     "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
              "template": {"metadata": {"labels": {"app": "web"}, "annotations": {
                  "gpusched.io/gpu-util": "20", "gpusched.io/gpu-memory": "3Gi"}},
                  "spec": {"containers": [{"name": "server", "image": "x", "resources": {
                      "requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": 1}}}]}}}},
    {"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler", "metadata": {"name": "web"},
     "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
              "updatePolicy": {"updateMode": "Off"}}}])


def run(state, *args, stdin=None):
    return run_process([gpusched_executable(), "--state", str(state), *args], input=stdin)


def test_recommend_prints_cpu_memory_and_gpu_suggestion(tmp_path):
    state = tmp_path / "c.db"
    empty = run(state, "recommend")
    assert (empty.returncode, empty.stderr.strip()) == (
        0, "No recommendations yet (no VerticalPodAutoscaler has sampled a running pod)")
    assert run(state, "apply", "-f", "-", stdin=MANIFESTS).returncode == 0
    assert run(state, "advance", "10m").returncode == 0
    done = run(state, "recommend")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["NAMESPACE", "VPA", "CONTAINER", "CPU", "LOWER", "CPU", "TARGET",
                                "CPU", "UPPER", "MEM", "LOWER", "MEM", "TARGET", "MEM", "UPPER"]
    assert lines[1].split()[:3] == ["default", "web", "server"]
    gpu = lines[lines.index("") + 2].split()
    # 20 % x 1.15 on 7 slices -> 2g; 3 GiB x 1.15 fits 10 GB; saves 5/7 x 24 h at 1.80 USD
    assert gpu[3:] == ["A100-40GB", "20%", "3.0Gi", "MIG", "2g.10gb", "17.14", "30.86"]
