"""The cluster GPU model: shared utilization, power within limits, energy monotonic, cost."""

from __future__ import annotations

import pytest

from gpusched.metrics import cost, gpu_model
from gpusched.metrics.cluster_source import ClusterSource
from tests.metrics.conftest import NODES, TIME_SLICING, apply, pod


def gpu(cluster, node: str, index: int = 0):
    return next(g for g in ClusterSource(cluster.view()).gpus() if g.node == node and g.gpu == index)


def values(cluster, node: str, name: str) -> list[float]:
    return [s.values[name] for s in ClusterSource(cluster.view()).samples()
            if s.hostname == node and name in s.values and not s.gpu_instance_profile]


@pytest.mark.parametrize("utils,expected", [((30,), 30), ((30, 40), 70), ((70, 60), 100),
                                             ((50, 50, 50, 50), 100)],
                         ids=["one", "two-sum", "capped", "four-capped"])
def test_time_sliced_pods_share_the_gpu_utilization(cluster, utils, expected):
    apply(cluster, NODES, TIME_SLICING)
    apply(cluster, *(pod(f"p{i}", node="t4-node", util=u) for i, u in enumerate(utils)))
    assert gpu(cluster, "t4-node").util == expected


@pytest.mark.parametrize("model", sorted(gpu_model.PHYSICS))
def test_power_stays_within_idle_and_tdp(model):
    physics = gpu_model.physics_of(model)
    assert [gpu_model.power_w(physics, u) for u in (-5, 0, 100, 250)] == [
        physics.idle_w, physics.idle_w, physics.tdp_w, physics.tdp_w]


def test_workload_defaults_by_owner():
    job = {"metadata": {"ownerReferences": [{"kind": "Job"}]}}
    rs = {"metadata": {"ownerReferences": [{"kind": "ReplicaSet"}]}}
    assert [gpu_model.pod_util(p) for p in (job, rs, {"metadata": {}})] == [90, 40, 60]


def test_energy_grows_and_survives_pod_deletion(cluster):
    apply(cluster, NODES, TIME_SLICING)
    apply(cluster, pod("w", util=100, node="t4-node"))
    physics = gpu_model.physics_of("T4")
    readings = []
    for step in range(3):
        cluster.advance(600)
        readings.append(values(cluster, "t4-node", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")[0])
    cluster.delete("Pod", "w")
    readings.append(values(cluster, "t4-node", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")[0])
    cluster.advance(600)
    readings.append(values(cluster, "t4-node", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")[0])
    assert readings == sorted(readings) and readings[3] == readings[2]
    assert readings[1] - readings[0] == pytest.approx(physics.tdp_w * 600 * 1000, rel=1e-6)
    # The deleted pod runs on through its 30 s grace period (kubelet's killContainer waits up
    # to terminationGracePeriodSeconds), then the GPU idles for the other 570 s.
    grace = 30
    assert readings[4] - readings[3] == pytest.approx(
        (physics.tdp_w * grace + physics.idle_w * (600 - grace)) * 1000, rel=1e-6)


def test_temperature_approaches_steady_state(cluster):
    apply(cluster, NODES, TIME_SLICING)
    apply(cluster, pod("w", util=100, node="t4-node"))
    physics = gpu_model.physics_of("T4")
    temps = []
    for _ in range(4):
        cluster.advance(60)
        temps.append(values(cluster, "t4-node", "DCGM_FI_DEV_GPU_TEMP")[0])
    assert temps == sorted(temps) and temps[0] > physics.idle_c
    cluster.advance(3600)
    assert values(cluster, "t4-node", "DCGM_FI_DEV_GPU_TEMP")[0] == physics.full_c


def test_gpu_hours_accumulate_on_the_virtual_clock(cluster):
    apply(cluster, NODES, TIME_SLICING)
    apply(cluster, pod("two", gpus=2, node="gpu-node-1", duration="30m", priority_class=None),
          pod("ts", node="t4-node", ns="default"))
    cluster.advance(3600)
    cluster.delete("Pod", "ts")
    cluster.advance(3600)
    rows = cost.usage(ClusterSource(cluster.view()).gpus(), cluster.now(), cost.DEFAULT_PRICES)
    by_model = {r.model: r.gpu_hours for r in rows}
    # 2 x 30m; 1/4 replica x (1h + the deleted pod's 30 s grace period, during which it still
    # holds its replica: pkg/registry/core/pod/strategy.go CheckGracefulDelete)
    assert by_model == pytest.approx({"A100-40GB": 1.0, "T4": 0.25 * 3630 / 3600})
    dollars = {m: d for m, _, d in cost.grouped(rows, "model")}
    assert dollars["A100-40GB"] == pytest.approx(cost.DEFAULT_PRICES["A100-40GB"])
    last_hour = cost.usage(ClusterSource(cluster.view()).gpus(), cluster.now(),
                           cost.DEFAULT_PRICES, since=cluster.now() - 3600)
    assert {r.model: r.gpu_hours for r in last_hour} == pytest.approx({"T4": 0.25 * 30 / 3600})


@pytest.mark.parametrize("text,error", [("A100-40GB: -1", "non-negative"), ("[1, 2]", "mapping"),
                                        ("a: [", "not valid")], ids=["negative", "list", "broken"])
def test_price_file_mistakes_are_one_line_errors(tmp_path, text, error):
    from gpusched.errors import UsageError
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    with pytest.raises(UsageError, match=error) as info:
        cost.load_prices(str(path))
    assert "\n" not in str(info.value)


def test_price_file_overrides_one_model(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text('{"T4": 0.5}')
    prices = cost.load_prices(str(path))
    assert prices["T4"] == 0.5 and prices["A100-40GB"] == cost.DEFAULT_PRICES["A100-40GB"]


def _pool(gpu: dict | None) -> dict:
    spec = {"gpu": gpu} if gpu is not None else {}
    return {"metadata": {"name": "p", "uid": "u1"}, "spec": spec,
            "status": {"created": {"n1": 0.0}}}


@pytest.mark.parametrize("gpu,model,gpu_hours,dollars", [
    ({"model": "L4", "count": 2}, "L4", 2.0, 2 * 0.60),                      # catalog model
    ({"define": {"name": "X1"}}, "X1", 1.0, cost.DEFAULT_PRICE),             # define, count 1
    (None, "<none>", 0.0, 0.0),                                              # no GPUs: free
], ids=["catalog-model", "defined-model-default-price", "cpu-pool"])
def test_node_usage_reads_the_pool_gpu_forms(gpu, model, gpu_hours, dollars):
    # one node created at 0 and alive at 1 h: node-hours 1 x GPUs x the model's price
    node = {"metadata": {"name": "n1", "ownerReferences": [{"uid": "u1"}]}}
    [row] = cost.node_usage([_pool(gpu)], [node], 3600.0, dict(cost.DEFAULT_PRICES))
    assert (row.model, row.nodes_now, row.node_hours) == (model, 1, 1.0)
    assert row.gpu_hours == pytest.approx(gpu_hours)
    assert row.dollars == pytest.approx(dollars)
