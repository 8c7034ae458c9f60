"""StatefulSet defaulting and validation: apps/v1 ``SetDefaults_StatefulSet``
(pkg/apis/apps/v1/defaults.go) and ``ValidateStatefulSetSpec`` (pkg/apis/apps/validation/
validation.go), with upstream's messages."""

from __future__ import annotations

import pytest

from gpusched.errors import InvalidError
from gpusched.objects.validation import validate_object

TEMPLATE = {"metadata": {"labels": {"app": "db"}},
            "spec": {"containers": [{"name": "db", "image": "postgres:16"}]}}


def statefulset(**spec) -> dict:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
            "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                     "template": TEMPLATE, **spec}}


def test_defaults():
    spec = validate_object(statefulset())["spec"]
    assert (spec["replicas"], spec["podManagementPolicy"], spec["revisionHistoryLimit"]) == (
        1, "OrderedReady", 10)
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain",
                                                            "whenScaled": "Retain"}


BAD = [
    ("policy", statefulset(podManagementPolicy="Sometimes"),
     """spec.podManagementPolicy: Invalid value: "Sometimes": must be 'OrderedReady' or 'Parallel'"""),
    ("ondelete-with-rolling", statefulset(updateStrategy={"type": "OnDelete",
                                                          "rollingUpdate": {"partition": 1}}),
     "spec.updateStrategy.rollingUpdate: Invalid value"),
    ("negative-partition", statefulset(updateStrategy={"type": "RollingUpdate",
                                                       "rollingUpdate": {"partition": -1}}),
     "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0"),
    ("negative-replicas", statefulset(replicas=-1),
     "spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
    ("selector-mismatch", statefulset(selector={"matchLabels": {"app": "web"}}),
     "spec.template.metadata.labels: Invalid value"),
]


@pytest.mark.parametrize("body,message", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_statefulset(body, message):
    with pytest.raises(InvalidError) as caught:
        validate_object(body)
    assert caught.value.message.startswith('The StatefulSet "db" is invalid: ')
    assert message in caught.value.message, caught.value.message
