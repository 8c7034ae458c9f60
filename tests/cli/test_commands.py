"""The CLI contract (issue 2 item 6), through the real console script in subprocesses.

Each test builds one small cluster in its own state file and checks several forms against it,
so the number of subprocess calls stays reasonable.
"""

from __future__ import annotations

import json

import pytest
import yaml

from tests.cli.runner import Gpusched, pod_scheduled_condition

PENDING_POD = """
apiVersion: v1
kind: Pod
metadata: {name: waiting, labels: {app: demo}}
spec:
  nodeSelector: {gpu-type: h100}
  containers:
  - name: c
    image: busybox
    resources: {limits: {nvidia.com/gpu: 1}}
"""

RUNNING_POD = """
apiVersion: v1
kind: Pod
metadata: {name: runner, labels: {app: demo}}
spec:
  priorityClassName: high
  nodeSelector: {gpu-type: v100}
  containers:
  - name: c
    image: busybox
    resources: {limits: {nvidia.com/gpu: 2}}
"""


@pytest.fixture
def g(tmp_path) -> Gpusched:
    return Gpusched(tmp_path)


def test_apply_prints_kubectl_resource_names_and_is_idempotent(g):
    first = g.cluster()
    assert "nodepool.gpusched.io/a100 created" in first.lines
    assert "priorityclass.scheduling.k8s.io/normal created" in first.lines
    again = g.cluster()
    assert "priorityclass.scheduling.k8s.io/normal unchanged" in again.lines
    assert g.ok("apply", "-f", "-", stdin=PENDING_POD).lines == ["pod/waiting created"]


def test_get_tables_names_and_empty_results(g):
    g.cluster()
    nodes = g.ok("get", "no", "-L", "gpu-type").lines
    assert nodes[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "GPU-TYPE"]
    assert [line.split()[0] for line in nodes[1:]] == ["cpu-node-1", "gpu-node-1", "gpu-node-2",
                                                       "gpu-node-3"]
    assert nodes[2].split()[1] == "Ready" and nodes[2].split()[-1] == "a100"
    pcs = g.ok("get", "pc").lines
    assert pcs[0].split() == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE"]
    assert "normal" in pcs[-1] or any(l.split()[:3] == ["normal", "1000", "true"] for l in pcs)
    assert g.ok("get", "nodes", "-o", "name").lines == ["node/cpu-node-1", "node/gpu-node-1",
                                                        "node/gpu-node-2", "node/gpu-node-3"]
    empty = g.ok("get", "po")
    assert empty.out == "" and empty.err.strip() == "No resources found in default namespace."
    # kubectl 1.32 get.go: "No resources found" without a period when -A or a cluster-scoped kind
    assert g.ok("get", "pods", "-A").err.strip() == "No resources found"
    assert g.ok("get", "nodes", "-l", "gpu-type=t4", "-o", "name").lines == ["node/gpu-node-3"]


def test_get_json_shapes(g):
    g.cluster()
    g.ok("apply", "-f", "-", stdin=PENDING_POD + "---" + RUNNING_POD)
    listing = g.json("get", "pods")
    assert listing["kind"] == "List" and listing["apiVersion"] == "v1"
    assert listing["metadata"] == {"resourceVersion": ""}
    pods = {p["metadata"]["name"]: p for p in listing["items"]}
    runner, waiting = pods["runner"], pods["waiting"]
    assert runner["spec"]["nodeName"] == "gpu-node-2"
    assert runner["spec"]["priority"] == 100000
    assert runner["status"]["phase"] == "Running"
    assert pod_scheduled_condition(runner)["status"] == "True"
    assert waiting["spec"].get("nodeName", "") == ""
    assert waiting["spec"]["priority"] == 1000   # the globalDefault class
    assert waiting["status"]["phase"] == "Pending"
    cond = pod_scheduled_condition(waiting)
    assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
    assert cond["message"].startswith("0/4 nodes are available: 4 node(s) didn't match Pod's node "
                                      "affinity/selector.")
    assert waiting["status"].get("nominatedNodeName", "") == ""
    single = g.json("get", "pod", "runner")
    assert single["kind"] == "Pod" and single["metadata"]["name"] == "runner"
    assert g.json("get", "pods", "runner", "waiting")["kind"] == "List"
    wide = g.ok("get", "pods", "-o", "wide").lines
    assert wide[0].split()[-6:] == ["IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"]
    assert "gpu-node-2" in next(line for line in wide if line.startswith("runner"))
    yaml_out = g.ok("get", "pod", "runner", "-o", "yaml").out
    assert "kind: Pod" in yaml_out and "nodeName: gpu-node-2" in yaml_out
    refused = g.run("drain", "gpu-node-2")
    assert refused.code == 1 and refused.out.strip() == "node/gpu-node-2 cordoned"
    assert "cannot delete Pods that declare no controller (use --force to override): default/runner" \
        in refused.err and refused.err.count("\n") == 1


def test_label_taint_cordon_drain_scale_delete(g):
    g.cluster()
    assert g.ok("label", "node", "gpu-node-3", "zone=a").out.strip() == "node/gpu-node-3 labeled"
    assert g.ok("get", "nodes", "-l", "zone=a", "-o", "name").lines == ["node/gpu-node-3"]
    assert "already has a value" in g.fails("label", "node", "gpu-node-3", "zone=b")
    g.ok("label", "node", "gpu-node-3", "zone=b", "--overwrite")
    g.ok("label", "node", "gpu-node-3", "zone-")
    assert g.ok("get", "nodes", "-l", "zone", "-o", "name").out == ""

    assert g.ok("taint", "node", "gpu-node-3", "dedicated=gpu:NoSchedule").out.strip() == \
        "node/gpu-node-3 tainted"
    taints = g.json("get", "node", "gpu-node-3")["spec"]["taints"]
    assert {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"} in taints
    g.ok("taint", "node", "gpu-node-3", "dedicated:NoSchedule-")
    assert not g.json("get", "node", "gpu-node-3")["spec"].get("taints")

    assert g.ok("cordon", "gpu-node-2").out.strip() == "node/gpu-node-2 cordoned"
    row = next(l for l in g.ok("get", "nodes").lines if l.startswith("gpu-node-2"))
    assert row.split()[1] == "Ready,SchedulingDisabled"
    assert g.ok("uncordon", "gpu-node-2").out.strip() == "node/gpu-node-2 uncordoned"
    assert g.ok("condition", "node/gpu-node-2", "Ready=False").out.strip() == \
        "node/gpu-node-2 condition Ready=False"
    row = next(l for l in g.ok("get", "nodes").lines if l.startswith("gpu-node-2"))
    assert row.split()[1] == "NotReady"
    bad = g.run("condition", "node", "gpu-node-2", "Ready=Maybe")
    assert bad.code == 1 and bad.out == "" and bad.err.count("\n") == 1
    g.ok("condition", "node", "gpu-node-2", "Ready=True")

    g.ok("apply", "-f", "examples/inference-deployment/deployment.yaml")
    assert g.ok("scale", "deployment", "llm-inference", "--replicas", "2").out.strip() == \
        "deployment.apps/llm-inference scaled"
    g.ok("scale", "deployment/llm-inference", "--replicas", "1")
    # scaled-down pods stay Terminating for their 30 s grace period (graceful deletion)
    assert len([p for p in g.pods().values() if "deletionTimestamp" not in p["metadata"]]) == 1
    g.ok("advance", "30s")
    assert len(g.pods()) == 1
    drained = g.ok("drain", "gpu-node-1").out
    assert "node/gpu-node-1 cordoned" in drained and "drained" in drained
    assert g.ok("delete", "deployment", "llm-inference").out.strip() == \
        'deployment.apps "llm-inference" deleted'
    g.ok("apply", "-f", "-", stdin=RUNNING_POD)
    assert g.ok("delete", "pod", "runner").out.strip() == 'pod "runner" deleted'
    deleted = g.ok("delete", "-f", "examples/priority-classes.yaml").lines
    assert 'priorityclass.scheduling.k8s.io "low" deleted' in deleted


def test_describe_events_top_explain_and_clock(g):
    g.cluster()
    g.ok("apply", "-f", "-", stdin=PENDING_POD + "---" + RUNNING_POD)
    pod = g.ok("describe", "pod", "waiting").out
    for field in ("Name:", "Namespace:", "Priority:", "Priority Class Name:", "Node:", "Status:",
                  "Conditions:", "Events:", "FailedScheduling"):
        assert field in pod, field
    node = g.ok("describe", "node", "gpu-node-2").out
    for field in ("Labels:", "Taints:", "Unschedulable:", "Capacity:", "Allocatable:",
                  "Allocated resources:", "Non-terminated Pods:", "GPU Devices:", "default/runner"):
        assert field in node, field
    assert any(l.split()[:2] == ["nvidia.com/gpu", "2"] for l in node.splitlines())

    events = g.ok("events").lines
    assert events[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert any("FailedScheduling" in l and "pod/waiting" in l for l in events)
    as_json = json.loads(g.ok("events", "-o", "json").out)
    assert as_json["kind"] == "List"
    scheduled = next(e for e in as_json["items"] if e["reason"] == "Scheduled")
    assert scheduled["involvedObject"]["name"] == "runner" and scheduled["type"] == "Normal"
    assert {"message", "count"} <= set(scheduled)

    top = g.ok("top", "nodes").lines
    assert top[0].split()[:4] == ["NAME", "GPU-MODEL", "GPUS", "WHOLE"]
    v100 = next(l for l in top if l.startswith("gpu-node-2"))
    assert "2/4 (50%)" in v100
    assert any(l.startswith("V100-16GB") for l in top)

    assert "gpu-node-2" in g.ok("explain", "pod", "waiting").out
    assert isinstance(json.loads(g.ok("explain", "pod", "waiting", "-o", "json").out), dict)

    before = g.json("get", "pod", "runner")["metadata"]["creationTimestamp"]
    assert "now 2026-01-01T01:30:00Z" in g.ok("advance", "1h30m").out
    row = next(l for l in g.ok("get", "pods").lines if l.startswith("runner"))
    assert row.split()[-1] == "90m" and before
    assert g.ok("reset").out.strip() == "cluster state reset"
    assert g.ok("get", "nodes").err.strip() == "No resources found"   # kubectl: no period here


@pytest.mark.parametrize("args, stdin, expected", [
    (("get", "gpus"), None, 'error: the server doesn\'t have a resource type "gpus"'),
    (("apply", "-f", "does/not/exist.yaml"), None, "does/not/exist.yaml"),
    (("apply", "-f", "-"), "kind: Pod\nmetadata: {name: [unclosed\n", "error: "),
    (("taint", "node", "gpu-node-1", "dedicated=gpu:Sometimes"), None,
     "error: invalid taint effect: Sometimes, unsupported taint effect"),
    (("advance", "ten minutes"), None, 'error: time: invalid duration "ten minutes"'),
    (("cordon", "gpu-node-9"), None, 'error: nodes "gpu-node-9" not found'),
    (("describe", "node", "gpu-node-9"), None, 'error: nodes "gpu-node-9" not found'),
    (("get", "pod", "ghost"), None, 'error: pods "ghost" not found'),
], ids=["unknown-kind", "missing-file", "bad-yaml", "bad-taint", "bad-duration", "unknown-node",
        "describe-unknown-node", "unknown-pod"])
def test_bad_input_is_one_line_and_exit_1(g, args, stdin, expected):
    assert expected in g.fails(*args, stdin=stdin)


def test_usage_errors_exit_2_and_version(g):
    assert "unable to match a printer" in g.fails("get", "pods", "-o", "xml")
    assert "usage: gpusched" in g.run("frobnicate").err and g.run("frobnicate").code == 1
    assert g.run("version", state=False).out.strip() == "gpusched version 0.1.0"


def test_kubeconfig_names_the_local_server_without_credentials(g):
    """What tests/server's fixture writes for kubectl (it builds the same in-process)."""
    config = yaml.safe_load(g.ok("kubeconfig", "--port", "8123").out)
    assert config["clusters"][0]["cluster"] == {"server": "http://127.0.0.1:8123"}
    assert config["current-context"] == "gpusched" and config["users"][0]["user"] == {}


def test_sim_commands_are_wired_in(g):
    assert "--policies" in g.run("experiment", "fgd", "--help", state=False).out


def test_demo_walks_every_example_without_surprises(g):
    result = g.run("demo", state=False)
    assert result.code == 0, result.out[-2000:] + result.err
    assert result.out.rstrip().endswith("demo finished: all steps as expected")
    for expected in ("Preempted by pod", "preemption: not eligible due to preemptionPolicy=Never.",
                     "Insufficient nvidia.com/gpu", "Insufficient nvidia.com/mig-1g.5gb",
                     'pods "train-3" is forbidden: exceeded quota', "DeadlineExceeded"):
        assert expected in result.out, expected


def test_namespaces_intermixed_options_and_quota_describe(g):
    g.cluster()
    g.ok("apply", "-f", "examples/team-quota/1-namespace.yaml",
         "-f", "examples/team-quota/2-training-pods.yaml")
    assert g.ok("get", "pods", "-n", "team-a", "train-2", "-o", "name").lines == ["pod/train-2"]
    everywhere = g.ok("get", "pods", "-A").lines
    assert everywhere[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert [l.split()[:2] for l in everywhere[1:]] == [["team-a", "train-1"], ["team-a", "train-2"]]
    quota = g.ok("describe", "quota", "-n", "team-a", "team-a-quota").lines
    assert quota[2].split() == ["Resource", "Used", "Hard"]
    assert ["requests.nvidia.com/gpu", "4", "4"] in [l.split() for l in quota]
    assert g.ok("delete", "pod/train-1", "-n", "team-a").out.strip() == 'pod "train-1" deleted'
    g.ok("advance", "30s")           # train-1's grace period
    assert sorted(g.pods("team-a")) == ["train-2"]
