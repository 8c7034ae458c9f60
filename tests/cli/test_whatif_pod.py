"""``gpusched whatif pod -f``: would this pod run now, where, on which devices, or what has to give
way, and nothing in the state file changes (``cluster.whatif_pod``).

Each case builds the lab cluster (examples/cluster.yaml: gpu-node-1 8x A100, gpu-node-2 4x V100,
gpu-node-3 2x T4) through the console script, applies what runs already, fingerprints the state
file (every row of objects, events, the change feed and meta, read-only), asks ``whatif pod``
in text and ``-o json``, and checks the answer and that the fingerprint is the same.

The preemption case is kube-scheduler's DefaultPreemption (PostFilter,
``pkg/scheduler/framework/preemption/preemption.go`` ``Evaluator.Preempt`` / ``SelectVictimsOnNode``:
lower-priority pods on the nominated node are the victims); gpusched's ``scheduler.preemption``
runs it as a dry run. The "never fits" line is explain's ``too-large`` fact word for word.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import pytest

from tests.cli.runner import Gpusched
from tests.conftest import REPO_ROOT


def pod(name: str, gpus: int, selector: str = "", priority: str = "", duration: str = "",
        kind: str = "Pod", replicas: int = 1) -> str:
    notes = f"{{gpusched.io/duration: '{duration}'}}" if duration else "{}"
    spec = (f"  nodeSelector: {{gpu-type: {selector}}}\n" if selector else "") + \
           (f"  priorityClassName: {priority}\n" if priority else "")
    body = (f"{spec}  containers:\n  - name: c\n    image: busybox\n"
            f"    resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}\n")
    if kind == "Pod":
        return f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, annotations: {notes}}}\nspec:\n{body}"
    indented = "".join(f"    {line}\n" for line in body.rstrip("\n").split("\n"))
    return (f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}}}\nspec:\n"
            f"  replicas: {replicas}\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n"
            f"    metadata: {{labels: {{app: {name}}}}}\n    spec:\n{indented}")


MIG_POD = ("apiVersion: v1\nkind: Pod\nmetadata: {name: mig-small}\nspec:\n  containers:\n  - name: c\n"
           "    image: busybox\n    resources: {limits: {nvidia.com/mig-1g.5gb: 1}}\n")
GATED_POD = ("apiVersion: v1\nkind: Pod\nmetadata: {name: gated}\nspec:\n"
             "  schedulingGates: [{name: example.com/wait}]\n  containers:\n  - name: c\n"
             "    image: busybox\n    resources: {limits: {nvidia.com/gpu: 1}}\n")


def fingerprint(path: str) -> list:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return [db.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3").fetchall()
                for table in ("objects", "events", "changes")] + \
               [db.execute("SELECT * FROM meta ORDER BY key").fetchall()]


@dataclass(frozen=True)
class Case:
    id: str
    running: str                   # manifests applied before the question ("" for none)
    asked: str
    verdicts: tuple[str, ...]
    nodes: tuple[str, ...]
    first_line: str                # the first line of the text answer, word for word
    gpus: tuple[int, ...] = ()     # fits-now: devices per pod
    victims: tuple[str, ...] = ()
    waits_for: tuple[str, ...] = ()
    at_time: str = ""
    slot: tuple[str, str] = ("GPU-", "whole")   # fits-now: device ID prefix and slot of each device


CASES = [
    Case("fits-now-node-and-devices", "", pod("train", 2, "a100"), ("fits-now",), ("gpu-node-1",),
         "default/train fits now on gpu-node-1: GPU 0 (", gpus=(2,)),
    Case("deployment-second-replica-sees-first", "", pod("web", 4, "v100", kind="Deployment", replicas=2),
         ("fits-now", "does-not-fit"), ("gpu-node-2", ""), "default/web-0 fits now on gpu-node-2: GPU 0 (",
         gpus=(4, 0)),
    # preemption.go SelectVictimsOnNode: the low-priority pod on the only a100 node is the victim
    Case("fits-after-preempting-lower-priority", pod("batch", 8, "a100", priority="low"),
         pod("urgent", 8, "a100", priority="high"), ("fits-after-preemption",), ("gpu-node-1",),
         "default/urgent fits on gpu-node-1 after preempting 1 lower-priority pod(s): default/batch",
         gpus=(8,), victims=("default/batch",)),
    Case("fits-only-after-a-pod-finishes", pod("run", 8, "a100", duration="30m"),
         pod("next", 8, "a100"), ("fits-after-finishing",), ("gpu-node-1",),
         "default/next does not fit now; room frees up on gpu-node-1 in 30m (at 2026-01-01T00:30:00Z) "
         "when 1 pod(s) finish: default/run", waits_for=("default/run",), at_time="2026-01-01T00:30:00Z"),
    # mig-mixed: all-balanced A100 advertises nvidia.com/mig-1g.5gb; the answer names the instance
    Case("fits-now-on-a-mig-instance", (REPO_ROOT / "examples/mig-mixed/1-mig-node.yaml").read_text(),
         MIG_POD, ("fits-now",), ("mig-node-1",), "default/mig-small fits now on mig-node-1: GPU 0 (MIG-",
         gpus=(1,), slot=("MIG-", "1g.5gb")),
    Case("gated-pod-waits-for-its-gates", "", GATED_POD, ("gated",), ("",),
         "default/gated does not run now: waiting for scheduling gates: [example.com/wait]"),
    Case("never-fits-largest-node", "", pod("huge", 16), ("does-not-fit",), ("",),
         "default/huge does not fit now and nothing that ends on its own makes room: the largest node "
         "(gpu-node-1) has 8 nvidia.com/gpu; this pod asks for 16"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_whatif_pod(tmp_path, case: Case) -> None:
    g = Gpusched(tmp_path)
    g.cluster()
    if case.running:
        g.ok("apply", "-f", "-", stdin=case.running)
    (tmp_path / "job.yaml").write_text(case.asked)
    before = fingerprint(g.state)
    text = g.ok("whatif", "pod", "-f", str(tmp_path / "job.yaml")).out
    answers = g.json("whatif", "pod", "-f", str(tmp_path / "job.yaml"))["pods"]
    assert fingerprint(g.state) == before, "whatif changed the state file"
    assert text.splitlines()[0].startswith(case.first_line), text
    assert [a["answer"] for a in answers] == text.splitlines()
    assert tuple(a["verdict"] for a in answers) == case.verdicts
    assert tuple(a["node"] for a in answers) == case.nodes
    for answer, gpus in zip(answers, case.gpus):
        assert len(answer["devices"]) == gpus
        assert all(d["device"].startswith(case.slot[0]) and d["slot"] == case.slot[1]
                   for d in answer["devices"]), answer["devices"]
    assert tuple(answers[0]["victims"]) == case.victims
    assert tuple(answers[0]["waitsFor"]) == case.waits_for
    assert answers[0].get("atTime", "") == case.at_time


def test_fits_now_devices_are_the_ones_the_scheduler_then_binds(tmp_path) -> None:
    """The answer is the scheduler's own cycle: applying the pod binds it to the same devices."""
    g = Gpusched(tmp_path)
    g.cluster()
    (tmp_path / "job.yaml").write_text(pod("train", 2, "a100"))
    said = g.json("whatif", "pod", "-f", str(tmp_path / "job.yaml"))["pods"][0]
    g.ok("apply", "-f", str(tmp_path / "job.yaml"))
    facts = g.json("explain", "pod", "train")["facts"]
    assert facts[0]["node"] == said["node"]
    assert [d["device"] for d in facts[0]["devices"]] == [d["device"] for d in said["devices"]]


BAD = [
    ("missing-file", None, "nope.yaml"),
    ("invalid-manifest", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: 3}\n",
     "job.yaml: document 0"),
    ("too-many-replicas", pod("wide", 1, kind="Deployment", replicas=101),
     "job.yaml: document 0: spec.replicas: 101 pods: whatif pod asks about at most 100 pods"),
    ("kind-without-pod-template", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
     "whatif pod takes a Pod or a kind with a pod template"),
]


@pytest.mark.parametrize("text,expected", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_whatif_pod_bad_input_one_line_exit_1(tmp_path, text, expected) -> None:
    g = Gpusched(tmp_path)
    g.cluster()
    path = tmp_path / ("job.yaml" if text is not None else "nope.yaml")
    if text is not None:
        path.write_text(text)
    before = fingerprint(g.state)
    line = g.fails("whatif", "pod", "-f", str(path))
    assert expected in line, line
    assert fingerprint(g.state) == before
