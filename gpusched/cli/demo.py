"""``gpusched demo``: the GPU-scheduling lab in examples/, run in a throwaway cluster.

Each scenario starts from a fresh cluster (``reset``, then ``examples/cluster.yaml`` and
``examples/priority-classes.yaml``), runs the commands a person would type, prints each command
with its output (or the lines of it that matter, e.g. the FailedScheduling and Preempted events),
and says what happened and why. The state lives in a temporary directory, never in the user's
state file. Commands run in-process through the ``command`` :func:`run_demo` is given
(``cli.main.main``), so the whole tour takes seconds.

Exit code: 0 when every step behaved as the scenario expects (errors only where a refusal is the
point), 1 otherwise.

Neighbours: ``cli.main`` (calls :func:`run_demo` with itself), ``examples/`` (the manifests).
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from gpusched.errors import UsageError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BASE = ("apply", "-f", "examples/cluster.yaml", "-f", "examples/priority-classes.yaml")
KEY_EVENTS = ("FailedScheduling", "Preempted", "Killing", "DeadlineExceeded", "Evicted")
Command = Callable[[list[str]], int]     # gpusched's main(argv) -> exit code


@dataclass(frozen=True)
class Step:
    args: tuple[str, ...]
    grep: tuple[str, ...] = ()       # show only output lines containing one of these (and the header)
    expect_error: bool = False       # the refusal is the point of the step
    section: str = ""                # show only this describe section (its title line and body)


@dataclass(frozen=True)
class Scenario:
    title: str
    intro: str
    steps: tuple[Step, ...]
    why: str
    fresh: bool = True               # start from reset + cluster + priority classes


def _s(*args: str, grep: tuple[str, ...] = (), expect_error: bool = False, section: str = "") -> Step:
    return Step(tuple(args), grep, expect_error, section)


EVENTS = _s("events", grep=KEY_EVENTS)

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "The cluster", "Four nodes from NodePools: 8x A100-40GB, 4x V100-16GB, 2x T4 and a CPU node, "
        "labelled by GPU type; four priority classes.",
        (_s("get", "nodes", "-L", "gpu-type"),
         _s("get", "priorityclasses"), _s("top", "nodes")),
        "The device plugin advertises nvidia.com/gpu per node; `normal` is the global default class."),
    Scenario(
        "Preemption", "A low-priority batch pod holds all 8 A100s; a high-priority training pod arrives.",
        (_s("apply", "-f", "examples/preemption/1-low-priority-batch.yaml"),
         _s("apply", "-f", "examples/preemption/2-high-priority-training.yaml"),
         _s("get", "pods", "-o", "wide"), EVENTS),
        "No node fits urgent-training, so DefaultPreemption looked for lower-priority victims: on "
        "gpu-node-1 removing low-batch (priority 100 < 100000) frees 8 GPUs. The victim got a "
        "Preempted event and was stopped (Killing), and the preemptor, nominated to gpu-node-1, was bound "
        "there once the GPUs were free (FailedScheduling without a preemption part is upstream's trace "
        "of the cycle that preempted)."),
    Scenario(
        "preemptionPolicy: Never", "The T4 node is full; a pod of a higher but non-preempting class arrives.",
        (_s("apply", "-f", "examples/no-preemption/1-t4-jobs.yaml"),
         _s("apply", "-f", "examples/no-preemption/2-polite-training.yaml"),
         _s("get", "pods", "-o", "wide"), EVENTS),
        "polite-training outranks the T4 pods but its class says preemptionPolicy: Never, so the "
        "scheduler does not evict them: `preemption: not eligible due to preemptionPolicy=Never.`"),
    Scenario(
        "nodeSelector", "One pod asks for gpu-type=v100, one for gpu-type=h100 (no such node).",
        (_s("apply", "-f", "examples/node-selector/pods.yaml"), _s("get", "pods", "-o", "wide"), EVENTS),
        "NodeAffinity filters on the labels: only gpu-node-2 matches v100; nothing matches h100, and "
        "preemption cannot help with a label mismatch."),
    Scenario(
        "Node affinity", "Three 4-GPU pods require A100 or V100 and prefer A100; one pod requires A100 only.",
        (_s("apply", "-f", "examples/node-affinity/pods.yaml"), _s("get", "pods", "-o", "wide"), EVENTS),
        "The preferred term (weight 80) ranks gpu-node-1 first while it has room: two pods land there, "
        "the third on the V100 node. The A100-only pod waits: the A100s are taken by equal-priority pods."),
    Scenario(
        "Taints and tolerations", "gpu-node-3 is tainted dedicated=gpu:NoSchedule.",
        (_s("taint", "node", "gpu-node-3", "dedicated=gpu:NoSchedule"),
         _s("apply", "-f", "examples/taints/pods.yaml"), _s("get", "pods", "-o", "wide"), EVENTS,
         _s("taint", "node", "gpu-node-3", "dedicated:NoSchedule-"), _s("get", "pods", "-o", "wide")),
        "TaintToleration keeps pods without a matching toleration off the node; removing the taint is a "
        "node change, which requeues the waiting pod and it runs."),
    Scenario(
        "Time-slicing", "NVIDIA's time-slicing ConfigMap (4 replicas) applied unchanged; 9 workers target 2 T4s.",
        (_s("apply", "-f", "examples/time-slicing/time-slicing-config-all.yaml"),
         _s("get", "nodes", "-L", "nvidia.com/gpu.product,nvidia.com/gpu.replicas"),
         _s("top", "nodes"),
         _s("apply", "-f", "examples/time-slicing/t4-workers.yaml"),
         _s("get", "pods", "-o", "wide"), EVENTS),
        "With replicas: 4 the plugin advertises each T4 four times (nvidia.com/gpu: 8); eight pods share "
        "the two GPUs, four each, and the ninth finds no replica left: Insufficient nvidia.com/gpu."),
    Scenario(
        "MIG (mixed strategy)", "An A100 partitioned all-balanced; MIG pods ask for nvidia.com/mig-* resources.",
        (_s("apply", "-f", "examples/mig-mixed/"), _s("get", "pods", "-o", "wide"),
         _s("describe", "node", "mig-node-1", section="GPU Devices:"), EVENTS),
        "all-balanced gives each A100-40GB one 3g.20gb, one 2g.10gb and two 1g.5gb instances; the pods "
        "fill exactly those slots and the one that asks for more waits."),
    Scenario(
        "Team quota and LimitRange", "Namespace team-a may use 4 GPUs; a container may use at most 2.",
        (_s("apply", "-f", "examples/team-quota/1-namespace.yaml"),
         _s("apply", "-f", "examples/team-quota/2-training-pods.yaml"),
         _s("apply", "-f", "examples/team-quota/3-over-quota.yaml", expect_error=True),
         _s("apply", "-f", "examples/team-quota/4-over-limit.yaml", expect_error=True),
         _s("get", "quota", "-n", "team-a")),
        "Admission refuses what breaks the namespace's rules before anything is stored, with the "
        "messages Kubernetes prints; the quota's status.used tracks the admitted pods."),
    Scenario(
        "Training Job with a deadline", "Two Jobs with activeDeadlineSeconds: 600; one needs 5m, one needs 1h.",
        (_s("apply", "-f", "examples/training-job/jobs.yaml"), _s("advance", "11m"),
         _s("get", "jobs"), _s("get", "pods"), EVENTS),
        "Pods run on the virtual clock: finetune-bert finished after 5m; train-resnet passed its 10m "
        "deadline, so the Job controller failed it (DeadlineExceeded) and killed its pod."),
    Scenario(
        "Inference Deployment", "llm-inference: 3 replicas, critical priority, one A100 each.",
        (_s("apply", "-f", "examples/inference-deployment/deployment.yaml"), _s("get", "deployments"),
         _s("scale", "deployment", "llm-inference", "--replicas", "5"), _s("get", "deployments"),
         _s("get", "pods", "-l", "app=llm-inference", "-o", "wide")),
        "Deployment -> ReplicaSet -> Pods; scaling adds replicas and the scheduler places each on a free GPU."),
)


def _run(command: Command, state: str, args: tuple[str, ...]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = command(["--state", state, *args])
    return code, out.getvalue(), err.getvalue()


def _show(text: str, grep: tuple[str, ...], section: str = "") -> None:
    lines = text.rstrip("\n").splitlines()
    if section:
        start = next((i for i, line in enumerate(lines) if line.startswith(section)), len(lines))
        end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith(" ")), len(lines))
        lines = lines[start:end]
    if grep and lines:
        lines = [lines[0]] + [line for line in lines[1:] if any(g in line for g in grep)]
    for line in lines:
        print(f"    {line}")


def _step(command: Command, state: str, step: Step) -> bool:
    print(f"  $ gpusched {' '.join(step.args)}")
    code, out, err = _run(command, state, step.args)
    _show(out, step.grep, step.section)
    _show(err, ())
    ok = (code != 0) == step.expect_error
    if not ok:
        print(f"    !! unexpected exit code {code}")
    return ok


def run_demo(command: Command) -> int:
    """Walk through every scenario, running each step with ``command``; returns 0 when all
    steps behaved as expected."""
    if not (EXAMPLES / "cluster.yaml").is_file():
        raise UsageError(f"examples not found at {EXAMPLES} (the demo runs from a source checkout)")
    failures = 0
    with tempfile.TemporaryDirectory(prefix="gpusched-demo-") as tmp, \
            contextlib.chdir(EXAMPLES.parent):
        state = str(Path(tmp) / "demo.db")
        print(f"gpusched demo: a throwaway cluster in {state}\n")
        for number, scenario in enumerate(SCENARIOS, 1):
            print(f"== {number}. {scenario.title} ==")
            print(textwrap.fill(scenario.intro, 100, initial_indent="  ", subsequent_indent="  "))
            if scenario.fresh:
                for args in (("reset",), BASE):
                    code, _, err = _run(command, state, args)
                    if code:
                        print(f"  !! setting up the cluster failed: {err.strip()}")
                        failures += 1
            failures += sum(not _step(command, state, step) for step in scenario.steps)
            print(textwrap.fill("Why: " + scenario.why, 100, initial_indent="  ", subsequent_indent="  "))
            print()
    print("demo finished" + (f" with {failures} unexpected result(s)" if failures else ": all steps as expected"))
    return 1 if failures else 0
