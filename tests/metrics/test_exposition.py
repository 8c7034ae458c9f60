"""render_cluster on a small scenario: DCGM names/types/labels, pod attribution, MIG, omissions,
scheduler and gpusched metrics (parsed with prometheus_client's own text parser)."""

from __future__ import annotations

import re

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpusched.metrics.exposition import render_cluster
from tests.metrics.conftest import NODES, TIME_SLICING, apply, pod


@pytest.fixture
def scenario(cluster):
    apply(cluster, NODES, TIME_SLICING)
    apply(cluster, pod("ts-a", node="t4-node", util=70), pod("ts-b", node="t4-node", util=60),
          pod("mig-1g", resource="nvidia.com/mig-1g.5gb", util=50),
          pod("train", gpus=2, util=80, memory="20Gi", ns="default"),
          pod("waits", gpus=8))
    return cluster


def samples(body: bytes) -> dict[str, list]:
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(body.decode()):
        name = family.name + ("_total" if family.type == "counter" and
                              family.samples and family.samples[0].name.endswith("_total") else "")
        out.setdefault(name, []).extend(family.samples)
    return out


def test_content_type_is_text_0_0_4(scenario):
    content_type, _ = render_cluster(scenario)
    assert content_type.startswith("text/plain; version=0.0.4")


@pytest.mark.parametrize("name,kind", [
    ("DCGM_FI_DEV_GPU_UTIL", "gauge"), ("DCGM_FI_DEV_FB_USED", "gauge"),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge"), ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter"),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge"), ("scheduler_pending_pods", "gauge"),
    ("scheduler_schedule_attempts_total", "counter"),
    ("scheduler_scheduling_attempt_duration_seconds", "histogram"),
    ("scheduler_preemption_victims", "histogram"),
    ("scheduler_preemption_attempts_total", "counter"),
    ("gpusched_gpu_hours_total", "counter")], ids=lambda v: str(v))
def test_families_have_dcgm_and_kube_scheduler_types(scenario, name, kind):
    _, body = render_cluster(scenario)
    assert f"# TYPE {name} {kind}\n" in body.decode()


def test_whole_gpu_line_has_dcgm_labels_in_order_and_the_pod(scenario):
    text = render_cluster(scenario)[1].decode()
    line = next(l for l in text.splitlines()
                if l.startswith("DCGM_FI_DEV_GPU_UTIL{") and 'pod="train"' in l and 'gpu="0"' in l)
    keys = re.findall(r'(\w+)="', line)
    assert keys == ["gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname",
                    "DCGM_FI_DRIVER_VERSION", "namespace", "pod", "container"]
    assert 'device="nvidia0"' in line and 'modelName="NVIDIA A100-SXM4-40GB"' in line
    assert 'pci_bus_id="00000000:07:00.0"' in line and 'container="main"' in line
    assert line.endswith(" 80")


def test_time_sliced_gpu_repeats_its_line_per_pod_with_summed_util(scenario):
    got = samples(render_cluster(scenario)[1])["DCGM_FI_DEV_GPU_UTIL"]
    t4 = {s.labels["pod"]: s.value for s in got if s.labels["Hostname"] == "t4-node"}
    assert t4 == {"ts-a": 100.0, "ts-b": 100.0}      # 70 + 60 capped at 100


def test_mig_instance_lines_carry_profile_and_instance_and_no_gpu_util(scenario):
    got = samples(render_cluster(scenario)[1])
    fb = [s for s in got["DCGM_FI_DEV_FB_USED"] if s.labels["Hostname"] == "mig-node"]
    held = [s for s in fb if s.labels.get("pod") == "mig-1g"]
    assert len(held) == 1 and held[0].labels["GPU_I_PROFILE"] == "1g.5gb"
    assert held[0].labels["GPU_I_ID"].isdigit()
    assert {s.labels.get("GPU_I_PROFILE", "") for s in fb} == {"", "1g.5gb", "2g.10gb", "3g.20gb"}
    assert not [s for s in got["DCGM_FI_DEV_GPU_UTIL"] if s.labels["Hostname"] == "mig-node"]


def test_values_the_model_lacks_are_omitted_not_zero(scenario):
    got = samples(render_cluster(scenario)[1])
    hosts = {s.labels["Hostname"] for s in got["DCGM_FI_DEV_MEMORY_TEMP"]}
    assert hosts == {"gpu-node-1", "mig-node"}          # HBM parts only; the T4 has GDDR6
    assert "DCGM_FI_PROF_PCIE_TX_BYTES" not in got


def test_scheduler_and_cluster_metrics(scenario):
    got = samples(render_cluster(scenario)[1])
    pending = {s.labels["queue"]: s.value for s in got["scheduler_pending_pods"]}
    assert pending == {"active": 0, "backoff": 0, "unschedulable": 1, "gated": 0}
    attempts = {(s.labels["result"], s.labels["profile"]): s.value
                for s in got["scheduler_schedule_attempts_total"]}
    assert attempts[("scheduled", "default-scheduler")] == 4
    assert attempts[("unschedulable", "default-scheduler")] >= 1
    count = [s for s in got["scheduler_scheduling_attempt_duration_seconds"]
             if s.name.endswith("_count") and s.labels["result"] == "scheduled"]
    assert count[0].value == 4
    demand = {(s.labels["namespace"], s.labels["resource"]): s.value
              for s in got["gpusched_pending_gpu_requests"]}
    assert demand == {("default", "nvidia.com/gpu"): 8}
    allocated = {(s.labels["node"], s.labels["resource"]): s.value
                 for s in got["gpusched_gpus_allocated"]}
    assert allocated[("gpu-node-1", "nvidia.com/gpu")] == 2
    replicas = {s.labels["state"]: s.value for s in got["gpusched_timeslice_replicas"]}
    assert replicas == {"used": 2, "free": 2}


def test_counters_survive_across_processes_in_the_store(scenario):
    from gpusched.cluster.cluster import Cluster
    with Cluster.open(str(scenario.store.path)) as other:
        got = samples(render_cluster(other)[1])
    assert {s.labels["result"] for s in got["scheduler_schedule_attempts_total"]} >= {"scheduled"}
