"""DynamicResources, phase by phase: upstream's plugin test table.

Each case is named after its ``TestPlugin`` case in kubernetes
``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources_test.go`` (v1.35,
``resource.k8s.io/v1``) and expects what that case expects: PreFilter's status, Filter's per
node, PostFilter's, and PreBind's claim writes (finalizer, ``status.allocation``,
``status.reservedFor``). Upstream checks PreEnqueue for the missing/deleted/wrong claims;
gpusched has no PreEnqueue, so PreFilter returns those texts.
"""

from __future__ import annotations

from typing import Any

import copy
import dataclasses

import numpy as np
import pytest

from gpusched.objects.pod import pod_info
from gpusched.scheduler.framework import Code, CycleState, Diagnosis
from gpusched.scheduler.plugins import dynamic_resources
from gpusched.scheduler.plugins.helper.dra_manager import FINALIZER, DraObjects, claim_key
from tests.dra.bodies import (allocated, claim, device, device_class, first_available, pod,
                              reserved, resource_slice)
from tests.scheduler.builders import make_node, scheduler_of, snapshot_of

WORKER = "worker"
CLASS = "my-resource-class"
POD = pod("my-pod", ("my-resource", "my-pod-my-resource"), uid="1234")
POD_TEMPLATE = pod("my-pod", uid="1234", templates={"my-resource": "my-pod-my-resource"})
POD_TEMPLATE_NOT_CREATED = pod("my-pod", uid="1234", templates={"my-resource": ""})
CLAIM = claim("my-pod-my-resource", ("req-1", CLASS), owner=("my-pod", "1234"))
OTHER = claim("not-my-claim", ("req-1", CLASS))
SLICE = resource_slice(WORKER, "some-driver", "instance-1")
ALLOCATED = allocated(CLAIM, WORKER, "instance-1")
IN_USE = reserved(ALLOCATED, ("my-pod", "1234"))
WRONG_TOPOLOGY = {**ALLOCATED, "status": {"allocation": {
    **ALLOCATED["status"]["allocation"], "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "no-such-label", "operator": "In", "values": ["no-such-value"]}]}]}}}}
GOOD_TOPOLOGY = {**ALLOCATED, "status": {"allocation": {
    **ALLOCATED["status"]["allocation"], "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": [WORKER]}]}]}}}}
DELETED = {**ALLOCATED, "metadata": {**ALLOCATED["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
NOT_OWNED = {**ALLOCATED, "metadata": {**ALLOCATED["metadata"], "ownerReferences": [
    {**ALLOCATED["metadata"]["ownerReferences"][0], "uid": "1234123"}]}}
PRIORITIZED = {**CLAIM, "spec": {"devices": {"requests": [first_available("req-1", ("subreq-1", CLASS, 1))]}}}
UNKNOWN_SUB = {**CLAIM, "spec": {"devices": {"requests": [
    first_available("req-1", ("subreq-1", "does-not-exist", 1))]}}}
UNKNOWN_CLASS = claim("my-pod-my-resource", ("req-1", "does-not-exist"))
FULL = reserved(allocated(claim("not-my-claim", ("req-1", CLASS)), WORKER, "instance-1"),
                *[(f"p{i}", f"u{i}") for i in range(256)])
BROKEN = 'device.attributes["some-driver"].healthy'    # upstream brokenSelector
TAINTED = resource_slice(WORKER, "some-driver", device(
    "instance-1", taints=[{"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}]))


def _admin(body: dict[str, Any]) -> dict[str, Any]:
    """upstream adminAccess(): every request and result with admin access."""
    out = copy.deepcopy(body)
    for request_ in out["spec"]["devices"]["requests"]:
        request_["exactly"]["adminAccess"] = True
    for result in ((out.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", ()):
        result["adminAccess"] = True
    return out


def _broken_claim(body: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(body)
    for request_ in out["spec"]["devices"]["requests"]:
        request_["exactly"]["selectors"] = [{"cel": {"expression": BROKEN}}]
    return out


def _phases(the_pod: dict[str, Any], claims: list[dict[str, Any]], classes: list[dict[str, Any]],
            slices: list[dict[str, Any]], node_extra: dict[str, int] | None = None) -> dict[str, Any]:
    """PreFilter, Filter on the worker, then PostFilter (no node) or Reserve + PreBind."""
    snap = snapshot_of(make_node(WORKER, labels={"kubernetes.io/hostname": WORKER}, extra=node_extra))
    plugin = dynamic_resources.new()
    plugin.set_objects(DraObjects({claim_key(c): c for c in claims}, slices,
                                  {c["metadata"]["name"]: c for c in classes}, lambda uid: the_pod))
    state, info = CycleState(), pod_info(the_pod)
    pre = plugin.pre_filter(state, info, snap)
    got: dict[str, Any] = {"prefilter": (pre.code.name, pre.message)}
    feasible = pre.code in (Code.SUCCESS, Code.SKIP)
    if pre.code == Code.SUCCESS:
        rejections = plugin.filter(state, info, snap, np.array([0]))
        got["filter"] = [(r.reason, r.code.name) for r in rejections]
        feasible = not rejections
    if not feasible or pre.code == Code.SKIP:
        post = plugin.post_filter(state, info, snap, Diagnosis(1))
        got["postfilter"] = post.status.message
        got["postfilter_writes"] = [_summary(w.body) for w in plugin.take_writes()]
        if not feasible:
            return got
    assert plugin.reserve(state, info, snap, 0).ok
    got["prebind"] = [_summary(w.body) for w in plugin.pre_bind(info, WORKER)]
    return got


def _summary(body: dict[str, Any]) -> tuple[Any, ...]:
    status = body.get("status") or {}
    devices = tuple((r["request"], r["device"]) for r in
                    ((status.get("allocation") or {}).get("devices") or {}).get("results") or ())
    meta = body["metadata"]
    return (meta.get("name") or meta["generateName"], FINALIZER in (body["metadata"].get("finalizers") or ()),
            devices, tuple(r["uid"] for r in status.get("reservedFor") or ()))


OK = ("SUCCESS", "")
UNRESOLVABLE = "UNSCHEDULABLE_AND_UNRESOLVABLE"
CASES = [
    # name, pod, claims, classes, slices, expected phases
    ("empty", pod("foo"), [], [], [],
     {"prefilter": ("SKIP", ""), "postfilter": "no new claims to deallocate",
      "postfilter_writes": [], "prebind": []}),
    ("claim-reference", POD, [ALLOCATED, OTHER], [], [],
     {"prefilter": OK, "filter": [],
      "prebind": [("my-pod-my-resource", False, (("req-1", "instance-1"),), ("1234",))]}),
    ("claim-template", POD_TEMPLATE, [ALLOCATED, OTHER], [], [],
     {"prefilter": OK, "filter": [],
      "prebind": [("my-pod-my-resource", False, (("req-1", "instance-1"),), ("1234",))]}),
    ("missing-claim", POD_TEMPLATE_NOT_CREATED, [ALLOCATED, OTHER], [], [],
     {"prefilter": (UNRESOLVABLE, 'pod "default/my-pod": ResourceClaim not created yet'),
      "postfilter": "no new claims to deallocate", "postfilter_writes": []}),
    ("deleted-claim", POD_TEMPLATE, [DELETED], [], [],
     {"prefilter": (UNRESOLVABLE, 'resourceclaim "my-pod-my-resource" is being deleted'),
      "postfilter": "no new claims to deallocate", "postfilter_writes": []}),
    ("wrong-claim", POD_TEMPLATE, [NOT_OWNED], [], [],
     {"prefilter": (UNRESOLVABLE, "ResourceClaim default/my-pod-my-resource was not created for "
                                  "pod default/my-pod (pod is not owner)"),
      "postfilter": "no new claims to deallocate", "postfilter_writes": []}),
    ("no-resources", POD, [CLAIM], [device_class()], [],
     {"prefilter": OK, "filter": [("cannot allocate all claims", UNRESOLVABLE)],
      "postfilter": "still not schedulable", "postfilter_writes": []}),
    ("with-resources", POD, [CLAIM], [device_class()], [SLICE],
     {"prefilter": OK, "filter": [],
      "prebind": [("my-pod-my-resource", True, (("req-1", "instance-1"),), ("1234",))]}),
    ("with-resources-has-finalizer", POD,
     [{**CLAIM, "metadata": {**CLAIM["metadata"], "finalizers": [FINALIZER]}}], [device_class()], [SLICE],
     {"prefilter": OK, "filter": [],
      "prebind": [("my-pod-my-resource", True, (("req-1", "instance-1"),), ("1234",))]}),
    ("exhausted-resources", POD, [CLAIM, allocated(OTHER, WORKER, "instance-1")], [device_class()], [SLICE],
     {"prefilter": OK, "filter": [("cannot allocate all claims", UNRESOLVABLE)],
      "postfilter": "still not schedulable", "postfilter_writes": []}),
    ("missing-class", POD, [CLAIM], [], [],
     {"prefilter": (UNRESOLVABLE, f"request req-1: device class {CLASS} does not exist"),
      "postfilter": "no new claims to deallocate", "postfilter_writes": []}),
    ("wrong-topology", POD, [WRONG_TOPOLOGY], [], [],
     {"prefilter": OK, "filter": [("resourceclaim not available on the node", UNRESOLVABLE)],
      "postfilter": "deallocation of ResourceClaim completed",
      "postfilter_writes": [("my-pod-my-resource", False, (), ())]}),
    ("good-topology", POD, [GOOD_TOPOLOGY], [], [],
     {"prefilter": OK, "filter": [],
      "prebind": [("my-pod-my-resource", False, (("req-1", "instance-1"),), ("1234",))]}),
    ("reserved-okay", POD, [IN_USE], [], [],
     {"prefilter": OK, "filter": [], "prebind": []}),
    ("claim-with-request-with-unknown-device-class", POD, [UNKNOWN_CLASS], [], [],
     {"prefilter": (UNRESOLVABLE, "request req-1: device class does-not-exist does not exist"),
      "postfilter": "no new claims to deallocate", "postfilter_writes": []}),
    ("claim-with-prioritized-list-unknown-device-class", POD, [UNKNOWN_SUB], [], [],
     {"prefilter": (UNRESOLVABLE, "request req-1/subreq-1: device class does-not-exist does not exist"),
      "postfilter": "no new claims to deallocate", "postfilter_writes": []}),
    ("claim-with-prioritized-list", POD, [PRIORITIZED], [device_class()], [SLICE],
     {"prefilter": OK, "filter": [],
      "prebind": [("my-pod-my-resource", True, (("req-1/subreq-1", "instance-1"),), ("1234",))]}),
    ("tainted-device-enabled", POD, [CLAIM], [device_class()], [TAINTED],
     {"prefilter": OK, "filter": [("cannot allocate all claims", UNRESOLVABLE)],
      "postfilter": "still not schedulable", "postfilter_writes": []}),
    ("request-admin-access-with-DRAAdminAccess-featuregate", POD,
     [_admin(CLAIM), allocated(OTHER, WORKER, "instance-1")], [device_class()], [SLICE],
     {"prefilter": OK, "filter": [],
      "prebind": [("my-pod-my-resource", True, (("req-1", "instance-1"),), ("1234",))]}),
    ("structured-ignore-allocated-admin-access", POD,
     [CLAIM, _admin(allocated(OTHER, WORKER, "instance-1"))], [device_class()], [SLICE],
     {"prefilter": OK, "filter": [],
      "prebind": [("my-pod-my-resource", True, (("req-1", "instance-1"),), ("1234",))]}),
    # upstream returns fwk.AsStatus (an Error) for these; gpusched's Filter rejects the node
    # with the error's text, unresolvable (see the plugin's docstring)
    ("claim-parameters-CEL-runtime-error", POD, [_broken_claim(CLAIM)], [device_class()], [SLICE],
     {"prefilter": OK, "filter": [("claim default/my-pod-my-resource: selector #0: CEL runtime "
                                   "error: no such key: healthy", UNRESOLVABLE)],
      "postfilter": "still not schedulable", "postfilter_writes": []}),
    ("class-parameters-CEL-runtime-error", POD, [CLAIM], [device_class(CLASS, BROKEN)], [SLICE],
     {"prefilter": OK, "filter": [("class my-resource-class: selector #0: CEL runtime error: "
                                   "no such key: healthy", UNRESOLVABLE)],
      "postfilter": "still not schedulable", "postfilter_writes": []}),
    # resourceclaim.CanBeReserved: len(reservedFor) < ResourceClaimReservedForMaxSize (256)
    ("resourceclaim-in-use (gpusched: 256 consumers)", pod("my-pod", ("my-resource", "not-my-claim"), uid="1234"),
     [FULL], [], [],
     {"prefilter": (UNRESOLVABLE, "resourceclaim in use"),
      "postfilter": "no new claims to deallocate", "postfilter_writes": []}),
]


@pytest.mark.parametrize("the_pod,claims,classes,slices,expected", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_plugin_phases(the_pod, claims, classes, slices, expected):
    assert _phases(the_pod, claims, classes, slices) == expected


# KEP-5004: extended resources backed by a DeviceClass (the same TestPlugin table, its
# extended-resource-* cases; example.com/gpu is the class's extendedResourceName)
EXT = "example.com/gpu"
EXT_CLASS = device_class(CLASS, extended=EXT)
POD_EXT = pod("my-pod", uid="1234", requests={EXT: "1"})
POD_IMPLICIT = pod("my-pod", uid="1234", requests={f"deviceclass.resource.kubernetes.io/{CLASS}": "1",
                                                   EXT: "2"})
LARGE_SLICE = resource_slice(WORKER, "some-driver", "instance-1", "instance-2", "instance-3",
                             "instance-4")
EXT_CLAIM_NODE2 = {**allocated(claim("my-pod-extended-resources-0", ("container-0-request-0", CLASS)),
                               "worker-2", "instance-1", request_name="container-0-request-0")}
EXT_CLAIM_NODE2["metadata"].update({
    "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
    "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "my-pod", "uid": "1234",
                         "controller": True}]})
EXT_CASES = [
    ("extended-resource-name-with-node-resource", POD_EXT, [], [EXT_CLASS], [], {EXT: 1},
     {"prefilter": OK, "filter": [], "prebind": []}),
    ("non-DRA-extended-resource-name-with-zero-allocatable", POD_EXT, [], [device_class()], [SLICE],
     {EXT: 0},
     {"prefilter": ("SKIP", ""), "postfilter": "no new claims to deallocate", "postfilter_writes": [],
      "prebind": []}),
    ("extended-resource-name-no-resource", POD_EXT, [], [EXT_CLASS], [], None,
     {"prefilter": OK, "filter": [("cannot allocate all claims", UNRESOLVABLE)],
      "postfilter": "still not schedulable", "postfilter_writes": []}),
    ("extended-resource-name-with-resources", POD_EXT, [], [EXT_CLASS], [SLICE], None,
     {"prefilter": OK, "filter": [],
      "prebind": [("my-pod-extended-resources-", True, (("container-0-request-0", "instance-1"),),
                   ("1234",))]}),
    ("extended-resource-name-with-zero-allocatable", POD_EXT, [], [EXT_CLASS], [SLICE], {EXT: 0},
     {"prefilter": OK, "filter": [],
      "prebind": [("my-pod-extended-resources-", True, (("container-0-request-0", "instance-1"),),
                   ("1234",))]}),
    ("implicit-extended-resource-name-with-resources", POD_IMPLICIT, [], [EXT_CLASS], [LARGE_SLICE], None,
     {"prefilter": OK, "filter": [],
      "prebind": [("my-pod-extended-resources-", True, (
          ("container-0-request-0", "instance-1"), ("container-0-request-1", "instance-2"),
          ("container-0-request-1", "instance-3")), ("1234",))]}),
    ("extended-resource-name-with-resources-delete-claim", POD_EXT, [EXT_CLAIM_NODE2], [EXT_CLASS],
     [SLICE], None,
     {"prefilter": OK, "filter": [("cannot schedule extended resource claim", UNRESOLVABLE)],
      "postfilter": "deletion of ResourceClaim completed",
      "postfilter_writes": [("my-pod-extended-resources-0", False,
                             (("container-0-request-0", "instance-1"),), ())]}),
]


@pytest.mark.parametrize("the_pod,claims,classes,slices,node_extra,expected",
                         [c[1:] for c in EXT_CASES], ids=[c[0] for c in EXT_CASES])
def test_extended_resources(the_pod, claims, classes, slices, node_extra, expected):
    assert _phases(the_pod, claims, classes, slices, node_extra) == expected


# dynamicresources.go Score/computeScore + NormalizeScore (DefaultNormalizeScore): a node that
# serves a firstAvailable request's first choice outranks one serving a later choice.
def test_first_available_score_prefers_the_first_choice():
    big = device("gpu-0", {"size": {"string": "big"}})
    small = device("gpu-0", {"size": {"string": "small"}})
    fallback = {**CLAIM, "spec": {"devices": {"requests": [{"name": "req-1", "firstAvailable": [
        {"name": "large", "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 1,
         "selectors": [{"cel": {"expression": "device.attributes['some-driver'].size == 'big'"}}]},
        {"name": "small", "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 1}]}]}}}
    scheduler = scheduler_of(make_node("a"), make_node("b"))
    plugin = scheduler.frameworks["default-scheduler"].plugins["DynamicResources"]
    plugin.set_objects(DraObjects({claim_key(fallback): fallback},
                                  [resource_slice("a", "some-driver", small),
                                   resource_slice("b", "some-driver", big)],
                                  {CLASS: device_class()}, lambda uid: POD))
    result = scheduler.schedule_one(pod_info(POD), record_scores=True)
    assert result.node == "b" and result.scores is not None
    # b serves the first choice (8 - 0), a the second (8 - 1): normalised 100 and 87, weight 1
    assert result.scores["b"] - result.scores["a"] == 100 - 100 * 7 // 8
    writes = plugin.pre_bind(result.pod, result.node)
    assert writes[0].body["status"]["allocation"]["devices"]["results"][0]["request"] == "req-1/large"


def test_extended_resource_on_a_dra_node_takes_no_device_plugin_gpu():
    """KEP-5004 on a node whose GPUs the DRA driver publishes (its allocatable has no
    nvidia.com/gpu): NodeResourcesFit and GpuDevices leave the request to DynamicResources
    (upstream ShouldDelegateResourceToDRA), which allocates it; no device-plugin GPU is assigned."""
    info, devices = make_node("dra-node", gpus=8)
    allocatable = {k: v for k, v in info.allocatable.items() if not k.startswith("nvidia.com/")}
    node = (dataclasses.replace(info, allocatable=allocatable, capacity=allocatable), devices)
    scheduler = scheduler_of(node)
    plugin = scheduler.frameworks["default-scheduler"].plugins["DynamicResources"]
    the_pod = pod("gpu-pod", uid="1234", requests={"nvidia.com/gpu": "1"})
    plugin.set_objects(DraObjects({}, [resource_slice("dra-node", "gpu.nvidia.com", "gpu-0")],
                                  {"gpu.nvidia.com": device_class("gpu.nvidia.com", extended="nvidia.com/gpu")},
                                  lambda uid: the_pod))
    result = scheduler.schedule_one(pod_info(the_pod))
    assert result.node == "dra-node", result.message
    assert result.assignment.device_ids == ()
    (write,) = plugin.pre_bind(result.pod, result.node)
    assert write.create and write.body["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
