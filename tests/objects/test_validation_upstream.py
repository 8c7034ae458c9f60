"""What kube-apiserver v1.35 refuses is refused, with its field paths and messages (issue 25,
finding 6), and what it accepts near each boundary is still accepted.

Each case names the upstream file whose rule it reproduces. ``REFUSED`` is shared with the CLI
(``tests/cli/test_apply_refusals.py``) and API (``tests/server/test_validation_refusals.py``)
tables: ``(id, object, message)`` where the message is the one line kubectl prints after
``error: ...``. Decoding errors (a body that does not decode into the Go type) are 400
``cannot be handled as``; validation errors 422 ``is invalid``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpusched.errors import GpuschedError
from gpusched.objects.strict import decode
from gpusched.objects.validation import validate_object

QUANTITY_RE = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                 "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                 "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
PERCENT_MSG = ("a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
               "regex used for validation is '[0-9]+%')")
DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
               "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
               "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
NAME_PART_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
                 "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                 "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


def meta(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, **fields}


def pod(name: str = "p", container: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None,
        **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata or meta(name),
            "spec": {"containers": [{"name": "c", "image": "i", **(container or {})}], **spec}}


def deployment(name: str = "d", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(name),
            "spec": {"selector": {"matchLabels": {"app": "a"}},
                     "template": {"metadata": {"labels": {"app": "a"}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}, **spec}}


def rolling(**update: Any) -> dict[str, Any]:
    return {"type": "RollingUpdate", "rollingUpdate": update}


def config_map(name: str = "cm", metadata: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata or meta(name), **fields}


def job(name: str = "j", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta(name),
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}},
                     **spec}}


def node(name: str = "n", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta(name), "spec": spec}


def node_pool(name: str = "np", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool", "metadata": meta(name),
            "spec": {"count": 1, **spec}}


def service(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta(name),
            "spec": {"selector": {"app": "a"}, "ports": [{"port": 80}]}}


def limit_range(**item: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": meta("lr"),
            "spec": {"limits": [{"type": "Container", **item}]}}


def invalid(kind: str, name: str, text: str) -> str:
    return f'The {kind} "{name}" is invalid: {text}'


def undecodable(kind: str, version: str, text: str) -> str:
    return f'{kind} in version "{version}" cannot be handled as a {kind}: {text}'


ANNOTATIONS_LIMIT = 256 * 1024          # apimachinery objectmeta.go TotalAnnotationSizeLimitB
CONFIG_MAP_LIMIT = 1024 * 1024          # core.MaxSecretSize, ValidateConfigMap

REFUSED = [
    # apimachinery pkg/api/validation/objectmeta.go ValidateAnnotations (keys + values > 256 KiB)
    ("annotations-over-256KiB", config_map(metadata=meta("cm", annotations={"k": "x" * ANNOTATIONS_LIMIT})),
     invalid("ConfigMap", "cm", "metadata.annotations: Too long: must have at most 262144 bytes")),
    # kubernetes pkg/apis/core/validation/validation.go ValidateConfigMap (path "" prints as [])
    ("configmap-data-over-1MiB", config_map(data={"a": "x" * (CONFIG_MAP_LIMIT + 1)}),
     invalid("ConfigMap", "cm", "[]: Too long: must have at most 1048576 bytes")),
    # encoding/json decodes a []byte field as base64 (base64.CorruptInputError)
    ("configmap-binarydata-not-base64", config_map(binaryData={"a": "not base64!"}),
     undecodable("ConfigMap", "v1", "illegal base64 data at input byte 3")),
    # apimachinery pkg/api/resource/quantity.go parseQuantityString: ASCII '0'..'9' only
    ("quantity-fullwidth-digits", pod(container={"resources": {"limits": {"cpu": "１６"}}}),
     undecodable("Pod", "v1", QUANTITY_RE)),
    ("quantity-arabic-indic-digit", pod(container={"resources": {"requests": {"memory": "٣"}}}),
     undecodable("Pod", "v1", QUANTITY_RE)),
    ("quantity-inner-space", pod(container={"resources": {"limits": {"memory": "1 Gi"}}}),
     undecodable("Pod", "v1", QUANTITY_RE)),
    ("nodepool-cpu-fullwidth", node_pool(cpu="１６"),
     invalid("NodePool", "np", f'spec.cpu: Invalid value: "１６": {QUANTITY_RE}')),
    # kubernetes pkg/apis/apps/validation/validation.go ValidateDeploymentStrategy (NotSupported on
    # the whole strategy, printed with %#v)
    ("deployment-strategy-type", deployment(strategy={"type": "Bogus"}),
     invalid("Deployment", "d", 'spec.strategy: Unsupported value: apps.DeploymentStrategy{Type:"Bogus", '
             'RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}: supported values: "Recreate", "RollingUpdate"')),
    # ValidatePositiveIntOrPercent (an IntOrString prints bare: it is a fmt.Stringer)
    ("deployment-maxsurge-150x", deployment(strategy=rolling(maxSurge="150x")),
     invalid("Deployment", "d", f"spec.strategy.rollingUpdate.maxSurge: Invalid value: 150x: {PERCENT_MSG}")),
    ("deployment-maxsurge-negative-percent", deployment(strategy=rolling(maxSurge="-5%")),
     invalid("Deployment", "d", f"spec.strategy.rollingUpdate.maxSurge: Invalid value: -5%: {PERCENT_MSG}")),
    # intstr.IntOrString.UnmarshalJSON into an int32 (encoding/json, no struct context)
    ("deployment-maxsurge-2^63", deployment(strategy=rolling(maxSurge=2**63)),
     undecodable("Deployment", "v1", "json: cannot unmarshal number 9223372036854775808 into Go value of type int32")),
    ("deployment-maxunavailable-over-100%", deployment(strategy=rolling(maxUnavailable="101%")),
     invalid("Deployment", "d", "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 101%: must not be "
             "greater than 100%")),
    # ValidateDeploymentSpec: ValidateNonnegativeField, progressDeadlineSeconds > minReadySeconds
    ("deployment-revisionhistorylimit-negative", deployment(revisionHistoryLimit=-1),
     invalid("Deployment", "d", "spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0")),
    ("deployment-minreadyseconds-negative", deployment(minReadySeconds=-1),
     invalid("Deployment", "d", "spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0")),
    ("deployment-progressdeadline-zero", deployment(progressDeadlineSeconds=0),
     invalid("Deployment", "d", "spec.progressDeadlineSeconds: Invalid value: 0: must be greater than "
             "minReadySeconds")),
    # kubernetes pkg/apis/batch/validation/validation.go validateJobSpec completionMode
    ("job-completionmode", job(completionMode="Bogus"),
     invalid("Job", "j", 'spec.completionMode: Unsupported value: "Bogus": supported values: "NonIndexed", '
             '"Indexed"')),
    # core validation.go ValidatePodSpec: ValidateNodeName, validateDNSPolicy, activeDeadlineSeconds
    ("pod-nodename-upper-case", pod(nodeName="UPPER_CASE"),
     invalid("Pod", "p", f'spec.nodeName: Invalid value: "UPPER_CASE": {SUBDOMAIN_MSG}')),
    ("pod-dnspolicy", pod(dnsPolicy="Bogus"),
     invalid("Pod", "p", 'spec.dnsPolicy: Unsupported value: "Bogus": supported values: "ClusterFirst", '
             '"ClusterFirstWithHostNet", "Default", "None"')),
    ("pod-activedeadlineseconds-zero", pod(activeDeadlineSeconds=0),
     invalid("Pod", "p", "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive")),
    # core validation.go validateContainerPorts (IsValidPortNum), validateEnv
    ("pod-containerport-zero", pod(container={"ports": [{"containerPort": 0}]}),
     invalid("Pod", "p", "spec.containers[0].ports[0].containerPort: Required value")),
    ("pod-containerport-70000", pod(container={"ports": [{"containerPort": 70000}]}),
     invalid("Pod", "p", "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and "
             "65535, inclusive")),
    ("pod-port-protocol-icmp", pod(container={"ports": [{"containerPort": 80, "protocol": "ICMP"}]}),
     invalid("Pod", "p", 'spec.containers[0].ports[0].protocol: Unsupported value: "ICMP": supported values: '
             '"SCTP", "TCP", "UDP"')),
    ("pod-env-name-empty", pod(container={"env": [{"name": "", "value": "v"}]}),
     invalid("Pod", "p", "spec.containers[0].env[0].name: Required value")),
    # apimachinery objectmeta.go ValidateFinalizers / ValidateFinalizerName
    ("finalizer-name", config_map(metadata=meta("cm", finalizers=["bad finalizer!"])),
     invalid("ConfigMap", "cm", f'metadata.finalizers: Invalid value: "bad finalizer!": {NAME_PART_MSG}')),
    # core validation.go ValidateNode: spec.podCIDRs (v1 podCIDR converts to podCIDRs[0])
    ("node-podcidr", node(podCIDR="not-a-cidr"),
     invalid("Node", "n", 'spec.podCIDRs[0]: Invalid value: "not-a-cidr": must be a valid CIDR value, '
             "(e.g. 10.9.8.0/24 or 2001:db8::/64)")),
    # core validation.go ValidateLimitRange (the ratio is a Quantity, printed with String())
    ("limitrange-ratio-below-1", limit_range(maxLimitRequestRatio={"cpu": "0.5"}),
     invalid("LimitRange", "lr", "spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: 500m: ratio must be "
             "greater than or equal to 1")),
    # core validation.go ValidateServiceName = NameIsDNS1035Label
    ("service-name-dotted", service("a.b"),
     invalid("Service", "a.b", f'metadata.name: Invalid value: "a.b": {DNS1035_MSG}')),
    ("service-name-64", service("s" * 64),
     invalid("Service", "s" * 64, f'metadata.name: Invalid value: "{"s" * 64}": must be no more than 63 characters')),
    # apimachinery objectmeta.go validateOwnerReference
    ("ownerreference-without-name",
     config_map(metadata=meta("cm", ownerReferences=[{"apiVersion": "v1", "kind": "Pod", "uid": "u-1"}])),
     invalid("ConfigMap", "cm", 'metadata.ownerReferences.name: Invalid value: "": must not be empty')),
    ("ownerreference-without-uid",
     config_map(metadata=meta("cm", ownerReferences=[{"apiVersion": "v1", "kind": "Pod", "name": "p"}])),
     invalid("ConfigMap", "cm", 'metadata.ownerReferences.uid: Invalid value: "": must not be empty')),
]

ACCEPTED = [
    ("annotations-256KiB", config_map(metadata=meta("cm", annotations={"k": "x" * (ANNOTATIONS_LIMIT - 1)}))),
    ("configmap-data-1MiB", config_map(data={"a": "x" * (CONFIG_MAP_LIMIT - 1), "b": "y"})),
    ("configmap-binarydata-base64", config_map(binaryData={"a": "aGVsbG8=", "b": "aGVs\nbG8="})),
    # quantity.go UnmarshalJSON: strings.TrimSpace before ParseQuantity ("TODO: Remove support
    # for leading/trailing whitespace"): kube-apiserver decodes these
    ("quantity-surrounding-spaces", pod(container={"resources": {"limits": {"cpu": " 1", "memory": "1Gi "}}})),
    ("ports-1-and-65535", pod(container={"ports": [{"containerPort": 1, "hostPort": 65535, "protocol": "SCTP",
                                                    "name": "a-1"}]})),
    ("maxsurge-100%", deployment(strategy=rolling(maxSurge="100%", maxUnavailable="100%"))),
    ("maxsurge-int32-max", deployment(strategy=rolling(maxSurge=2**31 - 1, maxUnavailable=0))),
    ("deployment-zero-limits", deployment(revisionHistoryLimit=0, minReadySeconds=0, progressDeadlineSeconds=1)),
    ("recreate", deployment(strategy={"type": "Recreate"})),
    ("job-indexed", job(completionMode="Indexed", completions=3)),
    ("pod-fields-at-bounds", pod(nodeName="gpu-node-1.example", dnsPolicy="None", dnsConfig={"nameservers": ["1.1.1.1"]},
                                 activeDeadlineSeconds=2**31 - 1)),
    ("env-relaxed-name", pod(container={"env": [{"name": "1-my.env name", "value": "v"}]})),
    ("finalizer-qualified", config_map(metadata=meta("cm", finalizers=["example.com/clean-up", "kubernetes"]))),
    ("node-podcidr-v4-v6", node(podCIDR="10.244.1.0/24")),
    ("node-podcidr-host-bits", node(podCIDRs=["10.244.1.1/24", "fd00::/64"])),
    ("limitrange-ratio-1", limit_range(maxLimitRequestRatio={"cpu": "1"})),
    ("service-name-63", service("s" * 63)),
    ("ownerreference-complete", config_map(metadata=meta("cm", ownerReferences=[
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "u-1", "controller": True}]))),
    ("annotation-key-case-insensitive-prefix", config_map(metadata=meta("cm", annotations={"Example.COM/Key": "v"}))),
]


def refusal(obj: dict[str, Any]) -> str | None:
    """Decode (as the API server decodes a body) then validate; the error text, or None."""
    try:
        validate_object(decode(copy.deepcopy(obj)).obj)
    except GpuschedError as error:
        return str(error)
    return None


@pytest.mark.parametrize("obj,message", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_what_kube_apiserver_refuses_is_refused(obj, message):
    assert refusal(obj) == message


@pytest.mark.parametrize("obj", [c[1] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED])
def test_near_boundary_values_are_accepted(obj):
    assert refusal(obj) is None


@pytest.mark.parametrize("value", ["１６", "٣", "1\n", "\x1c1"], ids=["fullwidth", "arabic-indic", "newline-inside-regex-end",
                                                                     "python-only-space"])
def test_quantity_parser_takes_ascii_digits_only(value):
    """apimachinery resource.ParseQuantity after strings.TrimSpace (which keeps U+001C, unlike
    Python's str.strip); gpusched's parser is the one NodePools, nodes and pods go through."""
    from gpusched.objects.quantity import QuantityError, parse_quantity
    if value == "1\n":
        assert parse_quantity(value) == 1          # TrimSpace removes the newline: accepted upstream
        return
    with pytest.raises(QuantityError, match="regular expression"):
        parse_quantity(value)


@pytest.mark.parametrize("metadata", [meta("cm", labels={"k": "abc\n"}), meta("cm\n")], ids=["label-value", "name"])
def test_names_with_a_trailing_newline_are_not_names(metadata):
    """Go's regexp ``$`` is the end of the text; Python's ``$`` also matches before a final newline."""
    assert refusal(config_map(metadata=metadata)) is not None
