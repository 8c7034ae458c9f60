"""DynamicResources in the embedded cluster: claims allocated and reserved at binding (PreBind
through the one write path), shared claims, the FailedScheduling texts, preemption, KEP-5004's
claim, ``explain``.

Upstream: ``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go`` (PreBind's
``bindClaim``: finalizer, ``status.allocation``, ``status.reservedFor``), ``FitError.Error()``
and ``RunPostFilterPlugins`` for the message, v1.36's preemption (devices are not freed by
preempting their holders: the DRA plugin's rejection is UnschedulableAndUnresolvable).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from gpusched.cluster.apiserver import write
from gpusched.cluster.cluster import Cluster
from gpusched.scheduler.plugins.helper.dra_manager import FINALIZER
from tests.dra.bodies import allocated, claim, device, device_class, pod, request, resource_slice

from .builders import apply, node_of, pool, priority_class

CLASS = "my-resource-class"
NOT_HELPFUL = "Preemption is not helpful for scheduling"


def _stored(*bodies: dict[str, Any]) -> str:
    """Manifests of ``bodies`` without the uids the builders give (the store assigns them)."""
    out = []
    for body in bodies:
        body = copy.deepcopy(body)
        body["metadata"].pop("uid", None)
        out.append(yaml.safe_dump(body))
    return "---\n".join(out)


def _failures(cluster: Cluster, name: str) -> list[str]:
    return [e["message"] for e in cluster.events()
            if e["reason"] == "FailedScheduling" and e["involvedObject"]["name"] == name]


def _claim(cluster: Cluster, name: str) -> dict[str, Any]:
    return cluster.get("ResourceClaim", [name])[0]


@pytest.fixture
def dra_cluster(cluster: Cluster) -> Cluster:
    """Two CPU nodes; ``cpu-2`` has one device of ``some-driver``."""
    apply(cluster, pool("cpu", count=2, gpus=0))
    apply(cluster, _stored(device_class(), resource_slice("cpu-2", "some-driver", "instance-1")))
    return cluster


def test_claim_allocated_and_reserved_at_binding(dra_cluster):
    apply(dra_cluster, _stored(claim("gpu-claim", ("req-1", CLASS)),
                               pod("my-pod", ("gpu", "gpu-claim"))))
    assert node_of(dra_cluster, "my-pod") == "cpu-2"
    body = _claim(dra_cluster, "gpu-claim")
    assert FINALIZER in body["metadata"]["finalizers"]
    assert body["status"]["allocation"]["devices"]["results"] == [
        {"request": "req-1", "driver": "some-driver", "pool": "cpu-2", "device": "instance-1"}]
    assert body["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"] == [
        {"key": "metadata.name", "operator": "In", "values": ["cpu-2"]}]
    assert [r["name"] for r in body["status"]["reservedFor"]] == ["my-pod"]


def test_shared_claim_reserved_for_every_pod(dra_cluster):
    """One claim in two pods: the second goes where the claim is, reservedFor grows."""
    apply(dra_cluster, _stored(claim("shared", ("req-1", CLASS)), pod("a", ("gpu", "shared"))))
    apply(dra_cluster, _stored(pod("b", ("gpu", "shared"))))
    assert node_of(dra_cluster, "a") == node_of(dra_cluster, "b") == "cpu-2"
    assert [r["name"] for r in _claim(dra_cluster, "shared")["status"]["reservedFor"]] == ["a", "b"]


MESSAGES = [
    ("no-device-left", [claim("first", ("req-1", CLASS)), pod("a", ("gpu", "first")),
                        claim("second", ("req-1", CLASS)), pod("b", ("gpu", "second"))], "b",
     "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, preemption: "
     f"0/2 nodes are available: 2 {NOT_HELPFUL}."),
    ("missing-claim", [pod("b", ("gpu", "nothing"))], "b",
     'could not find ResourceClaim "default/nothing"'),
    ("missing-class", [claim("c", ("req-1", "no-such-class")), pod("b", ("gpu", "c"))], "b",
     "0/2 nodes are available: request req-1: device class no-such-class does not exist. "
     f"no new claims to deallocate, preemption: 0/2 nodes are available: 2 {NOT_HELPFUL}."),
]


@pytest.mark.parametrize("bodies,name,message", [c[1:] for c in MESSAGES], ids=[c[0] for c in MESSAGES])
def test_failed_scheduling_message(dra_cluster, bodies, name, message):
    apply(dra_cluster, _stored(*bodies))
    assert node_of(dra_cluster, name) == ""
    assert any(message in m for m in _failures(dra_cluster, name)), _failures(dra_cluster, name)


def test_preemption_does_not_free_devices(dra_cluster):
    """v1.36: a high-priority pod whose claim cannot be allocated does not preempt the
    low-priority holder of the device (every node: UnschedulableAndUnresolvable)."""
    apply(dra_cluster, priority_class("high", 1000))
    apply(dra_cluster, _stored(claim("low-claim", ("req-1", CLASS)), pod("low", ("gpu", "low-claim"))))
    high = pod("high", ("gpu", "high-claim"))
    high["spec"]["priorityClassName"] = "high"
    apply(dra_cluster, _stored(claim("high-claim", ("req-1", CLASS)), high))
    assert node_of(dra_cluster, "low") == "cpu-2" and node_of(dra_cluster, "high") == ""
    assert _failures(dra_cluster, "high")[-1].endswith(f"preemption: 0/2 nodes are available: 2 {NOT_HELPFUL}.")


def test_extended_resource_served_by_a_device_class(cluster):
    """KEP-5004: ``example.com/gpu: 1`` on a node that publishes the class's devices."""
    apply(cluster, pool("cpu", count=1, gpus=0))
    apply(cluster, _stored(device_class(CLASS, extended="example.com/gpu"),
                           resource_slice("cpu-1", "some-driver", "instance-1")))
    apply(cluster, _stored(pod("ext", requests={"example.com/gpu": "1"})))
    assert node_of(cluster, "ext") == "cpu-1"
    made = [c for c in cluster.get("ResourceClaim")
            if c["metadata"]["name"].startswith("ext-extended-resources-")]
    assert len(made) == 1
    body = made[0]
    assert body["metadata"]["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert body["metadata"]["ownerReferences"][0]["name"] == "ext"
    assert body["status"]["allocation"]["devices"]["results"][0]["device"] == "instance-1"
    status = cluster.get("Pod", ["ext"])[0]["status"]["extendedResourceClaimStatus"]
    assert status == {"resourceClaimName": body["metadata"]["name"], "requestMappings": [
        {"containerName": "ctr", "resourceName": "example.com/gpu",
         "requestName": "container-0-request-0"}]}


def test_explain_names_the_request_and_selector_that_failed(cluster):
    """``explain pod``: per node, which request found too few devices, and where they ran out."""
    apply(cluster, pool("cpu", count=2, gpus=0))
    apply(cluster, _stored(device_class(), resource_slice("cpu-2", "some-driver", device(
        "instance-1", {"model": {"string": "a100"}}))))
    selector = "device.attributes['some-driver'].model == 'h100'"
    body = claim("picky", request("req-1", CLASS, 1, selector))
    apply(cluster, _stored(body, pod("b", ("gpu", "picky"))))
    reasons = {v.node: v.reasons for v in cluster.explain("b").nodes}
    assert reasons == {
        "cpu-1": (("DynamicResources", "cannot allocate all claims: claim default/picky, request "
                                       "req-1: 0 free device(s) of class my-resource-class on the "
                                       "node, 1 requested"),),
        "cpu-2": (("DynamicResources", "cannot allocate all claims: claim default/picky, request "
                                       "req-1: 0 free device(s) of class my-resource-class match "
                                       f"selector #0 ({selector}), 1 requested"),)}


def test_post_filter_deallocates_a_claim_the_pod_cannot_reach(cluster):
    """upstream ``wrong-topology``: a claim allocated on a node the pod may not use, reserved
    for nobody, is deallocated by PostFilter, and the pod's next attempt allocates it anew."""
    apply(cluster, pool("cpu", count=2, gpus=0))
    apply(cluster, _stored(device_class(), resource_slice("cpu-1", "some-driver", "instance-1"),
                           resource_slice("cpu-2", "some-driver", "instance-1")))
    stale = allocated(claim("moved", ("req-1", CLASS)), "cpu-2", "instance-1")
    apply(cluster, _stored(stale))      # a create drops the status: written as a driver would

    def allocate_on_cpu_2(view):
        body = view.copy("ResourceClaim", "moved", "default")
        body["status"] = copy.deepcopy(stale["status"])
        write.update_status(view, body)
    cluster.write(allocate_on_cpu_2)
    assert _claim(cluster, "moved")["status"]["allocation"]
    picky = pod("p", ("gpu", "moved"))
    picky["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "cpu-1"}
    apply(cluster, _stored(picky))
    messages = _failures(cluster, "p")
    assert any("deallocation of ResourceClaim completed" in m for m in messages), messages
    assert not (_claim(cluster, "moved").get("status") or {}).get("allocation")
    # the claim's update moved the pod; its next attempt comes with the next command that
    # settles (the embedded clock stands still between commands)
    apply(cluster, yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}))
    assert node_of(cluster, "p") == "cpu-1"
    assert _claim(cluster, "moved")["status"]["allocation"]["devices"]["results"][0]["pool"] == "cpu-1"


@pytest.mark.parametrize("mode", ["backfill", "strict"])
def test_queue_order_modes_allocate_claims(dra_cluster, mode):
    """The queue-order modes (ConfigMap kube-system/gpusched-scheduler) bind through the same
    PreBind: the claim is allocated and reserved, and a second claim waits as in default mode."""
    apply(dra_cluster, yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                                       "metadata": {"name": "gpusched-scheduler", "namespace": "kube-system"},
                                       "data": {"mode": mode}}))
    apply(dra_cluster, _stored(claim("first", ("req-1", CLASS)), pod("a", ("gpu", "first"))))
    apply(dra_cluster, _stored(claim("second", ("req-1", CLASS)), pod("b", ("gpu", "second"))))
    assert node_of(dra_cluster, "a") == "cpu-2" and node_of(dra_cluster, "b") == ""
    assert [r["name"] for r in _claim(dra_cluster, "first")["status"]["reservedFor"]] == ["a"]
    assert not (_claim(dra_cluster, "second").get("status") or {}).get("allocation")
