"""Real kubectl 1.32 against ``gpusched serve``: the kinds stored for stock components in
``kubectl api-resources`` and ``kubectl get`` (the printers of kubernetes
``pkg/printers/internalversion/printers.go``)."""

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
