"""The ``resource.k8s.io/v1`` kinds' validation and defaults, case by case against upstream.

Cases reproduce kubernetes ``pkg/apis/resource/validation/validation_resourceclaim_test.go``
(``TestValidateClaim``), ``validation_resourceslice_test.go`` (``TestValidateResourceSlice``),
``validation_deviceclass_test.go`` (``TestValidateClass``) and
``validation_resourceclaimtemplate_test.go``, each id naming the upstream case it follows
(``upstream-<case>``) or, where upstream's table has none, the rule of ``validation.go`` it
checks. Messages are kube-apiserver's, one line.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpusched.errors import InvalidError
from gpusched.objects.validation import validate_object

BAD_NAME = "!@#$%^"
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                 "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
                 "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
             "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
             "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
REF_MSG = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"


def claim(*requests: dict[str, Any], **devices: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "claim"},
            "spec": {"devices": {"requests": list(requests) or [gpu()], **devices}}}


def gpu(name: str = "gpu", **exactly: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "gpu.example.com", **exactly}}


def device(name: str = "gpu-0", **fields: Any) -> dict[str, Any]:
    return {"name": name, "attributes": {"model": {"string": "H100"}}, "capacity": {"memory": {"value": "80Gi"}},
            **fields}


def a_slice(*devices: dict[str, Any], pool: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    body = {"driver": "gpu.example.com", "pool": pool or {"name": "node-1", "generation": 0,
                                                          "resourceSliceCount": 1}}
    body.update(spec if spec else {"nodeName": "node-1"})
    if devices:
        body["devices"] = list(devices)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"}, "spec": body}


def device_class(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
            "spec": spec}


def message(kind: str, name: str, *errors: str) -> str:
    return f'The {kind} "{name}" is invalid: ' + ", ".join(errors)


def many(count: int, build: Any) -> list[Any]:
    return [build(i) for i in range(count)]


BAD = [
    # -- ResourceClaim (validation_resourceclaim_test.go TestValidateClaim) --
    ("upstream-bad-classname", claim(gpu(deviceClassName=BAD_NAME)),
     f'spec.devices.requests[0].exactly.deviceClassName: Invalid value: "{BAD_NAME}": {SUBDOMAIN_MSG}'),
    ("upstream-missing-classname-and-firstavailable", claim({"name": "gpu"}),
     "spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required"),
    ("exactly-and-first-available", claim({**gpu(), "firstAvailable": [gpu("a")]}),
     "spec.devices.requests[0]: Invalid value: null: exactly one of `exactly` or `firstAvailable` is "
     "required, but multiple fields are set"),
    ("upstream-invalid-request-too-many", claim(*many(33, lambda i: gpu(f"gpu-{i}"))),
     "spec.devices.requests: Too many: 33: must have at most 32 items"),
    ("upstream-allocation-mode-count", claim(gpu(count=-1)),
     "spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero"),
    ("upstream-allocation-mode-other", claim(gpu(allocationMode="other")),
     'spec.devices.requests[0].exactly.allocationMode: Unsupported value: "other": supported values: '
     '"All", "ExactCount"'),
    ("upstream-allocation-mode-all-with-count", claim(gpu(allocationMode="All", count=2)),
     "spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'"),
    ("upstream-allocation-mode-duplicate", claim(gpu("foo"), gpu("foo")),
     'spec.devices.requests[1]: Duplicate value: "foo"'),
    ("upstream-invalid-spec-constraint-ref", claim(constraints=[{"requests": ["gpu", BAD_NAME],
                                                                 "matchAttribute": "example.com/model"}]),
     f'spec.devices.constraints[0].requests[1]: Invalid value: "{BAD_NAME}": {LABEL_MSG}, '
     f'spec.devices.constraints[0].requests[1]: Invalid value: "{BAD_NAME}": {REF_MSG}'),
    ("constraint-match-attribute-without-domain", claim(constraints=[{"requests": ["gpu"],
                                                                      "matchAttribute": "model"}]),
     'spec.devices.constraints[0].matchAttribute: Invalid value: "model": a fully qualified name must be a '
     'domain and a name separated by a slash'),
    ("constraint-neither-attribute", claim(constraints=[{"requests": ["gpu"]}]),
     'spec.devices.constraints[0]: Required value: exactly one of "matchAttribute" or "distinctAttribute" is '
     'required, but multiple fields are set'),
    ("upstream-invalid-request-config-too-many",
     claim(config=many(33, lambda i: {"opaque": {"driver": "gpu.example.com", "parameters": {"a": i}}})),
     "spec.devices.config: Too many: 33: must have at most 32 items"),
    ("config-parameters-not-an-object", claim(config=[{"opaque": {"driver": "gpu.example.com", "parameters": [1]}}]),
     'spec.devices.config[0].opaque.parameters: Invalid value: "<value omitted>": must be a valid JSON object'),
    ("config-without-opaque", claim(config=[{"requests": ["gpu"]}]),
     "spec.devices.config[0].opaque: Required value"),
    ("first-available-too-many", claim({"name": "gpu", "firstAvailable": many(9, lambda i: gpu(f"s{i}")["exactly"]
                                                                              | {"name": f"s{i}"})}),
     "spec.devices.requests[0].firstAvailable: Too many: 9: must have at most 8 items"),
    ("subrequest-ref-unknown", claim({"name": "gpu", "firstAvailable": [{"name": "big", "deviceClassName": "c"}]},
                                     constraints=[{"requests": ["gpu/small"], "matchAttribute": "a.com/b"}]),
     f'spec.devices.constraints[0].requests[0]: Invalid value: "gpu/small": {REF_MSG}'),
    ("selectors-too-many", claim(gpu(selectors=many(33, lambda i: {"cel": {"expression": "true"}}))),
     "spec.devices.requests[0].exactly.selectors: Too many: 33: must have at most 32 items"),
    ("selector-without-cel", claim(gpu(selectors=[{}])),
     "spec.devices.requests[0].exactly.selectors[0].cel: Required value"),
    ("selector-too-long", claim(gpu(selectors=[{"cel": {"expression": "x" * 10241}}])),
     "spec.devices.requests[0].exactly.selectors[0].cel.expression: Too long: must have at most 10240 bytes"),
    ("toleration-exists-with-value", claim(gpu(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}])),
     'spec.devices.requests[0].exactly.tolerations[0].value: Invalid value: "v": must be empty for operator `Exists`'),
    ("tolerations-too-many", claim(gpu(tolerations=many(17, lambda i: {"key": f"k{i}", "operator": "Exists"}))),
     "spec.devices.requests[0].exactly.tolerations: Too many: 17: must have at most 16 items"),
    ("toleration-effect", claim(gpu(tolerations=[{"key": "k", "effect": "Evict"}])),
     'spec.devices.requests[0].exactly.tolerations[0].effect: Unsupported value: "Evict": supported values: '
     '"NoExecute", "NoSchedule", "None"'),
    # -- ResourceSlice (validation_resourceslice_test.go TestValidateResourceSlice) --
    ("upstream-too-large", a_slice(*many(129, lambda i: device(f"gpu-{i}"))),
     "spec.devices: Too many: 129: must have at most 128 items"),
    ("too-large-with-taints", a_slice(*many(65, lambda i: device(f"gpu-{i}", taints=[{"key": "k", "effect":
                                                                                         "NoSchedule"}]))),
     "spec.devices: Too many: 65: must have at most 64 items"),
    ("upstream-bad-nodename", a_slice(nodeName=BAD_NAME),
     f'spec.nodeName: Invalid value: "{BAD_NAME}": {SUBDOMAIN_MSG}'),
    ("upstream-bad-pool", a_slice(pool={"name": "node-1", "resourceSliceCount": 0, "generation": -1}),
     "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero, "
     "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero"),
    ("upstream-missing-pool-name", a_slice(pool={"name": "", "resourceSliceCount": 1}),
     "spec.pool.name: Required value"),
    ("upstream-bad-node-selection-all-nodes", a_slice(nodeName="worker", allNodes=True),
     "spec: Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of `nodeName`, `nodeSelector`, "
     "`allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"),
    ("upstream-empty-node-selection", a_slice(allNodes=None),
     "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` "
     "is required"),
    ("empty-node-name", a_slice(nodeName=""),
     'spec.nodeName: Invalid value: "": must be either unset or set to a non-empty string, spec: Required '
     'value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required'),
    ("all-nodes-false", a_slice(allNodes=False, nodeName="n"),
     "spec.allNodes: Invalid value: false: must be either unset or set to true"),
    ("upstream-bad-empty-node-selector", a_slice(nodeSelector={"nodeSelectorTerms": []}),
     "spec.nodeSelector.nodeSelectorTerms: Required value: must have at least one node selector term, "
     "spec.nodeSelector.nodeSelectorTerms: Invalid value: []: must have exactly one node selector term"),
    ("upstream-bad-drivername", {**a_slice(), "spec": {**a_slice()["spec"], "driver": BAD_NAME}},
     f'spec.driver: Invalid value: "{BAD_NAME}": {SUBDOMAIN_MSG}'),
    ("upstream-bad-devices", a_slice(device("gpu-0"), device(BAD_NAME)),
     f'spec.devices[1].name: Invalid value: "{BAD_NAME}": {LABEL_MSG}'),
    ("duplicate-device", a_slice(device("gpu-0"), device("gpu-0")),
     'spec.devices[1]: Duplicate value: "gpu-0"'),
    ("upstream-combined-attributes-capacity-length",
     a_slice({"name": "gpu-0", "attributes": {f"a{i}": {"int": i} for i in range(32)},
              "capacity": {"memory": {"value": "1Gi"}}}),
     "spec.devices[0]: Invalid value: 33: the total number of attributes and capacities must not exceed 32"),
    ("attribute-without-value", a_slice(device(attributes={"model": {}})),
     'spec.devices[0].attributes[model]: Invalid value: "": exactly one value must be specified'),
    ("attribute-bad-version", a_slice(device(attributes={"driverVersion": {"version": "550.54"}})),
     'spec.devices[0].attributes[driverVersion].version: Invalid value: "550.54": must be a string '
     'compatible with semver.org spec 2.0.0'),
    ("shared-counters-and-devices", a_slice(device(), sharedCounters=[{"name": "gpu-0", "counters": {
        "memory": {"value": "80Gi"}}}], nodeName="n"),
     'spec: Invalid value: "": only one of `sharedCounters` or `devices` is allowed'),
    ("counter-sets-too-many", a_slice(nodeName="n", sharedCounters=many(9, lambda i: {
        "name": f"gpu-{i}", "counters": {"memory": {"value": "1"}}})),
     "spec.sharedCounters: Too many: 9: must have at most 8 items"),
    ("consumes-counters-too-many", a_slice(device(consumesCounters=many(3, lambda i: {
        "counterSet": f"s{i}", "counters": {"m": {"value": "1"}}}))),
     "spec.devices[0].consumesCounters: Too many: 3: must have at most 2 items"),
    ("request-policy-without-multiple-allocations",
     a_slice(device(capacity={"memory": {"value": "80Gi", "requestPolicy": {"default": "1Gi"}}})),
     "spec.devices[0].capacity[memory].requestPolicy: Forbidden: allowMultipleAllocations must be true"),
    ("device-node-name-without-per-device", a_slice(device(nodeName="n")),
     "spec.devices[0]: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if "
     "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"),
    ("per-device-node-selection-missing", a_slice(device(), perDeviceNodeSelection=True),
     "spec.devices[0]: Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required "
     "when `perDeviceNodeSelection` is set to true in the ResourceSlice spec"),
    ("taint-effect", a_slice(device(taints=[{"key": "k", "effect": "Evict"}])),
     'spec.devices[0].taints[0].effect: Unsupported value: "Evict": supported values: "NoExecute", '
     '"NoSchedule", "None"'),
    # -- DeviceClass (validation_deviceclass_test.go TestValidateClass) --
    ("upstream-class-bad-extended-resource-name", device_class(extendedResourceName="gpu"),
     'spec.extendedResourceName: Invalid value: "gpu": must be a valid extended resource name'),
    ("upstream-class-too-many-selectors", device_class(selectors=many(33, lambda i: {"cel": {"expression": "true"}})),
     "spec.selectors: Too many: 33: must have at most 32 items"),
    ("upstream-class-configuration-empty-opaque", device_class(config=[{"opaque": {}}]),
     "spec.config[0].opaque.driver: Required value, "
     f'spec.config[0].opaque.driver: Invalid value: "": {SUBDOMAIN_MSG}, '
     "spec.config[0].opaque.parameters: Required value"),
    ("upstream-class-configuration-not-an-object", device_class(config=[{"opaque": {
        "driver": "foo", "parameters": "hello-world"}}]),
     'spec.config[0].opaque.parameters: Invalid value: "<value omitted>": must be a valid JSON object'),
    ("upstream-class-configuration-empty", device_class(config=[{}]), "spec.config[0].opaque: Required value"),
    ("upstream-class-too-many-configs", device_class(config=many(33, lambda i: {"opaque": {
        "driver": "foo", "parameters": {"foo": 42}}})),
     "spec.config: Too many: 33: must have at most 32 items"),
    ("upstream-class-selectors-missing-cel", device_class(selectors=[{"cel": {"expression": "true"}}, {}]),
     "spec.selectors[1].cel: Required value"),
    ("class-config-bad-driver", device_class(config=[{"opaque": {"driver": BAD_NAME, "parameters": {}}}]),
     f'spec.config[0].opaque.driver: Invalid value: "{BAD_NAME}": {SUBDOMAIN_MSG}'),
]


@pytest.mark.parametrize("body, expected", [(b, e) for _, b, e in BAD], ids=[c[0] for c in BAD])
def test_bad_input_is_refused_with_upstreams_message(body: dict[str, Any], expected: str) -> None:
    kind, name = body["kind"], body["metadata"]["name"]
    with pytest.raises(InvalidError) as err:
        validate_object(copy.deepcopy(body))
    assert str(err.value) == message(kind, name, expected)


GOOD = [
    ("upstream-good-claim", claim()),
    ("upstream-valid-request-at-the-limits", claim(*many(32, lambda i: gpu(f"gpu-{i}")))),
    ("first-available-with-ref", claim({"name": "gpu", "firstAvailable": [{"name": "big", "deviceClassName": "c"}]},
                                       constraints=[{"requests": ["gpu/big"], "matchAttribute": "a.com/b"}])),
    ("upstream-good", a_slice(*many(128, lambda i: device(f"gpu-{i}")))),
    ("shared-counters-only", a_slice(nodeName="n", sharedCounters=[{"name": "gpu-0", "counters": {
        "memory": {"value": "80Gi"}}}])),
    ("consumable-capacity", a_slice(device(allowMultipleAllocations=True, capacity={"memory": {
        "value": "80Gi", "requestPolicy": {"default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}}}))),
    ("upstream-class-good", device_class(extendedResourceName="example.com/gpu",
                                         selectors=[{"cel": {"expression": "true"}}])),
]


@pytest.mark.parametrize("body", [b for _, b in GOOD], ids=[c[0] for c in GOOD])
def test_valid_objects_pass(body: dict[str, Any]) -> None:
    assert validate_object(copy.deepcopy(body))["kind"] == body["kind"]


def test_request_defaults_as_upstreams_defaults_go() -> None:
    """pkg/apis/resource/v1/defaults.go: ExactCount, count 1, tolerations' operator Equal."""
    spec = validate_object(claim(gpu(tolerations=[{"key": "k"}]),
                                 {"name": "all", "firstAvailable": [{"name": "a", "deviceClassName": "c",
                                                                     "allocationMode": "All"}]}))["spec"]
    exactly = spec["devices"]["requests"][0]["exactly"]
    assert (exactly["allocationMode"], exactly["count"]) == ("ExactCount", 1)
    assert exactly["tolerations"][0]["operator"] == "Equal"
    assert "count" not in spec["devices"]["requests"][1]["firstAvailable"][0]


def test_template_claim_spec_is_validated_under_spec_spec() -> None:
    """validation_resourceclaimtemplate_test.go: the claim spec's errors at ``spec.spec``."""
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "t"},
                "spec": {"metadata": {"labels": {"a": "b"}}, "spec": claim({"name": "gpu"})["spec"]}}
    with pytest.raises(InvalidError) as err:
        validate_object(template)
    assert str(err.value) == message("ResourceClaimTemplate", "t", "spec.spec.devices.requests[0]: Required "
                                     "value: exactly one of `exactly` or `firstAvailable` is required")


def pod(claims: list[dict[str, Any]], container_claims: list[dict[str, Any]], name: str = "p") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"resourceClaims": claims,
                     "containers": [{"name": "c", "image": "i", "resources": {"claims": container_claims}}]}}


NIL = "(*string)(nil)"
POD_BAD = [
    # pkg/apis/core/validation/validation_test.go TestValidatePodSpec's resource claim cases and
    # the text kube-apiserver printed in kubernetes-sigs/kueue#2942 (v1.31).
    ("no-source", pod([{"name": "gpu"}], [{"name": "gpu"}]),
     f'spec.resourceClaims[0]: Invalid value: core.PodResourceClaim{{Name:"gpu", ResourceClaimName:{NIL}, '
     f'ResourceClaimTemplateName:{NIL}}}: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`'),
    ("duplicate-claim-name", pod([{"name": "gpu", "resourceClaimName": "a"},
                                  {"name": "gpu", "resourceClaimName": "b"}], []),
     'spec.resourceClaims[1].name: Duplicate value: "gpu"'),
    ("bad-claim-name", pod([{"name": "GPU", "resourceClaimName": "a"}], []),
     f'spec.resourceClaims[0].name: Invalid value: "GPU": {LABEL_MSG}'),
    ("bad-final-claim-name", pod([{"name": "gpu", "resourceClaimTemplateName": "t"}], [], name="p." + "x" * 250),
     f'spec.resourceClaims[0].name: Invalid value: "p.{"x" * 250}-gpu": final ResourceClaim name: '
     "must be no more than 253 characters"),
    ("container-claim-not-found", pod([], [{"name": "gpu"}]),
     'spec.containers[0].resources.claims[0]: Not found: "gpu": must be one of the names in '
     "pod.spec.resourceClaims which is empty"),
    ("container-claim-duplicate", pod([{"name": "gpu", "resourceClaimName": "a"}], [{"name": "gpu"}, {"name": "gpu"}]),
     'spec.containers[0].resources.claims[1]: Duplicate value: "gpu"'),
    ("container-claim-no-name", pod([{"name": "gpu", "resourceClaimName": "a"}], [{"request": "r"}]),
     "spec.containers[0].resources.claims[0]: Required value"),
]


@pytest.mark.parametrize("body, expected", [(b, e) for _, b, e in POD_BAD], ids=[c[0] for c in POD_BAD])
def test_pod_resource_claims_are_checked(body: dict[str, Any], expected: str) -> None:
    with pytest.raises(InvalidError) as err:
        validate_object(copy.deepcopy(body))
    assert str(err.value) == message("Pod", body["metadata"]["name"], expected)


def test_pod_with_template_and_named_claims_is_valid() -> None:
    body = pod([{"name": "gpu", "resourceClaimTemplateName": "single-gpu"},
                {"name": "shared", "resourceClaimName": "shared-gpu"}],
               [{"name": "gpu"}, {"name": "shared", "request": "big"}])
    assert validate_object(body)["spec"]["resourceClaims"][1]["resourceClaimName"] == "shared-gpu"


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gpusched.errors import GpuschedError  # noqa: E402

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 200), st.text(max_size=6),
                     st.sampled_from(["All", "ExactCount", "Exists", "Equal", "1Gi", "a.com/b", "gpu", "1.2.3"]))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(
        ["name", "exactly", "firstAvailable", "count", "allocationMode", "selectors", "cel", "expression",
         "requests", "matchAttribute", "opaque", "driver", "parameters", "tolerations", "devices",
         "attributes", "capacity", "value", "requestPolicy", "taints", "consumesCounters", "counters",
         "nodeName", "allNodes", "pool", "sharedCounters", "int", "string", "version"]), inner, max_size=4)),
    max_leaves=15)


_lists = st.lists(_values, max_size=3)
_claim_specs = st.fixed_dictionaries({"devices": st.fixed_dictionaries(
    {}, optional={"requests": _lists, "constraints": _lists, "config": _lists})})
_slice_specs = st.fixed_dictionaries({}, optional={
    "driver": _scalars, "pool": _values, "nodeName": _scalars, "allNodes": _scalars, "nodeSelector": _values,
    "perDeviceNodeSelection": _scalars, "devices": _lists, "sharedCounters": _lists})
_class_specs = st.fixed_dictionaries({}, optional={"selectors": _lists, "config": _lists,
                                                   "extendedResourceName": _scalars})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.one_of(
    st.builds(lambda s: ("ResourceClaim", s), _claim_specs),
    st.builds(lambda s: ("ResourceClaimTemplate", {"spec": s}), _claim_specs),
    st.builds(lambda s: ("ResourceSlice", s), _slice_specs),
    st.builds(lambda s: ("DeviceClass", s), _class_specs),
    st.builds(lambda s: ("ResourceSlice", s), _values)))
def test_odd_bodies_give_field_errors_never_a_traceback(body):
    """Whatever the spec holds, validation answers with gpusched's errors only."""
    kind, spec = body
    try:
        validate_object({"apiVersion": "resource.k8s.io/v1", "kind": kind, "metadata": {"name": "x"}, "spec": spec})
    except GpuschedError:
        pass
