"""Kueue's validating webhooks as admission plugins (cluster/admission/kueue_*.py): the field
paths and messages of kubernetes-sigs/kueue pkg/webhooks/*_webhook.go, cases from
pkg/webhooks/clusterqueue_webhook_test.go (TestValidateClusterQueue), cohort_webhook_test.go,
resourceflavor_webhook_test.go (TestValidateResourceFlavor) and workload_webhook_test.go
(TestValidateWorkload, TestValidateWorkloadUpdate), each id naming its upstream case."""

from __future__ import annotations

import pytest

from gpusched.cluster.admission.kueue_clusterqueue import validate_cluster_queue
from gpusched.cluster.admission.kueue_cohort import validate_cohort
from gpusched.cluster.admission.kueue_resourceflavor import validate_resource_flavor
from gpusched.cluster.admission.kueue_vjob import validate_topology_annotations
from gpusched.cluster.admission.kueue_workload import validate_workload, validate_workload_update
from gpusched.cluster.admission.webhook import WebhookDeniedError, deny


def quota(name, nominal=1, **limits):
    return {"name": name, "nominalQuota": nominal, **limits}


def cq(*groups, **spec):
    return {"kind": "ClusterQueue", "spec": {"resourceGroups": list(groups), **spec}}


def rg(covered, *flavors):
    return {"coveredResources": covered,
            "flavors": [{"name": name, "resources": resources} for name, resources in flavors]}


def errors(found):
    return [str(e) for e in found]


@pytest.mark.parametrize("obj, want", [
    pytest.param(cq(rg(["cpu", "memory"], ("f", [quota("cpu"), quota("memory")]))), [],
                 id="built-in resources with qualified names"),
    pytest.param(cq(rg(["@cpu"], ("f", [quota("@cpu")]))),
                 ['spec.resourceGroups[0].coveredResources[0]: Invalid value: "@cpu": name part must '
                  "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                  "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                  "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"],
                 id="invalid resource name"),
    pytest.param(cq(rg(["cpu"], ("f", [quota("cpu", -1)]))),
                 ['spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Invalid value: "-1": '
                  "must be greater than or equal to 0"], id="flavor quota with negative value"),
    pytest.param(cq(rg(["cpu"], ("f", [quota("cpu", 1, borrowingLimit=-1)])), cohortName="c"),
                 ['spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: Invalid value: "-1": '
                  "must be greater than or equal to 0"], id="flavor quota with negative borrowingLimit"),
    pytest.param(cq(rg(["cpu"], ("f", [quota("cpu", 1, lendingLimit=1)]))),
                 ['spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "1": '
                  "must be nil when cohort is empty"], id="flavor quota with lendingLimit and empty cohort"),
    pytest.param(cq(rg(["cpu"], ("f", [quota("cpu", 1, lendingLimit=2)])), cohortName="c"),
                 ['spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "2": '
                  "must be less than or equal to the nominalQuota"],
                 id="flavor quota with lendingLimit greater than nominalQuota"),
    pytest.param(cq(rg(["cpu", "memory"], ("f", [quota("memory"), quota("cpu")]))),
                 ['spec.resourceGroups[0].flavors[0].resources[0].name: Invalid value: "memory": must match '
                  "the name in coveredResources",
                  'spec.resourceGroups[0].flavors[0].resources[1].name: Invalid value: "cpu": must match '
                  "the name in coveredResources"], id="resources in a flavor in different order"),
    pytest.param(cq(rg(["cpu"], ("f", [quota("cpu")])), rg(["cpu"], ("g", [quota("cpu")]))),
                 ['spec.resourceGroups[1].coveredResources[0]: Duplicate value: "cpu"'],
                 id="resource in more than one resource group"),
    pytest.param(cq(rg(["cpu"], ("f", [quota("cpu")])), rg(["memory"], ("f", [quota("memory")]))),
                 ['spec.resourceGroups[1].flavors[0].name: Duplicate value: "f"'],
                 id="flavor in more than one resource group"),
    pytest.param(cq(flavorFungibility={"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor",
                                       "preference": "BorrowingOverPreemption"}),
                 ['spec.flavorFungibility.preference: Invalid value: "BorrowingOverPreemption": preference '
                  '"BorrowingOverPreemption" requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor'],
                 id="flavorFungibility preference set but whenCanBorrow != TryNextFlavor"),
    pytest.param(cq(rg(["cpu"], ("f", [quota("cpu")])),
                    admissionChecksStrategy={"admissionChecks": [{"name": "ac", "onFlavors": ["g"]}]}),
                 ['spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]: Unsupported value: "g": '
                  'supported values: "f"'], id="admissionCheckStrategy refers to a flavor that is not in quota"),
    pytest.param(cq(fairSharing={"weight": "1n"}),
                 ['spec.fairSharing: Invalid value: "1n": When not 0, weight must be > 10e-9'],
                 id="threshold FairSharing weight"),
    pytest.param(cq(fairSharing={"weight": "0"}), [], id="zero FairSharing weight"),
    pytest.param(cq(namespaceSelector={"matchLabels": {"nospecialchars^=@": "bar"}}),
                 ['spec.namespaceSelector.matchLabels: Invalid value: "nospecialchars^=@": name part must '
                  "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                  "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                  "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"],
                 id="namespaceSelector with invalid labels"),
])
def test_cluster_queue_webhook(obj, want):
    assert errors(validate_cluster_queue(obj)) == want


def test_flavor_totals():
    """validateTotalFlavors: 257 flavors over the resource groups."""
    groups = [rg([f"r{i}"], *[(f"f{i}-{j}", [quota(f"r{i}")]) for j in range(64)]) for i in range(4)]
    groups.append(rg(["last"], ("extra", [quota("last")])))
    assert ("spec.resourceGroups: Invalid value: 257: total number of flavors across all resourceGroups "
            "must be ≤ 256, got 257") in errors(validate_cluster_queue(cq(*groups)))


@pytest.mark.parametrize("spec, want", [
    pytest.param({"resourceGroups": [rg(["cpu"], ("f", [quota("cpu", 1, borrowingLimit=1)]))]},
                 ['spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: Invalid value: "1": '
                  "must be nil when parent is empty"], id="borrowingLimit without parent"),
    pytest.param({"parentName": "root",
                  "resourceGroups": [rg(["cpu"], ("f", [quota("cpu", 1, lendingLimit=5)]))]}, [],
                 id="lendingLimit over nominal is fine for a cohort"),
    pytest.param({"fairSharing": {"weight": "-1"}},
                 ['spec.fairSharing: Invalid value: "-1": must be greater than or equal to 0'],
                 id="negative weight"),
])
def test_cohort_webhook(spec, want):
    assert errors(validate_cohort({"kind": "Cohort", "spec": spec})) == want


@pytest.mark.parametrize("spec, want", [
    pytest.param({"nodeLabels": {"foo": "bar"}, "nodeTaints": [{"key": "k", "effect": "NoSchedule"}]}, [],
                 id="valid"),
    pytest.param({"nodeLabels": {"@abc": "foo"}},
                 ['spec.nodeLabels: Invalid value: "@abc": name part must consist of alphanumeric '
                  "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
                  "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                  "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"], id="invalid label name"),
    pytest.param({"nodeTaints": [{"key": "k", "value": "v", "effect": "NoSchedule"},
                                 {"key": "k", "value": "w", "effect": "NoSchedule"}]},
                 ['spec.nodeTaints[1]: Duplicate value: {"key":"k","value":"w","effect":"NoSchedule"}: '
                  "taints must be unique by key and effect pair"], id="duplicated taints"),
])
def test_resource_flavor_webhook(spec, want):
    assert errors(validate_resource_flavor({"kind": "ResourceFlavor", "spec": spec})) == want


def pod_set(name="main", count=1, **extra):
    return {"name": name, "count": count, "template": {"spec": {"containers": [
        {"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}, **extra}


def workload(*pod_sets, status=None):
    return {"kind": "Workload", "spec": {"podSets": list(pod_sets)}, "status": status or {}}


RESERVED = [{"type": "QuotaReserved", "status": "True"}]


@pytest.mark.parametrize("wl, want", [
    pytest.param(workload(pod_set()), [], id="valid"),
    pytest.param(workload({"name": "main", "count": 1, "template": {"spec": {"containers": [
        {"name": "c", "resources": {"requests": {"pods": "1"}}}]}}}),
                 ['spec.podSets[0].template.spec.containers[0].resources.requests[pods]: Invalid value: '
                  '"pods": the key is reserved for internal kueue use'], id="pods key is reserved"),
    pytest.param(workload(pod_set("a", 3, minCount=2), pod_set("b", 3, minCount=2)),
                 ["spec.podSets: Invalid value: 2: at most one podSet can use minCount"],
                 id="more than one variable count podSet"),
    pytest.param(workload(pod_set(), status={"conditions": RESERVED}),
                 ["status.admission: Required value: must be set while the QuotaReserved condition is true"],
                 id="quota reserved without admission"),
    pytest.param(workload(pod_set("main", 4), status={"conditions": RESERVED, "admission": {
        "clusterQueue": "cq", "podSetAssignments": [
            {"name": "other", "count": 4, "resourceUsage": {"cpu": "6", "nvidia.com/gpu": "6"}}]}}),
                 ['status.admission.podSetAssignments[0].name: Not found: "other"',
                  'status.admission.podSetAssignments[0].resourceUsage[nvidia.com/gpu]: Invalid value: "6": is not a '
                  "multiple of 4"], id="invalid podSetAssignment (cpu counts in millicores: 6000 % 4 == 0)"),
    pytest.param(workload(pod_set("main", 3), status={"reclaimablePods": [{"name": "main", "count": 4}]}),
                 ["status.reclaimablePods[0].count: Invalid value: 4: should be less or equal to 3"],
                 id="invalid reclaimablePods count"),
])
def test_workload_webhook(wl, want):
    assert errors(validate_workload(wl)) == want


def test_workload_pod_sets_are_immutable_while_quota_is_reserved():
    """TestValidateWorkloadUpdate "podSets should not be updated when has quota reservation"."""
    admission = {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 1}]}
    old = workload(pod_set(), status={"conditions": RESERVED, "admission": admission})
    new = workload(pod_set(count=2), status={"conditions": RESERVED, "admission": admission})
    assert [e.path for e in validate_workload_update(new, old)] == ["spec.podSets"]
    assert "field is immutable" in errors(validate_workload_update(new, old))[0]


def test_a_denial_names_the_webhook_and_aggregates_its_errors():
    found = validate_cluster_queue(cq(rg(["cpu", "memory"], ("f", [quota("memory"), quota("cpu")]))))
    with pytest.raises(WebhookDeniedError) as caught:
        deny("vclusterqueue.kb.io", found)
    text = str(caught.value)
    assert text.startswith('admission webhook "vclusterqueue.kb.io" denied the request: [spec.resourceGroups')
    assert text.endswith("must match the name in coveredResources]")
    assert caught.value.code == 403 and caught.value.reason == "Forbidden"


def tas_job(**annotations):
    return {"kind": "Job", "spec": {"template": {"metadata": {"annotations": annotations}}}}


@pytest.mark.parametrize("job, want", [
    pytest.param(tas_job(**{"kueue.x-k8s.io/podset-required-topology": "rack"}), [], id="one annotation"),
    pytest.param(tas_job(**{"kueue.x-k8s.io/podset-required-topology": "rack",
                            "kueue.x-k8s.io/podset-preferred-topology": "block"}),
                 ['spec.template.metadata.annotations: Invalid value: must not contain more than one topology '
                  'annotation: ["kueue.x-k8s.io/podset-required-topology", "kueue.x-k8s.io/podset-preferred-topology", '
                  '"kueue.x-k8s.io/podset-unconstrained-topology"]'],
                 id="invalid: required and preferred topology annotations"),
    pytest.param(tas_job(**{"kueue.x-k8s.io/podset-unconstrained-topology": "yes"}),
                 ['spec.template.metadata.annotations[kueue.x-k8s.io/podset-unconstrained-topology]: Invalid value: '
                  '"yes": must be a boolean value'], id="invalid unconstrained value"),
])
def test_job_webhook_topology_annotations(job, want):
    """jobframework/tas_validation.go ValidateTASPodSetRequest (job_webhook_test.go TAS cases)."""
    assert errors(validate_topology_annotations(job)) == want
