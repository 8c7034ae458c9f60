"""Table layout, ages, refs and the per-kind columns of ``gpusched get`` (no cluster needed)."""

from __future__ import annotations

import pytest

from gpusched.cli.columns import pod_status_text, quota_columns, table_rows
from gpusched.cli.output import Clock, as_list, object_ref, render_table

NOW = "2026-01-01T01:00:00Z"


def make_pod(name="p", phase="Pending", node="", created="2026-01-01T00:59:00Z", **status):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "creationTimestamp": created},
            "spec": {"containers": [{"name": "c"}], "nodeName": node},
            "status": {"phase": phase, **status}}


def test_table_pads_three_spaces_and_leaves_last_column_unpadded():
    text = render_table(["NAME", "STATUS"], [["a", "Running"], ["bbbbbb", "Pending"]])
    assert text.splitlines() == ["NAME     STATUS", "a        Running", "bbbbbb   Pending"]


@pytest.mark.parametrize("kind, name, expected", [
    ("Pod", "x", "pod/x"),
    ("Node", "gpu-node-1", "node/gpu-node-1"),
    ("Deployment", "web", "deployment.apps/web"),
    ("Job", "train", "job.batch/train"),
    ("PriorityClass", "high", "priorityclass.scheduling.k8s.io/high"),
    ("NodePool", "a100", "nodepool.gpusched.io/a100"),
], ids=["pod", "node", "deployment", "job", "priorityclass", "nodepool"])
def test_object_ref_uses_kubectl_resource_names(kind, name, expected):
    assert object_ref({"kind": kind, "metadata": {"name": name}}) == expected


@pytest.mark.parametrize("pod, expected", [
    (make_pod(phase="Pending"), "Pending"),
    (make_pod(phase="Running"), "Running"),
    (make_pod(phase="Succeeded"), "Completed"),
    (make_pod(phase="Failed", reason="UnexpectedAdmissionError"), "UnexpectedAdmissionError"),
    (make_pod(phase="Failed", reason="DeadlineExceeded"), "DeadlineExceeded"),
    # kubernetes pkg/printers/internalversion/printers.go printPod: a container's waiting or
    # terminated reason, the SchedulingGated condition, and Terminating once deletion started
    (make_pod(phase="Running", containerStatuses=[{"state": {"waiting": {"reason": "CrashLoopBackOff"}}}]),
     "CrashLoopBackOff"),
    (make_pod(phase="Running", containerStatuses=[{"state": {"terminated": {"reason": "OOMKilled"}}}]),
     "OOMKilled"),
    (make_pod(phase="Running", containerStatuses=[{"state": {"running": {}}}]), "Running"),
    (make_pod(conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]),
     "SchedulingGated"),
    ({**make_pod(phase="Running"), "metadata": {"name": "p", "deletionTimestamp": "2026-01-01T00:00:00Z"}},
     "Terminating"),
    # printPod walks containers last to first, each reason overwriting: the first container's shows
    (make_pod(phase="Running", containerStatuses=[
        {"state": {"waiting": {"reason": "ImagePullBackOff"}}},
        {"state": {"waiting": {"reason": "CrashLoopBackOff"}}}]), "ImagePullBackOff"),
    (make_pod(phase="Failed", containerStatuses=[{"state": {"terminated": {"exitCode": 3}}}]),
     "ExitCode:3"),
    (make_pod(phase="Failed", containerStatuses=[{"state": {"terminated": {"exitCode": 137, "signal": 9}}}]),
     "Signal:9"),
    # a container reason overwrites the pod's own reason
    (make_pod(phase="Failed", reason="Evicted",
              containerStatuses=[{"state": {"terminated": {"exitCode": 137, "reason": "Error"}}}]),
     "Error"),
    # one container completed while another still runs: Running or NotReady by the Ready condition
    (make_pod(phase="Running", conditions=[{"type": "Ready", "status": "True"}], containerStatuses=[
        {"ready": True, "state": {"running": {}}},
        {"state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]), "Running"),
    (make_pod(phase="Running", containerStatuses=[
        {"ready": True, "state": {"running": {}}},
        {"state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]), "NotReady"),
    # init containers: the first that has not exited 0 decides
    ({**(pod := make_pod(phase="Pending", initContainerStatuses=[
        {"name": "a", "state": {"terminated": {"exitCode": 0}}},
        {"name": "b", "state": {"waiting": {"reason": "PodInitializing"}}}])),
      "spec": {**pod["spec"], "initContainers": [{"name": "a"}, {"name": "b"}]}}, "Init:1/2"),
    (make_pod(phase="Pending", initContainerStatuses=[
        {"name": "a", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]), "Init:CrashLoopBackOff"),
    (make_pod(phase="Failed", initContainerStatuses=[
        {"name": "a", "state": {"terminated": {"exitCode": 2}}}]), "Init:ExitCode:2"),
    # deletion: Terminating only while the phase is not terminal; NodeLost pods show Unknown
    ({**make_pod(phase="Succeeded", containerStatuses=[
        {"state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]),
      "metadata": {"name": "p", "deletionTimestamp": "2026-01-01T00:00:00Z"}}, "Completed"),
    ({**make_pod(phase="Running", reason="NodeLost"),
      "metadata": {"name": "p", "deletionTimestamp": "2026-01-01T00:00:00Z"}}, "Unknown"),
], ids=["pending", "running", "succeeded", "admission-error", "deadline", "printPod-waiting-reason",
        "printPod-terminated-reason", "printPod-running-container", "printPod-scheduling-gated",
        "printPod-terminating", "printPod-first-container-wins", "printPod-exit-code",
        "printPod-signal", "printPod-container-reason-over-pod-reason", "printPod-completed-but-running",
        "printPod-completed-but-not-ready", "printPod-init-n-of-m", "printPod-init-waiting",
        "printPod-init-exit-code", "printPod-deleted-terminal-pod", "printPod-node-lost"])
def test_pod_status_column(pod, expected):
    assert pod_status_text(pod) == expected


def test_pod_rows_wide_and_all_namespaces():
    header, rows = table_rows("Pod", [make_pod(phase="Running", node="gpu-node-1",
                                               nominatedNodeName="")], Clock(NOW), True, True)
    assert header == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                      "NOMINATED NODE", "READINESS GATES"]
    assert rows == [["default", "p", "1/1", "Running", "0", "60s", "<none>", "gpu-node-1", "<none>",
                     "<none>"]]


def test_node_status_shows_scheduling_disabled_when_cordoned():
    node = {"metadata": {"name": "n", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"unschedulable": True},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    _, rows = table_rows("Node", [node], Clock(NOW), False, False)
    assert rows == [["n", "Ready,SchedulingDisabled", "<none>", "60m", ""]]


def test_quota_columns_split_requests_and_limits_sorted_by_key():
    quota = {"status": {"hard": {"requests.nvidia.com/gpu": "4", "pods": "10", "limits.cpu": "8"},
                        "used": {"requests.nvidia.com/gpu": "2", "pods": "2"}}}
    assert quota_columns(quota) == ("pods: 2/10, requests.nvidia.com/gpu: 2/4", "limits.cpu: 0/8")


def test_list_envelope_shape():
    assert as_list([]) == {"apiVersion": "v1", "items": [], "kind": "List",
                           "metadata": {"resourceVersion": ""}}
