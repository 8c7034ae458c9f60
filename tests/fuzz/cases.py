"""The hostile classes of issue 25 as named table cases, for the manifest and the API surfaces.

A ``ManifestCase`` is one or more steps, each a manifest file applied with ``gpusched apply -f``
(or each document POSTed to ``serve``). ``refused``: kube-apiserver v1.35 refuses the last step
(finding 6), so accepting it is the accepted-invalid class; the expected answer is upstream's, with
the source in the comment of each group. Cases without ``refused`` may be accepted or refused,
but never crash, hang, poison a later read or break an invariant (findings 1-4).

``ApiCase`` (findings 5-7 and the patch/subresource part of 6) is one raw request after a setup.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

NESTED_LEVELS = 5000
HUGE_REPLICAS = (10 ** 9, 2 ** 63)


@dataclass(frozen=True)
class ManifestCase:
    id: str
    steps: tuple[str, ...]
    refused: bool = False


def dump(*docs: dict[str, Any]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True, width=10 ** 9)


def pod(name: str, limits: dict[str, Any] | None = None, node: str = "", **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "busybox"}
    if limits:
        container["resources"] = {"limits": limits}
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                            "spec": {"containers": [container], **spec}}
    if node:
        body["spec"]["nodeName"] = node
    return body


def configmap(name: str, data: dict[str, str] | None = None, namespace: str = "default",
              **extra: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace, **extra.pop("metadata", {})}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {}, **extra}


def deployment(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}, **spec}}


def nodepool(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"names": [f"{name}-1"], "cpu": "8", "memory": "32Gi", **spec}}


def time_slicing(replicas: int, sharing: str = "timeSlicing") -> str:
    return ("version: v1\nsharing:\n  " + sharing + ":\n    resources:\n    - name: nvidia.com/gpu\n"
            f"      replicas: {replicas}\n")


def nested(levels: int = NESTED_LEVELS) -> str:
    return "a: " + "[" * levels + "]" * levels


# Finding 1: a number in a ConfigMap (or a count) that becomes work per unit must be bounded.
PLUGIN_CONFIGMAPS = (("time-slicing-config-all", "default"), ("time-slicing-config", "gpu-operator"),
                     ("device-plugin-config", "kube-system"))
SIZES = [ManifestCase(f"f1-{sharing}-{replicas}-{name}", (dump(configmap(name, {"any": time_slicing(
    replicas, sharing)}, namespace)),))
    for name, namespace in PLUGIN_CONFIGMAPS for replicas in HUGE_REPLICAS for sharing in ("timeSlicing",)]
SIZES += [
    ManifestCase("f1-mps-replicas", (dump(configmap("device-plugin-config", {"any": time_slicing(10 ** 9, "mps")})),)),
    ManifestCase("f1-nodepool-count", (dump(nodepool("many", count=10 ** 9)),)),
    ManifestCase("f1-nodepool-gpu-count", (dump(nodepool("wide", gpu={"model": "A100-40GB", "count": 10 ** 9})),)),
    ManifestCase("f1-deployment-replicas", (dump(deployment(replicas=10 ** 9)),)),
]

# Finding 2: YAML documents parsed out of ConfigMaps go through the manifests' depth bound.
NESTED_TARGETS = (("time-slicing-config-all", "default", "any"), ("device-plugin-config", "kube-system", "any"),
                  ("default-mig-parted-config", "gpu-operator", "config.yaml"),
                  ("gpusched-cluster-autoscaler", "kube-system", "config"),
                  ("cluster-autoscaler-priority-expander", "kube-system", "priorities"),
                  ("gpusched-gpu-models", "kube-system", "models.yaml"))
NESTING = [ManifestCase(f"f2-nested-{name}", (dump(configmap(name, {key: nested()}, namespace)),))
           for name, namespace, key in NESTED_TARGETS]

# Findings 3 and 4: the kubelet admits every pod that reaches a node, pinned by nodeName or not
# (kubelet lifecycle/predicate.go: OutOf<resource>; devicemanager: UnexpectedAdmissionError).
MILLI = "gpusched.io/gpu-milli"
MIG_NODE = nodepool("a100-mig", names=["mig-node-1"], gpu={"model": "A100-40GB", "count": 1}, cpu="32",
                    memory="256Gi", migConfig="all-balanced", migStrategy="mixed")
PINNED = [
    ManifestCase("f3-pinned-fractional", (dump(pod("frac", {MILLI: 500}, "gpu-node-3")),)),
    ManifestCase("f3-pinned-fractional-then-whole", (dump(pod("frac", {MILLI: 500}, "gpu-node-3")),
                                                     dump(pod("whole", {"nvidia.com/gpu": 1}, "gpu-node-3")),
                                                     dump(pod("whole2", {"nvidia.com/gpu": 1}, "gpu-node-3")))),
    ManifestCase("f3-five-700-milli-pinned", (dump(*(pod(f"f{i}", {MILLI: 700}, "gpu-node-3") for i in range(5))),)),
    ManifestCase("f4-gpus-on-cpu-node", (dump(pod("gpus", {"nvidia.com/gpu": 4}, "cpu-node-1")),)),
    ManifestCase("f4-mig-on-non-mig-node", (dump(pod("mig", {"nvidia.com/mig-1g.5gb": 1}, "gpu-node-1")),)),
    ManifestCase("f4-more-gpus-than-the-node", (dump(pod("nine", {"nvidia.com/gpu": 9}, "gpu-node-1")),)),
    ManifestCase("f4-cpu-over-allocatable", (dump(pod("cpu", {"cpu": "100"}, "gpu-node-3")),)),
    ManifestCase("f4-mig-layout-change-in-use", (
        dump(MIG_NODE), dump(pod("mig", {"nvidia.com/mig-2g.10gb": 1})),
        dump(nodepool("a100-mig", names=["mig-node-1"], gpu={"model": "A100-40GB", "count": 1}, cpu="32",
                      memory="256Gi", migConfig="all-1g.5gb", migStrategy="mixed")))),
]


PLACEHOLDERS = ("p", "web", "j", "lr")


def _refused(case_id: str, *docs: dict[str, Any]) -> ManifestCase:
    """A finding-6 case; a placeholder name becomes the case's own, so that through ``serve``
    each case is a create (an earlier case's object would make it an update)."""
    for doc in docs:
        if doc["metadata"].get("name") in PLACEHOLDERS:
            doc["metadata"]["name"] = re.sub(r"[^a-z0-9]+", "-", case_id.lower()).strip("-")
    return ManifestCase(f"f6-{case_id}", (dump(*docs),), refused=True)


def _pod_with(**spec: Any) -> dict[str, Any]:
    return pod("p", {"cpu": "1"}, **spec)


def _container(**fields: Any) -> dict[str, Any]:
    body = pod("p")
    body["spec"]["containers"][0].update(fields)
    return body


# Finding 6: what kube-apiserver v1.35 refuses. Sources: apimachinery api/validation/objectmeta.go
# (TotalAnnotationSizeLimitB 256 KiB, finalizers as qualified names, ownerReferences),
# core/validation/validation.go (ConfigMap 1 MiB total, ports 1-65535, protocol, dnsPolicy, env
# names, activeDeadlineSeconds >= 1, nodeName as a DNS subdomain, Node podCIDR, LimitRange ratio
# >= 1, Service names as DNS-1035 labels), apps/validation (strategy type, maxSurge,
# revisionHistoryLimit, minReadySeconds, progressDeadlineSeconds), batch/validation
# (completionMode), api/resource/quantity.go (the quantity regular expression, ASCII digits),
# base64 of binaryData (encoding/json of []byte); kubectl apply of no objects:
# "error: no objects passed to apply" (kubectl/pkg/cmd/apply/apply.go).
REFUSED = [
    _refused("annotations-over-256KiB", configmap("big-ann", metadata={"annotations": {"a": "x" * (257 * 1024)}})),
    _refused("configmap-over-1MiB", configmap("big-data", {"a": "x" * (1024 * 1024 + 1)})),
    _refused("binarydata-not-base64", configmap("bin", binaryData={"a": "not base64!"})),
    _refused("nodepool-cpu-fullwidth-digits", nodepool("fw", cpu="\uff11\uff16")),
    _refused("pod-cpu-arabic-indic-digit", pod("p", {"cpu": "\u0663"})),
    _refused("deployment-strategy-bogus", deployment(strategy={"type": "Bogus"})),
    _refused("deployment-maxsurge-150x", deployment(strategy={"type": "RollingUpdate",
                                                              "rollingUpdate": {"maxSurge": "150x"}})),
    _refused("deployment-maxsurge-negative-percent", deployment(strategy={
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": "-5%"}})),
    _refused("deployment-maxsurge-2^63", deployment(strategy={"type": "RollingUpdate",
                                                              "rollingUpdate": {"maxSurge": 2 ** 63}})),
    _refused("deployment-revisionhistorylimit-negative", deployment(revisionHistoryLimit=-1)),
    _refused("deployment-minreadyseconds-negative", deployment(minReadySeconds=-1)),
    _refused("deployment-progressdeadline-zero", deployment(progressDeadlineSeconds=0)),
    _refused("job-completionmode-bogus", {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                                          "spec": {"completionMode": "Bogus", "template": {"spec": {
                                              "restartPolicy": "Never",
                                              "containers": [{"name": "c", "image": "busybox"}]}}}}),
    _refused("pod-nodename-upper-case", _pod_with(nodeName="UPPER_CASE")),
    _refused("pod-dnspolicy-bogus", _pod_with(dnsPolicy="Bogus")),
    _refused("pod-containerport-zero", _container(ports=[{"containerPort": 0}])),
    _refused("pod-containerport-70000", _container(ports=[{"containerPort": 70000}])),
    _refused("pod-protocol-icmp", _container(ports=[{"containerPort": 80, "protocol": "ICMP"}])),
    _refused("pod-env-empty-name", _container(env=[{"name": "", "value": "x"}])),
    _refused("pod-activedeadline-zero", _pod_with(activeDeadlineSeconds=0)),
    _refused("finalizer-not-qualified", configmap("fin", metadata={"finalizers": ["bad finalizer!"]})),
    _refused("node-podcidr", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                              "spec": {"podCIDR": "not-a-cidr"}}),
    _refused("limitrange-ratio-below-one", {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
                                            "spec": {"limits": [{"type": "Container",
                                                                 "maxLimitRequestRatio": {"cpu": "0.5"}}]}}),
    _refused("service-name-with-dot", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a.b"},
                                       "spec": {"ports": [{"port": 80}]}}),
    _refused("service-name-64-chars", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s" * 64},
                                       "spec": {"ports": [{"port": 80}]}}),
    _refused("ownerreference-without-name-uid", configmap("own", metadata={"ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap"}]})),
    ManifestCase("f6-only-a-comment", ("# nothing here\n",), refused=True),
]

# Not refused: kube-apiserver trims the spaces around a quantity it decodes from JSON (apimachinery
# pkg/api/resource/quantity.go UnmarshalJSON: ParseQuantity(strings.TrimSpace(...)), "TODO: Remove
# support for leading/trailing whitespace") and stores the canonical form; issue 25 listed them as
# refused. Accepted or not, nothing read later may fail.
SPACES = [ManifestCase("f6-pod-memory-leading-space", (dump(pod("lead", {"memory": " 1"})),)),
          ManifestCase("f6-pod-memory-trailing-space", (dump(pod("trail", {"memory": "1Gi "})),))]

MANIFEST_CASES = SIZES + NESTING + PINNED + REFUSED + SPACES


@dataclass(frozen=True)
class ApiCase:
    """One request after ``API_SETUP``; headers and a raw body may hold ``{port}``."""

    id: str
    method: str
    path: str
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    refused: bool = True
    raw: bool = False       # send ``body`` as the whole request (head included), ``{port}`` filled


CMS = "/api/v1/namespaces/default/configmaps"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
JSON_PATCH = {"Content-Type": "application/json-patch+json"}
MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}
STRATEGIC_PATCH = {"Content-Type": "application/strategic-merge-patch+json"}
OWNER_NO_NAME = {"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap"}]}}


def _json(body: Any) -> bytes:
    return json.dumps(body).encode()


# Finding 5: an origin is scheme, host and port (RFC 6454 4; the browser guard's same-origin test).
# Finding 7: a chunk size that does not fit is a 400 and a closed connection (h11: "chunk size").
# Finding 6, through patches and subresources (apimachinery ValidateObjectMetaUpdate: uid and name
# are immutable, "field is immutable"; apps ValidateDeploymentStatus: replicas >= 0; label keys
# as qualified names of at most 63 characters).
API_CASES = [
    ApiCase("f5-origin-other-port", "POST", CMS, _json(configmap("xsite1")),
            {"Host": "127.0.0.1:{port}", "Origin": "http://127.0.0.1:{port+1}", "Content-Type": ""}),
    ApiCase("f5-origin-localhost-3000", "POST", CMS, _json(configmap("xsite2")),
            {"Host": "localhost:{port}", "Origin": "http://localhost:3000", "Content-Type": ""}),
    ApiCase("f7-chunk-size-overflow", "POST", CMS, raw=True, body=(
        b"POST " + CMS.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFF\r\n{\r\n")),
    ApiCase("f6-json-patch-uid", "PATCH", f"{CMS}/target", _json([{"op": "replace", "path": "/metadata/uid",
                                                                  "value": "forged"}]), JSON_PATCH),
    ApiCase("f6-merge-patch-owner-without-name", "PATCH", f"{CMS}/target", _json(OWNER_NO_NAME), MERGE_PATCH),
    ApiCase("f6-strategic-patch-owner-without-name", "PATCH", f"{CMS}/target", _json(OWNER_NO_NAME),
            STRATEGIC_PATCH),
    ApiCase("f6-status-replicas-negative", "PATCH", f"{DEPLOYMENTS}/web/status",
            _json({"status": {"replicas": -1}}), MERGE_PATCH),
    ApiCase("f6-scale-renames", "PUT", f"{DEPLOYMENTS}/web/scale", _json({
        "apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "other", "namespace": "default"},
        "spec": {"replicas": 1}})),
    ApiCase("f6-node-status-label-key-70", "PATCH", "/api/v1/nodes/gpu-node-1/status",
            _json({"metadata": {"labels": {"k" * 70: "v"}}}), MERGE_PATCH),
    # Found by this suite: an unknown field whose name holds a newline, under the default
    # fieldValidation=Warn. kube-apiserver answers 200 and drops a warning whose text has control
    # characters (apimachinery util/net/http.go NewWarningHeader: "text must be valid UTF-8 and
    # must not contain control characters"); it must not become a dropped connection.
    ApiCase("warning-with-a-newline", "PUT", f"{CMS}/target",
            _json({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target"}, "a\nb": 1}),
            refused=False),
]
API_SETUP = ((CMS, configmap("target")), (DEPLOYMENTS, deployment()))
