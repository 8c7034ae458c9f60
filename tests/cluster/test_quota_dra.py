"""ResourceQuota's DRA keys: kubernetes ``pkg/quota/v1/evaluator/core/resource_claims.go`` and
its ``resource_claims_test.go`` (``TestResourceClaimEvaluatorUsage``,
``TestResourceClaimEvaluatorMatchingResources``, case names kept), and the pod evaluator's
implicit ``requests.deviceclass.resource.kubernetes.io/<class>`` (``pods.go``
``isExtendedResourceNameForQuota``)."""

from __future__ import annotations

import copy

import pytest

from gpusched.cluster.admission.quota_evaluator import claim_usage, tracked_keys
from gpusched.errors import GpuschedError
from tests.cluster.builders import apply

COUNT = "count/resourceclaims.resource.k8s.io"
GPU, TPU = "gpu.deviceclass.resource.k8s.io/devices", "tpu.deviceclass.resource.k8s.io/devices"


def claim(*requests: dict) -> dict:
    return {"kind": "ResourceClaim", "spec": {"devices": {"requests": list(requests)}}}


def exact(name: str = "req-0", cls: str = "gpu", **fields) -> dict:
    return {"name": name, "exactly": {"deviceClassName": cls, "allocationMode": "ExactCount", "count": 1,
                                      **fields}}


def sub(name: str, cls: str = "gpu", **fields) -> dict:
    return {"name": name, "deviceClassName": cls, "allocationMode": "ExactCount", "count": 1, **fields}


def listed(*subs: dict) -> dict:
    return {"name": "req-0", "firstAvailable": list(subs)}


USAGE = [
    ("simple", claim(exact()), {COUNT: 1, GPU: 1}),
    ("many-requests", claim(*[exact() for _ in range(5)]), {COUNT: 1, GPU: 5}),
    ("count", claim(exact(count=5)), {COUNT: 1, GPU: 5}),
    ("all", claim(exact(allocationMode="All", count=None)), {COUNT: 1, GPU: 32}),
    ("unknown-count-mode", claim(exact(allocationMode="future-mode")), {COUNT: 1, GPU: 0}),
    ("admin", claim(exact(adminAccess=True)), {COUNT: 1, GPU: 1}),
    ("prioritized-list", claim(listed(sub("subreq-0"))), {COUNT: 1, GPU: 1}),
    ("prioritized-list-multiple-subrequests", claim(listed(sub("subreq-0", count=2), sub("subreq-1"))),
     {COUNT: 1, GPU: 2}),
    ("prioritized-list-multiple-subrequests-allocation-mode-all",
     claim(listed(sub("subreq-0"), sub("subreq-1", allocationMode="All", count=None))), {COUNT: 1, GPU: 32}),
    ("prioritized-list-multiple-subrequests-different-device-classes",
     claim(listed(sub("subreq-0"), sub("subreq-1", "tpu", allocationMode="All", count=None))),
     {COUNT: 1, GPU: 1, TPU: 32}),
]


@pytest.mark.parametrize("body, usage", [(b, u) for _, b, u in USAGE], ids=[c[0] for c in USAGE])
def test_claim_usage_as_upstreams_evaluator(body, usage):
    assert claim_usage(copy.deepcopy(body)) == usage


@pytest.mark.parametrize("items, want", [
    ([COUNT, GPU], [COUNT, GPU]),
    (["resourceclaims", "storage", "ephemeral-storage", "bronze.deviceclass.resource.k8s.io/storage",
      "gpu.storage.k8s.io/requests.storage"], []),
], ids=["supported-resources", "unsupported-resources"])
def test_claim_evaluator_matching_resources(items, want):
    assert tracked_keys("ResourceClaim", items) == want


def test_pods_charge_a_device_class_implicit_extended_resource():
    keys = ["requests.deviceclass.resource.kubernetes.io/gpu.example.com", "requests.nvidia.com/gpu",
            "requests.kubernetes.io/other"]
    assert tracked_keys("Pod", keys) == keys[:2]


QUOTA = """
apiVersion: v1
kind: ResourceQuota
metadata: {name: gpus}
spec:
  hard: {gpu.example.com.deviceclass.resource.k8s.io/devices: "2"}
"""


def a_claim(name: str, count: int) -> str:
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}}}
spec:
  devices:
    requests:
    - {{name: gpu, exactly: {{deviceClassName: gpu.example.com, count: {count}}}}}
"""


def test_a_claim_over_the_device_quota_is_refused_and_not_stored(cluster):
    apply(cluster, QUOTA)
    apply(cluster, a_claim("two", 2))
    with pytest.raises(GpuschedError) as err:
        apply(cluster, a_claim("one-more", 1))
    assert str(err.value).endswith(
        'resourceclaims.resource.k8s.io "one-more" is forbidden: exceeded quota: gpus, requested: '
        "gpu.example.com.deviceclass.resource.k8s.io/devices=1, used: "
        "gpu.example.com.deviceclass.resource.k8s.io/devices=2, limited: "
        "gpu.example.com.deviceclass.resource.k8s.io/devices=2")
    assert [c["metadata"]["name"] for c in cluster.get("ResourceClaim")] == ["two"]
    used = cluster.get("ResourceQuota", ["gpus"])[0]["status"]["used"]
    assert used == {"gpu.example.com.deviceclass.resource.k8s.io/devices": "2"}
