"""The resourceclaim controller (kubernetes ``pkg/controller/resourceclaim/controller.go`` and
``controller_test.go``): claims from templates per pod, named, owned and annotated as upstream's,
recorded in ``status.resourceClaimStatuses``, deleted with the pod; stale reservations."""

from __future__ import annotations

import copy
import re

import pytest
import yaml

from gpusched.cluster.apiserver import write
from gpusched.cluster.controllers.dra.claims import generate_name
from tests.cluster.builders import apply

TEMPLATE = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: single-gpu}
spec:
  metadata:
    labels: {app: inference}
    annotations: {team: ml}
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.example.com}
"""


def pod_with_claims(name: str = "pod0", template: str = "single-gpu") -> str:
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template},
                                    {"name": "shared", "resourceClaimName": "shared-gpu"}],
                 "containers": [{"name": "ctr", "image": "ubuntu",
                                 "resources": {"claims": [{"name": "gpu"}, {"name": "shared"}]}}]}})


def claims(cluster) -> list[dict]:
    return cluster.get("ResourceClaim")


def test_a_template_claim_is_generated_owned_and_recorded(cluster):
    """controller_test.go ``create``: one claim from the template, ``<pod>-<claim>-<5 chars>``,
    the template's labels and annotations plus ``resource.kubernetes.io/pod-claim-name``, owned
    by the pod; the user's named claim (``shared-gpu``) is left to the user."""
    apply(cluster, TEMPLATE)
    apply(cluster, pod_with_claims())
    [claim] = claims(cluster)
    meta = claim["metadata"]
    assert re.fullmatch(r"pod0-gpu-[bcdfghjklmnpqrstvwxz2456789]{5}", meta["name"]), meta["name"]
    assert meta["generateName"] == "pod0-gpu-"
    assert meta["labels"] == {"app": "inference"}
    assert meta["annotations"] == {"team": "ml", "resource.kubernetes.io/pod-claim-name": "gpu"}
    [pod] = cluster.get("Pod", ["pod0"])
    assert meta["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "pod0",
                                        "uid": pod["metadata"]["uid"], "controller": True,
                                        "blockOwnerDeletion": True}]
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1
    assert pod["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": meta["name"]}]


def test_the_claim_is_created_once_and_deleted_with_the_pod(cluster):
    apply(cluster, TEMPLATE)
    apply(cluster, pod_with_claims())
    cluster.settle()
    assert len(claims(cluster)) == 1
    cluster.delete("Pod", "pod0", grace=0)
    cluster.settle()
    assert claims(cluster) == []


def test_names_are_deterministic_from_the_seed(tmp_path):
    """gpusched's suffixes come from the cluster's seed: the same steps give the same names."""
    from gpusched.cluster.cluster import Cluster
    names = []
    for run in ("a", "b"):
        with Cluster.open(str(tmp_path / f"{run}.db")) as cluster:
            apply(cluster, TEMPLATE)
            apply(cluster, pod_with_claims())
            names.append(claims(cluster)[0]["metadata"]["name"])
    assert names[0] == names[1]


def test_a_missing_template_is_a_warning_then_a_claim_once_it_exists(cluster):
    """handleClaim: ``resource claim template %q: %v``, as the FailedResourceClaimCreation event."""
    apply(cluster, pod_with_claims(template="later"))
    warnings = [e for e in cluster.events() if e["reason"] == "FailedResourceClaimCreation"]
    assert [e["message"] for e in warnings] == [
        'PodResourceClaim gpu: resource claim template "later": resourceclaimtemplate.resource.k8s.io '
        '"later" not found']
    assert warnings[0]["type"] == "Warning" and warnings[0]["involvedObject"]["name"] == "pod0"
    assert claims(cluster) == []
    apply(cluster, TEMPLATE.replace("single-gpu", "later"))
    assert [c["metadata"]["generateName"] for c in claims(cluster)] == ["pod0-gpu-"]


@pytest.mark.parametrize("pod, claim, expected", [
    ("pod0", "gpu", "pod0-gpu-"),
    ("p" * 40, "c" * 20, "p" * 36 + "-" + "c" * 18),   # 62 > 57: 40*57//62, 20*57//62
    ("p" * 60, "gpu", "p" * 52 + "-gp"),               # 65 > 57: 60*57//65, 3*57//65
], ids=["short", "both-long", "long-pod"])
def test_generate_name_as_handle_claim_cuts_it(pod, claim, expected):
    assert generate_name(pod, claim) == expected


def _reserve(cluster, claim_name: str, pod: dict, allocated: bool = True, finalizer: bool = True) -> None:
    def run(view):
        body = copy.deepcopy(view.get("ResourceClaim", claim_name, "default"))
        if finalizer:
            body["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
            write.update(view, body)
            body = copy.deepcopy(view.get("ResourceClaim", claim_name, "default"))
        if allocated:
            body["status"] = {"allocation": {"devices": {"results": [
                {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]}}}
        body.setdefault("status", {})["reservedFor"] = [
            {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}]
        write.update_status(view, body)
    cluster.write(run)


def test_a_deleted_pods_reservation_and_builtin_allocation_are_released(cluster):
    """syncClaim: the gone pod leaves ``reservedFor``; with the delete-protection finalizer the
    allocation is cleared and the finalizer removed."""
    apply(cluster, """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared-gpu}
spec:
  devices:
    requests:
    - {name: gpu, exactly: {deviceClassName: gpu.example.com}}
""")
    apply(cluster, yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "user"},
                                   "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": "shared-gpu"}],
                                            "containers": [{"name": "c", "image": "i"}]}}))
    [pod] = cluster.get("Pod", ["user"])
    _reserve(cluster, "shared-gpu", pod)
    cluster.delete("Pod", "user", grace=0)
    cluster.settle()
    [claim] = cluster.get("ResourceClaim", ["shared-gpu"])
    assert claim.get("status", {}) == {}
    assert "finalizers" not in claim["metadata"]


def test_reserved_for_without_allocation_is_refused(cluster):
    """validation.go validateResourceClaimStatusUpdate: ``may not be specified when `allocated`
    is not set``; nothing is stored."""
    apply(cluster, TEMPLATE)
    apply(cluster, pod_with_claims())
    [claim] = claims(cluster)
    [pod] = cluster.get("Pod", ["pod0"])
    with pytest.raises(Exception) as err:
        _reserve(cluster, claim["metadata"]["name"], pod, allocated=False, finalizer=False)
    assert str(err.value) == (f'The ResourceClaim "{claim["metadata"]["name"]}" is invalid: '
                              "status.reservedFor: Forbidden: may not be specified when `allocated` is not set")
    assert "status" not in claims(cluster)[0] or not claims(cluster)[0]["status"].get("reservedFor")


def test_a_claim_refused_by_quota_is_a_warning_on_the_pod(cluster):
    """handleClaim: ``create ResourceClaim %s: %v`` with the name still empty (generateName);
    the quota names the generated one (kube-apiserver generates it before admission); each retry
    tries a new name, as upstream's does."""
    apply(cluster, TEMPLATE)
    apply(cluster, """
apiVersion: v1
kind: ResourceQuota
metadata: {name: no-gpus}
spec:
  hard: {gpu.example.com.deviceclass.resource.k8s.io/devices: "0"}
""")
    apply(cluster, pod_with_claims())
    warnings = [e for e in cluster.events() if e["reason"] == "FailedResourceClaimCreation"]
    assert warnings
    for warning in warnings:
        assert re.fullmatch(
            r'PodResourceClaim gpu: create ResourceClaim : resourceclaims.resource.k8s.io "pod0-gpu-\w{5}" is '
            r"forbidden: exceeded quota: no-gpus, requested: gpu.example.com.deviceclass.resource.k8s.io/devices=1, "
            r"used: gpu.example.com.deviceclass.resource.k8s.io/devices=0, limited: "
            r"gpu.example.com.deviceclass.resource.k8s.io/devices=0", warning["message"]), warning["message"]
    assert claims(cluster) == []
    assert "resourceClaimStatuses" not in cluster.get("Pod", ["pod0"])[0].get("status", {})
    apply(cluster, """
apiVersion: v1
kind: ResourceQuota
metadata: {name: no-gpus}
spec:
  hard: {gpu.example.com.deviceclass.resource.k8s.io/devices: "1"}
""")
    assert [c["metadata"]["generateName"] for c in claims(cluster)] == ["pod0-gpu-"]   # retried
