"""The embedded cluster's scheduling queue (``scheduler.queue``): back-off, the 5-minute flush
and the queueing hints, against kube-scheduler's ``pkg/scheduler/backend/queue/
scheduling_queue.go`` and NodeResourcesFit's hints (``pkg/scheduler/framework/plugins/
noderesources/fit.go``)."""

from __future__ import annotations

import pytest

from gpusched.cluster.cluster import Cluster
from gpusched.cluster.apiserver.view import View
from gpusched.scheduler.queue import backoff_seconds
from gpusched.scheduler.queueing_hints import pod_left_hint
from tests.scheduler.builders import make_node, make_pod, snapshot_of

from .builders import apply, join, node_of, pod, pool, priority_class


# ---- back-off: calculateBackoffDuration (podInitialBackoffDuration 1s, podMaxBackoffDuration 10s)

@pytest.mark.parametrize("failures, seconds", [
    pytest.param(0, 0.0, id="never-failed-no-backoff"),
    pytest.param(1, 1.0, id="first-failure-1s-initial"),
    pytest.param(2, 2.0, id="second-doubles"),
    pytest.param(3, 4.0, id="third-4s"),
    pytest.param(4, 8.0, id="fourth-8s"),
    pytest.param(5, 10.0, id="fifth-capped-at-max-10s"),
    pytest.param(60, 10.0, id="many-stays-at-max"),
])
def test_backoff_per_failure_count(failures, seconds):
    assert backoff_seconds(failures) == seconds


@pytest.fixture
def clocked(tmp_path):
    """A cluster whose clock runs between commands (``serve`` in real time): a back-off that
    began in one command still runs in the next (``Cluster.frozen_clock`` False)."""
    with Cluster.open(str(tmp_path / "clocked.db")) as c:
        c.frozen_clock = False
        yield c


def failed_events(cluster, name: str) -> int:
    return sum(e.get("count", 1) for e in cluster.events()
               if e["reason"] == "FailedScheduling" and e["involvedObject"]["name"] == name)


def test_a_moved_pod_waits_out_its_backoff_then_binds(clocked):
    """scheduling_queue.go requeuePodWithQueueingStrategy: a pod an event moves while it is
    backing off goes to backoffQ and is popped when its back-off ends (1 s after one failure)."""
    apply(clocked, join(pool(count=1, gpus=1), pod("blocker", gpus=1), pod("p", gpus=1)))
    assert node_of(clocked, "p") == "" and failed_events(clocked, "p") == 1
    clocked.advance(0.4)
    clocked.delete("Pod", "blocker", grace=0)   # room at t=0.4: moved, backing off
    assert node_of(clocked, "p") == ""
    clocked.advance(0.5)                                # t=0.9: still backing off
    assert node_of(clocked, "p") == ""
    clocked.advance(0.1)                                # t=1.0: the timer wakes the pass
    assert node_of(clocked, "p") == "gpu-1"


def test_backoff_doubles_with_each_failure(clocked):
    """Two failures: 2 s (calculateBackoffDuration). A node change moves the pod (every
    plugin that registers Node events may judge it), its retry at t=1 fails again."""
    apply(clocked, join(pool(count=1, gpus=1), pod("blocker", gpus=1), pod("p", gpus=1)))
    clocked.label("node", "gpu-1", {"x": "y"})
    clocked.advance(1)
    assert failed_events(clocked, "p") == 2
    clocked.delete("Pod", "blocker", grace=0)           # t=1: moved, back-off until t=3
    clocked.advance(1.5)
    assert node_of(clocked, "p") == ""
    clocked.advance(0.5)
    assert node_of(clocked, "p") == "gpu-1"


def test_an_unschedulable_pod_is_flushed_after_five_minutes(clocked):
    """flushUnschedulablePodsLeftover (podMaxInUnschedulablePodsDuration = 5 min): a pod no
    event moved is retried once it has been unschedulable that long. gpusched moves it at the
    first logged change after the 5 minutes, even one its hint skips (a pod ending on a node
    too small for it); before them, such a change does not retry it, nor after them does a
    change of nothing it could use (a PriorityClass)."""
    apply(clocked, join(pool("small", count=2, gpus=1), pod("s1", gpus=1), pod("s2", gpus=1),
                        pod("p", gpus=2)))
    assert failed_events(clocked, "p") == 1
    clocked.advance(299)
    clocked.delete("Pod", "s1", grace=0)
    assert failed_events(clocked, "p") == 1
    clocked.advance(1)
    apply(clocked, priority_class("b", 6))
    assert failed_events(clocked, "p") == 1
    clocked.delete("Pod", "s2", grace=0)
    assert failed_events(clocked, "p") == 2


def test_a_pod_ending_on_a_node_too_small_does_not_retry(clocked):
    """fit.go isSchedulableAfterPodEvent, narrowed: the freed node cannot hold the pod even
    empty, so the pod stays in unschedulablePods (no new FailedScheduling)."""
    apply(clocked, join(pool("small", count=1, gpus=1), pool("big", count=1, gpus=4),
                        pod("s", gpus=1), pod("b", gpus=4), pod("p", gpus=2)))
    assert node_of(clocked, "p") == "" and failed_events(clocked, "p") == 1
    clocked.delete("Pod", "s", grace=0)
    clocked.advance(20)
    assert failed_events(clocked, "p") == 1
    clocked.delete("Pod", "b", grace=0)         # the 4-GPU node frees: queued, binds
    clocked.advance(1)
    assert node_of(clocked, "p") == "big-1"


# ---- a clock that stands still between commands (the CLI, serve --virtual-clock)

def test_a_command_after_a_failure_finds_its_backoff_over(cluster):
    """Frozen clock: the person's next command comes after the back-off (on a real cluster the
    typing takes longer than 10 s), so the pod a fix moves binds in that command, as kubectl
    users see it Running right after ``kubectl delete``/``uncordon``/``label``."""
    apply(cluster, join(pool(count=1, gpus=1), pod("blocker", gpus=1), pod("p", gpus=1)))
    assert node_of(cluster, "p") == ""
    cluster.delete("Pod", "blocker", grace=0)
    assert node_of(cluster, "p") == "gpu-1"


def test_inside_one_command_backoff_runs_on_the_clock(cluster):
    """Frozen clock, one ``advance``: a failure inside it backs off on the clock. p1 and p2
    failed at apply (their back-offs over once the advance begins). At t=0.4 the blocker ends:
    p1 binds, p2 fits the GPU left but not beside p1 (its anti-affinity), a second failure
    (2 s, calculateBackoffDuration); p1 ends at t=0.7 and p2 binds at 0.4 + 2 s, not 0.7."""
    away = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "p1"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    apply(cluster, join(pool(count=1, gpus=2), pod("blocker", gpus=2, duration="400ms"),
                        pod("p1", gpus=1, duration="300ms", labels={"app": "p1"}),
                        pod("p2", gpus=1, affinity=away)))
    cluster.advance(3)
    started = cluster.get("pods", ["p2"])[0]["metadata"]["annotations"]["gpusched.io/start-time"]
    assert float(started) == pytest.approx(0.4 + backoff_seconds(2))


# ---- hint table: pod_left_hint(snapshot, pending pod, its record, node left, priority left)

def _cluster_snapshot():
    small = make_node("small", gpus=1, model="T4", cpu="8", memory="32Gi")
    big = make_node("big", gpus=4, model="T4", cpu="32", memory="128Gi")
    snap = snapshot_of(small, big)
    for info, node in ((make_pod("low-on-big", gpus=2, priority=0), "big"),
                       (make_pod("high-on-big", gpus=1, priority=5000), "big")):
        row = snap.index[node]
        snap.add_pod(info, node, snap.devices[row].allocate(info))
    return snap


FIT = ["GpuDevices", "NodeResourcesFit"]


@pytest.mark.parametrize("plugins, node, left_priority, pod_kwargs, dry, expected", [
    pytest.param(FIT, "small", 0, {"gpus": 2}, False, False,
                 id="fit.go-pod-deleted-on-node-too-small-skip"),
    pytest.param(FIT, "big", 0, {"gpus": 1, "preemption_policy": "Never"}, False, True,
                 id="fit.go-pod-deleted-on-node-with-room-queue"),
    pytest.param(FIT, "big", 0, {"gpus": 2, "preemption_policy": "Never"}, False, False,
                 id="no-preemption-room-still-short-skip"),
    pytest.param(FIT, "big", 5000, {"gpus": 3, "priority": 1000}, False, True,
                 id="may-preempt-counts-lower-pods-queue"),
    pytest.param(FIT, "big", 0, {"gpus": 3, "priority": 1000}, True, False,
                 id="lower-pod-left-after-empty-dry-run-skip"),
    pytest.param(FIT, "big", 5000, {"gpus": 3, "priority": 1000}, True, True,
                 id="higher-pod-left-after-empty-dry-run-queue"),
    pytest.param(FIT, "big", 0, {"gpus": 4, "priority": 1000}, False, False,
                 id="higher-pod-stays-too-little-even-preempting-skip"),
    pytest.param(FIT, "", 0, {"gpus": 1}, False, False,
                 id="fit.go-unscheduled-unnominated-pod-deleted-skip"),
    pytest.param(FIT, "gone-node", 0, {"gpus": 1}, False, True,
                 id="node-unknown-to-the-snapshot-queue"),
    pytest.param(["InterPodAffinity", "NodeResourcesFit"], "small", 0, {"gpus": 8}, False, True,
                 id="interpodaffinity-registers-pod-delete-queue"),
    pytest.param(["PodTopologySpread"], "small", 0, {"gpus": 8}, False, True,
                 id="podtopologyspread-registers-pod-delete-queue"),
    pytest.param(["NodeAffinity", "TaintToleration"], "big", 0, {"gpus": 1}, False, False,
                 id="node-only-plugins-register-no-pod-event-skip"),
    pytest.param([], "small", 0, {"gpus": 8}, False, True,
                 id="isPodWorthRequeuing-no-failed-plugins-queue"),
])
def test_pod_left_hint(plugins, node, left_priority, pod_kwargs, dry, expected):
    info = make_pod("pending", **pod_kwargs)
    record = {"failures": 1, "at": 0.0, "plugins": plugins, "dry": dry, "moved": False}
    assert pod_left_hint(_cluster_snapshot(), info, record, node, left_priority) is expected


def test_a_gpu_share_fits_in_the_free_milli_of_a_used_gpu():
    """GPU milli in total: a 500m share fits beside a 250m one on a 1-GPU node."""
    snap = snapshot_of(make_node("n", gpus=1, model="T4"))
    held = make_pod("held", gpus=1, gpu_milli=250)
    snap.add_pod(held, "n", snap.devices[0].allocate(held))
    record = {"failures": 1, "at": 0.0, "plugins": FIT, "dry": False, "moved": False}
    fits = make_pod("half", gpus=1, gpu_milli=500, preemption_policy="Never")
    too_big = make_pod("most", gpus=1, gpu_milli=800, preemption_policy="Never")
    assert pod_left_hint(snap, fits, record, "n", 0) is True
    assert pod_left_hint(snap, too_big, record, "n", 0) is False


def test_a_write_does_not_list_the_pending_pods_again(cluster, monkeypatch):
    """eventhandlers.go addPodToSchedulingQueue: the queue is fed by pod add/update events, not
    by listing the pending pods at every pass (issue 28: a write cost grew with the pods waiting,
    52 ms per pod with 2,000 unschedulable): with pods waiting unschedulable, applying one more
    attempts it alone and reads no list of unbound pods."""
    apply(cluster, join(pool(count=1, gpus=1, cpu="1"),
                        *(pod(f"w{i}", gpus=1, cpu="2") for i in range(5))))
    apply(cluster, pod("w5", gpus=1, cpu="2"))          # the kept view settles on work queues
    listed: list[int] = []
    real = View.unbound_pods
    monkeypatch.setattr(View, "unbound_pods", lambda self: listed.append(1) or real(self))
    apply(cluster, pod("new", gpus=1, cpu="2"))
    assert failed_events(cluster, "new") == 1 and failed_events(cluster, "w0") == 1
    assert listed == []
