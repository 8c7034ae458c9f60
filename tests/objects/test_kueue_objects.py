"""Kueue's objects as the API server takes them: decoded, converted from v1beta1, defaulted and
validated against the CRDs' schemas (objects.strict, objects.kueue_conversion,
objects.crd_validation). Cases follow Kueue's test/integration/singlecluster/webhook/core/
clusterqueue_test.go, localqueue_test.go, resourceflavor_test.go, topology_test.go and
workload_test.go entries (named in each id's comment), and apis/kueue/v1beta1/*_conversion_test.go."""

from __future__ import annotations

import copy

import pytest

from gpusched.errors import GpuschedError
from gpusched.objects.strict import STRICT, decode_with_mode
from gpusched.objects.validation import validate_object

V2 = "kueue.x-k8s.io/v1beta2"


def make_cq(**spec):
    return {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": spec}


def group(*resources, flavor="f", **quota):
    return {"coveredResources": list(resources),
            "flavors": [{"name": flavor, "resources": [{"name": r, "nominalQuota": 1, **quota}
                                                       for r in resources]}]}


def admit(obj):
    """decode (strict) then validate: what apply and a POST do before admission."""
    decoded, warnings = decode_with_mode(copy.deepcopy(obj), STRICT)
    return validate_object(decoded), warnings


def refusal(obj) -> str:
    with pytest.raises(GpuschedError) as caught:
        admit(obj)
    return str(caught.value)


def test_cluster_queue_defaults():
    """clusterqueue_test.go Entry "All defaults"."""
    cq, _ = admit(make_cq())
    assert cq["spec"] == {"flavorFungibility": {"whenCanBorrow": "MayStopSearch",
                                                "whenCanPreempt": "TryNextFlavor"},
                          "preemption": {"borrowWithinCohort": {"policy": "Never"},
                                         "reclaimWithinCohort": "Never", "withinClusterQueue": "Never"},
                          "queueingStrategy": "BestEffortFIFO", "stopPolicy": "None"}


@pytest.mark.parametrize("obj, message", [
    # "Should forbid to create clusterQueue with unknown clusterQueueingStrategy"
    pytest.param(make_cq(queueingStrategy="unknown"),
                 'spec.queueingStrategy: Unsupported value: "unknown": supported values: "StrictFIFO", '
                 '"BestEffortFIFO"', id="unknown-queueing-strategy"),
    # "Should forbid to create clusterQueue with unknown preemption.withinClusterQueue"
    pytest.param(make_cq(preemption={"withinClusterQueue": "Sometimes"}),
                 'spec.preemption.withinClusterQueue: Unsupported value: "Sometimes": supported values: '
                 '"Never", "LowerPriority", "LowerOrNewerEqualPriority"', id="unknown-within-cluster-queue"),
    # "Should have valid resources quantity": at most 64 covered resources... (maxItems)
    pytest.param(make_cq(resourceGroups=[group("cpu")] * 17),
                 "spec.resourceGroups: Too many: 17: must have at most 16 items", id="17-resource-groups"),
    # "Should have at least one flavor"
    pytest.param(make_cq(resourceGroups=[{"coveredResources": ["cpu"], "flavors": []}]),
                 "spec.resourceGroups[0].flavors: Invalid value: 0: spec.resourceGroups[0].flavors in body "
                 "should have at least 1 items", id="no-flavor"),
    # "Should forbid to create clusterQueue with invalid cohort"
    pytest.param(make_cq(cohortName="@x"),
                 "spec.cohortName: Invalid value: \"@x\": spec.cohortName in body should match", id="invalid-cohort"),
    # "Should forbid ... flavor quota with borrowingLimit and empty cohort" (the CEL rule)
    pytest.param(make_cq(resourceGroups=[group("cpu", borrowingLimit=1)]),
                 'spec: Invalid value: "object": borrowingLimit must be nil when cohort is empty',
                 id="borrowing-limit-without-cohort"),
    # "Should forbid to create clusterQueue missing resources in a flavor"
    pytest.param(make_cq(resourceGroups=[{"coveredResources": ["cpu", "memory"],
                                          "flavors": [{"name": "f", "resources": [{"name": "cpu",
                                                                                  "nominalQuota": 1}]}]}]),
                 'spec.resourceGroups[0]: Invalid value: "object": flavors must have the same number of '
                 'resources as the coveredResources', id="missing-resource-in-flavor"),
    # "Should forbid ... invalid preemption due to reclaimWithinCohort=Never, while borrowWithinCohort!=nil"
    pytest.param(make_cq(preemption={"reclaimWithinCohort": "Never",
                                     "borrowWithinCohort": {"policy": "LowerPriority"}}),
                 'spec.preemption: Invalid value: "object": reclaimWithinCohort=Never and '
                 'borrowWithinCohort.Policy!=Never', id="reclaim-never-borrow-lower"),
    # an enum error keeps the CEL rules from running (apiextensions hasBlockingErr)
    pytest.param(make_cq(queueingStrategy="x", resourceGroups=[group("cpu", borrowingLimit=1)]),
                 '<nil>: Invalid value: "null": some validation rules were not checked because the object '
                 'was invalid; correct the existing errors to complete validation', id="blocking-error"),
    # resourceflavor_test.go: "Should fail to create with topologyName but without nodeLabels"
    pytest.param({"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "rf"},
                  "spec": {"topologyName": "t"}},
                 'spec: Invalid value: "object": at least one nodeLabel is required when topology is set',
                 id="topology-flavor-without-labels"),
    # topology_test.go: "should not be able to create topology with kubernetes.io/hostname not at the lowest level"
    pytest.param({"apiVersion": V2, "kind": "Topology", "metadata": {"name": "t"},
                  "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "rack"}]}},
                 'spec.levels: Invalid value: "array": the kubernetes.io/hostname label can only be used at '
                 'the lowest level of topology', id="hostname-not-lowest"),
    pytest.param({"apiVersion": V2, "kind": "Topology", "metadata": {"name": "t"}, "spec": {"levels": []}},
                 "spec.levels: Invalid value: 0: spec.levels in body should have at least 1 items",
                 id="no-levels"),
    pytest.param({"apiVersion": V2, "kind": "WorkloadPriorityClass", "metadata": {"name": "p"}},
                 "value: Required value", id="priority-class-without-value"),
    # workload_test.go: "priority should not be nil when priorityClassRef is set"
    pytest.param({"apiVersion": V2, "kind": "Workload", "metadata": {"name": "w", "namespace": "default"},
                  "spec": {"podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}],
                           "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                                "name": "p"}}},
                 'spec: Invalid value: "object": priority should not be nil when priorityClassRef is set',
                 id="priority-class-ref-without-priority"),
    pytest.param({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                  "metadata": {"name": "pg", "namespace": "default"}, "spec": {"minMember": 0}},
                 "spec.minMember: Invalid value: 0: spec.minMember in body should be greater than or equal to 1",
                 id="pod-group-min-member-zero"),
])
def test_schema_and_cel_refusals(obj, message):
    assert message in refusal(obj)


@pytest.mark.parametrize("obj, spec", [
    # clusterqueue_conversion_test.go: cohort -> cohortName, admissionChecks -> the strategy,
    # Borrow/Preempt -> MayStopSearch
    pytest.param({"kind": "ClusterQueue", "spec": {"cohort": "all", "admissionChecks": ["ac"],
                                                   "flavorFungibility": {"whenCanBorrow": "Borrow",
                                                                         "whenCanPreempt": "Preempt"}}},
                 {"cohortName": "all", "admissionChecksStrategy": {"admissionChecks": [{"name": "ac"}]},
                  "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"}},
                 id="cluster-queue"),
    # workload_conversion_test.go: priorityClassName + priorityClassSource -> priorityClassRef
    pytest.param({"kind": "Workload", "metadata": {"namespace": "default"},
                  "spec": {"priorityClassName": "high", "priority": 10,
                           "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass"}},
                 {"priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                       "name": "high"}, "priority": 10, "active": True}, id="workload"),
])
def test_v1beta1_is_converted_with_the_deprecation_warning(obj, spec):
    body = {"apiVersion": "kueue.x-k8s.io/v1beta1", **obj,
            "metadata": {"name": "x", **obj.get("metadata", {})}}
    stored, warnings = admit(body)
    assert warnings == ["This version is deprecated. Use v1beta2 instead."]
    assert stored["apiVersion"] == V2
    assert {k: stored["spec"][k] for k in spec} == spec


def test_a_v1beta1_field_unknown_to_v1beta2_is_a_strict_finding():
    """v1beta1 LocalQueue has no spec field that v1beta2 lacks; an unknown one still fails."""
    body = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
            "metadata": {"name": "q", "namespace": "default"}, "spec": {"clusterQueue": "cq", "cohort": "x"}}
    assert 'strict decoding error: unknown field "spec.cohort"' in refusal(body)


@pytest.mark.parametrize("v1beta1", [
    pytest.param({"kind": "ClusterQueue", "spec": {"cohort": "all"}}, id="cluster-queue"),
    pytest.param({"kind": "Workload", "spec": {"priorityClassName": "pc",
                                               "priorityClassSource": "scheduling.k8s.io/priorityclass"}},
                 id="workload"),
    pytest.param({"kind": "LocalQueue", "status": {"flavorUsage": [{"name": "f"}]}}, id="local-queue"),
    pytest.param({"kind": "Workload", "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": [
        {"name": "main", "count": 3, "topologyAssignment": {"levels": ["kubernetes.io/hostname"], "domains": [
            {"values": ["r2-1"], "count": 2}, {"values": ["r2-2"], "count": 1}]}}]}}},
                 id="workload-topology-assignment"),
])
def test_v1beta1_round_trip(v1beta1):
    """Convert_v1beta1_*_To_v1beta2 then Convert_v1beta2_*_To_v1beta1 give the fields back."""
    from gpusched.objects.kueue_conversion import to_storage_version, to_v1beta1
    body = {"apiVersion": "kueue.x-k8s.io/v1beta1", "metadata": {"name": "x"}, **v1beta1}
    stored, _ = to_storage_version(body)
    assert stored != body and to_v1beta1(stored) == body


def test_v1beta1_topology_assignment_is_stored_compressed():
    """workload_conversion.go Convert_v1beta1_TopologyAssignment_To_v1beta2_TopologyAssignment."""
    from gpusched.objects.kueue_conversion import to_storage_version
    body = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "x"},
            "status": {"admission": {"podSetAssignments": [{"name": "main", "topologyAssignment": {
                "levels": ["kubernetes.io/hostname"], "domains": [{"values": ["r2-1"], "count": 2},
                                                                  {"values": ["r2-2"], "count": 1}]}}]}}}
    stored, _ = to_storage_version(body)
    assert stored["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] == {
        "levels": ["kubernetes.io/hostname"], "slices": [{"domainCount": 2, "valuesPerLevel": [
            {"individual": {"prefix": "r2-", "roots": ["1", "2"]}}], "podCounts": {"individual": [2, 1]}}]}
    assert "topologyAssignment" in body["status"]["admission"]["podSetAssignments"][0]
    assert "domains" in body["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
