"""NodeDevices: advertised resources, allocation policies, hold/release, annotations, rows."""

from __future__ import annotations

import pytest

from gpusched.devices.node import NodeDevices, gpu_uuid
from gpusched.objects.assignment import assignment_annotations, assignment_resource, held_by, read_assignment
from gpusched.devices.plugin_config import DevicePluginConfigError
from gpusched.errors import UsageError
from gpusched.objects.types import NO_DEVICES, RESOURCE_GPU_MILLI

from tests.devices.builders import make_node, make_pod, model, sharing_config

ADVERTISED = [
    ("whole", lambda: make_node("8xA100-40GB"), {"nvidia.com/gpu": 8}),
    ("time-sliced-10", lambda: make_node("8xA100-40GB", sharing_config(10)), {"nvidia.com/gpu": 80}),
    ("renamed", lambda: make_node("8xA100-40GB", sharing_config(10, rename=True)),
     {"nvidia.com/gpu.shared": 80}),
    ("mps", lambda: make_node("2xT4", sharing_config(4, kind="mps")), {"nvidia.com/gpu": 8}),
    ("mig-none-is-whole", lambda: make_node("2xA100-40GB", mig="all-1g.5gb"), {"nvidia.com/gpu": 2}),
    ("mig-single", lambda: make_node("8xA100-40GB", mig="all-1g.5gb", strategy="single"),
     {"nvidia.com/gpu": 56}),
    ("mig-mixed-balanced", lambda: make_node("2xA100-40GB", mig="all-balanced", strategy="mixed"),
     {"nvidia.com/mig-1g.5gb": 4, "nvidia.com/mig-2g.10gb": 2, "nvidia.com/mig-3g.20gb": 2}),
    ("mig-mixed-time-sliced", lambda: make_node(
        "1xA100-40GB", sharing_config(2, resource="nvidia.com/mig-1g.5gb"), mig="all-1g.5gb",
        strategy="mixed"), {"nvidia.com/mig-1g.5gb": 14}),
    ("mig-mixed-me", lambda: make_node("1xA100-40GB", mig="all-1g.5gb.me", strategy="mixed"),
     {"nvidia.com/mig-1g.5gb.me": 1}),
    ("cpu-only", lambda: NodeDevices.build("cpu", None, 0), {}),
]


@pytest.mark.parametrize("build,expected", [(b, e) for _, b, e in ADVERTISED],
                         ids=[i for i, _, _ in ADVERTISED])
def test_advertised(build, expected):
    assert build().advertised == expected


def test_strategy_from_config_wins_over_default():
    node = make_node("1xA100-40GB", sharing_config(2, mig_strategy="mixed"), mig="all-3g.20gb",
                     strategy="single")
    assert node.mig_strategy == "mixed"


def test_mixed_partly_mig():
    a100 = model()
    node = NodeDevices.build("n", a100, 2, None, [["3g.20gb", "3g.20gb"], None], "mixed")
    assert node.advertised == {"nvidia.com/gpu": 1, "nvidia.com/mig-3g.20gb": 2}
    assert list(node.free_milli()) == [0, 1000]


@pytest.mark.parametrize("layout,message", [
    ([["1g.5gb"], None], "invalid MIG configuration: all devices on the node must be configured "
                         "with the same migEnabled value"),
    ([["1g.5gb"], ["2g.10gb"]], "invalid MIG configuration: more than one MIG device type present on node"),
], ids=["mixed-enabled", "two-types"])
def test_single_strategy_invalid(layout, message):
    with pytest.raises(DevicePluginConfigError) as err:
        NodeDevices.build("n", model(), 2, None, layout, "single")
    assert str(err.value) == message


def test_uuids_deterministic():
    first, second = make_node("2xA100-40GB"), make_node("2xA100-40GB")
    assert [d.device_id for d in first.devices] == [d.device_id for d in second.devices]
    assert first.devices[0].device_id == gpu_uuid("n1", 0)
    assert gpu_uuid("n1", 0) != gpu_uuid("n2", 0)


# ---- whole GPUs ---------------------------------------------------------------------------------


def test_whole_gpus_lowest_free_indices():
    node = make_node("4xA100-40GB")
    node.hold("a", node.allocate(make_pod("a", gpus=1)))
    got = node.allocate(make_pod("b", gpus=2))
    assert got.gpu_indices == (1, 2) and got.milli == 1000
    assert got.device_ids == (gpu_uuid("n1", 1), gpu_uuid("n1", 2))
    assert node.fits(make_pod("c", gpus=3)) is None
    assert node.fits(make_pod("c", gpus=4)) == "Insufficient nvidia.com/gpu"


def test_allocate_is_pure():
    node = make_node("2xA100-40GB")
    node.allocate(make_pod("a", gpus=2))
    assert node.allocate(make_pod("b", gpus=2)) is not None
    assert list(node.free_milli()) == [1000, 1000]


def test_no_gpu_request_gets_no_devices():
    assert make_node("2xT4").allocate(make_pod("a")) == NO_DEVICES


def test_unadvertised_resource():
    assert make_node("2xT4").fits(make_pod("a", **{"nvidia.com/mig-1g.5gb": 1})) == \
        "Insufficient nvidia.com/mig-1g.5gb"


def test_gpus_selection_hook():
    node = make_node("4xA100-40GB")
    assert node.allocate(make_pod("a", gpus=2), gpus=(3, 1)).gpu_indices == (1, 3)
    assert node.allocate(make_pod("a", milli=300), gpus=(2,)).gpu_indices == (2,)
    node.hold("x", node.allocate(make_pod("x", gpus=1), gpus=(3,)))
    assert node.allocate(make_pod("a", gpus=1), gpus=(3,)) is None


# ---- replicas (time-slicing / MPS) --------------------------------------------------------------


@pytest.mark.parametrize("policy,first,second", [
    ("distributed", (0,), (1,)),
    ("packed", (0,), (0,)),
], ids=["distributed", "packed"])
def test_replica_policies(policy, first, second):
    node = make_node("2xT4", sharing_config(4, policy=policy))
    a = node.allocate(make_pod("a", gpus=1))
    assert a.gpu_indices == first and a.device_ids[0].endswith("::0")
    node.hold("a", a)
    b = node.allocate(make_pod("b", gpus=1))
    assert b.gpu_indices == second


def test_distributed_request_spreads_over_gpus():
    node = make_node("2xT4", sharing_config(4))
    got = node.allocate(make_pod("a", gpus=2))
    assert got.gpu_indices == (0, 1) and got.milli == 0


def test_packed_request_fills_one_gpu():
    node = make_node("2xT4", sharing_config(4, policy="packed"))
    got = node.allocate(make_pod("a", gpus=3))
    assert got.gpu_indices == (0,)
    assert len(set(got.device_ids)) == 3


def test_replicas_exhaust():
    node = make_node("1xT4", sharing_config(4))
    for uid in "abcd":
        node.hold(uid, node.allocate(make_pod(uid, gpus=1)))
    assert node.fits(make_pod("e", gpus=1)) == "Insufficient nvidia.com/gpu"


def test_renamed_resource_request():
    node = make_node("1xT4", sharing_config(4, rename=True))
    assert node.fits(make_pod("a", gpus=1)) == "Insufficient nvidia.com/gpu"
    got = node.allocate(make_pod("a", **{"nvidia.com/gpu.shared": 1}))
    assert got.resource == "nvidia.com/gpu.shared"


@pytest.mark.parametrize("config,count,expected", [
    (sharing_config(4, fail_gt_one=True), 2,
     'Allocate failed due to rpc error: code = Unknown desc = invalid allocation request for '
     '"nvidia.com/gpu": invalid request: maximum request size for shared resources is 1; found 2, '
     'which is unexpected'),
    (sharing_config(4, fail_gt_one=True), 1, None),
    (sharing_config(4), 2, None),
    (sharing_config(4, kind="mps"), 3,
     'Allocate failed due to rpc error: code = Unknown desc = invalid allocation request for '
     '"nvidia.com/gpu": invalid request: maximum request size for shared resources is 1; found 3, '
     'which is unexpected'),
], ids=["ts-flag-on", "one-is-fine", "ts-flag-off", "mps-default-on"])
def test_fail_requests_greater_than_one(config, count, expected):
    node = make_node("2xT4", config)
    assert node.fail_requests_greater_than_one(make_pod("a", gpus=count)) == expected


# ---- MIG ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("policy,expected_gpu", [("binpack", 1), ("spread", 0)],
                         ids=["binpack", "spread"])
def test_mig_policies(policy, expected_gpu):
    node = make_node("2xA100-40GB", mig="all-1g.5gb", strategy="mixed")
    pod = make_pod("a", **{"nvidia.com/mig-1g.5gb": 1})
    node.hold("x", node.allocate(pod, policy="spread"))
    node.hold("y", node.allocate(make_pod("y", **{"nvidia.com/mig-1g.5gb": 1}), gpus=(1,)))
    node.hold("z", node.allocate(make_pod("z", **{"nvidia.com/mig-1g.5gb": 1}), gpus=(1,)))
    # GPU 0 holds 1 instance, GPU 1 holds 2.
    got = node.allocate(make_pod("b", **{"nvidia.com/mig-1g.5gb": 1}), policy=policy)
    assert got.gpu_indices == (expected_gpu,)
    assert got.device_ids[0].startswith("MIG-")


def test_mig_profile_exhausts():
    node = make_node("1xA100-40GB", mig="all-balanced", strategy="mixed")
    pod = make_pod("a", **{"nvidia.com/mig-3g.20gb": 1})
    node.hold("a", node.allocate(pod))
    assert node.fits(make_pod("b", **{"nvidia.com/mig-3g.20gb": 1})) == "Insufficient nvidia.com/mig-3g.20gb"
    assert node.fits(make_pod("b", **{"nvidia.com/mig-1g.5gb": 2})) is None


def test_mig_gpus_never_fractional():
    node = make_node("2xA100-40GB", mig="all-1g.5gb", strategy="single")
    assert list(node.free_milli()) == [0, 0]
    assert node.fits(make_pod("a", milli=100)) == "Insufficient nvidia.com/gpu"


# ---- fractional -----------------------------------------------------------------------------------


def test_fractional_best_fit():
    node = make_node("3xV100-16GB")
    node.hold("a", node.allocate(make_pod("a", milli=500)))       # GPU 0: 500 free
    node.hold("b", node.allocate(make_pod("b", milli=200), gpus=(1,)))  # GPU 1: 800 free
    got = node.allocate(make_pod("c", milli=450))
    assert got.gpu_indices == (0,) and got.resource == RESOURCE_GPU_MILLI and got.milli == 450
    got = node.allocate(make_pod("c", milli=600))
    assert got.gpu_indices == (1,)
    assert list(node.free_milli()) == [500, 800, 1000]


def test_fractional_blocks_whole_and_whole_blocks_fractional():
    node = make_node("2xV100-16GB")
    node.hold("a", node.allocate(make_pod("a", milli=100)))
    assert node.allocate(make_pod("b", gpus=2)) is None
    node.hold("b", node.allocate(make_pod("b", gpus=1)))
    assert list(node.free_milli()) == [900, 0]
    assert node.allocate(make_pod("c", milli=950)) is None


def test_shared_gpus_never_fractional():
    node = make_node("2xT4", sharing_config(4))
    assert list(node.free_milli()) == [0, 0]


# ---- hold / release / clone ---------------------------------------------------------------------


def test_hold_release_roundtrip():
    node = make_node("2xA100-40GB")
    a = node.allocate(make_pod("a", gpus=1))
    node.hold("a", a)
    node.hold("a", a)                                 # idempotent
    assert node.holder_of(a.device_ids[0]) == "a"
    with pytest.raises(UsageError, match="already held by pod a"):
        node.hold("b", a)
    with pytest.raises(UsageError, match="unknown device"):
        node.hold("c", a.__class__("nvidia.com/gpu", ("GPU-nope",), (0,), 1000))
    assert node.release("a") == a
    assert node.holder_of(a.device_ids[0]) is None
    assert node.release("a") is None


def test_clone_is_independent():
    node = make_node("2xA100-40GB")
    copy = node.clone()
    copy.hold("a", copy.allocate(make_pod("a", milli=300)))
    assert list(node.free_milli()) == [1000, 1000]
    assert list(copy.free_milli()) == [700, 1000]


def test_rows_show_holders():
    node = make_node("1xT4", sharing_config(2))
    node.hold("a", node.allocate(make_pod("a", gpus=1)))
    rows = node.rows()
    assert [(r.gpu_index, r.replica, r.holder) for r in rows] == [(0, 0, "a"), (0, 1, "")]
    plain = make_node("1xT4")
    plain.hold("f", plain.allocate(make_pod("f", milli=250)))
    assert [(r.resource, r.holder, r.milli) for r in plain.rows()] == [
        ("nvidia.com/gpu", "", 0), (RESOURCE_GPU_MILLI, "f", 250)]


@pytest.mark.parametrize("node,pod", [
    (lambda: make_node("2xA100-40GB"), make_pod("a", gpus=2)),
    (lambda: make_node("2xT4", sharing_config(4)), make_pod("a", gpus=1)),
    (lambda: make_node("1xA100-40GB", mig="all-balanced", strategy="mixed"),
     make_pod("a", **{"nvidia.com/mig-2g.10gb": 1})),
], ids=["whole", "replica", "mig"])
def test_annotations_roundtrip(node, pod):
    devices = node()
    assignment = devices.allocate(pod)
    annotations = assignment_annotations(assignment)
    assert read_assignment(annotations, assignment_resource(pod)) == assignment
    fresh = node()
    fresh.hold(pod.uid, read_assignment(annotations, assignment_resource(pod)))
    assert fresh.allocated() == {assignment.resource: len(assignment.device_ids)}


def test_fractional_annotation_roundtrip():
    node = make_node("2xV100-16GB")
    pod = make_pod("a", milli=300)
    assignment = node.allocate(pod)
    annotations = {**assignment_annotations(assignment), "gpusched.io/gpu-milli": "300"}
    assert read_assignment(annotations, assignment_resource(pod)) == assignment
    assert assignment_annotations(NO_DEVICES) == {}


# Readers (metrics, describe, top, VPA, Slurm env) read holdings through held_by: the same parse,
# a malformed record held as nothing, the scheduler's read refusing it with one line.
@pytest.mark.parametrize("annotations,held", [
    ({}, ()),
    ({"gpusched.io/assigned-gpus": "0,1", "gpusched.io/assigned-devices": "GPU-a,GPU-b"}, ("GPU-a", "GPU-b")),
    ({"gpusched.io/assigned-gpus": "0,x", "gpusched.io/assigned-devices": "GPU-a"}, ()),
    ({"gpusched.io/assigned-devices": "MIG-a,"}, ("MIG-a",)),
], ids=["none", "two-whole", "malformed-indices", "trailing-comma"])
def test_held_by(annotations, held):
    assert held_by({"metadata": {"annotations": annotations}}).device_ids == held


def test_read_assignment_refuses_malformed_indices():
    with pytest.raises(UsageError, match='invalid annotation gpusched.io/assigned-gpus="0,x": expected GPU indices'):
        read_assignment({"gpusched.io/assigned-gpus": "0,x"})
