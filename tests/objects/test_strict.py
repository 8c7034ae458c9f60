"""Strict decoding against the v1.35 schemas: unknown, duplicate and wrongly typed fields.

Each case names the upstream source whose message or behaviour it reproduces:

- [e2e-fv] kubernetes test/e2e/apimachinery/field_validation.go ("should detect unknown and
  duplicate fields of a typed object", "should detect unknown metadata fields of a typed object");
- [sigs-json] sigs.k8s.io/json internal/golang/encoding/json decode.go (object(): unknown and
  duplicate fields; UnmarshalTypeError with the struct and field path) and kubernetes_patch.go
  (saveStrictError: at most 100, each once);
- [rest-go] apiserver pkg/endpoints/handlers/rest.go transformDecodeError
  (``<Kind> in version "<v>" cannot be handled as a <Kind>: <err>``);
- [runtime-error] apimachinery pkg/runtime/error.go NewStrictDecodingError (``strict decoding
  error: `` + findings joined by ", ");
- [quantity] apimachinery pkg/api/resource/quantity.go ErrFormatWrong;
- [intstr] apimachinery pkg/util/intstr/intstr.go IntOrString.UnmarshalJSON (json.Unmarshal into
  int32);
- [crd-validation] kube-openapi pkg/validation/errors InvalidType (``<path> in body must be of type
  <type>: "<got>"``), as apiextensions-apiserver reports custom resources;
- [kubectl-validate] kubectl pkg/cmd/util/helpers.go GetValidationDirective.
"""

from __future__ import annotations

import json

import pytest

from gpusched.errors import InvalidError
from gpusched.objects import schema as schema_mod
from gpusched.objects.kinds import KINDS
from gpusched.objects.manifest import load_text
from gpusched.objects.strict import (
    IGNORE, STRICT, WARN, StrictDecodingError, decode, decode_with_mode, normalise_mode,
)


def pod(**spec_extra) -> dict:
    spec = {"containers": [{"name": "c", "image": "i"}], **spec_extra}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def deployment_yaml(spec_lines: str) -> str:
    return ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: my-dep\n  labels: {app: nginx}\n"
            "spec:\n" + spec_lines +
            "  selector: {matchLabels: {app: nginx}}\n"
            "  template:\n    metadata: {labels: {app: nginx}}\n"
            "    spec:\n      containers:\n      - {name: nginx, image: 'nginx:latest'}\n")


def findings_of(text: str) -> tuple[str, ...]:
    return decode(load_text(text, "f.yaml")[0].obj).findings


FINDING_CASES = [
    ("e2e-fv-typed-unknown-and-duplicate",
     deployment_yaml("  unknownField: foo\n  replicas: 2\n  replicas: 3\n"),
     ('unknown field "spec.unknownField"', 'duplicate field "spec.replicas"')),
    ("e2e-fv-typed-unknown-metadata",
     "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: my-dep, unknownMeta: foo}\nspec: {}\n",
     ('unknown field "metadata.unknownMeta"',)),
    ("issue-14-resource-typo-full-path",
     "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: i\n"
     "    resource: {limits: {nvidia.com/gpu: 1}}\n",
     ('unknown field "spec.containers[0].resource"',)),
    ("sigs-json-every-unknown-in-document-order",
     "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  nodeSelecter: {a: b}\n  containers:\n"
     "  - {name: a, image: i}\n  - {name: b, image: i, resources: {limit: {cpu: 1}}, imagePullPolicy: Always, x: 1}\n",
     ('unknown field "spec.nodeSelecter"', 'unknown field "spec.containers[1].resources.limit"',
      'unknown field "spec.containers[1].x"')),
    ("sigs-json-duplicate-in-map",
     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels: {a: x, a: y}\ndata: {k: v}\n",
     ('duplicate field "metadata.labels.a"',)),
    ("sigs-json-template-deep-unknown",
     deployment_yaml("  replicas: 1\n").replace("image: 'nginx:latest'", "image: 'nginx:latest', portz: []"),
     ('unknown field "spec.template.spec.containers[0].portz"',)),
    ("known-fields-only-no-finding",
     deployment_yaml("  replicas: 1\n  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%}}\n"), ()),
    ("crd-unknown-sorted-as-pruning-finds-them",
     "apiVersion: gpusched.io/v1alpha1\nkind: NodePool\nmetadata: {name: n}\nspec: {zeta: 1, count: 1, alpha: 2}\n",
     ('unknown field "spec.alpha"', 'unknown field "spec.zeta"')),
    ("json-duplicate-key",
     '{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "name": "b"}}',
     ('duplicate field "metadata.name"',)),
]


@pytest.mark.parametrize("text, expected", [c[1:] for c in FINDING_CASES], ids=[c[0] for c in FINDING_CASES])
def test_findings(text, expected):
    assert findings_of(text) == expected


TYPE_ERROR_CASES = [
    ("sigs-json-string-into-int32", {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                                     "spec": {"replicas": "3"}},
     'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string into Go '
     "struct field DeploymentSpec.spec.replicas of type int32"),
    ("sigs-json-field-path-without-index", pod(containers=[{"name": 5, "image": "i"}]),
     'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number into Go struct field '
     "Container.spec.containers.name of type string"),
    ("sigs-json-string-into-slice", pod(containers="x"),
     'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field '
     "PodSpec.spec.containers of type []v1.Container"),
    ("sigs-json-object-into-struct-field", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": "x"},
     'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field '
     "Pod.spec of type v1.PodSpec"),
    ("sigs-json-fraction-into-int", {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                                     "spec": {"replicas": 1.5}},
     'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal number 1.5 into '
     "Go struct field DeploymentSpec.spec.replicas of type int32"),
    ("sigs-json-map-value-type", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c",
                                                                                        "labels": {"a": 1}}},
     'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go '
     "struct field ObjectMeta.metadata.labels of type string"),
    ("intstr-bool", {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b"},
                     "spec": {"minAvailable": True}},
     'PodDisruptionBudget in version "v1" cannot be handled as a PodDisruptionBudget: json: cannot unmarshal '
     "bool into Go struct field PodDisruptionBudgetSpec.spec.minAvailable of type int32"),
    ("quantity-format", pod(containers=[{"name": "c", "image": "i", "resources": {"limits": {"cpu": "lots"}}}]),
     'Pod in version "v1" cannot be handled as a Pod: quantities must match the regular expression '
     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
]


@pytest.mark.parametrize("obj, message", [c[1:] for c in TYPE_ERROR_CASES], ids=[c[0] for c in TYPE_ERROR_CASES])
def test_type_errors_fail_in_every_mode(obj, message):
    for mode in (STRICT, WARN, IGNORE):
        with pytest.raises(StrictDecodingError) as err:
            decode_with_mode(obj, mode)
        assert str(err.value) == message
        assert err.value.code == 400 and err.value.reason == "BadRequest"


def test_crd_structural_schema_reports_unknown_fields_at_any_depth():
    # the VPA CRD is structural (kubernetes/autoscaler vertical-pod-autoscaler/deploy/vpa-v1-crd-gen.yaml):
    # unknown fields are pruned and reported (sorted), known ones kept as given.
    policy = {"containerName": "*", "minAlowed": {"cpu": "1"}, "maxAllowed": {"cpu": 2, "memory": "4Gi"}}
    obj = {"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler", "metadata": {"name": "v", "x": 1},
           "spec": {"targetRef": {"kind": "Deployment", "name": "d"}, "anything": {"goes": "here"},
                    "resourcePolicy": {"containerPolicies": [policy]}}}
    decoded = decode(obj)
    assert decoded.findings == ('unknown field "metadata.x"', 'unknown field "spec.anything"',
                                'unknown field "spec.resourcePolicy.containerPolicies[0].minAlowed"')
    assert decoded.obj["spec"] == {"targetRef": {"kind": "Deployment", "name": "d"}, "resourcePolicy": {
        "containerPolicies": [{"containerName": "*", "maxAllowed": {"cpu": 2, "memory": "4Gi"}}]}}


def test_custom_kind_type_error_is_invalid_per_field():
    # [crd-validation] custom resources are validated against their schema: 422 per field.
    obj = {"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "n"},
           "spec": {"count": "two", "gpu": {"count": []}}}
    with pytest.raises(InvalidError) as err:
        decode(obj)
    assert str(err.value) == ('The NodePool "n" is invalid: spec.count: Invalid value: "string": spec.count in '
                              'body must be of type integer: "string", spec.gpu.count: Invalid value: "array": '
                              'spec.gpu.count in body must be of type integer: "array"')


def test_strict_message_joins_every_finding():
    # [runtime-error] + [rest-go]
    obj = pod(foo=1, bar=2)
    with pytest.raises(StrictDecodingError) as err:
        decode_with_mode(obj, STRICT, where="pod.yaml: document 0")
    assert str(err.value) == ('pod.yaml: document 0: Pod in version "v1" cannot be handled as a Pod: strict '
                              'decoding error: unknown field "spec.foo", unknown field "spec.bar"')


@pytest.mark.parametrize("mode, warnings", [(WARN, ['unknown field "spec.foo"']), (IGNORE, [])], ids=["warn", "ignore"])
def test_warn_and_ignore_drop_unknown_fields(mode, warnings):
    obj, got = decode_with_mode(pod(foo=1), mode)
    assert got == warnings
    assert "foo" not in obj["spec"] and obj["spec"]["containers"] == [{"name": "c", "image": "i"}]


def test_findings_capped_at_100_and_deduplicated():
    # [sigs-json] kubernetes_patch.go saveStrictError
    obj = pod(**{f"f{i}": i for i in range(150)})
    assert len(decode(obj).findings) == 100


@pytest.mark.parametrize("value, mode", [("true", STRICT), ("strict", STRICT), ("Warn", WARN), ("false", IGNORE),
                                         ("ignore", IGNORE)], ids=str)
def test_normalise_mode(value, mode):
    assert normalise_mode(value) == mode


def test_every_stored_kind_has_a_schema():
    missing = [f"{info.api_version} {kind}" for kind, info in KINDS.items()
               if schema_mod.schema_for(info.api_version, kind) is None]
    assert missing == []


def test_schema_from_the_official_v1_35_spec():
    schemas = schema_mod.load()
    assert schemas.release == "v1.35"
    containers = schemas.definitions["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    # a field new in v1.35's Container (resizePolicy came in 1.27; restartPolicyRules in 1.34)
    assert "resizePolicy" in schemas.definitions["io.k8s.api.core.v1.Container"]["properties"]


def test_decoded_object_is_plain_json():
    obj = load_text('{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "name": "b"}}', "f.json")[0].obj
    out, _ = decode_with_mode(obj, IGNORE)
    assert json.loads(json.dumps(out)) == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"}}
