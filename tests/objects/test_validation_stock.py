"""The storage kinds stored for stock components: kubernetes ``pkg/apis/storage/v1/defaults.go``
(``SetDefaults_CSIDriver``) and ``pkg/apis/storage/validation/validation.go`` (``ValidateCSINode``,
``ValidateCSIDriver``, ``ValidateCSIStorageCapacity``, ``ValidateVolumeAttachment``), with
upstream's messages."""

from __future__ import annotations

import pytest

from gpusched.errors import InvalidError
from gpusched.objects.validation import validate_object


def obj(kind: str, name: str = "x", **fields) -> dict:
    return {"apiVersion": "storage.k8s.io/v1", "kind": kind, "metadata": {"name": name}, **fields}


def test_csi_driver_defaults():
    spec = validate_object(obj("CSIDriver", spec={}))["spec"]
    assert spec == {"attachRequired": True, "podInfoOnMount": False, "storageCapacity": False,
                    "requiresRepublish": False, "seLinuxMount": False,
                    "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"]}


ATTACH = {"attacher": "ebs.csi.aws.com", "nodeName": "gpu-node-1", "source": {"persistentVolumeName": "pv-1"}}
BAD = [
    ("csinode-no-node-id", obj("CSINode", spec={"drivers": [{"name": "ebs.csi.aws.com"}]}),
     'The CSINode "x" is invalid: spec.drivers[0].nodeID: Required value'),
    ("csinode-duplicate-driver", obj("CSINode", spec={"drivers": [{"name": "d", "nodeID": "1"},
                                                                  {"name": "d", "nodeID": "2"}]}),
     'The CSINode "x" is invalid: spec.drivers[1].name: Duplicate value: "d"'),
    ("csinode-negative-count", obj("CSINode", spec={"drivers": [{"name": "d", "nodeID": "1",
                                                                 "allocatable": {"count": -1}}]}),
     'The CSINode "x" is invalid: spec.drivers[0].allocatable.count: Invalid value: -1: must be '
     'greater than or equal to 0'),
    ("csidriver-mode", obj("CSIDriver", spec={"volumeLifecycleModes": ["Forever"]}),
     'The CSIDriver "x" is invalid: spec.volumeLifecycleModes: Unsupported value: "Forever": '
     'supported values: "Persistent", "Ephemeral"'),
    ("csidriver-short-token", obj("CSIDriver", spec={"tokenRequests": [{"audience": "a",
                                                                        "expirationSeconds": 60}]}),
     'The CSIDriver "x" is invalid: spec.tokenRequests[0].expirationSeconds: Invalid value: 60: '
     'may not specify a duration less than 10 minutes'),
    ("capacity-no-class", obj("CSIStorageCapacity", capacity="1Gi"),
     'The CSIStorageCapacity "x" is invalid: storageClassName: Invalid value: "": a lowercase RFC 1123 subdomain'),
    ("attachment-no-source", obj("VolumeAttachment", spec={**ATTACH, "source": {}}),
     'The VolumeAttachment "x" is invalid: spec.source: Required value: must specify exactly one '
     'of inlineVolumeSpec and persistentVolumeName'),
    ("attachment-no-attacher", obj("VolumeAttachment", spec={**ATTACH, "attacher": ""}),
     'The VolumeAttachment "x" is invalid: spec.attacher: Required value'),
]


@pytest.mark.parametrize("body,message", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_storage_object(body, message):
    with pytest.raises(InvalidError) as caught:
        validate_object(body)
    assert caught.value.message.startswith(message), caught.value.message


def test_valid_attachment_passes():
    assert validate_object(obj("VolumeAttachment", spec=ATTACH))["spec"] == ATTACH
