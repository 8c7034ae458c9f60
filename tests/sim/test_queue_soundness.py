"""The scheduling queue's hints never hold back a pod that could run (``scheduler.queue``).

Replays small random traces (``test_replay_properties``' generator: whole GPUs, shares, CPU-only,
every QoS class, default and FGD policy) and, after every clock step, asks the reference - a
fresh scheduler over a snapshot built from the store's objects, retrying every pending pod as
the queue did before hints (``Scheduler.failure``, which changes nothing) - about each pod the
queue keeps in ``unschedulablePods`` (not moved, every logged change judged): none may now fit
a node or be able to preempt. A pod the hints move waits at most its back-off (10 s), so no pod
stays pending that a retry of everyone would bind.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpusched.sim.replay as replay_module
from gpusched.cluster.scheduling.cache import build_snapshot
from gpusched.cluster.scheduling.profiles import make_scheduler, pending_pods, served_names
from gpusched.objects.pod import pod_info
from gpusched.sim.replay import ReplayConfig, replay
from gpusched.sim.replay_record import Recorder

from . import test_replay_properties as props


def held_back_but_runnable(view: Any) -> list[str]:
    """Pods the queue holds back although a retry now would bind them or let them preempt."""
    snapshot, order = build_snapshot(view)
    scheduler = make_scheduler(snapshot, view, order)
    out = []
    for pod in pending_pods(view, served_names(view)):
        uid = pod["metadata"]["uid"]
        record = view.queue.get(uid)
        if record is None or record["moved"] or view.attempts.get(uid) != view.epoch:
            continue
        result = scheduler.failure(pod_info(pod, order.get(uid, 0)))
        if result is None or result.nominated_node:
            out.append(f"{pod['metadata']['name']} at t={view.clock:g}")
    return out


class CheckingRecorder(Recorder):
    """The replay's own recorder, plus the reference check after every step."""

    def after(self, view: Any, t: float, keys: set[Any]) -> None:
        super().after(view, t, keys)
        stuck = held_back_but_runnable(view)
        assert not stuck, stuck


@pytest.fixture()
def checked_replay(monkeypatch):
    monkeypatch.setattr(replay_module, "Recorder", CheckingRecorder)
    return replay


@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(props.job_fields, min_size=2, max_size=16), st.sampled_from(["default", "fgd"]),
       st.integers(1, 60))
def test_hints_never_hold_back_a_pod_that_could_run(checked_replay, fields, policy, squeeze):
    trace = props.trace_of([(at // squeeze, *rest) for at, *rest in fields])   # crowd arrivals
    result = checked_replay(trace, ReplayConfig(policy=policy, seed=3, sample_every=120))
    assert all(p.start is None or p.start >= p.arrival for p in result.pods)
