"""Bad input for the core kinds: upstream's messages (pkg/apis/core/validation/validation.go,
pkg/apis/storage/validation, pkg/apis/networking/validation, pkg/apis/autoscaling/validation)."""

from __future__ import annotations

import pytest

from gpusched.errors import InvalidError
from gpusched.objects.validation import validate_object


def obj(kind: str, api: str = "v1", name: str = "x", **fields) -> dict:
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name}, **fields}


def svc(**spec) -> dict:
    return obj("Service", spec=spec)


def claim(**spec) -> dict:
    return obj("PersistentVolumeClaim", spec={"accessModes": ["ReadWriteOnce"],
                                              "resources": {"requests": {"storage": "1Gi"}}, **spec})


def volume(**spec) -> dict:
    return obj("PersistentVolume", spec={"accessModes": ["ReadWriteOnce"],
                                         "capacity": {"storage": "1Gi"},
                                         "hostPath": {"path": "/d"}, **spec})


BAD = [
    ("service-no-ports (ValidateService)", svc(selector={"app": "a"}),
     'The Service "x" is invalid: spec.ports: Required value'),
    ("service-port-range (validateServicePort)", svc(ports=[{"port": 70000}]),
     'The Service "x" is invalid: spec.ports[0].port: Invalid value: 70000: must be between 1 and '
     '65535, inclusive, spec.ports[0].targetPort: Invalid value: 70000: must be between 1 and '
     '65535, inclusive'),                                   # targetPort defaults to port
    ("service-names-required-with-two-ports", svc(ports=[{"port": 80}, {"port": 443, "name": "https"}]),
     'The Service "x" is invalid: spec.ports[0].name: Required value'),
    ("service-node-port-on-clusterip", svc(ports=[{"port": 80, "nodePort": 30080}]),
     "The Service \"x\" is invalid: spec.ports[0].nodePort: Forbidden: may not be used when `type` "
     "is 'ClusterIP'"),
    ("service-type", svc(type="Ingress", ports=[{"port": 80}]),
     'The Service "x" is invalid: spec.type: Unsupported value: "Ingress": supported values: '
     '"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"'),
    ("service-protocol", svc(ports=[{"port": 80, "protocol": "HTTP"}]),
     'The Service "x" is invalid: spec.ports[0].protocol: Unsupported value: "HTTP": supported '
     'values: "SCTP", "TCP", "UDP"'),
    ("pvc-no-access-modes (ValidatePersistentVolumeClaimSpec)",
     obj("PersistentVolumeClaim", spec={"resources": {"requests": {"storage": "1Gi"}}}),
     'The PersistentVolumeClaim "x" is invalid: spec.accessModes: Required value: at least 1 '
     'access mode is required'),
    ("pvc-no-storage", obj("PersistentVolumeClaim", spec={"accessModes": ["ReadWriteOnce"]}),
     'The PersistentVolumeClaim "x" is invalid: spec.resources[storage]: Required value'),
    ("pvc-bad-mode", claim(accessModes=["ReadWriteSometimes"]),
     'The PersistentVolumeClaim "x" is invalid: spec.accessModes: Unsupported value: '
     '"ReadWriteSometimes": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", '
     '"ReadWriteOncePod"'),
    ("pvc-rwop-with-others", claim(accessModes=["ReadWriteOncePod", "ReadWriteOnce"]),
     'The PersistentVolumeClaim "x" is invalid: spec.accessModes: Forbidden: may not use '
     'ReadWriteOncePod with other access modes'),
    ("pv-no-source (ValidatePersistentVolumeSpec)",
     obj("PersistentVolume", spec={"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}),
     'The PersistentVolume "x" is invalid: spec: Required value: must specify a volume type'),
    ("pv-local-needs-affinity", volume(hostPath=None, local={"path": "/mnt"}),
     'The PersistentVolume "x" is invalid: spec.nodeAffinity: Required value: Local volume '
     'requires node affinity'),
    ("pv-reclaim-policy", volume(persistentVolumeReclaimPolicy="Keep"),
     'The PersistentVolume "x" is invalid: spec.persistentVolumeReclaimPolicy: Unsupported value: '
     '"Keep": supported values: "Delete", "Recycle", "Retain"'),
    ("storageclass-provisioner (ValidateStorageClass)", obj("StorageClass", "storage.k8s.io/v1"),
     'The StorageClass "x" is invalid: provisioner: Required value'),
    ("storageclass-binding-mode",
     obj("StorageClass", "storage.k8s.io/v1", provisioner="p", volumeBindingMode="Later"),
     'The StorageClass "x" is invalid: volumeBindingMode: Unsupported value: "Later": supported '
     'values: "Immediate", "WaitForFirstConsumer"'),
    ("networkpolicy-policy-types (ValidateNetworkPolicySpec)",
     obj("NetworkPolicy", "networking.k8s.io/v1", spec={"podSelector": {}, "policyTypes": ["Both"]}),
     'The NetworkPolicy "x" is invalid: spec.policyTypes[0]: Unsupported value: "Both": supported '
     'values: "Ingress", "Egress"'),
    ("hpa-max-replicas (validateHorizontalPodAutoscalerSpec)",
     obj("HorizontalPodAutoscaler", "autoscaling/v2",
         spec={"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "maxReplicas": 0}),
     'The HorizontalPodAutoscaler "x" is invalid: spec.maxReplicas: Invalid value: 0: must be '
     'greater than 0, spec.maxReplicas: Invalid value: 0: must be greater than or equal to '
     '`minReplicas`'),
    ("hpa-min-above-max",
     obj("HorizontalPodAutoscaler", "autoscaling/v2",
         spec={"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "minReplicas": 5,
               "maxReplicas": 2}),
     'The HorizontalPodAutoscaler "x" is invalid: spec.maxReplicas: Invalid value: 2: must be '
     'greater than or equal to `minReplicas`'),
    ("vpa-update-mode (CRD enum)",
     obj("VerticalPodAutoscaler", "autoscaling.k8s.io/v1",
         spec={"targetRef": {"kind": "Deployment", "name": "d"}, "updatePolicy": {"updateMode": "On"}}),
     'The VerticalPodAutoscaler "x" is invalid: spec.updatePolicy.updateMode: Unsupported value: '
     '"On": supported values: "Off", "Initial", "Recreate", "InPlaceOrRecreate", "InPlace", "Auto"'),
    ("secret-tls-keys (ValidateSecret)", obj("Secret", type="kubernetes.io/tls", data={}),
     'The Secret "x" is invalid: data[tls.crt]: Required value, data[tls.key]: Required value'),
]


@pytest.mark.parametrize("body,message", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input(body, message):
    with pytest.raises(InvalidError) as err:
        validate_object(body)
    assert str(err.value) == message


def test_service_defaults():
    out = validate_object(svc(selector={"app": "a"}, ports=[{"port": 80}]))
    assert out["spec"]["type"] == "ClusterIP" and out["spec"]["sessionAffinity"] == "None"
    assert out["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]


def test_secret_string_data_becomes_data():
    out = validate_object(obj("Secret", stringData={"token": "abc"}))
    assert out["data"] == {"token": "YWJj"} and "stringData" not in out and out["type"] == "Opaque"


def test_networkpolicy_default_policy_types():
    out = validate_object(obj("NetworkPolicy", "networking.k8s.io/v1",
                              spec={"podSelector": {}, "egress": [{}]}))
    assert out["spec"]["policyTypes"] == ["Ingress", "Egress"]
