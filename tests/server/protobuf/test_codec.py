"""The protobuf codec: one object of each kind through the envelope and back, kubectl's own bytes,
and malformed input refused with the serializer's words.

Upstream: apimachinery ``pkg/runtime/serializer/protobuf/protobuf.go`` (magic, Unknown, errors),
``pkg/util/framer/framer.go`` (watch frames), apiserver ``pkg/endpoints/handlers/rest.go``
``transformDecodeError`` (the 400 wording); field numbers from k8s.io/api v0.35.0 ``generated.proto``.
"""

from __future__ import annotations

import struct

import pytest

from gpusched.server.protobuf.descriptors import schema
from gpusched.server.protobuf.envelope import (MAGIC, ProtobufDecodeError, decode_event, decode_object,
                                                encode_event, encode_object, read_frames)
from gpusched.server.protobuf.special import ConversionError

META = {"name": "x", "namespace": "default", "uid": "u-1", "resourceVersion": "7",
        "creationTimestamp": "2026-01-02T03:04:05Z", "labels": {"app": "x"},
        "annotations": {"a": "b"}, "finalizers": ["f"],
        "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                           "time": "2026-01-02T03:04:05Z", "fieldsType": "FieldsV1",
                           "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}]}
CONTAINER = {"name": "c", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}],
             "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "500m"}, "requests": {"memory": "1Gi"}},
             "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5},
             "livenessProbe": {"tcpSocket": {"port": 8080}}}
POD_SPEC = {"containers": [CONTAINER], "restartPolicy": "Always", "nodeName": "n1",
            "volumes": [{"name": "cfg", "configMap": {"name": "cm", "defaultMode": 420}},
                        {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 0}

# (id, object): every value set explicitly survives encode -> decode unchanged
OBJECTS = [
    ("namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "monitoring"},
                   "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
    ("pod-inline-volume-source-probe-handler", {
        "apiVersion": "v1", "kind": "Pod", "metadata": META, "spec": POD_SPEC,
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
                                                        "lastTransitionTime": "2026-01-02T03:04:06Z"}]}}),
    ("deployment-zero-replicas", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": POD_SPEC},
                 "strategy": {"type": "RollingUpdate",
                              "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}}}}),
    ("configmap-binary-data", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"},
                               "data": {"a": "b"}, "binaryData": {"bin": "AAEC"}, "immutable": True}),
    ("secret-bytes", {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                      "type": "Opaque", "data": {"p": "cQ=="}}),
    ("job-pod-failure-policy", {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"backoffLimit": 0, "suspend": False, "template": {"spec": POD_SPEC},
                 "podFailurePolicy": {"rules": [{"action": "FailJob", "onPodConditions": [
                     {"type": "DisruptionTarget", "status": "True"}]}]}}}),
    ("resourcequota", {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
                       "spec": {"hard": {"cpu": "2", "pods": "10", "requests.nvidia.com/gpu": "4"}}}),
    ("priorityclass", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                       "metadata": {"name": "high"}, "value": 0, "preemptionPolicy": "Never"}),
    ("event-micro-time", {"apiVersion": "events.k8s.io/v1", "kind": "Event",
                          "metadata": {"name": "p.18ec4be41ad6a0a5", "namespace": "default"},
                          "eventTime": "2026-01-02T03:04:05.123456Z", "reportingController": "default-scheduler",
                          "reportingInstance": "s-1", "action": "Scheduling", "reason": "FailedScheduling",
                          "regarding": {"kind": "Pod", "name": "p"}, "type": "Warning",
                          "series": {"count": 2, "lastObservedTime": "2026-01-02T03:05:05.000001Z"}}),
    ("lease", {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
               "spec": {"holderIdentity": "h", "leaseDurationSeconds": 15,
                        "renewTime": "2026-01-02T03:04:05.000000Z"}}),
    ("pdb-int-or-string", {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                           "metadata": {"name": "pdb"}, "spec": {"minAvailable": "50%"}}),
    ("service-target-port", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
                             "spec": {"ports": [{"port": 80, "targetPort": 8080}], "selector": {"app": "x"}}}),
    ("binding", {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p", "namespace": "default"},
                 "target": {"kind": "Node", "name": "n1"}}),
    ("controllerrevision-raw-extension", {
        "apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "r"},
        "revision": 3, "data": {"spec": {"template": {"spec": {"containers": []}}}}}),
    ("hpa-v2", {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
                "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                         "minReplicas": 1, "maxReplicas": 4, "metrics": [{"type": "Resource", "resource": {
                             "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]}}),
    ("crd-json-schema-unions", {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "pools.gpusched.io"},
        "spec": {"group": "gpusched.io", "scope": "Cluster",
                 "names": {"plural": "pools", "kind": "Pool"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "x-kubernetes-preserve-unknown-fields": True,
                     "properties": {"spec": {"type": "object", "additionalProperties": False,
                                             "properties": {"n": {"type": "integer", "maximum": 5,
                                                                  "default": 1}}},
                                    "tags": {"type": "array", "items": {"type": "string"}}}}}}]}}),
    ("status-error", {"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
                      "message": 'pods "x" not found', "reason": "NotFound", "code": 404,
                      "details": {"name": "x", "kind": "pods"}}),
    ("pod-list", {"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "9"},
                  "items": [{"metadata": {"name": "a"}, "spec": POD_SPEC}]}),
]


@pytest.mark.parametrize("obj", [o for _, o in OBJECTS], ids=[i for i, _ in OBJECTS])
def test_round_trip(obj):
    data = encode_object(obj)
    assert data is not None and data.startswith(MAGIC)
    assert decode_object(data) == obj


def test_every_kind_in_the_brief_has_a_message():
    """meta/v1 Table has none upstream either (types.go: ``+protobuf=false``): tables are JSON."""
    kinds = schema().kinds
    assert "meta.k8s.io/v1/Table" not in kinds
    for kind in ("v1/Pod", "v1/Node", "apps/v1/StatefulSet", "batch/v1/CronJob", "policy/v1/Eviction",
                 "storage.k8s.io/v1/CSINode", "storage.k8s.io/v1/VolumeAttachment",
                 "storage.k8s.io/v1/CSIStorageCapacity", "resource.k8s.io/v1/ResourceClaim",
                 "resource.k8s.io/v1/DeviceClass", "rbac.authorization.k8s.io/v1/ClusterRole",
                 "discovery.k8s.io/v1/EndpointSlice", "node.k8s.io/v1/RuntimeClass",
                 "networking.k8s.io/v1/Ingress", "autoscaling/v1/Scale",
                 "meta.k8s.io/v1/PartialObjectMetadataList", "v1/Status", "v1/DeleteOptions"):
        assert kind in kinds, kind


# kubectl 1.32 ``create namespace monitoring``: the body it POSTs (captured from the wire)
KUBECTL_NAMESPACE = bytes.fromhex(
    "6b3873000a0f0a02763112094e616d65737061636512220a1a0a0a6d6f6e69746f72696e6712001a0022002a00"
    "32003800420012001a020a001a002200")


def test_kubectl_body_decodes_as_its_json_would():
    """gogo writes every non-pointer field (empty strings, a zero Time); Go's JSON of the same
    struct leaves the omitempty ones out and writes the zero Time as null."""
    assert decode_object(KUBECTL_NAMESPACE) == {
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "monitoring", "creationTimestamp": None}, "spec": {}, "status": {}}


def unknown(api_version: bytes, kind: bytes, raw: bytes) -> bytes:
    """A runtime.Unknown by hand (typeMeta=1 {apiVersion=1, kind=2}, raw=2), for hostile input."""
    type_meta = b"\x0a" + bytes([len(api_version)]) + api_version + b"\x12" + bytes([len(kind)]) + kind
    return MAGIC + b"\x0a" + bytes([len(type_meta)]) + type_meta + b"\x12" + _varint(len(raw)) + raw


def _varint(n: int) -> bytes:
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def nested_props(depth: int) -> bytes:
    """JSONSchemaProps.not (field 28) nested ``depth`` times."""
    inner = b""
    for _ in range(depth):
        inner = b"\xe2\x01" + _varint(len(inner)) + inner
    return inner



# (id, body, fragment of the error)
MALFORMED = [
    ("empty", b"", "the object provided is unrecognized (must be of type Namespace): empty data (<empty>)"),
    ("json-not-protobuf", b'{"kind":"Namespace"}', 'expected prefix [107 56 115 0] ({"kind":"Namespace"})'),
    ("wrong-magic", b"k8s\x01\x0a\x00", "expected prefix [107 56 115 0] (6b3873010a00)"),
    ("magic-only", MAGIC, "empty body (6b387300)"),
    ("truncated-envelope", KUBECTL_NAMESPACE[:20], "the object provided is unrecognized (must be of type Namespace)"),
    ("length-past-body", MAGIC + b"\x12\xff\xff\x03abc", "the object provided is unrecognized"),
    ("unregistered-kind", unknown(b"v1", b"Widget", b""), 'no kind "Widget" is registered for version "v1"'),
    ("truncated-object", unknown(b"v1", b"Namespace", b"\x0a\x10\x0a\x05ab"),
     'Namespace in version "v1" cannot be handled as a Namespace'),
    ("map-key-not-utf8", unknown(b"v1", b"Namespace", b"\x0a\x09\x5a\x07\x0a\x01\xff\x12\x02ab"),
     "'utf-8' codec can't decode byte 0xff"),
    ("bad-raw-json", unknown(b"apps/v1", b"ControllerRevision", b"\x12\x03\x0a\x01{"),
     'ControllerRevision in version "v1" cannot be handled as a Namespace'),
]


@pytest.mark.parametrize("body,fragment", [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_malformed_bodies_are_refused_with_the_serializers_words(body, fragment):
    with pytest.raises(ProtobufDecodeError) as err:
        decode_object(body, "v1", "Namespace")
    assert fragment in str(err.value)


def test_unknown_field_numbers_are_skipped():
    """gogo's generated Unmarshal skips fields it does not know (``skipGenerated``)."""
    raw = b"\x0a\x05\x0a\x03abc" + b"\xf8\x07\x01" + b"\xfa\x07\x02hi"     # fields 127 (varint, bytes)
    assert decode_object(unknown(b"v1", b"Namespace", raw)) == {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "abc"}}


@pytest.mark.parametrize("depth", [50, 5000], ids=["deep-but-fine", "nesting-bomb"])
def test_nesting_is_bounded(depth):
    validation = b"\x0a" + _varint(len(nested_props(depth))) + nested_props(depth)   # openAPIV3Schema
    version = b"\x0a\x02v1" + b"\x22" + _varint(len(validation)) + validation         # schema = 4
    spec = b"\x0a\x01g" + b"\x3a" + _varint(len(version)) + version                   # versions = 7
    raw = b"\x12" + _varint(len(spec)) + spec
    body = unknown(b"apiextensions.k8s.io/v1", b"CustomResourceDefinition", raw)
    if depth < 90:
        decoded = decode_object(body)
        assert decoded["spec"]["group"] == "g"
    else:
        with pytest.raises(ProtobufDecodeError, match="cannot be handled as a CustomResourceDefinition"):
            decode_object(body)


def test_watch_frames_are_length_prefixed_watch_events():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    stream = encode_event("ADDED", pod) + encode_event("DELETED", pod)
    frames = read_frames(stream)
    assert [struct.unpack(">I", stream[:4])[0]] == [len(frames[0])]
    assert [decode_event(f) for f in frames] == [("ADDED", pod), ("DELETED", pod)]


@pytest.mark.parametrize("obj,fragment", [
    ({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": 3}]}},
     "spec.containers[0].name: expected string, got 3"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"creationTimestamp": "yesterday"}},
     'metadata.creationTimestamp: parsing time "yesterday"'),
    ({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 2**40}},
     "spec.replicas"),
], ids=["wrong-type", "bad-time", "int32-overflow"])
def test_values_that_do_not_fit_name_their_field(obj, fragment):
    with pytest.raises(ConversionError) as err:
        encode_object(obj)
    assert fragment in str(err.value)


def test_kinds_without_a_message_are_not_encoded():
    assert encode_object({"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool"}) is None


def test_strings_that_are_not_utf8_read_as_replacement_characters():
    """proto2 does not check UTF-8 (gogo neither); Go's JSON writes U+FFFD for each bad byte.
    Found by tests/fuzz/surface_protobuf.py: serve answered 500 (bytes in the JSON body)."""
    raw = b"\x0a\x07\x0a\x05ab\xffcd" + b"\x0a\x00"
    assert decode_object(unknown(b"v1", b"Namespace", raw))["metadata"]["name"] == "ab\ufffdcd"


@pytest.mark.parametrize("body,expected", [
    (unknown(b"v\xff", b"Namespace", b""), 'no kind "Namespace" is registered for version "v\ufffd"'),
    (unknown(b"v1", b"ResourceQuota", b"\x12\x0a\x0a\x08\x0a\x01x\x12\x03\x0a\x01\xff"), None),
], ids=["envelope-kind", "quantity"])
def test_non_utf8_in_envelopes_and_special_types(body, expected):
    """Found by the protobuf fuzz target: serve answered 500 on these."""
    if expected is None:
        assert decode_object(body)["spec"]["hard"] == {"x": "\ufffd"}
    else:
        with pytest.raises(ProtobufDecodeError, match=expected):
            decode_object(body)


def _kinds_with_metadata() -> list[str]:
    known = schema()
    return sorted(kind for kind, name in known.kinds.items()
                  if any(f.json == "metadata" for f in known.fields[name]))


@pytest.mark.parametrize("kind", _kinds_with_metadata())
def test_every_kind_round_trips_its_identity(kind):
    """Every kind of the data file with metadata (ObjectMeta or ListMeta, both holding
    resourceVersion) encodes and decodes with its own message; what comes back beyond the sent
    keys are Go's non-omitempty zero values (a PriorityClass's ``value: 0``)."""
    api_version, _, name = kind.rpartition("/")
    obj = {"apiVersion": api_version, "kind": name, "metadata": {"resourceVersion": "5"}}
    decoded = decode_object(encode_object(obj))
    assert {key: decoded[key] for key in obj} == obj
