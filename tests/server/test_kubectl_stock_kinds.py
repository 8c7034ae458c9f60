"""Real kubectl 1.32 against ``gpusched serve``: the kinds stored for stock components in
``kubectl api-resources`` and ``kubectl get`` (the printers of kubernetes
``pkg/printers/internalversion/printers.go``), and ``kubectl get events`` counting a repeated
FailedScheduling into one Event, whether gpusched's scheduler records it (count,
lastTimestamp: ``tools/record/events_cache.go``) or a client's events.k8s.io/v1 recorder
PATCHes its series (``tools/events/event_broadcaster.go``; ``printEvent`` shows the series'
count and last observation)."""

from __future__ import annotations

import json
import shutil

import pytest

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")]

# NAME, SHORTNAMES (or ""), APIVERSION, NAMESPACED, KIND as kube-apiserver v1.35 lists them
RESOURCES = [
    ("replicationcontrollers", "rc", "v1", "true", "ReplicationController"),
    ("statefulsets", "sts", "apps/v1", "true", "StatefulSet"),
    ("csidrivers", "", "storage.k8s.io/v1", "false", "CSIDriver"),
    ("csinodes", "", "storage.k8s.io/v1", "false", "CSINode"),
    ("csistoragecapacities", "", "storage.k8s.io/v1", "true", "CSIStorageCapacity"),
    ("volumeattachments", "", "storage.k8s.io/v1", "false", "VolumeAttachment"),
    ("deviceclasses", "", "resource.k8s.io/v1", "false", "DeviceClass"),
    ("resourceclaims", "", "resource.k8s.io/v1", "true", "ResourceClaim"),
    ("resourceclaimtemplates", "", "resource.k8s.io/v1", "true", "ResourceClaimTemplate"),
    ("resourceslices", "", "resource.k8s.io/v1", "false", "ResourceSlice"),
    ("customresourcedefinitions", "crd,crds", "apiextensions.k8s.io/v1", "false",
     "CustomResourceDefinition"),
    ("events", "ev", "events.k8s.io/v1", "true", "Event"),
]


def test_api_resources_lists_the_stock_kinds(serve):
    lines = serve.kubectl("api-resources").stdout.splitlines()
    listed = {tuple(line.split()) for line in lines[1:]}
    for name, short, version, namespaced, kind in RESOURCES:
        row = (name, *([short] if short else []), version, namespaced, kind)
        assert row in listed, f"{row} not in kubectl api-resources"


TEMPLATE = {"metadata": {"labels": {"app": "db"}},
            "spec": {"containers": [{"name": "db", "image": "postgres:16"}]}}
MANIFESTS = [
    {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "legacy"},
     "spec": {"replicas": 0, "selector": {"app": "db"}, "template": TEMPLATE}},
    {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
     "spec": {"replicas": 0, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
              "template": TEMPLATE}},
    {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "gpu-node-1"},
     "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-1"}]}},
    {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "ebs.csi.aws.com"},
     "spec": {"volumeLifecycleModes": ["Persistent", "Ephemeral"],
              "tokenRequests": [{"audience": "sts.amazonaws.com"}]}},
    {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity", "metadata": {"name": "zone-a"},
     "storageClassName": "standard", "capacity": "100Gi"},
    {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": "csi-1"},
     "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "gpu-node-1",
              "source": {"persistentVolumeName": "pv-1"}}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "one-gpu"},
     "spec": {"devices": {"requests": [{"name": "gpu",
                                        "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "gpu-node-1-gpu"},
     "spec": {"driver": "gpu.nvidia.com", "nodeName": "gpu-node-1",
              "pool": {"name": "gpu-node-1", "generation": 1, "resourceSliceCount": 1}}},
]

# (resource, header, the row's cells after NAME, without the age)
PRINTED = [
    ("rc", ["NAME", "DESIRED", "CURRENT", "READY", "AGE"], ["legacy", "0", "0", "0"]),
    ("sts", ["NAME", "READY", "AGE"], ["db", "0/0"]),
    ("csinodes", ["NAME", "DRIVERS", "AGE"], ["gpu-node-1", "1"]),
    ("csidrivers", ["NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY", "TOKENREQUESTS",
                    "REQUIRESREPUBLISH", "MODES", "AGE"],
     ["ebs.csi.aws.com", "true", "false", "false", "sts.amazonaws.com", "false", "Persistent,Ephemeral"]),
    ("csistoragecapacities", ["NAME", "STORAGECLASSNAME", "CAPACITY"], ["zone-a", "standard", "100Gi"]),
    ("volumeattachments", ["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"],
     ["csi-1", "ebs.csi.aws.com", "pv-1", "gpu-node-1", "false"]),
    ("deviceclasses", ["NAME", "AGE"], ["gpu.nvidia.com"]),
    ("resourceclaims", ["NAME", "STATE", "AGE"], ["one-gpu", "pending"]),
    ("resourceslices", ["NAME", "NODE", "DRIVER", "POOL", "AGE"],
     ["gpu-node-1-gpu", "gpu-node-1", "gpu.nvidia.com", "gpu-node-1"]),
]


@pytest.fixture
def stocked(serve, tmp_path):
    manifest = tmp_path / "stock.json"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": MANIFESTS}))
    serve.kubectl("apply", "-f", str(manifest))
    return serve


def test_kubectl_get_prints_upstream_columns(stocked):
    for resource, header, cells in PRINTED:
        lines = stocked.kubectl("get", resource).stdout.splitlines()
        assert lines[0].split() == header, resource
        row = lines[1].split()
        assert row[:len(cells)] == cells, (resource, lines)


NODE_POOL = {"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "small"},
             "spec": {"count": 1, "gpu": {"model": "A100-40GB", "count": 1}}}
TOO_BIG = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "too-big"},
           "spec": {"containers": [{"name": "c", "image": "x",
                                    "resources": {"limits": {"nvidia.com/gpu": 4}}}]}}


def event_rows(served) -> list[dict[str, str]]:
    lines = served.kubectl("get", "events", "-o", "wide").stdout.splitlines()
    header = lines[0]
    starts = [header.index(name) for name in header.split("  ") if name.strip()]
    names = [name.strip() for name in header.split("  ") if name.strip()]
    bounds = list(zip(starts, starts[1:] + [None]))
    return [{name: line[a:b].strip() for name, (a, b) in zip(names, bounds)} for line in lines[1:]]


def test_repeated_failed_scheduling_is_one_counted_line(serve):
    """gpusched's scheduler fails the pod twice with the same message (a node label change
    retries it): one Event, COUNT 2, as client-go's EventCorrelator counts a repeat."""
    serve.json("/apis/gpusched.io/v1alpha1/nodepools", NODE_POOL)
    serve.json("/api/v1/namespaces/default/pods", TOO_BIG)
    serve.kubectl("label", "node", "small-1", "retry=1")
    failed = [r for r in event_rows(serve) if r["REASON"] == "FailedScheduling"]
    assert len(failed) == 1, failed
    assert failed[0]["COUNT"] == "2" and failed[0]["OBJECT"] == "pod/too-big"
    assert failed[0]["SOURCE"] == "default-scheduler"


def test_events_v1_series_shows_its_count(serve):
    """A series PATCHed by an events.k8s.io/v1 recorder: COUNT is series.count."""
    name = "real-big.18ec4be41ad6a0a5"
    serve.json("/apis/events.k8s.io/v1/namespaces/default/events", {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name},
        "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-host", "action": "Scheduling",
        "reason": "FailedScheduling", "type": "Warning", "note": "0/1 nodes are available",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "real-big"}})
    status, reply = serve.request(
        "PATCH", f"/apis/events.k8s.io/v1/namespaces/default/events/{name}",
        {"series": {"count": 5, "lastObservedTime": "2026-01-01T00:03:00.000000Z"}},
        {"Content-Type": "application/strategic-merge-patch+json"})
    assert status == 200, reply
    row = next(r for r in event_rows(serve) if r["NAME"] == name)
    assert (row["COUNT"], row["SOURCE"], row["OBJECT"]) == (
        "5", "default-scheduler, default-scheduler-host", "pod/real-big")


@pytest.mark.parametrize("args,expected", [
    (["csinodes.spec.drivers"], "nodeID"),
    (["resourceclaims.spec.devices"], "requests"),
    (["statefulsets.spec"], "podManagementPolicy"),
    (["events", "--api-version=events.k8s.io/v1"], "reportingController"),
], ids=["csinode", "resourceclaim", "statefulset", "events-v1"])
def test_kubectl_explain_reads_the_v135_schemas(serve, args, expected):
    """/openapi/v3 publishes each new group version's schemas (scripts/gen_openapi_schemas.py)."""
    assert expected in serve.kubectl("explain", *args).stdout
