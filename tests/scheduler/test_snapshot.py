"""Snapshot: rows, columns, labels, taint groups; add/remove are exact inverses (property)."""

import numpy as np
from hypothesis import given, settings, strategies as st

from gpusched.objects.types import DeviceAssignment
from gpusched.scheduler.snapshot import Snapshot
from tests.scheduler.builders import make_node, make_pod, snapshot_of, taint


def arrays(snap: Snapshot):
    return (snap.allocatable.copy(), snap.requested.copy(), snap.free.copy(), snap.nonzero_requested.copy(),
            snap.min_pod_priority.copy(),
            snap.gpu_free_milli.copy(), dict(snap.pod_node), dict(snap.assignments))


def test_columns_register_on_first_sight_and_arrays_widen():
    snap = snapshot_of(make_node("a", cpu="4"))
    assert snap.resource_names == ["cpu", "memory", "pods", "ephemeral-storage"]
    vec = snap.request_vector(make_pod(extra={"example.com/fpga": 2}))
    assert snap.resource_names[-1] == "example.com/fpga" and vec.tolist()[-1] == 2 and vec[2] == 1
    assert snap.allocatable.shape == (1, 5) and snap.allocatable[0, 4] == 0


def test_gpu_rows_pad_with_minus_one_and_models_get_ids():
    snap = snapshot_of(make_node("t4", gpus=2, model="T4"), make_node("a100", gpus=8), make_node("cpu"))
    assert snap.gpu_free_milli[0].tolist() == [1000, 1000] + [-1] * 6
    assert snap.gpu_free_milli[2].tolist() == [-1] * 8
    assert [snap.gpu_models[i] if i >= 0 else None for i in snap.gpu_model_id] == ["T4", "A100-40GB", None]


def test_label_ids_are_lazy_and_follow_updates():
    snap = snapshot_of(make_node("a", labels={"zone": "z1"}), make_node("b"))
    ids, vocab = snap.label_ids("zone")
    assert ids.tolist() == [0, -1] and vocab == {"z1": 0}
    snap.add_node(make_node("c", labels={"zone": "z2"})[0])
    info = make_node("b", labels={"zone": "z1"})[0]
    snap.update_node(info)
    ids, vocab = snap.label_ids("zone")
    assert ids.tolist() == [0, 0, 1] and vocab == {"z1": 0, "z2": 1}


def test_taint_groups_are_shared_by_equal_taint_sets():
    t = (taint("dedicated", "gpu"),)
    snap = snapshot_of(make_node("a", taints=t), make_node("b"), make_node("c", taints=t))
    assert snap.taint_group.tolist() == [1, 0, 1] and snap.taint_groups[1] == t


def test_remove_node_shifts_rows_and_forgets_its_pods():
    snap = snapshot_of(make_node("a"), make_node("b", cpu="8"), make_node("c"))
    pa, pc = make_pod(cpu="1"), make_pod(cpu="2")
    snap.add_pod(pa, "a")
    snap.add_pod(pc, "c")
    assert snap.remove_node("a") == [pa]
    assert snap.names == ["b", "c"] and snap.index == {"b": 0, "c": 1}
    assert snap.pod_node == {pc.uid: 1} and snap.requested[1, 0] == 2000
    assert snap.allocatable[0, 0] == 8000


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), st.sampled_from([0, 250, 500]),
                          st.integers(0, 4000)), min_size=1, max_size=12), st.data())
def test_add_and_remove_pod_are_exact_inverses(placements, data):
    snap = snapshot_of(make_node("n0", gpus=4), make_node("n1", gpus=2, model="T4"), make_node("n2", gpus=2, replicas=2))
    placed = []
    for row, gpus, milli, cpu in placements:
        pod = make_pod(gpus=0 if milli else gpus, gpu_milli=milli, cpu=f"{cpu}m" if cpu else "",
                       priority=cpu % 3)
        assignment = snap.devices[row].allocate(pod, "binpack")
        if assignment is None:
            continue
        snap.add_pod(pod, row, assignment)
        placed.append(pod)
    if not placed:
        return
    victim = data.draw(st.sampled_from(placed))
    before = arrays(snap)
    row, assignment = snap.remove_pod(victim.uid)
    assert victim.uid not in snap.pod_node
    snap.add_pod(victim, row, assignment)
    after = arrays(snap)
    for x, y in zip(before, after):
        assert (np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y)
    # the in-place GPU rows equal what the devices report
    for r in range(snap.num_nodes):
        free = np.asarray(snap.devices[r].free_milli())
        assert snap.gpu_free_milli[r, : len(free)].tolist() == free.tolist()


def test_fractional_assignment_updates_gpu_row_in_place():
    snap = snapshot_of(make_node("n", gpus=2))
    pod = make_pod(gpu_milli=300)
    snap.add_pod(pod, "n", DeviceAssignment("gpusched.io/gpu-milli", snap.devices[0].allocate(pod).device_ids, (1,), 300))
    assert snap.gpu_free_milli[0, :2].tolist() == [1000, 700]


def test_min_pod_priority_follows_adds_and_removes():
    snap = snapshot_of(make_node("a"), make_node("b"))
    low, high = make_pod(priority=1), make_pod(priority=7)
    snap.add_pod(high, "a")
    snap.add_pod(low, "a")
    assert snap.min_pod_priority[0] == 1 and snap.min_pod_priority[1] == np.iinfo(np.int64).max
    snap.remove_pod(low.uid)
    assert snap.min_pod_priority[0] == 7
    snap.remove_pod(high.uid)
    assert snap.min_pod_priority[0] == np.iinfo(np.int64).max


def test_a_pod_added_and_removed_again_derives_its_vectors_once(monkeypatch):
    """A nominated pod is added to the snapshot and removed at every attempt of a pass
    (``preemption.nominated_pods_added``): its request and non-zero vectors are derived once per
    PodInfo object, again after a new resource column or for a new PodInfo of the same pod."""
    snap = snapshot_of(make_node("a", cpu="8"), make_node("b", cpu="8"))
    derived = []
    real = Snapshot.request_vector
    monkeypatch.setattr(Snapshot, "request_vector",
                        lambda self, pod: derived.append(pod.name) or real(self, pod))
    pod = make_pod("p", cpu="1")
    before = arrays(snap)
    for node in ("a", "b", "a"):
        snap.add_pod(pod, node)
        snap.remove_pod(pod.uid)
    assert derived == ["p"] and all(np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
                                    for x, y in zip(arrays(snap), before))
    snap.request_vector(make_pod("wide", extra={"example.com/fpga": 1}))   # a new column
    derived.clear()
    snap.add_pod(pod, "a")
    assert derived == ["p"] and snap.requested[0].tolist()[:3] == [1000, 0, 1]
    snap.remove_pod(pod.uid)
    again = make_pod("p", cpu="2")
    snap.add_pod(again, "b")
    assert snap.requested[1, 0] == 2000
