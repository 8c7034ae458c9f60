"""The three queue orders through the ``Cluster`` facade on one 8-GPU node.

Scenario (virtual seconds): ``r1`` (2 GPUs, limit 100s) and ``r2`` (2 GPUs, limit 300s) run;
``big`` (8 GPUs, high priority) cannot start before both end, so its reservation is the node at
t=300. Then ``short`` (2 GPUs, limit 200s, ends before 300) and ``long`` (2 GPUs, limit 500s)
arrive at low priority, and 4 GPUs are free:

- default (kube-scheduler): both start; ``big`` waits until ``long`` ends (t=500);
- strict: neither starts while ``big`` waits; ``big`` starts at 300;
- backfill: ``short`` starts, ``long`` is held (it would delay ``big``); ``big`` starts at 300.
"""

from __future__ import annotations

import pytest
import yaml

from gpusched.cluster.cluster import Cluster
from gpusched.errors import UsageError
from tests.cluster.builders import apply, join, pool, priority_class


def job_pod(name: str, gpus: int, limit: int, run: int | None = None, pc: str = "low",
            **spec) -> str:
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "annotations": {
            "gpusched.io/time-limit": str(limit), "gpusched.io/duration": f"{run or limit}s"}},
        "spec": {**spec, **({"priorityClassName": pc} if pc else {}), "containers": [{
            "name": "c", "image": "train", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}})


NAMESPACE = yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": "kube-system"}})


def mode_config(mode: str, depth: str = "1") -> str:
    return NAMESPACE + "---\n" + yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "gpusched-scheduler", "namespace": "kube-system"},
                           "data": {"mode": mode, "backfillDepth": depth}})


def start(cluster: Cluster, name: str) -> float | None:
    pod = cluster.get("pods", [name])[0]
    text = (pod["metadata"].get("annotations") or {}).get("gpusched.io/start-time")
    return float(text) if text is not None else None


def scheduled_message(cluster: Cluster, name: str) -> str:
    pod = cluster.get("pods", [name])[0]
    return next(c.get("message", "") for c in pod["status"]["conditions"]
                if c["type"] == "PodScheduled")


def scenario(tmp_path, mode: str) -> Cluster:
    cluster = Cluster.open(str(tmp_path / f"{mode}.db"))
    apply(cluster, join(pool("gpu", gpus=8), priority_class("high", 1000, policy="Never"),
                        priority_class("low", 100, policy="Never")))
    if mode != "default":
        apply(cluster, mode_config(mode))
    apply(cluster, join(job_pod("r1", 2, 100), job_pod("r2", 2, 300)))
    apply(cluster, job_pod("big", 8, 1000, pc="high"))
    apply(cluster, join(job_pod("short", 2, 200), job_pod("long", 2, 500)))
    return cluster


# mode -> (short starts at, long starts at, big starts at) after the clock reaches 1300s
EXPECTED = {
    "default": (0.0, 0.0, 500.0),
    "strict": (1300.0, 1300.0, 300.0),
    "backfill": (0.0, 1300.0, 300.0),
}


@pytest.mark.parametrize("mode", list(EXPECTED), ids=list(EXPECTED))
def test_three_orders(tmp_path, mode):
    with scenario(tmp_path, mode) as cluster:
        assert [start(cluster, n) for n in ("r1", "r2")] == [0.0, 0.0]
        cluster.advance(1300)
        assert tuple(start(cluster, n) for n in ("short", "long", "big")) == EXPECTED[mode]


@pytest.mark.parametrize("mode,pod,message", [
    ("backfill", "long", "0/1 nodes are available: waiting for backfill reservation of "
                         "default/big on {node} at +5m."),
    ("strict", "short", "0/1 nodes are available: waiting for default/big to start first "
                        "(strict priority order; reserved {node} at +5m)."),
    ("strict", "long", "0/1 nodes are available: waiting for default/big to start first "
                       "(strict priority order; reserved {node} at +5m)."),
], ids=["backfill-holds-long", "strict-holds-short", "strict-holds-long"])
def test_held_pod_says_why(tmp_path, mode, pod, message):
    with scenario(tmp_path, mode) as cluster:
        node = cluster.get("nodes")[0]["metadata"]["name"]
        assert cluster.get("pods", [pod])[0]["status"]["phase"] == "Pending"
        assert scheduled_message(cluster, pod) == message.format(node=node)
        events = [e for e in cluster.events() if e["involvedObject"]["name"] == pod]
        assert [(e["reason"], e["type"]) for e in events] == [("FailedScheduling", "Warning")]


def test_held_message_counts_down(tmp_path):
    with scenario(tmp_path, "backfill") as cluster:
        cluster.advance(100)     # r1 ends: capacity freed, held pods are re-checked
        assert scheduled_message(cluster, "long").endswith(" at +3m20s.")


def test_backfilled_short_job_starts_and_big_one_keeps_its_time(tmp_path):
    with scenario(tmp_path, "backfill") as cluster:
        assert start(cluster, "short") == 0.0
        cluster.advance(299)
        assert start(cluster, "big") is None
        cluster.advance(1)
        assert start(cluster, "big") == 300.0


@pytest.mark.parametrize("data,error", [
    ({"mode": "fifo"}, 'ConfigMap kube-system/gpusched-scheduler: data.mode: Unsupported value: '
                       '"fifo": supported values: "default", "backfill", "strict"'),
    ({"mode": "backfill", "backfillDepth": "0"},
     'ConfigMap kube-system/gpusched-scheduler: data.backfillDepth: Invalid value: "0": '
     "must be an integer between 1 and 1000000"),
    # issue 25: a number is bounded where it is parsed (Slurm's bf_max_job_test maximum); 5,000
    # digits was a ValueError from int() (Python's 4,300-digit limit), Arabic-Indic digits passed
    ({"mode": "backfill", "backfillDepth": "1000001"},
     'ConfigMap kube-system/gpusched-scheduler: data.backfillDepth: Invalid value: "1000001": '
     "must be an integer between 1 and 1000000"),
    ({"mode": "backfill", "backfillDepth": "9" * 5000},
     'ConfigMap kube-system/gpusched-scheduler: data.backfillDepth: Invalid value: '
     f'"{"9" * 32}": must be an integer between 1 and 1000000'),
    ({"mode": "backfill", "backfillDepth": "\u0663"},
     'ConfigMap kube-system/gpusched-scheduler: data.backfillDepth: Invalid value: "\u0663": '
     "must be an integer between 1 and 1000000"),
], ids=["bad-mode", "depth-zero", "depth-over-the-bound", "depth-of-5000-digits",
        "depth-in-arabic-indic-digits"])
def test_bad_config_is_refused_and_changes_nothing(tmp_path, data, error):
    with Cluster.open(str(tmp_path / "c.db")) as cluster:
        apply(cluster, join(pool("gpu", gpus=8), job_pod("p", 1, 60, pc=""), NAMESPACE))
        body = yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "gpusched-scheduler",
                                            "namespace": "kube-system"}, "data": data})
        with pytest.raises(UsageError) as caught:
            apply(cluster, body)
        assert str(caught.value) == error
        assert cluster.get("configmaps", namespace="kube-system") == []


def named_pool(name: str, model: str, gpus: int) -> str:
    return yaml.safe_dump({"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool",
                           "metadata": {"name": name},
                           "spec": {"names": [f"node-{name}"], "cpu": "64", "memory": "256Gi",
                                    "gpu": {"model": model, "count": gpus},
                                    "labels": {"pool": name}}})


TWO_NODES = join(named_pool("a", "A100-40GB", 8), named_pool("b", "V100-16GB", 4),
                 priority_class("high", 1000, policy="Never"),
                 priority_class("low", 100, policy="Never"))
ON_A = {"nodeSelector": {"pool": "a"}}
PREFER_A = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 100, "preference": {"matchExpressions": [
        {"key": "pool", "operator": "In", "values": ["a"]}]}}]}}}


def test_held_on_the_reserved_node_starts_on_another(tmp_path):
    """The scheduler prefers node-a for ``long``, where it would delay ``big``; the placement is
    undone and the retry (node-a's reserved share held) puts it on node-b at once."""
    with Cluster.open(str(tmp_path / "two.db")) as cluster:
        apply(cluster, join(TWO_NODES, mode_config("backfill")))
        apply(cluster, join(job_pod("r1", 2, 100, **ON_A), job_pod("r2", 2, 300, **ON_A)))
        apply(cluster, job_pod("big", 8, 1000, pc="high", **ON_A))
        apply(cluster, job_pod("long", 2, 500, **PREFER_A))
        pod = cluster.get("pods", ["long"])[0]
        assert (pod["spec"].get("nodeName"), start(cluster, "long")) == ("node-b", 0.0)
        cluster.advance(300)
        assert (cluster.get("pods", ["big"])[0]["spec"]["nodeName"], start(cluster, "big")) == \
            ("node-a", 300.0)


def test_default_mode_prefers_the_reserved_node(tmp_path):
    """The same pods without backfill: ``long`` takes node-a (its preference)."""
    with Cluster.open(str(tmp_path / "two.db")) as cluster:
        apply(cluster, TWO_NODES)
        apply(cluster, join(job_pod("r1", 2, 100, **ON_A), job_pod("r2", 2, 300, **ON_A)))
        apply(cluster, job_pod("big", 8, 1000, pc="high", **ON_A))
        apply(cluster, job_pod("long", 2, 500, **PREFER_A))
        assert cluster.get("pods", ["long"])[0]["spec"].get("nodeName") == "node-a"
