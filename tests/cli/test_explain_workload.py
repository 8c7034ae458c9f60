"""``gpusched explain deployment|replicaset|job NAME``: why a workload's pods do not run.

Upstream references for the wording:
- the event: ``RealPodControl.createPods`` in kubernetes ``pkg/controller/controller_utils.go``
  records ``FailedCreate`` ``Error creating: %v`` on the controller (the ReplicaSet of
  ``pkg/controller/replicaset/replica_set.go`` ``manageReplicas``, the Job, the DaemonSet);
- ``exceeded quota: %s, requested: %s, used: %s, limited: %s`` and ``failed quota: %s: must
  specify %s``: ``plugin/pkg/admission/resourcequota/controller.go`` (``checkRequest``,
  ``CheckRequest``);
- ``maximum %s usage per %s is %s, but limit is %s``: ``plugin/pkg/admission/limitranger/admission.go``
  (``maxConstraint``), which names no LimitRange: explain finds the one whose item has that bound.
The generated pod name in the message (``web-<hash>-<5 chars>``) is the only part replaced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from tests.cli.runner import Gpusched

NAMESPACE = ("apply", "-f", "examples/team-quota/1-namespace.yaml", "-f",
             "examples/team-quota/2-training-pods.yaml")     # team-a's 4-GPU quota is used up


def deployment(name: str, gpus: int, replicas: int = 2, ns: str = "team-a", extra: str = "") -> str:
    return (f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: {ns}}}\n"
            f"spec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: {name}}}}}\n"
            f"  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers:\n"
            f"      - name: c\n        image: x\n        resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}\n"
            + extra)


def job(name: str, gpus: int, ns: str = "team-a") -> str:
    return (f"apiVersion: batch/v1\nkind: Job\nmetadata: {{name: {name}, namespace: {ns}}}\n"
            f"spec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n"
            f"      - name: c\n        image: x\n        resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}\n")


CPU_QUOTA = """apiVersion: v1
kind: Namespace
metadata: {name: team-b}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: cpu-quota, namespace: team-b}
spec:
  hard: {limits.cpu: "8"}
"""


def masked(text: str) -> str:
    """The generated pod and ReplicaSet names replaced: ``pods "web-<hash>-<x>"``."""
    text = re.sub(r'pods "([a-z0-9-]+?)-[a-z0-9]{10}-[a-z0-9]{5}"', r'pods "\1-<rs>-<x>"', text)
    text = re.sub(r'pods "([a-z0-9-]+?)-[a-z0-9]{5}"', r'pods "\1-<x>"', text)
    return re.sub(r"replicaset/([a-z0-9-]+?)-[a-z0-9]{10}\b", r"replicaset/\1-<rs>", text)


@dataclass(frozen=True)
class Case:
    id: str
    setup: tuple[str, ...]          # manifests applied after the lab cluster
    namespace: str
    target: str                     # KIND/NAME
    lines: tuple[str, ...]          # the first lines, generated names masked
    refused_by: dict | None


CASES = [
    Case("deployment-exceeded-quota-resourcequota-controller-go",
         (deployment("web", 1),), "team-a", "deployment/web",
         ("deployment/web: 2 pod(s) wanted, 0 exist (0 running, 0 pending)",
          'replicaset/web-<rs> cannot create pods (FailedCreate): Error creating: pods "web-<rs>-<x>" '
          "is forbidden: exceeded quota: team-a-quota, requested: requests.nvidia.com/gpu=1, used: "
          "requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4; change ResourceQuota "
          "team-a/team-a-quota or the pod template",
          "",
          "deployment/web has no Pending pod to explain."),
         {"kind": "ResourceQuota", "name": "team-a/team-a-quota"}),
    Case("job-over-limitrange-max-limitranger-admission-go", (job("big", 3),), "team-a", "job/big",
         ("job/big: 1 pod(s) wanted, 0 exist (0 running, 0 pending)",
          'job/big cannot create pods (FailedCreate): Error creating: pods "big-<x>" is forbidden: '
          "maximum nvidia.com/gpu usage per Container is 2, but limit is 3; change LimitRange "
          "team-a/team-a-limits or the pod template"),
         {"kind": "LimitRange", "name": "team-a/team-a-limits"}),
    Case("replicaset-failed-quota-must-specify", (CPU_QUOTA, deployment("nocpu", 1, 1, "team-b")),
         "team-b", "deployment/nocpu",
         ("deployment/nocpu: 1 pod(s) wanted, 0 exist (0 running, 0 pending)",
          'replicaset/nocpu-<rs> cannot create pods (FailedCreate): Error creating: pods '
          '"nocpu-<rs>-<x>" is forbidden: failed quota: cpu-quota: must specify limits.cpu for: c; '
          "change ResourceQuota team-b/cpu-quota or the pod template"),
         {"kind": "ResourceQuota", "name": "team-b/cpu-quota"}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_explain_names_the_admission_refusal_word_for_word(tmp_path, case):
    g = Gpusched(tmp_path)
    g.cluster()
    g.ok(*NAMESPACE)
    for manifest in case.setup:
        g.ok("apply", "-f", "-", stdin=manifest)
    lines = [masked(line) for line in g.ok("explain", case.target, "-n", case.namespace).lines]
    assert tuple(lines[:len(case.lines)]) == case.lines
    data = g.json("explain", case.target, "-n", case.namespace)
    refusal = next(f for f in data["facts"] if f["kind"] == "failed-create")
    assert refusal["reason"] == "FailedCreate" and refusal["refusedBy"] == case.refused_by
    assert masked(refusal["message"]).startswith("Error creating: pods ")
    assert data["workload"] == case.target


def test_a_refusal_that_no_longer_holds_is_not_reported(tmp_path):
    """Once the quota has room the ReplicaSet creates its pods (upstream drops the ReplicaFailure
    condition when manageReplicas succeeds): no failed-create fact any more."""
    g = Gpusched(tmp_path)
    g.cluster()
    g.ok(*NAMESPACE)
    g.ok("apply", "-f", "-", stdin=deployment("web", 1))
    assert [f["kind"] for f in g.json("explain", "deployment/web", "-n", "team-a")["facts"]] == [
        "workload", "failed-create"]
    g.ok("delete", "pod", "train-1", "train-2", "-n", "team-a")
    g.ok("advance", "1m")          # past the 30 s grace period: the quota no longer counts them
    data = g.json("explain", "deployment", "web", "-n", "team-a")
    assert [f["kind"] for f in data["facts"]] == ["workload"]
    assert data["facts"][0]["running"] == 2


def test_a_workload_with_a_pending_pod_explains_that_pod(tmp_path):
    g = Gpusched(tmp_path)
    g.cluster()
    g.ok("apply", "-f", "-", stdin=deployment("huge", 16, 1, "default"))
    lines = [masked(line) for line in g.ok("explain", "deployment/huge").lines]
    assert lines[0] == "deployment/huge: 1 pod(s) wanted, 1 exist (0 running, 1 pending)"
    assert lines[1] == "the largest node (gpu-node-1) has 8 nvidia.com/gpu; this pod asks for 16"
    assert re.fullmatch(r"Its oldest Pending pod, default/huge-[a-z0-9]{10}-[a-z0-9]{5}:", lines[3])
    assert lines[5].startswith("NODE ")
    data = g.json("explain", "deployment/huge")
    assert data["pod"].startswith("default/huge-") and data["workload"] == "deployment/huge"
    assert [f["kind"] for f in data["facts"]] == ["workload", "too-large"]


@pytest.mark.parametrize("args,error", [
    (("explain", "service/x"), "error: explain takes a pod, deployment, replicaset, job or daemonset, not service/x"),
    (("explain", "deployment/nope"), 'error: deployments.apps "nope" not found'),
    (("explain", "job"), "error: explain takes one job name"),
], ids=["unexplainable-kind", "missing-deployment", "no-name"])
def test_bad_explain_targets_are_one_line(tmp_path, args, error):
    g = Gpusched(tmp_path)
    g.cluster()
    assert g.fails(*args).strip() == error
