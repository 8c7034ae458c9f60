"""End to end: ``gpusched scheduler --kubeconfig`` against a freshly started ``gpusched serve``.

The embedded scheduler in ``serve`` handles only ``default-scheduler`` pods; the secondary
scheduler binds the ``schedulerName: gpusched`` pods (device annotations, events from source
``gpusched``, PodScheduled=False with kube-scheduler's message when nothing fits) and leaves the
others alone. Processes run on free ports in a temp dir and are stopped by PID.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT
from tests.server.conftest import stop, wait_for

GPUSCHED = [sys.executable, "-m", "gpusched"]

pytestmark = pytest.mark.slow


def condition(pod: dict, type_: str) -> dict:
    return next((c for c in pod.get("status", {}).get("conditions", []) if c["type"] == type_), {})


def test_secondary_scheduler_binds_its_pods_and_leaves_the_others(lab_serve):
    served = lab_serve
    scheduler = subprocess.Popen([*GPUSCHED, "-v", "scheduler", "--kubeconfig",
                                  str(served.kubeconfig), "--scheduler-name", "gpusched"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 cwd=REPO_ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        served.create_pod("mine", gpus=2, scheduler="gpusched")
        served.create_pod("too-big", gpus=16, scheduler="gpusched")
        served.create_pod("theirs", gpus=1)
        mine = wait_for(lambda: (p := served.pod("mine"))["spec"].get("nodeName") and p, "mine bound")
        annotations = mine["metadata"]["annotations"]
        assert len(annotations["gpusched.io/assigned-gpus"].split(",")) == 2
        assert len(annotations["gpusched.io/assigned-devices"].split(",")) == 2
        assert condition(mine, "PodScheduled")["status"] == "True"
        too_big = wait_for(lambda: condition(p := served.pod("too-big"), "PodScheduled") and p,
                           "too-big marked unschedulable")
        # 16 GPUs exceed every node's allocatable: NodeResourcesFit marks the nodes Unresolvable
        # (noderesources/fit.go), so preemption finds them "not helpful" (v1.35).
        message = ("0/4 nodes are available: 4 Insufficient nvidia.com/gpu. no new claims to "
                   "deallocate, preemption: 0/4 nodes are available: 4 Preemption is not helpful "
                   "for scheduling.")
        assert condition(too_big, "PodScheduled") == {
            **condition(too_big, "PodScheduled"), "status": "False", "reason": "Unschedulable",
            "message": message}
        # the scheduler patches the condition, then records the event: wait for both events
        def our_events() -> dict:
            events = served.json("/api/v1/namespaces/default/events")["items"]
            found = {(e["involvedObject"]["name"], e["reason"]): e for e in events
                     if e.get("source", {}).get("component") == "gpusched"}
            wanted = {("mine", "Scheduled"), ("too-big", "FailedScheduling")}
            return found if wanted <= found.keys() else {}
        ours = wait_for(our_events, "the secondary scheduler's events")
        assert ours[("mine", "Scheduled")]["message"] == (
            f"Successfully assigned default/mine to {mine['spec']['nodeName']}")
        assert ours[("too-big", "FailedScheduling")]["message"] == message
        assert ours[("too-big", "FailedScheduling")]["type"] == "Warning"
        assert not any(name == "theirs" for name, _ in ours)
        theirs = served.pod("theirs")
        assert "gpusched.io/assigned-gpus" in theirs["metadata"]["annotations"]   # the embedded one
        events = served.json("/api/v1/namespaces/default/events")["items"]
        by_default = [e for e in events if e["involvedObject"]["name"] == "theirs"
                      and e["reason"] == "Scheduled"]
        assert by_default[0]["source"]["component"] == "default-scheduler"
    finally:
        code = stop(scheduler)
        output = scheduler.stop_stdout               # what stop() read from its pipe
    assert code == 0, output                      # SIGTERM: clean exit
    assert "bound default/mine to" in output
