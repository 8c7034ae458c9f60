"""Property tests of a replay's accounting, on small generated traces (hypothesis).

For any trace of jobs (whole GPUs, GPU shares, CPU-only; with and without run times; QoS classes
that preempt and that do not) on a few nodes, under the default profile and FGD:

- GPU-seconds used (the time integral of what running pods hold, ``Summary.gpu_hours_used``)
  equals the sum over pods of GPUs x (end - start);
- no pod starts before it arrives, and none ends before it starts;
- the cluster never over-commits: at every instant the GPUs held on each node (every GPU share
  counted by its milli) fit the node, per GPU; a whole GPU is never also shared.

The third is checked from the per-pod records (node, devices, start, end), independent of the
recorder's own running total, by sweeping all start and end instants.
"""

from __future__ import annotations

from collections import defaultdict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusched.sim.alibaba import TraceNode
from gpusched.sim.replay import ReplayConfig, ReplayJob, ReplayTrace, replay

GIB = 1 << 30
NODES = (TraceNode("n1", 16000, 64 * GIB, 2, "T4"), TraceNode("n2", 16000, 64 * GIB, 4, "V100M16"))
GPUS_PER_NODE = {"n1": 2, "n2": 4}

gpu_request = st.sampled_from([(0, 0), (1, 250), (1, 500), (1, 750), (1, 1000), (2, 1000),
                               (4, 1000)])
job_fields = st.tuples(st.integers(0, 600), st.one_of(st.none(), st.integers(1, 900)),
                       gpu_request, st.sampled_from(["", "BE", "LS", "Guaranteed"]),
                       st.sampled_from([1000, 4000, 9000]))


def trace_of(fields: list[tuple]) -> ReplayTrace:
    jobs = [ReplayJob(f"j{i}", float(at), None if run is None else float(run), cpu, GIB, n, milli,
                      qos=qos)
            for i, (at, run, (n, milli), qos, cpu) in enumerate(fields)]
    return ReplayTrace(NODES, tuple(sorted(jobs, key=lambda j: j.arrival)))


def held_intervals(result):
    """(node, device id, milli, start, end) for every pod that ran; end = the replay's end."""
    end_of_run = result.summary.span_seconds
    out = []
    for pod in result.pods:
        if pod.start is None or not pod.devices:
            continue
        devices = pod.devices.split(",")
        milli = round(pod.gpus * 1000 / len(devices))
        for device in devices:
            gpu = device.split("::")[0]
            out.append((pod.node, gpu, milli, pod.start, pod.end if pod.end is not None else end_of_run))
    return out


def assert_never_over_committed(result) -> None:
    events = []
    for node, gpu, milli, start, end in held_intervals(result):
        events.append((start, 1, node, gpu, milli))
        events.append((end, 0, node, gpu, milli))      # ends before starts at the same instant
    held: dict[tuple[str, str], int] = defaultdict(int)
    for _t, starting, node, gpu, milli in sorted(events):
        held[(node, gpu)] += milli if starting else -milli
        assert held[(node, gpu)] <= 1000, f"{node} {gpu} holds {held[(node, gpu)]} milli"
    gpus = defaultdict(set)
    for node, gpu, *_ in held_intervals(result):
        gpus[node].add(gpu)
    assert all(len(ids) <= GPUS_PER_NODE[node] for node, ids in gpus.items())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(job_fields, min_size=1, max_size=14), st.sampled_from(["default", "fgd"]))
def test_replay_accounting(fields, policy):
    result = replay(trace_of(fields), ReplayConfig(policy=policy, seed=1, sample_every=120))
    end_of_run = result.summary.span_seconds
    used = sum(p.gpus * ((p.end if p.end is not None else end_of_run) - p.start)
               for p in result.pods if p.start is not None)
    assert abs(result.summary.gpu_hours_used * 3600 - used) < 1e-6 * max(1.0, used)
    for pod in result.pods:
        assert pod.start is None or pod.start >= pod.arrival, pod
        assert pod.end is None or pod.start is None or pod.end >= pod.start, pod
    assert_never_over_committed(result)
    assert all(s.gpu_milli_allocated <= s.gpu_milli_capacity for s in result.samples)


def test_over_commit_check_can_fail():
    """The sweep catches two pods sharing more than one GPU (a hand-made bad result)."""
    from gpusched.sim.replay_record import PodRecord, Summary
    from gpusched.sim.replay import ReplayResult
    pods = tuple(PodRecord("default", f"p{i}", "", 0.75, 0.0, 0.0, 10.0, "n1", "GPU-a", False,
                           "Succeeded") for i in range(2))
    bad = ReplayResult((), pods, Summary(2, 2, 2, 0, 0, 0, 10.0, 0.0, 0.0, ()))
    try:
        assert_never_over_committed(bad)
    except AssertionError:
        return
    raise AssertionError("two 750-milli shares on one GPU were not caught")
