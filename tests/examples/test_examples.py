"""One test per scenario in examples/: the outcome each example's header comment promises.

Every test starts a fresh cluster (examples/cluster.yaml + examples/priority-classes.yaml) in its
own state file and drives it through the real console script, as a person following the
example would.
"""

from __future__ import annotations

import pytest

from tests.cli.runner import Gpusched, pod_scheduled_condition

NOT_HELPFUL = "Preemption is not helpful for scheduling"


@pytest.fixture
def g(tmp_path) -> Gpusched:
    cli = Gpusched(tmp_path)
    cli.cluster()
    return cli


def node_of(pod: dict) -> str:
    return pod["spec"].get("nodeName", "")


def waiting_message(pod: dict) -> str:
    cond = pod_scheduled_condition(pod)
    assert pod["status"]["phase"] == "Pending" and cond["status"] == "False"
    return cond["message"]


def test_cluster_nodes_and_priority_classes(g):
    nodes = {n["metadata"]["name"]: n for n in g.json("get", "nodes")["items"]}
    assert sorted(nodes) == ["cpu-node-1", "gpu-node-1", "gpu-node-2", "gpu-node-3"]
    gpus = {name: n["status"]["allocatable"].get("nvidia.com/gpu") for name, n in nodes.items()}
    assert gpus == {"cpu-node-1": None, "gpu-node-1": "8", "gpu-node-2": "4", "gpu-node-3": "2"}
    assert nodes["gpu-node-2"]["metadata"]["labels"]["gpu-type"] == "v100"
    classes = {c["metadata"]["name"]: c for c in g.json("get", "pc")["items"]}
    assert {n: c["value"] for n, c in classes.items()} == {"critical": 1000000, "high": 100000,
                                                          "normal": 1000, "low": 100,
                                                          # pkg/apis/scheduling SystemPriorityClasses
                                                          "system-cluster-critical": 2000000000,
                                                          "system-node-critical": 2000001000}
    assert classes["normal"]["globalDefault"] is True
    assert classes["low"]["preemptionPolicy"] == "Never"


def test_preemption_high_evicts_low(g):
    g.ok("apply", "-f", "examples/preemption/1-low-priority-batch.yaml")
    assert node_of(g.pods()["low-batch"]) == "gpu-node-1"
    g.ok("apply", "-f", "examples/preemption/2-high-priority-training.yaml")
    # pkg/scheduler/framework/preemption/preemption.go prepareCandidate: the victim gets
    # DisruptionTarget and a graceful delete; the preemptor waits with nominatedNodeName.
    pods = g.pods()
    urgent, victim = pods["urgent-training"], pods["low-batch"]
    assert node_of(urgent) == "" and urgent["status"]["nominatedNodeName"] == "gpu-node-1"
    assert victim["metadata"]["deletionTimestamp"] and victim["metadata"]["deletionGracePeriodSeconds"] == 30
    assert [c["reason"] for c in victim["status"]["conditions"]
            if c["type"] == "DisruptionTarget"] == ["PreemptionByScheduler"]
    wide = {line.split()[0]: line.split() for line in g.ok("get", "pods", "-o", "wide").lines[1:]}
    assert wide["low-batch"][2] == "Terminating"
    assert wide["urgent-training"][2] == "Pending" and "gpu-node-1" in wide["urgent-training"]
    g.ok("advance", "29s")
    assert node_of(g.pods()["urgent-training"]) == ""
    g.ok("advance", "1s")          # the victim's 30 s grace period is over
    pods = g.pods()
    assert "low-batch" not in pods
    assert node_of(pods["urgent-training"]) == "gpu-node-1"
    assert pods["urgent-training"]["status"]["phase"] == "Running"
    events = g.json("get", "events")["items"]
    preempted = [e for e in events if e["reason"] == "Preempted"]
    assert [e["involvedObject"]["name"] for e in preempted] == ["low-batch"]
    assert preempted[0]["message"].startswith("Preempted by pod ")
    assert preempted[0]["message"].endswith("on node gpu-node-1")


def test_preemption_policy_never_does_not_preempt(g):
    g.ok("apply", "-f", "examples/no-preemption/1-t4-jobs.yaml")
    g.ok("apply", "-f", "examples/no-preemption/2-polite-training.yaml")
    pods = g.pods()
    assert node_of(pods["t4-job-1"]) == node_of(pods["t4-job-2"]) == "gpu-node-3"
    message = waiting_message(pods["polite-training"])
    assert message == ("0/4 nodes are available: 1 Insufficient nvidia.com/gpu, 3 node(s) didn't "
                       "match Pod's node affinity/selector. no new claims to deallocate, preemption: not eligible due to "
                       "preemptionPolicy=Never.")
    assert not [e for e in g.json("get", "events")["items"] if e["reason"] == "Preempted"]


def test_node_selector(g):
    g.ok("apply", "-f", "examples/node-selector/pods.yaml")
    pods = g.pods()
    assert node_of(pods["v100-job"]) == "gpu-node-2"
    assert waiting_message(pods["h100-job"]) == (
        "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector. "
        f"no new claims to deallocate, preemption: 0/4 nodes are available: 4 {NOT_HELPFUL}.")


def test_node_affinity_prefers_a100_then_v100(g):
    g.ok("apply", "-f", "examples/node-affinity/pods.yaml")
    pods = g.pods()
    assert [node_of(pods[f"flexible-{i}"]) for i in (1, 2, 3)] == ["gpu-node-1", "gpu-node-1",
                                                                   "gpu-node-2"]
    assert waiting_message(pods["a100-only"]) == (
        "0/4 nodes are available: 1 Insufficient nvidia.com/gpu, 3 node(s) didn't match Pod's node "
        "affinity/selector. no new claims to deallocate, preemption: 0/4 nodes are available: "
        f"1 No preemption victims found for incoming pod, 3 {NOT_HELPFUL}.")


def test_taint_keeps_intolerant_pods_off(g):
    g.ok("taint", "node", "gpu-node-3", "dedicated=gpu:NoSchedule")
    g.ok("apply", "-f", "examples/taints/pods.yaml")
    pods = g.pods()
    assert node_of(pods["tolerant"]) == "gpu-node-3"
    message = waiting_message(pods["intolerant"])
    assert message.startswith("0/4 nodes are available: 1 node(s) had untolerated taint")
    assert "3 node(s) didn't match Pod's node affinity/selector" in message
    g.ok("taint", "node", "gpu-node-3", "dedicated:NoSchedule-")
    assert node_of(g.pods()["intolerant"]) == "gpu-node-3"


def test_time_slicing_fits_8_pods_on_2_gpus(g):
    g.ok("apply", "-f", "examples/time-slicing/time-slicing-config-all.yaml")
    t4 = g.json("get", "node", "gpu-node-3")
    assert t4["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert t4["metadata"]["labels"]["nvidia.com/gpu.replicas"] == "4"
    g.ok("apply", "-f", "examples/time-slicing/t4-workers.yaml")
    pods = list(g.pods().values())
    running = [p for p in pods if p["status"]["phase"] == "Running"]
    pending = [p for p in pods if p["status"]["phase"] == "Pending"]
    assert len(running) == 8 and len(pending) == 1
    assert {node_of(p) for p in running} == {"gpu-node-3"}
    gpus = sorted(p["metadata"]["annotations"]["gpusched.io/assigned-gpus"] for p in running)
    assert gpus == ["0"] * 4 + ["1"] * 4
    assert "1 Insufficient nvidia.com/gpu" in waiting_message(pending[0])


def test_mig_mixed_pods_fill_the_layout(g):
    g.ok("apply", "-f", "examples/mig-mixed/")
    node = g.json("get", "node", "mig-node-1")
    allocatable = node["status"]["allocatable"]
    assert {k: v for k, v in allocatable.items() if k.startswith("nvidia.com/")} == {
        "nvidia.com/mig-1g.5gb": "2", "nvidia.com/mig-2g.10gb": "1", "nvidia.com/mig-3g.20gb": "1"}
    pods = g.pods()
    placed = {name: node_of(pods[name]) for name in ("mig-3g", "mig-2g", "mig-1g-a", "mig-1g-b")}
    assert set(placed.values()) == {"mig-node-1"}
    devices = [pods[n]["metadata"]["annotations"]["gpusched.io/assigned-devices"] for n in placed]
    assert len(set(devices)) == 4 and all(d.startswith("MIG-") for d in devices)
    assert "Insufficient nvidia.com/mig-1g.5gb" in waiting_message(pods["mig-1g-c"])


def test_team_quota_and_limitrange_refusals(g):
    g.ok("apply", "-f", "examples/team-quota/1-namespace.yaml")
    g.ok("apply", "-f", "examples/team-quota/2-training-pods.yaml")
    assert sorted(g.pods("team-a")) == ["train-1", "train-2"]
    over_quota = g.fails("apply", "-f", "examples/team-quota/3-over-quota.yaml")
    assert ('pods "train-3" is forbidden: exceeded quota: team-a-quota, requested: '
            "requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=4, limited: "
            "requests.nvidia.com/gpu=4") in over_quota
    over_limit = g.fails("apply", "-f", "examples/team-quota/4-over-limit.yaml")
    assert ('pods "big-train" is forbidden: maximum nvidia.com/gpu usage per Container is 2, '
            "but limit is 3") in over_limit
    assert sorted(g.pods("team-a")) == ["train-1", "train-2"]   # refusals changed nothing
    quota = g.ok("get", "quota", "-n", "team-a").lines
    assert "requests.nvidia.com/gpu: 4/4" in quota[1] and "pods: 2/10" in quota[1]
    defaulted = g.pods("team-a")["train-1"]["spec"]["containers"][0]["resources"]
    assert defaulted["requests"]["cpu"] == "500m" and defaulted["limits"]["memory"] == "4Gi"


def test_training_job_deadline(g):
    g.ok("apply", "-f", "examples/training-job/jobs.yaml")
    g.ok("advance", "11m")
    jobs = {j["metadata"]["name"]: j for j in g.json("get", "jobs")["items"]}
    finished = {c["type"]: c for c in jobs["finetune-bert"]["status"].get("conditions", [])}
    assert finished["Complete"]["status"] == "True"
    assert jobs["finetune-bert"]["status"]["succeeded"] == 1
    failed = {c["type"]: c for c in jobs["train-resnet"]["status"].get("conditions", [])}
    assert failed["Failed"]["reason"] == "DeadlineExceeded"
    table = g.ok("get", "jobs").lines
    assert table[0].split() == ["NAME", "COMPLETIONS", "DURATION", "AGE"]
    assert next(l for l in table if l.startswith("finetune-bert")).split()[1] == "1/1"
    assert next(l for l in table if l.startswith("train-resnet")).split()[1] == "0/1"
    still_running = [p for p in g.pods().values() if p["status"]["phase"] == "Running"]
    assert still_running == []


def test_inference_deployment_replicas(g):
    g.ok("apply", "-f", "examples/inference-deployment/deployment.yaml")
    deploy = g.ok("get", "deploy").lines
    assert deploy[1].split()[:4] == ["llm-inference", "3/3", "3", "3"]
    pods = g.pods()
    assert {node_of(p) for p in pods.values()} == {"gpu-node-1"}
    assert len({p["metadata"]["annotations"]["gpusched.io/assigned-gpus"] for p in pods.values()}) == 3
    assert {p["spec"]["priority"] for p in pods.values()} == {1000000}
    g.ok("scale", "deployment", "llm-inference", "--replicas", "5")
    assert g.ok("get", "deploy").lines[1].split()[1] == "5/5"
    victim = sorted(g.pods())[0]
    g.ok("delete", "pod", victim)
    # The deleted pod is Terminating for its 30 s grace period; its replacement starts at once.
    assert g.pods()[victim]["metadata"]["deletionTimestamp"]
    g.ok("advance", "30s")
    after = g.pods()
    assert len(after) == 5 and victim not in after


def test_gpu_operator_cluster_policy(g):
    """examples/gpu-operator: the operands as DaemonSets with one pod per GPU node, the
    time-slicing ConfigMap the policy names, and a changed ConfigMap applied only after the
    device-plugin pods restart (NVIDIA's time-slicing guide)."""
    g.ok("apply", "-f", "examples/gpu-operator/")
    pods = g.pods("gpu-operator")
    plugin = sorted(p["spec"]["nodeName"] for n, p in pods.items()
                    if n.startswith("nvidia-device-plugin-daemonset-"))
    assert plugin == ["gpu-node-1", "gpu-node-2", "gpu-node-3"]
    assert [p["spec"]["nodeName"] for n, p in pods.items() if n.startswith("nvidia-mig-manager-")] \
        == ["gpu-node-1"]
    assert g.ok("get", "clusterpolicies").lines[1].split()[:2] == ["cluster-policy", "ready"]
    allocatable = {n["metadata"]["name"]: n["status"]["allocatable"].get("nvidia.com/gpu")
                   for n in g.json("get", "nodes")["items"]}
    assert allocatable["gpu-node-1"] == "32"
    log = g.ok("logs", "-n", "gpu-operator", "-l", "app=nvidia-device-plugin-daemonset").out
    assert log.startswith("[gpusched: simulated log") and log.count("Running with config:") == 3
    assert '"replicas": 4' in log
    g.ok("apply", "-f", "-", stdin=open("examples/gpu-operator/2-time-slicing-config.yaml")
         .read().replace("replicas: 4", "replicas: 8"))
    assert g.json("get", "nodes", "gpu-node-1")["status"]["allocatable"]["nvidia.com/gpu"] == "32"
    g.ok("delete", "pods", "-n", "gpu-operator", "-l", "app=nvidia-device-plugin-daemonset")
    assert g.json("get", "nodes", "gpu-node-1")["status"]["allocatable"]["nvidia.com/gpu"] == "64"


def test_gpu_operator_rollout_restart_rereads_the_config(g):
    """`rollout restart daemonset nvidia-device-plugin-daemonset -n gpu-operator` replaces the
    plugin pods, which read the edited ConfigMap (NVIDIA's time-slicing guide)."""
    g.ok("apply", "-f", "examples/gpu-operator/")
    g.ok("apply", "-f", "-", stdin=open("examples/gpu-operator/2-time-slicing-config.yaml")
         .read().replace("replicas: 4", "replicas: 2"))
    assert g.json("get", "nodes", "gpu-node-3")["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    before = {n for n in g.pods("gpu-operator") if n.startswith("nvidia-device-plugin-daemonset-")}
    assert "restarted" in g.ok("rollout", "restart", "daemonset", "nvidia-device-plugin-daemonset",
                               "-n", "gpu-operator").out
    g.ok("advance", "2m")                        # the old pods' grace periods, one node at a time
    after = {n for n in g.pods("gpu-operator") if n.startswith("nvidia-device-plugin-daemonset-")}
    assert len(after) == 3 and not before & after
    gpus = {n["metadata"]["name"]: n["status"]["allocatable"].get("nvidia.com/gpu")
            for n in g.json("get", "nodes")["items"]}
    assert (gpus["gpu-node-1"], gpus["gpu-node-3"]) == ("16", "4")
