"""``sim.replay_load``: the arrival-rate knob of replay and whatif (``--time-scale K``,
``--load X``), on tiny hand-made traces and generated ones (hypothesis).

- peak demand: GPUs held at the busiest instant on an unlimited cluster, ends before starts;
- it never falls as K grows (two pods that overlap keep overlapping when arrivals come closer);
- ``--load`` picks the smallest K (to 0.1 %) whose peak reaches the target;
- ``--loops N``: the trace N times back to back, names ``-loop<i>``, one span apart;
- K = 1 is the replay as it was, record for record; any K divides arrivals, keeps run times.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusched.errors import UsageError
from gpusched.sim.alibaba import TraceNode
from gpusched.sim.replay import ReplayConfig, ReplayJob, ReplayTrace, replay
from gpusched.sim.replay_load import looped, peak_demand, scale_for_load, time_scaled

GIB = 1 << 30
NODES = (TraceNode("n1", 16000, 64 * GIB, 2, "T4"), TraceNode("n2", 16000, 64 * GIB, 4, "V100M16"))


def job(name: str, arrival: float, run: float | None, gpus: float = 1) -> ReplayJob:
    """A job of ``gpus`` GPUs (below 1: a share of one GPU)."""
    count, milli = (1, round(gpus * 1000)) if 0 < gpus < 1 else (int(gpus), 1000 if gpus else 0)
    return ReplayJob(name, arrival, run, 1000, GIB, count, milli)


def trace(*jobs: ReplayJob) -> ReplayTrace:
    return ReplayTrace(NODES, tuple(sorted(jobs, key=lambda j: j.arrival)), "t.csv")


PEAKS = [
    ("one-pod", [job("a", 0, 10, 2)], 1, 2.0),
    ("apart", [job("a", 0, 10), job("b", 100, 10)], 1, 1.0),
    ("apart-compressed-20x-overlap", [job("a", 0, 10), job("b", 100, 10)], 20, 2.0),
    ("end-meets-start-is-not-overlap", [job("a", 0, 10), job("b", 10, 10)], 1, 1.0),
    ("no-run-time-holds-forever", [job("a", 0, None, 4), job("b", 1e6, 5, 2)], 1, 6.0),
    ("shares-count-their-fraction", [job("a", 0, 50, 0.25), job("b", 1, 50, 0.5)], 1, 0.75),
    ("cpu-only-holds-none", [job("a", 0, 50, 0), job("b", 1, 50, 0)], 1, 0.0),
]


@pytest.mark.parametrize("jobs,k,expected", [p[1:] for p in PEAKS], ids=[p[0] for p in PEAKS])
def test_peak_demand(jobs, k, expected):
    assert peak_demand(trace(*jobs), k) == pytest.approx(expected)


def test_load_picks_the_smallest_scale_reaching_the_target():
    # 6 GPUs; pods of 2 GPUs every 100 s for 30 s: a load of 0.9 (5.4 GPUs) needs 3 pods at
    # once, i.e. 3 arrivals within 30 s: K > 200 / 30.
    jobs = [job(f"p{i}", 100.0 * i, 30, 2) for i in range(10)]
    k = scale_for_load(trace(*jobs), 0.9)
    assert k == pytest.approx(200 / 30, rel=2e-3)
    assert peak_demand(trace(*jobs), k) == 6.0 and peak_demand(trace(*jobs), k * 0.995) == 4.0


def test_load_already_reached_is_scale_one():
    assert scale_for_load(trace(job("a", 0, 10, 4)), 0.5) == 1.0


BAD_LOADS = [
    ("zero", 0.0, "invalid --load 0: must be a fraction of the cluster's GPUs in (0, 10]"),
    ("negative", -1.0, "invalid --load -1: must be a fraction"),
    ("nan", math.nan, "invalid --load nan: must be a fraction"),
    ("more-than-the-trace-asks", 0.9,
     "invalid --load 0.9: t.csv can offer at most 0.500 of the cluster's 6 GPUs (its pods ask for 3.0 GPUs in all)"),
]


@pytest.mark.parametrize("load,message", [b[1:] for b in BAD_LOADS], ids=[b[0] for b in BAD_LOADS])
def test_bad_load_is_one_line(load, message):
    with pytest.raises(UsageError) as info:
        scale_for_load(trace(job("a", 0, 10, 2), job("b", 50, 10, 1)), load)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


@pytest.mark.parametrize("k", [0.0, -2.0, 2e6, math.inf, math.nan], ids=["0", "-2", "2e6", "inf", "nan"])
def test_bad_time_scale_is_one_line(k):
    with pytest.raises(UsageError) as info:
        time_scaled(trace(job("a", 0, 10)), k)
    assert str(info.value).startswith(f"invalid --time-scale {k:g}: must be a number from 1e-06 to 1e+06")


def test_loops_repeat_the_trace_one_span_apart():
    base = trace(job("a", 100, 10), job("b", 400, 50, 2))
    three = looped(base, 3)
    assert [(j.name, j.arrival, j.run_time) for j in three.jobs] == [
        ("a", 100, 10), ("b", 400, 50), ("a-loop1", 400, 10), ("b-loop1", 700, 50),
        ("a-loop2", 700, 10), ("b-loop2", 1000, 50)]
    assert looped(base, 1) is base and three.source == "t.csv (x3 loops)"
    # b and a-loop1 arrive together: 3 GPUs at once, where one loop peaks at 2
    assert (peak_demand(base), peak_demand(three)) == (2.0, 3.0)


def test_loops_rename_a_manifest_too():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nb"}, "spec": {}}
    two = looped(trace(ReplayJob("nb", 0, manifest=pod), ReplayJob("x", 60, 5, 1000, GIB)), 2)
    assert [(j.name, (j.manifest or {}).get("metadata", {}).get("name")) for j in two.jobs] == [
        ("nb", "nb"), ("x", None), ("nb-loop1", "nb-loop1"), ("x-loop1", None)]
    assert pod["metadata"]["name"] == "nb"          # the caller's manifest is not changed


@pytest.mark.parametrize("loops", [0, -1, 101], ids=["0", "-1", "101"])
def test_bad_loops_is_one_line(loops):
    with pytest.raises(UsageError) as info:
        looped(trace(job("a", 0, 10)), loops)
    assert str(info.value) == f"invalid --loops {loops}: must be 1 to 100"


job_fields = st.tuples(st.integers(0, 600), st.one_of(st.none(), st.integers(1, 900)),
                       st.sampled_from([0, 0.25, 0.5, 1, 2, 4]), st.sampled_from(["", "BE", "LS"]))


def generated(fields: list[tuple]) -> ReplayTrace:
    jobs = [ReplayJob(f"j{i}", float(at), None if run is None else float(run), 1000, GIB,
                      *((1, round(g * 1000)) if 0 < g < 1 else (int(g), 1000 if g else 0)), qos=qos)
            for i, (at, run, g, qos) in enumerate(fields)]
    return trace(*jobs)


@settings(max_examples=40, deadline=None)
@given(st.lists(job_fields, min_size=1, max_size=20), st.floats(0.01, 1000), st.floats(0.01, 1000))
def test_peak_never_falls_as_arrivals_come_closer(fields, k1, k2):
    low, high = sorted((k1, k2))
    assert peak_demand(generated(fields), low) <= peak_demand(generated(fields), high) + 1e-9


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(job_fields, min_size=1, max_size=8), st.sampled_from([1.0, 3.0, 0.5]))
def test_scaled_replay_divides_arrivals_and_keeps_run_times(fields, k):
    original = generated(fields)
    config = ReplayConfig(seed=3, sample_every=120)
    result = replay(time_scaled(original, k), config)
    if k == 1:        # the knob at 1 is today's replay, record for record and sample for sample
        assert repr(result) == repr(replay(original, config))      # repr: a NaN wait equals itself
    by_name = {j.name: j for j in original.jobs}
    for pod in result.pods:        # a record's arrival is its creationTimestamp: whole seconds
        source = by_name[pod.job]
        assert pod.arrival <= source.arrival / k < pod.arrival + 1
        if pod.end is not None and pod.start is not None and pod.outcome == "Succeeded":
            assert pod.end - pod.start == pytest.approx(source.run_time)
