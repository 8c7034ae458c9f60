"""``gpusched explain``: the facts line(s) above the node table, with their exact wording, and
the same facts as ``-o json`` fields (``cluster.explain_facts``).

Each case builds a cluster through the console script, applies one pod and checks the first
lines of ``explain`` word for word. Upstream references for what the facts describe: the NVIDIA
device plugin's config (``sharing.timeSlicing.renameByDefault`` -> ``<resource>.shared``,
``flags.migStrategy``), mig-manager's ``nvidia.com/mig.config`` / ``mig.config.state=failed``
labels, kubectl cordon (``spec.unschedulable``), the node lifecycle controller's
``node.kubernetes.io/not-ready`` taint.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.cli.runner import BASE_CLUSTER, Gpusched


def pod(name: str, resources: dict, annotations: dict | None = None, **spec) -> str:
    limits = ", ".join(f"{k}: {v}" for k, v in resources.items())
    notes = ", ".join(f"{k}: {v!r}" for k, v in (annotations or {}).items())
    extra = "".join(f"\n  {k}: {v}" for k, v in spec.items())
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, annotations: {{{notes}}}}}\n"
            f"spec:{extra}\n  containers:\n  - name: c\n    image: busybox\n"
            f"    resources: {{limits: {{{limits}}}}}\n")


RENAME_CONFIG = """apiVersion: v1
kind: ConfigMap
metadata: {name: time-slicing-config-all}
data:
  any: |-
    version: v1
    sharing:
      timeSlicing:
        renameByDefault: true
        resources:
        - name: nvidia.com/gpu
          replicas: 4
"""

SINGLE_CONFIG = """apiVersion: v1
kind: ConfigMap
metadata: {name: time-slicing-config-all}
data:
  any: |-
    version: v1
    flags:
      migStrategy: single
"""

MIXED_CONFIG = SINGLE_CONFIG.replace("migStrategy: single", "migStrategy: mixed")

STRICT_MODE = (
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gpusched-scheduler, namespace: kube-system}\n"
    "data: {mode: strict}\n---\n"
    + pod("run", {"nvidia.com/gpu": 6}, {"gpusched.io/duration": "30m"}, nodeSelector="{gpu-type: a100}"))
BIG_AHEAD = pod("big", {"nvidia.com/gpu": 8}, nodeSelector="{gpu-type: a100}")

NOT_READY_NODE = """apiVersion: v1
kind: Node
metadata:
  name: gpu-node-9
  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
spec:
  taints: [{key: node.kubernetes.io/not-ready, effect: NoSchedule}]
status:
  capacity: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "4", pods: "110"}
  allocatable: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "4", pods: "110"}
  conditions:
  - {type: Ready, status: "False", reason: KubeletNotReady, message: container runtime is down}
"""


@dataclass(frozen=True)
class Case:
    id: str
    setup: tuple[tuple[str, ...], ...]      # gpusched commands before the pod
    manifest: str
    first_lines: tuple[str, ...]
    fields: dict                             # expected keys/values of the first -o json fact


CLUSTER = BASE_CLUSTER          # Gpusched.cluster(): a copy of the state it leaves
MIG = ("apply", "-f", "examples/mig-mixed/1-mig-node.yaml")
WHOLE = pod("whole", {"nvidia.com/gpu": 1})

CASES = [
    Case("typo-in-resource-name", (CLUSTER,), pod("typo", {"nvidia.com/gpus": 1}),
         ("no node offers nvidia.com/gpus; did you mean nvidia.com/gpu?",),
         {"kind": "unknown-resource", "resource": "nvidia.com/gpus", "suggestion": "nvidia.com/gpu"}),
    Case("resource-nobody-has-nor-near", (CLUSTER,), pod("fpga", {"example.com/fpga": 1}),
         ("no node offers example.com/fpga",),
         {"kind": "unknown-resource", "suggestion": None}),
    Case("larger-than-any-node", (CLUSTER,), pod("big", {"nvidia.com/gpu": 16}),
         ("the largest node (gpu-node-1) has 8 nvidia.com/gpu; this pod asks for 16",),
         {"kind": "too-large", "node": "gpu-node-1", "has": 8, "asks": 16}),
    Case("mig-layout-splits-the-gpus", (MIG,), WHOLE,
         ("no node offers nvidia.com/gpu now",
          "mig-node-1 could offer 1 nvidia.com/gpu but does not: its MIG layout all-balanced splits "
          "the GPUs: it offers nvidia.com/mig-1g.5gb=2, nvidia.com/mig-2g.10gb=1, "
          "nvidia.com/mig-3g.20gb=1; change label nvidia.com/mig.config=all-balanced on node mig-node-1"),
         {"kind": "unknown-resource", "resource": "nvidia.com/gpu"}),
    # with a device-plugin ConfigMap the change names its flags.migStrategy too
    Case("mig-layout-splits-the-gpus-under-a-configmap", (MIG, ("apply", "-f", "-", MIXED_CONFIG)), WHOLE,
         ("no node offers nvidia.com/gpu now",
          "mig-node-1 could offer 1 nvidia.com/gpu but does not: its MIG layout all-balanced splits "
          "the GPUs: it offers nvidia.com/mig-1g.5gb=2, nvidia.com/mig-2g.10gb=1, "
          "nvidia.com/mig-3g.20gb=1; change label nvidia.com/mig.config=all-balanced on node mig-node-1, "
          "migStrategy mixed in ConfigMap default/time-slicing-config-all (key any)"),
         {"kind": "unknown-resource", "resource": "nvidia.com/gpu"}),
    Case("failed-mig-config-state",
         (MIG, ("label", "node", "mig-node-1", "nvidia.com/mig.config=bogus", "--overwrite")), WHOLE,
         ("no node offers nvidia.com/gpu now",
          # mig-parted reconfigure.go: validateMigConfig fails, the GPUs keep all-balanced
          "mig-node-1 could offer 1 nvidia.com/gpu but does not: nvidia.com/mig.config.state=failed: "
          "MIG layout bogus cannot be applied (Error selecting MIG config: selected mig-config not "
          "present: bogus; Error: failed to validate MIG configuration: exit status 1; Changing the "
          "'nvidia.com/mig.config.state' node label to 'failed'); change label "
          "nvidia.com/mig.config on node mig-node-1"),
         {"kind": "unknown-resource"}),
    Case("time-slicing-renames-the-resource", (CLUSTER, ("apply", "-f", "-", RENAME_CONFIG)), WHOLE,
         ("no node offers nvidia.com/gpu now",
          "gpu-node-1 could offer 8 nvidia.com/gpu but does not: time-slicing with renameByDefault in "
          "ConfigMap default/time-slicing-config-all (key any) renames it to nvidia.com/gpu.shared "
          "(nvidia.com/gpu.shared=32); change ConfigMap default/time-slicing-config-all (key any)"),
         {"kind": "unknown-resource"}),
    # k8s-device-plugin assertAllMigDevicesAreValid(uniform=true): migStrategy single needs one MIG
    # device type per node ("more than one MIG device type present on node"); all-balanced has three
    Case("device-plugin-configmap-migstrategy", (MIG, ("apply", "-f", "-", SINGLE_CONFIG)),
         pod("slice", {"nvidia.com/mig-1g.5gb": 1}),
         ("no node offers nvidia.com/mig-1g.5gb now",
          "mig-node-1 could offer 2 nvidia.com/mig-1g.5gb but does not: the device plugin does not "
          "start: node mig-node-1: invalid MIG configuration: more than one MIG device type present "
          "on node; change ConfigMap default/time-slicing-config-all"),
         {"kind": "unknown-resource", "resource": "nvidia.com/mig-1g.5gb"}),
    Case("cordoned-node-with-room",
         (CLUSTER, ("cordon", "gpu-node-1"), ("cordon", "gpu-node-2"), ("cordon", "gpu-node-3")),
         WHOLE,
         ("gpu-node-1 has room but is cordoned (spec.unschedulable); change: gpusched uncordon gpu-node-1",
          "gpu-node-2 has room but is cordoned (spec.unschedulable); change: gpusched uncordon gpu-node-2"),
         {"kind": "cordoned", "node": "gpu-node-1", "change": "gpusched uncordon gpu-node-1"}),
    # pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go PreEnqueue:
    # "waiting for scheduling gates: %v" (a Go []string: [a b])
    Case("scheduling-gates-hold-the-pod", (CLUSTER,),
         pod("gated", {"nvidia.com/gpu": 1}, schedulingGates="[{name: example.com/quota}, {name: b}]"),
         ("waiting for scheduling gates: [example.com/quota b] (PodScheduled=False, SchedulingGated): "
          "the scheduler does not try it until they are removed; change: remove them from "
          "spec.schedulingGates of pod gated (what added them removes them)",),
         {"kind": "gated", "gates": ["example.com/quota", "b"], "queue": "gated"}),
    Case("kueue-queue-label-queues-nothing", (CLUSTER,),
         pod("queued", {"nvidia.com/gpu": 16}).replace(
             "metadata: {name: queued,", "metadata: {name: queued, labels: {kueue.x-k8s.io/queue-name: team-a},"),
         ("label kueue.x-k8s.io/queue-name=team-a queues nothing on a plain pod: gpusched's Kueue queues "
          "batch/v1 Jobs, the pod goes straight to the scheduler",
          "the largest node (gpu-node-1) has 8 nvidia.com/gpu; this pod asks for 16"),
         {"kind": "no-queue", "queue": "team-a"}),
    # gpusched's own queue (cluster/scheduling/backfill.py, docs/backfill.md): strict priority order holds a
    # pod that fits behind the reservation of the pod ahead of it
    Case("strict-priority-queue-order",
         (CLUSTER, ("apply", "-f", "-", STRICT_MODE), ("apply", "-f", "-", BIG_AHEAD)),
         pod("small", {"nvidia.com/gpu": 1}),
         ("held by queue order (mode strict in ConfigMap kube-system/gpusched-scheduler): 0/4 nodes "
          "are available: waiting for default/big to start first (strict priority order; reserved "
          "gpu-node-1 at +30m). It starts when the reservation allows; change: data.mode in ConfigMap "
          "kube-system/gpusched-scheduler (default starts any pod that fits)",),
         {"kind": "queue-order", "mode": "strict", "queue": "strict"}),
    Case("not-ready-node-with-room", (("apply", "-f", "-", NOT_READY_NODE),), WHOLE,
         ("gpu-node-9 has room but is NotReady (Ready=False, KubeletNotReady); it takes pods again "
          "when its kubelet reports Ready",),
         {"kind": "not-ready", "node": "gpu-node-9", "reason": "KubeletNotReady"}),
]


def _run_setup(g: Gpusched, setup: tuple[tuple[str, ...], ...]) -> None:
    for command in setup:
        if command == BASE_CLUSTER:
            g.cluster()
        elif command[:3] == ("apply", "-f", "-"):
            g.ok("apply", "-f", "-", stdin=command[3])
        else:
            g.ok(*command)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_explain_states_the_blocking_fact_word_for_word(tmp_path, case):
    g = Gpusched(tmp_path)
    _run_setup(g, case.setup)
    g.ok("apply", "-f", "-", stdin=case.manifest)
    name = case.manifest.split("name: ", 1)[1].split(",", 1)[0]
    lines = g.ok("explain", "pod", name).lines
    assert tuple(lines[:len(case.first_lines)]) == case.first_lines
    fact = g.json("explain", f"pod/{name}")["facts"][0]
    assert fact["text"] == case.first_lines[0]
    assert {k: fact[k] for k in case.fields} == case.fields


def test_running_pod_says_where_and_which_devices(tmp_path):
    g = Gpusched(tmp_path)
    g.cluster()
    g.ok("apply", "-f", "-", stdin=pod("two", {"nvidia.com/gpu": 2}, nodeSelector="{gpu-type: t4}"))
    devices = g.json("get", "pod", "two")["metadata"]["annotations"]["gpusched.io/assigned-devices"]
    first, second = devices.split(",")
    assert g.ok("explain", "pod", "two").lines[0] == (
        f"runs on gpu-node-3; holds GPU 0 ({first}, nvidia.com/gpu, whole), "
        f"GPU 1 ({second}, nvidia.com/gpu, whole)")
    fact = g.json("explain", "pod", "two")["facts"][0]
    assert fact["node"] == "gpu-node-3" and [d["gpu"] for d in fact["devices"]] == [0, 1]


def test_room_from_pods_that_finish_is_dated_on_the_virtual_clock(tmp_path):
    """Only pods that end on their own count: run1 (30m duration) frees gpu-node-1; forever
    (no duration) on gpu-node-2 never does. A Job deadline (10m) is earlier than a 1h run."""
    g = Gpusched(tmp_path)
    g.cluster()
    g.ok("apply", "-f", "-", stdin=pod("run1", {"nvidia.com/gpu": 8}, {"gpusched.io/duration": "30m"})
         + "---\n" + pod("forever", {"nvidia.com/gpu": 4}))
    g.ok("advance", "5m")
    g.ok("apply", "-f", "-", stdin=pod("wait8", {"nvidia.com/gpu": 8}))
    assert ("  - room frees up on gpu-node-1 in 25m (at 2026-01-01T00:30:00Z) when 1 pod(s) finish "
            "(default/run1) -> fits on gpu-node-1") in g.ok("explain", "pod", "wait8").lines
    suggestion = [s for s in g.json("explain", "pod", "wait8")["suggestions"] if s["kind"] == "finishing"]
    assert suggestion[0]["at"] == 1800.0 and suggestion[0]["pods"] == ["default/run1"]
    g.ok("apply", "-f", "-", stdin=pod("wait4", {"nvidia.com/gpu": 4}, nodeSelector="{gpu-type: v100}"))
    lines = g.ok("explain", "pod", "wait4").lines
    assert lines[0] == ("no pod holding room will finish on its own (none has a gpusched.io/duration, "
                        "a sleep command or a deadline); room frees up only when one is deleted")
    assert not [s for s in g.json("explain", "pod", "wait4")["suggestions"] if s["kind"] == "finishing"]


def test_job_deadline_counts_as_finishing(tmp_path):
    """train-resnet runs 1h but its Job's activeDeadlineSeconds is 600: its GPU frees at 10m
    (finetune-bert, 5m, frees at 5m wherever it runs)."""
    g = Gpusched(tmp_path)
    g.cluster()
    g.ok("apply", "-f", "examples/training-job/jobs.yaml")
    pods = g.pods()
    job_pod = next(n for n in pods if n.startswith("train-resnet"))
    node = pods[job_pod]["spec"]["nodeName"]
    ends = {f"default/{n}": (600.0 if n.startswith("train-resnet") else 300.0)
            for n, p in pods.items() if p["spec"].get("nodeName") == node}
    # where the Jobs land follows the v1.35 default scoring (cpu/memory LeastAllocated), so count
    # the GPUs the node's pods hold rather than assuming one per pod
    used = sum(int(c["resources"]["limits"].get("nvidia.com/gpu", 0))
               for n, p in pods.items() if p["spec"].get("nodeName") == node
               for c in p["spec"]["containers"])
    free = {"gpu-node-1": 8, "gpu-node-2": 4, "gpu-node-3": 2}[node] - used
    here = f"{{kubernetes.io/hostname: {node}}}"
    g.ok("apply", "-f", "-", stdin=(pod("fill", {"nvidia.com/gpu": free}, nodeSelector=here) if free else "")
         + "---\n" + pod("want", {"nvidia.com/gpu": 1}, nodeSelector=here))
    found = [s for s in g.json("explain", "pod", "want")["suggestions"] if s["kind"] == "finishing"]
    assert found[0]["at"] == min(ends.values())
    assert found[0]["pods"] == [min(ends, key=ends.get)]


def test_a_not_ready_node_is_named_as_a_node_change_not_a_toleration(tmp_path):
    """The node lifecycle controller's ``node.kubernetes.io/not-ready`` taint (nodelifecycle
    controller, TaintNodesByCondition) is the node's state: explain names the node and the taint
    (edit ``wait-untainted``), never "tolerate node.kubernetes.io/not-ready"."""
    g = Gpusched(tmp_path)
    g.ok("apply", "-f", "-", stdin=NOT_READY_NODE)
    g.ok("apply", "-f", "-", stdin=WHOLE)
    suggestions = g.json("explain", "pod", "whole")["suggestions"]
    assert [(s["kind"], s["edit"]) for s in suggestions] == [
        ("node-condition", [{"op": "wait-untainted",
                             "value": {"node": "gpu-node-9", "taint": "node.kubernetes.io/not-ready"}}])]


A30_POOL = """apiVersion: gpusched.io/v1alpha1
kind: NodePool
metadata: {name: a30}
spec:
  count: 1
  gpu: {model: A30, count: 4}
  cpu: "32"
  memory: 128Gi
"""


def test_two_gpu_pod_gets_a_bridged_pair_and_explain_says_so(tmp_path):
    """devices.interconnect: on A30 cards bridged in pairs (0-1, 2-3), with GPU 0 taken a 2-GPU
    pod gets the pair 2-3, not 1-2 across two pairs (go-gpuallocator's best-effort policy
    prefers NVLink-connected sets)."""
    g = Gpusched(tmp_path)
    g.ok("apply", "-f", "-", stdin=A30_POOL)
    g.ok("apply", "-f", "-", stdin=pod("one", {"nvidia.com/gpu": 1}))
    g.ok("apply", "-f", "-", stdin=pod("two", {"nvidia.com/gpu": 2}))
    fact = g.json("explain", "pod", "two")["facts"][0]
    assert [d["gpu"] for d in fact["devices"]] == [2, 3]
    assert fact["nvlink"] == "GPUs 2,3 share one NVLink domain (GPUs 2-3; NVLink bridges, GPUs in bridged pairs)"
    assert g.ok("explain", "pod", "two").lines[0].endswith(
        "; GPUs 2,3 share one NVLink domain (GPUs 2-3; NVLink bridges, GPUs in bridged pairs)")
