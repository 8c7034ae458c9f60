"""Property: random allocate/hold/release sequences never give one device to two pods, and
free_milli stays within [0, 1000] and agrees with what is held."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from gpusched.devices.node import NodeDevices

from tests.devices.builders import make_node, make_pod, model, sharing_config

NODES = {
    "whole": lambda: make_node("4xV100-16GB"),
    "time-sliced": lambda: make_node("2xT4", sharing_config(3)),
    "packed": lambda: make_node("2xT4", sharing_config(3, policy="packed")),
    "mig-mixed": lambda: make_node("2xA100-40GB", mig="all-balanced", strategy="mixed"),
    "mig-single": lambda: make_node("2xA100-40GB", mig="all-2g.10gb", strategy="single"),
    "partly-mig": lambda: NodeDevices.build("n1", model("A100-40GB"), 2, None,
                                            [["3g.20gb", "4g.20gb"], None], "mixed"),
}

POD = st.one_of(
    st.builds(lambda n: {"gpus": n}, st.integers(1, 3)),
    st.builds(lambda m: {"milli": m}, st.integers(1, 1000)),
    st.builds(lambda r, n: {r: n}, st.sampled_from(["nvidia.com/mig-1g.5gb", "nvidia.com/mig-2g.10gb",
                                                     "nvidia.com/mig-3g.20gb"]), st.integers(1, 2)),
)
STEP = st.tuples(st.sampled_from(["add", "add", "release"]), POD,
                 st.sampled_from(["binpack", "spread"]), st.integers(0, 30))


@settings(max_examples=150, deadline=None)
@given(kind=st.sampled_from(sorted(NODES)), steps=st.lists(STEP, max_size=30))
def test_no_device_is_held_twice(kind, steps):
    node = NODES[kind]()
    live: list[str] = []
    for n, (action, request, policy, pick) in enumerate(steps):
        if action == "release" and live:
            uid = live.pop(pick % len(live))
            assert node.release(uid) is not None
        else:
            uid = f"pod-{n}"
            pod = make_pod(uid, **request)
            assignment = node.allocate(pod, policy)
            assert (assignment is None) == (node.fits(pod) is not None)
            if assignment is not None:
                node.hold(uid, assignment)
                live.append(uid)
        _check(node, live)
    initial = NODES[kind]()
    for uid in list(live):
        node.release(uid)
    assert node.allocated() == {} and node.holders == ()
    assert list(node.free_milli()) == list(initial.free_milli())


def _check(node, live):
    owners: dict[str, str] = {}
    for uid in live:
        assignment = node.assignment_of(uid)
        if assignment.resource == "gpusched.io/gpu-milli":
            continue
        for device_id in assignment.device_ids:
            assert device_id not in owners, f"{device_id} held by {owners[device_id]} and {uid}"
            owners[device_id] = uid
            assert node.holder_of(device_id) == uid
    free = node.free_milli()
    assert ((free >= 0) & (free <= 1000)).all()
    for index in range(node.gpu_count):
        shares = sum(node.fractional_holders(index).values())
        whole = any(r.holder and r.gpu_index == index and r.milli == 1000
                    and r.resource != "gpusched.io/gpu-milli" for r in node.rows())
        assert not (whole and shares), "a GPU held whole also carries fractional shares"
        if shares:
            assert free[index] == 1000 - shares
    assert sorted(node.holders) == sorted(live)
