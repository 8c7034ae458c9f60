"""NodePorts, DynamicResources and v1.35's FailedScheduling/preemption texts through the runner.

Each case names the upstream file it reproduces (kubernetes, pkg/scheduler/...).
"""

import pytest

from gpusched.objects.pod import pod_info
from gpusched.scheduler.profile import parse_config
from tests.scheduler.builders import filter_outcome, make_node, make_pod, scheduler_of, snapshot_of
from gpusched.scheduler.framework import Code
from gpusched.scheduler.plugins import node_ports

PORTS = "node(s) didn't have free ports for the requested pod ports"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
DRA = "no new claims to deallocate, "


# framework/plugins/nodeports/node_ports.go fitsPorts + framework/types.go HostPortInfo.CheckConflict
PORT_CASES = [
    ("same-port-all-ips", (("0.0.0.0", "TCP", 80),), (("0.0.0.0", "TCP", 80),), True),
    ("wanted-all-ips-used-one-ip", (("0.0.0.0", "TCP", 80),), (("10.0.0.1", "TCP", 80),), True),
    ("wanted-one-ip-used-all-ips", (("10.0.0.1", "TCP", 80),), (("0.0.0.0", "TCP", 80),), True),
    ("different-ips", (("10.0.0.2", "TCP", 80),), (("10.0.0.1", "TCP", 80),), False),
    ("different-protocol", (("0.0.0.0", "UDP", 80),), (("0.0.0.0", "TCP", 80),), False),
    ("different-port", (("0.0.0.0", "TCP", 8080),), (("0.0.0.0", "TCP", 80),), False),
    ("second-wanted-port-conflicts", (("0.0.0.0", "TCP", 81), ("0.0.0.0", "TCP", 80)),
     (("0.0.0.0", "TCP", 80),), True),
]


@pytest.mark.parametrize("wanted,used,conflict", [c[1:] for c in PORT_CASES], ids=[c[0] for c in PORT_CASES])
def test_node_ports_filter(wanted, used, conflict):
    snap = snapshot_of(make_node("n"), make_node("empty"))
    snap.add_pod(make_pod(name="holder", host_ports=used), "n")
    got = filter_outcome(node_ports.new(), snap, make_pod(name="new", host_ports=wanted))
    assert got == ({"n": (PORTS, Code.UNSCHEDULABLE)} if conflict else {})


# node_ports.go getContainerPorts: containers[].ports with hostPort > 0; hostIP "" -> 0.0.0.0,
# protocol "" -> TCP (HostPortInfo.sanitize); init containers are not counted.
def test_host_ports_read_from_the_pod_spec():
    pod = {"metadata": {"name": "p"}, "spec": {
        "initContainers": [{"name": "i", "ports": [{"containerPort": 1, "hostPort": 9}]}],
        "containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80},
                                               {"containerPort": 53, "hostPort": 53, "protocol": "UDP",
                                                "hostIP": "10.0.0.1"},
                                               {"containerPort": 8080}]}]}}
    assert pod_info(pod).host_ports == (("0.0.0.0", "TCP", 80), ("10.0.0.1", "UDP", 53))


def test_pod_without_host_ports_skips_node_ports():
    snap = snapshot_of(make_node("n"))
    snap.add_pod(make_pod(name="holder", host_ports=(("0.0.0.0", "TCP", 80),)), "n")
    assert filter_outcome(node_ports.new(), snap, make_pod(name="new")) == {}


# Whole FailedScheduling messages: FitError.Error() (framework/types.go) + RunPostFilterPlugins
# (framework/runtime/framework.go: DynamicResources then DefaultPreemption, reasons joined by ", ")
# + DefaultPreemption (framework/preemption/preemption.go). The port case matches a k3s v1.34
# transcript word for word.
MESSAGE_CASES = [
    ("port-held-by-higher-priority-pod", 1, [("holder", 100, 0, (("0.0.0.0", "TCP", 80),)),
                                             ("other", 0, 0, ())],
     dict(priority=50, host_ports=(("0.0.0.0", "TCP", 80),)),
     f"0/1 nodes are available: 1 {PORTS}. {DRA}preemption: 0/1 nodes are available: 1 {PORTS}."),
    ("port-held-by-lower-priority-pod-preempts", 1, [("holder", 0, 0, (("0.0.0.0", "TCP", 80),))],
     dict(priority=50, host_ports=(("0.0.0.0", "TCP", 80),)), None),
    # fit.go: 16 GPUs asked of an 8-GPU node is Unresolvable -> UnschedulableAndUnresolvable
    ("more-gpus-than-the-node-has-not-helpful", 8, [("small", 0, 1, ())], dict(priority=50, gpus=16),
     f"0/1 nodes are available: 1 Insufficient nvidia.com/gpu. {DRA}preemption: 0/1 nodes are "
     f"available: 1 {NOT_HELPFUL}."),
    ("gpus-held-by-equal-priority-no-victims", 8, [("big", 50, 8, ())], dict(priority=50, gpus=8),
     f"0/1 nodes are available: 1 Insufficient nvidia.com/gpu. {DRA}preemption: 0/1 nodes are "
     f"available: 1 No preemption victims found for incoming pod."),
    ("never-policy", 8, [("big", 0, 8, ())], dict(priority=50, gpus=8, preemption_policy="Never"),
     f"0/1 nodes are available: 1 Insufficient nvidia.com/gpu. {DRA}preemption: not eligible due "
     f"to preemptionPolicy=Never."),
]


@pytest.mark.parametrize("gpus,running,pod_fields,message", [c[1:] for c in MESSAGE_CASES],
                         ids=[c[0] for c in MESSAGE_CASES])
def test_failed_scheduling_message(gpus, running, pod_fields, message):
    scheduler = scheduler_of(make_node("n", gpus=gpus))
    for name, priority, want_gpus, ports in running:
        placed = scheduler.schedule_one(make_pod(name=name, priority=priority, gpus=want_gpus,
                                                 host_ports=ports))
        assert placed.node == "n"
    result = scheduler.schedule_one(make_pod(name="new", **pod_fields))
    assert not result.scheduled
    if message is None:
        assert (result.nominated_node, [v.name for v in result.victims]) == ("n", ["holder"])
    else:
        assert result.message == message


def test_profile_without_dynamic_resources_has_no_dra_part():
    (config,) = parse_config({"profiles": [{"plugins": {"multiPoint": {
        "disabled": [{"name": "DynamicResources"}]}}}]})
    scheduler = scheduler_of(make_node("n", gpus=8), profiles=[config])
    assert scheduler.schedule_one(make_pod(name="big", gpus=8)).node == "n"
    result = scheduler.schedule_one(make_pod(name="new", gpus=8))
    assert result.message == ("0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: "
                              "0/1 nodes are available: 1 No preemption victims found for incoming pod.")
