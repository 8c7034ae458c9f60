"""``sim.replay``: a trace through the embedded cluster, read back from the pods' own state.

Tiny hand-made traces whose outcome can be worked out on paper: a pod waits until a GPU is
freed, a higher QoS class preempts a best-effort pod (DefaultPreemption; the victim holds its
GPU through its 30 s grace period, pkg/kubelet's graceful termination), a pod too large for
every node never starts, and the FGD policy runs as the profile of the same scheduler.
"""

from __future__ import annotations

import pytest

from gpusched.errors import UsageError
from gpusched.sim.alibaba import TraceNode
from gpusched.sim.replay import ReplayConfig, ReplayJob, ReplayTrace, job_pod, replay

GIB = 1 << 30


def node(name: str, gpus: int = 2) -> TraceNode:
    return TraceNode(name, 8000, 64 * GIB, gpus, "T4")


def job(name: str, at: float, run: float | None, gpus: int = 1, qos: str = "",
        milli: int = 1000) -> ReplayJob:
    return ReplayJob(name, at, run, 1000, GIB, gpus, milli if gpus else 0, qos=qos)


def by_name(result):
    return {p.name: p for p in result.pods}


# (id, nodes, jobs, expected {pod: (start, end, outcome)})
CASES = [
    ("fits-at-once", [node("n0")], [job("a", 0, 100), job("b", 5, 10)],
     {"a": (0.0, 100.0, "Succeeded"), "b": (5.0, 15.0, "Succeeded")}),
    ("waits-for-a-free-gpu", [node("n0", 1)], [job("a", 0, 100), job("b", 5, 10)],
     {"a": (0.0, 100.0, "Succeeded"), "b": (100.0, 110.0, "Succeeded")}),
    ("too-big-never-starts", [node("n0", 2)], [job("a", 0, 100, gpus=4)],
     {"a": (None, None, "Pending")}),
    ("runs-without-end", [node("n0")], [job("a", 3, None)], {"a": (3.0, None, "Running")}),
    ("ls-preempts-best-effort", [node("n0", 1)],
     [job("be", 0, 1000, qos="BE"), job("ls", 10, 50, qos="LS")],
     {"be": (0.0, 40.0, "Preempted"), "ls": (40.0, 90.0, "Succeeded")}),
    ("best-effort-never-preempts", [node("n0", 1)],
     [job("ls", 0, 100, qos="LS"), job("be", 10, 50, qos="BE")],
     {"ls": (0.0, 100.0, "Succeeded"), "be": (100.0, 150.0, "Succeeded")}),
    ("shares-pack-one-gpu", [node("n0", 1)],
     [job("s1", 0, 60, milli=500), job("s2", 0, 60, milli=500), job("s3", 0, 60, milli=500)],
     {"s1": (0.0, 60.0, "Succeeded"), "s2": (0.0, 60.0, "Succeeded"),
      "s3": (60.0, 120.0, "Succeeded")}),
]


@pytest.mark.parametrize("policy", ["default", "fgd"])
@pytest.mark.parametrize("case_id,nodes,jobs,expected", CASES, ids=[c[0] for c in CASES])
def test_outcomes(case_id, nodes, jobs, expected, policy):
    result = replay(ReplayTrace(tuple(nodes), tuple(jobs)), ReplayConfig(policy=policy))
    pods = by_name(result)
    assert {n: (pods[n].start, pods[n].end, pods[n].outcome) for n in expected} == expected


def test_preemption_is_counted_and_gpu_seconds_add_up():
    trace = ReplayTrace((node("n0", 1),), (job("be", 0, 1000, qos="BE"), job("ls", 10, 50, qos="LS")))
    result = replay(trace, ReplayConfig(sample_every=30))
    assert result.summary.preemptions == 1
    # be holds 1 GPU 0..40 (preempted at 10, 30 s grace), ls 40..90
    assert result.summary.gpu_hours_used * 3600 == pytest.approx(90.0)
    assert [(s.time, s.gpu_milli_allocated) for s in result.samples] == [(0.0, 1000), (30.0, 1000), (60.0, 1000), (90.0, 0)]


def test_samples_follow_the_grid_and_count_namespaces():
    jobs = (ReplayJob("a", 0, 100, 1000, GIB, 1, 1000, namespace="team-a"),
            ReplayJob("b", 0, 200, 1000, GIB, 1, 1000, namespace="team-b"))
    result = replay(ReplayTrace((node("n0"),), jobs), ReplayConfig(sample_every=60))
    rows = [(s.time, s.running_by_namespace) for s in result.samples]
    assert rows[:4] == [(0.0, (("team-a", 1), ("team-b", 1))), (60.0, (("team-a", 1), ("team-b", 1))),
                        (120.0, (("team-b", 1),)), (180.0, (("team-b", 1),))]


def test_same_seed_same_result():
    nodes = tuple(node(f"n{i}", 4) for i in range(4))
    jobs = tuple(job(f"p{i}", i * 7 % 50, 30 + i % 17, milli=(250, 500, 1000)[i % 3])
                 for i in range(40))
    trace = ReplayTrace(nodes, tuple(sorted(jobs, key=lambda j: j.arrival)))
    first, again = replay(trace, ReplayConfig(seed=3)), replay(trace, ReplayConfig(seed=3))
    assert first.pods == again.pods and first.samples == again.samples


@pytest.mark.parametrize("policy,message", [
    ("nope", 'unknown policy "nope"'),
])
def test_bad_config(policy, message):
    with pytest.raises(UsageError, match=message):
        replay(ReplayTrace((node("n0"),), ()), ReplayConfig(policy=policy))


def test_job_pod_manifest():
    pod = job_pod(ReplayJob("x", 0, 90.5, 3152, 2 * GIB, 1, 470, ("V100M16",), "LS"))
    assert pod["metadata"]["annotations"] == {"gpusched.io/duration": "90.500s",
                                              "gpusched.io/gpu-milli": "470",
                                              "gpusched.io/gpu-model": "V100M16"}
    assert pod["spec"]["priorityClassName"] == "replay-latency-sensitive"
    assert pod["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "3152m", "memory": "2048Mi"}}
