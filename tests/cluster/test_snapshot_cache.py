"""``cluster.scheduling.cache``: the scheduler's incrementally kept snapshot equals a fresh one.

Upstream kube-scheduler schedules on a cache updated from informer events
(``pkg/scheduler/backend/cache/cache.go`` AddPod/UpdatePod/RemovePod, ``UpdateSnapshot``);
here the cache follows the view's changed keys. After every step of random command sequences
(pods of two priorities with run times, GPU shares, deletes, clock advances with completions,
preemptions and grace periods, cordons) the cached snapshot must hold the same nodes, free
resources, GPUs, pods (PodInfo and devices) and creation order as ``build_snapshot``.
"""

from __future__ import annotations

from typing import Any

import yaml

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


from gpusched.cluster.cluster import Cluster
from gpusched.cluster.scheduling.cache import build_snapshot
from gpusched.cluster.scheduling.cache import cached_snapshot
from gpusched.cluster.apiserver.store import Store
from gpusched.errors import GpuschedError
from tests.cluster.builders import apply, join, pod, pool, priority_class


def fingerprint(snapshot: Any, order: dict[str, int]) -> tuple[Any, ...]:
    names = snapshot.names
    free = {name: snapshot.free[:, col].tolist() for name, col in snapshot.resources.items()}
    pods = {uid: (names[row], repr(snapshot.assignments.get(uid)))
            for uid, row in snapshot.pod_node.items()}
    infos = {p.uid: (p.priority, p.requests, p.gpu_milli, p.start_time)
             for row in range(len(names)) for p in snapshot.pods_on(row)}
    ranked = sorted(infos, key=lambda uid: order[uid])
    return (names, free, snapshot.gpu_free_milli.tolist(), snapshot.min_pod_priority.tolist(),
            pods, infos, ranked, snapshot.unschedulable.tolist())


def same_as_fresh(cluster: Cluster) -> None:
    with cluster.reading() as view:
        cached = fingerprint(*cached_snapshot(view))
        fresh = fingerprint(*build_snapshot(view))
    assert cached == fresh


SETUP = join(pool("gpu", count=2, gpus=2, cpu="8", memory="32Gi"),
             priority_class("high", 1000), priority_class("low", 0, policy="Never"))

op = st.one_of(
    st.tuples(st.just("pod"), st.integers(0, 2), st.sampled_from(["", "high", "low"]),
              st.sampled_from(["", "30s", "90s"]), st.booleans()),
    st.tuples(st.just("advance"), st.sampled_from([1, 20, 45, 100])),
    st.tuples(st.just("delete"), st.integers(0, 30)),
    st.tuples(st.just("cordon"), st.integers(0, 1), st.booleans()),
)


def run(cluster: Cluster, step: tuple[Any, ...], index: int) -> None:
    kind = step[0]
    if kind == "pod":
        _, gpus, klass, duration, share = step
        body = yaml.safe_load(pod(f"p{index}", gpus=0 if share else gpus, cpu="1",
                                  priority_class=klass, duration=duration))
        if share:
            body["metadata"].setdefault("annotations", {})["gpusched.io/gpu-milli"] = "500"
        apply(cluster, yaml.safe_dump(body))
    elif kind == "advance":
        cluster.advance(step[1])
    elif kind == "delete":
        cluster.delete("pods", f"p{step[1]}")
    else:
        (cluster.cordon if step[2] else cluster.uncordon)(f"gpu-{step[1] + 1}")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=25))
def test_cached_snapshot_equals_a_fresh_one(steps):
    with Cluster(Store(":memory:")) as cluster:
        apply(cluster, SETUP)
        for index, step in enumerate(steps):
            try:
                run(cluster, step, index)
            except GpuschedError:
                pass                     # deleting a pod that is not there, a cordoned name ...
            same_as_fresh(cluster)


def test_pool_node_names_for_the_cordon_steps():
    with Cluster(Store(":memory:")) as cluster:
        apply(cluster, SETUP)
        assert [n["metadata"]["name"] for n in cluster.get("nodes")] == ["gpu-1", "gpu-2"]


def test_a_pod_bound_in_a_pass_and_deleted_before_the_next_leaves_the_snapshot():
    # The scheduler assumes a pod into the cached snapshot during its pass (upstream
    # cache.go AssumePod); if the pod is deleted before the next pass and the view's journal
    # was cleared in between (a later settle step), only the snapshot knows it was there.
    # It used to keep the pod's GPU for good (examples/autoscaling-day --fixed: 219 pending
    # pod-minutes instead of 0).
    from gpusched.cluster.scheduling.host import schedule_pending
    with Cluster(Store(":memory:")) as cluster:
        apply(cluster, SETUP)
        with cluster.writing(settle=False) as view:
            body = yaml.safe_load(pod("p0", gpus=2, cpu="1"))
            view.create(body)
            schedule_pending(view)                     # p0 assumed into the snapshot and bound
            assert (view.get("Pod", "p0", "default") or {}).get("spec", {}).get("nodeName")
            view.delete("Pod", "p0", "default")
            view.clear_journal()
            cached = fingerprint(*cached_snapshot(view))
            fresh = fingerprint(*build_snapshot(view))
        assert cached == fresh


def test_pods_assumed_after_what_ifs_on_many_rows_are_found_by_uid(monkeypatch):
    """An overloaded pass counts the nominated pods on their nodes at every attempt and its dry
    runs remove and re-add victims: many rows are touched, few pods assumed. The next call
    finds the assumed pods by their untracked uids and reads the pods of their rows alone, not
    of every touched row; the snapshot still equals a fresh one."""
    from gpusched.objects.pod import pod_info
    from gpusched.scheduler.snapshot import Snapshot
    with Cluster(Store(":memory:")) as cluster:
        apply(cluster, join(pool("gpu", count=40, gpus=2, cpu="8", memory="32Gi"),
                            *(pod(f"run{i}", gpus=1, cpu="1") for i in range(40))))
        with cluster.writing(settle=False) as view:
            snapshot, order = cached_snapshot(view)
            for uid in list(snapshot.pod_node):          # what-ifs: every row touched
                info = snapshot.pod(uid)
                row, assignment = snapshot.remove_pod(uid)
                snapshot.add_pod(info, row, assignment)
            body = view.create(yaml.safe_load(pod("new", gpus=0, cpu="1")))
            body["spec"]["nodeName"] = "gpu-7"
            view.update(body)
            view.take_unsnapped()                        # as if the pass had assumed it
            snapshot.add_pod(pod_info(view.get("Pod", "new", "default"), 0), "gpu-7")
            read = []
            real = Snapshot.pods_on
            monkeypatch.setattr(Snapshot, "pods_on", lambda self, node: read.append(node)
                                or real(self, node))
            kept = cached_snapshot(view)
            monkeypatch.undo()
            cached = fingerprint(*kept)
            fresh = fingerprint(*build_snapshot(view))
        assert read == [snapshot.index["gpu-7"]]
        assert cached == fresh

