"""The Coscheduling plugin against scheduler-plugins' own tables: ``pkg/coscheduling/core/
core_test.go`` (``TestPreFilter``, ``TestPermit``, ``TestCheckClusterResource``) and
``pkg/coscheduling/coscheduling_test.go`` (``TestPostFilter``, ``TestPostFilterRejectThreshold``);
the framework's waiting pods (``waiting_pods_map.go``)."""

from __future__ import annotations

import pytest

from gpusched.objects.types import NO_DEVICES
from gpusched.scheduler.framework import (PODS_TO_ACTIVATE_KEY, WAITING_PODS_KEY, Code,
                                          CycleState, Diagnosis, ScheduleResult)
from gpusched.scheduler.plugins.coscheduling import POD_GROUP_LABEL, Coscheduling, PodGroupInfo
from gpusched.scheduler.waiting import WaitingPod, WaitingPods, timeout_message
from tests.scheduler.builders import make_node, make_pod, snapshot_of


def member(name: str, group: str = "pg1", cpu: str = "", namespace: str = "ns"):
    pod = make_pod(name, cpu=cpu, labels={POD_GROUP_LABEL: group} if group else {})
    return pod if namespace == "default" else _in(pod, namespace)


def _in(pod, namespace):
    from dataclasses import replace
    return replace(pod, namespace=namespace)


def plugin_with(groups: dict[str, PodGroupInfo], pods, gated=(), **args) -> Coscheduling:
    plugin = Coscheduling(args)
    members: dict[tuple[str, str], list[str]] = {}
    for pod in pods:
        name = pod.labels.get(POD_GROUP_LABEL)
        if name:
            members.setdefault((pod.namespace, name), []).append(pod.uid)
    gated_counts = {("ns", "pg1"): len(gated)} if gated else {}
    plugin.set_pod_groups({("ns", n): g for n, g in groups.items()},
                          {k: tuple(v) for k, v in members.items()}, now=0.0, gated=gated_counts)
    return plugin


# ---- core_test.go TestPreFilter: two nodes of 4 cpus --------------------------------------------

PREFILTER_CASES = [
    pytest.param(member("p", group=""), [member("p1"), member("p2", "pg2")],
                 {"pg1": PodGroupInfo(1), "pg2": PodGroupInfo(1)}, "", id="pod does not belong to any pg"),
    pytest.param(member("p", "pg-non-existent"), [], {"pg1": PodGroupInfo(1)}, "",
                 id="pod belongs to a non-existent pg"),
    pytest.param(member("p"), [member("pg2-1", "pg2")], {"pg1": PodGroupInfo(2), "pg2": PodGroupInfo(2)},
                 "pre-filter pod p cannot find enough sibling pods, current pods number: 1, "
                 "minMember of group: 2", id="pod count less than minMember"),
    pytest.param(member("p1a"), [member("p1b")], {"pg1": PodGroupInfo(2)}, "",
                 id="pod count equal minMember"),
    pytest.param(member("p1a"), [member("p1b"), member("p1c")], {"pg1": PodGroupInfo(2)}, "",
                 id="pod count more than minMember"),
    pytest.param(member("p1a"), [member("p1b"), member("p1c")],
                 {"pg1": PodGroupInfo(2, {"cpu": "6"})}, "",
                 id="cluster's resource satisfies minResource"),
    pytest.param(member("p1a"), [member("p1b"), member("p1c")],
                 {"pg1": PodGroupInfo(2, {"cpu": "10"})},
                 "resource gap: map[cpu:{{2000 -3} {<nil>}  DecimalSI}]",
                 id="cluster's resource cannot satisfy minResource"),
]


GATED_CASES = [
    pytest.param(member("p1a"), [member("p1b"), member("p1c")], {"pg1": PodGroupInfo(2)}, "",
                 ("p1c",), id="gated pods but still meeting quorum (minMember < replicas)"),
    pytest.param(member("p1a"), [member("p1b"), member("p1c")], {"pg1": PodGroupInfo(3)},
                 "pre-filter pod p1a cannot proceed due to gated pods in the same PodGroup", ("p1b",),
                 id="gated pods push group below quorum"),
    pytest.param(member("p1a"), [member("p1b"), member("p1c")], {"pg1": PodGroupInfo(2)},
                 "pre-filter pod p1a cannot proceed due to gated pods in the same PodGroup",
                 ("p1b", "p1c"), id="all sibling pods are gated"),
]


@pytest.mark.parametrize("pod,others,groups,message,gated",
                         [pytest.param(*c.values, (), id=c.id) for c in PREFILTER_CASES] + GATED_CASES)
def test_pre_filter(pod, others, groups, message, gated):
    """core_test.go TestPreFilter (here the pod itself is among the group's pods, as the plugin's
    pod lister holds it on a real cluster; upstream's table leaves it out of the lister)."""
    snapshot = snapshot_of(make_node("node-a", cpu="4"), make_node("node-b", cpu="4"))
    plugin = plugin_with(groups, [pod, *others], gated=gated)
    status = plugin.pre_filter(CycleState(), pod, snapshot)
    if message:
        # PreFilter refuses UnschedulableAndUnresolvable: no preemption for a gang
        assert (status.code, status.message) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)
    else:
        assert status.ok


def test_pre_filter_refuses_a_group_backing_off():
    """core.go PreFilter: ``podGroup ns/pg1 failed recently`` while ``backedOffPG`` holds it."""
    plugin = plugin_with({"pg1": PodGroupInfo(1)}, [member("p")])
    plugin.backed_off[("ns", "pg1")] = 10.0
    status = plugin.pre_filter(CycleState(), member("p"), snapshot_of(make_node("n")))
    assert status.message == "podGroup ns/pg1 failed recently"


# ---- core_test.go TestCheckClusterResource: two nodes of 3 cpus ---------------------------------

@pytest.mark.parametrize("existing,ok", [
    pytest.param([("p1", "", "node-a", "2")], True, id="Cluster resource enough"),
    pytest.param([("p1", "", "node-a", "2"), ("p2", "", "node-b", "1")], False,
                 id="Cluster resource not enough"),
    pytest.param([("p1", "pg1", "node-a", "2"), ("p2", "", "node-b", "1")], True,
                 id="Cluster resource enough as p1's resource needs to be excluded from minResources"),
])
def test_check_cluster_resource(existing, ok):
    snapshot = snapshot_of(make_node("node-a", cpu="3"), make_node("node-b", cpu="3"))
    pods = [member(name, group, cpu) for name, group, _, cpu in existing]
    for pod, (_, _, node, _) in zip(pods, existing):
        snapshot.add_pod(pod, node, NO_DEVICES)
    plugin = plugin_with({"pg1": PodGroupInfo(1, {"cpu": "4"})}, pods)
    gap = plugin._resource_gap(("ns", "pg1"), plugin.groups[("ns", "pg1")], snapshot)
    assert (gap == "") is ok


# ---- core_test.go TestPermit: one node of 4 cpus ------------------------------------------------

@pytest.mark.parametrize("pod,bound,code,message", [
    pytest.param(member("p", group=""), [], Code.SUCCESS, "", id="pod does not belong to any pg"),
    pytest.param(member("p", "pg-non-existent"), [], Code.UNSCHEDULABLE, "PodGroup not found",
                 id="pod specifies a non-existent pg"),
    pytest.param(member("p"), [], Code.WAIT, "", id="pod belongs to a pg that doesn't have quorum"),
    pytest.param(member("p1a"), [member("p1b")], Code.SUCCESS, "",
                 id="pod belongs to a pg that have quorum satisfied"),
])
def test_permit(pod, bound, code, message):
    snapshot = snapshot_of(make_node("node", cpu="4"))
    for other in bound:
        snapshot.add_pod(other, "node", NO_DEVICES)
    plugin = plugin_with({"pg1": PodGroupInfo(2)}, [pod, *bound], permitWaitingTimeSeconds=10)
    state = CycleState()
    state.write(WAITING_PODS_KEY, WaitingPods())
    plugin.pre_filter(state, pod, snapshot)
    snapshot.add_pod(pod, "node", NO_DEVICES)            # the runner assumes before Permit
    status = plugin.permit(state, pod, "node")
    assert (status.code, status.message) == (code, message)
    if code == Code.WAIT:
        assert status.timeout == 10          # permitWaitingTimeSeconds (no scheduleTimeoutSeconds)


def waiting_of(pod, waiting: WaitingPods, at: float = 0.0, timeout: float = 60.0) -> None:
    waiting.add(WaitingPod(ScheduleResult(pod, node="node"), 0, CycleState(),
                           {"Coscheduling": at + timeout}, {"Coscheduling": timeout}))


def test_quorum_allows_every_waiting_sibling_and_the_first_waiter_activates_them():
    """coscheduling.go Permit: ``core.Success`` allows each waiting pod of the group; the
    group's first Wait asks the queue to activate its siblings (``ActivateSiblings``)."""
    snapshot = snapshot_of(make_node("node", cpu="8"))
    a, b, c, other = member("a"), member("b"), member("c"), member("x", "pg2")
    plugin = plugin_with({"pg1": PodGroupInfo(3, schedule_timeout=30), "pg2": PodGroupInfo(2)},
                         [a, b, c, other])
    waiting, activate = WaitingPods(), set()

    def cycle(pod):
        state = CycleState()
        state.write(WAITING_PODS_KEY, waiting)
        state.write(PODS_TO_ACTIVATE_KEY, activate)
        plugin.pre_filter(state, pod, snapshot)
        snapshot.add_pod(pod, "node", NO_DEVICES)
        return plugin.permit(state, pod, "node")

    status = cycle(a)
    assert (status.code, status.timeout) == (Code.WAIT, 30)      # scheduleTimeoutSeconds wins
    assert activate == {b.uid, c.uid}
    waiting_of(a, waiting)
    waiting_of(other, waiting)
    assert cycle(b).code == Code.WAIT
    waiting_of(b, waiting)
    assert cycle(c).ok
    assert sorted(w.pod.name for w in waiting.take_resolved()) == ["a", "b"]
    assert [w.pod.name for w in waiting] == ["x"]                # another group keeps waiting


# ---- coscheduling_test.go TestPostFilter / TestPostFilterRejectThreshold ---------------------

@pytest.mark.parametrize("min_member,assigned,reject,message", [
    pytest.param(1, 1, [], "", id="enough pods assigned, do not reject all"),
    pytest.param(2, 1, ["w"], "PodGroup ns/pg1 gets rejected due to Pod p is unschedulable even "
                 "after PostFilter", id="pod failed at filter phase, reject all pods"),
    pytest.param(10, 9, [], "", id="default 10%: 9/10 assigned (10% gap) -> no rejection"),
    pytest.param(10, 8, ["w"], "PodGroup ns/pg1 gets rejected due to Pod p is unschedulable even "
                 "after PostFilter", id="default 10%: 8/10 assigned (20% gap) -> rejection"),
])
def test_post_filter(min_member, assigned, reject, message):
    snapshot = snapshot_of(make_node("node", cpu="64"))
    pods = [member(f"a{i}") for i in range(assigned - 1)] + [member("w")]
    for pod in pods:
        snapshot.add_pod(pod, "node", NO_DEVICES)
    pending = member("p")
    plugin = plugin_with({"pg1": PodGroupInfo(min_member)}, [*pods, pending])
    waiting = WaitingPods()
    waiting_of(pods[-1], waiting)
    state = CycleState()
    state.write(WAITING_PODS_KEY, waiting)
    result = plugin.post_filter(state, pending, snapshot, Diagnosis(1))
    assert result.status.code == Code.UNSCHEDULABLE and result.status.message == message
    rejected = waiting.take_resolved()
    assert [w.pod.name for w in rejected] == reject
    assert all(w.message == "optimistic rejection in PostFilter" for w in rejected)


def test_unreserve_rejects_the_waiting_siblings():
    """coscheduling.go Unreserve: ``rejection in Unreserve`` for every waiting pod of the group."""
    a, b = member("a"), member("b")
    plugin = plugin_with({"pg1": PodGroupInfo(3)}, [a, b])
    waiting = WaitingPods()
    waiting_of(b, waiting)
    state = CycleState()
    state.write(WAITING_PODS_KEY, waiting)
    plugin.unreserve(state, a, snapshot_of(make_node("node")), 0)
    assert [(w.pod.name, w.message) for w in waiting.take_resolved()] == [("b", "rejection in Unreserve")]


# ---- waiting_pods_map.go: the time-out ------------------------------------------------------

@pytest.mark.parametrize("timeout,text", [
    pytest.param(60, "rejected due to timeout after waiting 1m0s at plugin Coscheduling", id="default-60s"),
    pytest.param(30, "rejected due to timeout after waiting 30s at plugin Coscheduling", id="30s"),
    pytest.param(3600, "rejected due to timeout after waiting 1h0m0s at plugin Coscheduling", id="1h"),
])
def test_wait_times_out_on_the_clock_with_go_duration(timeout, text):
    waiting = WaitingPods()
    waiting_of(member("a"), waiting, at=100, timeout=timeout)
    waiting_of(member("b"), waiting, at=100, timeout=timeout)
    assert not waiting.expire_first(100 + timeout - 1)
    assert waiting.expire_first(100 + timeout)
    assert [(w.pod.name, w.message) for w in waiting.take_resolved()] == [("a", text)]
    assert timeout_message(timeout, "Coscheduling") == text
