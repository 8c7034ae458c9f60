"""``validate(manifest) -> dict``: per-kind validation and defaulting with Kubernetes' wording.

Returns a deep copy of the manifest's object, defaulted (namespace ``default``, limit-only
resources copied into requests, restartPolicy, Job counts, PriorityClass preemptionPolicy,
LimitRange defaults ...), or raises ``InvalidError(kind, name, [FieldError...], where="<file>:
document <i>")``: ``x.yaml: document 0: The Pod "p" is invalid: spec.containers[0]...``.
Unknown fields are kept untouched. Cross-object rules (PriorityClass existence, one
globalDefault, quota, LimitRange application) are admission's, in ``cluster/admission.py``.

Per kind (PodSpec rules are in ``objects.podspec``):

- every kind: ``metadata.name`` a DNS-1123 subdomain (a DNS-1123 label for Namespaces), labels and
  annotation keys; namespaced kinds get ``metadata.namespace: default`` when absent; a namespace
  on a cluster-scoped kind is dropped, as kubectl does.
- Pod: the PodSpec, gpusched annotations (``gpusched.io/gpu-milli`` 1..1000,
  ``gpusched.io/duration`` a duration).
- Deployment / ReplicaSet / DaemonSet / Job: ``spec.selector`` required (optional for Job, whose
  controller generates one) and matching the template labels; ``replicas >= 0``; the template is
  validated as a pod at ``spec.template.spec...``; restartPolicy ``Always`` (workloads) or
  ``OnFailure``/``Never`` (Job); Job parallelism/completions/backoffLimit/activeDeadlineSeconds
  non-negative, defaulted to 1/1/6 as upstream.
- PriorityClass: ``value`` required, at most 1000000000 unless a known ``system-`` class;
  preemptionPolicy ``PreemptLowerPriority`` (default) or ``Never``.
- ResourceQuota: ``spec.hard`` quantities; ``spec.scopes``/``scopeSelector`` (supported, not
  conflicting, valid for the hard resources, operators). LimitRange: item types, quantities, object defaulting
  (``nvidia-gpu-stack.md`` 7.4) and the min <= defaultRequest <= default <= max order.
- PodDisruptionBudget: exactly one of minAvailable / maxUnavailable (an integer or a percent).
- ConfigMap: keys are config keys, ``data`` values strings.
- Node: taints, capacity/allocatable quantities.
- Service, Endpoints(Slice), ServiceAccount, Secret, StorageClass, PersistentVolume(Claim),
  NetworkPolicy, HorizontalPodAutoscaler, VerticalPodAutoscaler: ``objects.validation_kinds``.
- Lease (``coordination.k8s.io/v1``): holderIdentity a string, leaseDurationSeconds > 0,
  leaseTransitions >= 0, acquireTime/renewTime RFC 3339 (MicroTime).
- NodePool (``gpusched.io/v1alpha1``, cluster-scoped), gpusched's compact node definition::

      spec:
        count: 2                 # or names: [gpu-node-1, gpu-node-2] (exactly one of the two)
        gpu: {model: A100-40GB, count: 8}   # model checked against the catalog by devices, not here
        cpu: "64"                # quantities
        memory: 512Gi
        labels: {gpu-type: a100}
        taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
        migLayout: all-1g.5gb    # or migConfig (a string)

  Other fields are kept for the layers that read them.

Neighbours: manifest (Manifest), podspec, validation_affinity (labels, selectors), fieldcheck, names, kinds, ``validation_policy`` and
``validation_nodes`` (the policy and node kinds); used by cluster admission,
the CLI and the API server.
"""

from __future__ import annotations

from typing import Any, Callable

import re

from gpusched.errors import InvalidError, ManifestError
from gpusched.objects import limits
from gpusched.objects.fieldcheck import Errors, _spec
from gpusched.objects.crd_validation import apply_defaults, validate_custom
from gpusched.objects.kinds import ACCEPTED_API_VERSIONS, CRD_KINDS, KINDS
from gpusched.objects.manifest import Manifest
from gpusched.objects.names import dns1035_label_errors, dns1123_label_errors, dns1123_subdomain_errors
from gpusched.objects.podspec import validate_pod_annotations, validate_pod_spec, validate_tolerations
from gpusched.objects.validation_apps import (default_statefulset_spec, validate_completion_mode,
                                              validate_deployment_spec, validate_statefulset_spec)
from gpusched.objects.validation_affinity import validate_label_selector, validate_labels
from gpusched.objects.selectors import matches, selector_from_dict
from gpusched.objects.tree import copy_tree
from gpusched.objects.validation_meta import validate_annotations, validate_finalizers, validate_owner_references
from gpusched.objects.validation_kinds import VALIDATORS as CORE_KIND_VALIDATORS
from gpusched.objects.validation_stock import VALIDATORS as STOCK_KIND_VALIDATORS
from gpusched.objects.validation_dra import VALIDATORS as DRA_VALIDATORS
from gpusched.objects.validation_dra_slice import VALIDATORS as DRA_SLICE_VALIDATORS
from gpusched.objects.validation_nodes import _cluster_policy, _node, _node_pool
from gpusched.objects.validation_policy import (_config_map, _limit_range, _pdb, _priority_class,
                                                _resource_quota)

def validate(manifest: Manifest) -> dict[str, Any]:
    """Validate and default one manifest's object; raise InvalidError naming file and document."""
    return validate_object(manifest.obj, where=manifest.where, source=manifest.source, index=manifest.index)

Validator = Callable[[dict[str, Any], Errors], Any]


def validate_object(obj: dict[str, Any], where: str = "", source: str = "", index: int | None = None,
                    owned: bool = False) -> dict[str, Any]:
    """``validate`` for an object that did not come from a file (the API server). ``owned``: the
    caller hands ``obj`` over (its own copy): it is defaulted in place, not copied first."""
    if not isinstance(obj, dict) or obj.get("kind") not in KINDS:
        found = obj.get("kind") if isinstance(obj, dict) else None
        raise ManifestError(source or "<object>", index, "kind", f'no matches for kind "{found}"')
    if obj.get("apiVersion") not in ACCEPTED_API_VERSIONS[obj["kind"]]:
        raise ManifestError(source or "<object>", index, "",
                            f'no matches for kind "{obj["kind"]}" in version "{obj.get("apiVersion")}"')
    limits.check_object(obj, where)        # depth, NaN, 1.5 MiB: before anything walks it
    if not owned:
        obj = copy_tree(obj)
    kind: str = obj["kind"]
    errors = Errors()
    _metadata(obj, kind, errors)
    validator: Validator = _VALIDATORS.get(kind, _nothing)
    validator(obj, errors)
    if errors:
        meta = obj.get("metadata")
        name = (meta.get("name") or meta.get("generateName") or "") if isinstance(meta, dict) else ""
        raise InvalidError(kind, str(name), errors.items, where=where)
    return obj


def _nothing(obj: dict[str, Any], e: Errors) -> None:
    return None


# ----------------------------------------------------------------------------------------------
# metadata


def _metadata(obj: dict[str, Any], kind: str, e: Errors) -> None:
    """``ValidateObjectMeta``: name or generateName, namespace (defaulted, or dropped for a
    cluster-scoped kind), labels, annotation keys, then gpusched's pod annotations."""
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        e.invalid("metadata", meta, "must be an object")
        return
    _name(meta, kind, e)
    if KINDS[kind].namespaced:
        _namespace(meta, e)
    else:
        meta.pop("namespace", None)
    validate_labels(e.string_map(meta, "labels", "metadata.labels"), "metadata.labels", e)
    annotations = e.string_map(meta, "annotations", "metadata.annotations")
    validate_annotations(annotations, "metadata.annotations", e)
    validate_owner_references(meta, e)
    validate_finalizers(meta, e)
    if kind == "Pod":
        validate_pod_annotations(annotations, "metadata.annotations", e)


# Kinds whose names are not DNS-1123 subdomains: ``ValidateNamespaceName`` (NameIsDNSLabel),
# ``ValidateServiceName`` (NameIsDNS1035Label), pkg/apis/core/validation/validation.go.
_NAME_RULES: dict[str, Callable[[str], list[str]]] = {"Namespace": dns1123_label_errors,
                                                       "Service": dns1035_label_errors}


def _name(meta: dict[str, Any], kind: str, e: Errors) -> None:
    """``metadata.name``, else ``generateName`` (checked with a suffix in place of a final
    ``-``), else the required error; a Namespace's name is a DNS label, a Service's a DNS-1035 label."""
    name_errors = _NAME_RULES.get(kind, dns1123_subdomain_errors)
    name = e.string(meta, "name", "metadata.name")
    generate = e.string(meta, "generateName", "metadata.generateName")
    if name:
        for msg in name_errors(name):
            e.invalid("metadata.name", name, msg)
    elif generate:
        for msg in name_errors(generate[:-1] + "a" if generate.endswith("-") else generate):
            e.invalid("metadata.generateName", generate, msg)
    elif "name" not in meta or name == "":
        e.required("metadata.name", "name or generateName is required")


def _namespace(meta: dict[str, Any], e: Errors) -> None:
    """A namespaced object's namespace: ``default`` when unset, else a DNS label."""
    namespace = e.string(meta, "namespace", "metadata.namespace")
    if not namespace and not isinstance(meta.get("namespace"), (int, float, dict, list)):
        meta["namespace"] = "default"
    elif namespace:
        for msg in dns1123_label_errors(namespace):
            e.invalid("metadata.namespace", namespace, msg)


# ----------------------------------------------------------------------------------------------
# Pods and workloads


def _pod(obj: dict[str, Any], e: Errors) -> None:
    if obj.get("spec") is None:
        e.required("spec.containers")
        return
    meta = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
    validate_pod_spec(obj.get("spec"), "spec", e, pod_name=str(meta.get("name") or "") or None)
    if not e:
        _pod_gpu_share(obj, e)


def _pod_gpu_share(obj: dict[str, Any], e: Errors) -> None:
    """The pod's GPU share as a whole (containers and sidecars added up, as the scheduler reads
    it) is 1..1000 milli-GPU too, not only each container's: a pod whose containers each ask
    500 and 501 is refused here, not by the first reader of the stored pod."""
    from gpusched.errors import InvalidError
    from gpusched.objects.pod import pod_gpu_share

    try:
        pod_gpu_share(obj)
    except InvalidError as err:
        e.items.extend(err.errors)


def _template(spec: dict[str, Any], e: Errors, restart_policies: tuple[str, ...]) -> dict[str, Any]:
    """Validate ``spec.template``; return its labels."""
    template = e.mapping(spec, "template", "spec.template")
    if template is None:
        e.required("spec.template")
        return {}
    meta = e.mapping(template, "metadata", "spec.template.metadata") or {}
    labels = e.string_map(meta, "labels", "spec.template.metadata.labels")
    validate_labels(labels, "spec.template.metadata.labels", e)
    validate_pod_annotations(e.string_map(meta, "annotations", "spec.template.metadata.annotations"),
                             "spec.template.metadata.annotations", e)
    validate_pod_spec(template.get("spec"), "spec.template.spec", e, restart_policies)
    return labels


def _selector_and_template(obj: dict[str, Any], e: Errors, restart_policies: tuple[str, ...], selector_required: bool,
                           ) -> dict[str, Any]:
    spec = _spec(obj, e)
    labels = _template(spec, e, restart_policies)
    selector = spec.get("selector")
    if selector is None:
        if selector_required:
            e.required("spec.selector")
        return spec
    errors_before = len(e.items)
    validate_label_selector(selector, "spec.selector", e)
    if len(e.items) != errors_before or not isinstance(selector, dict):
        return spec
    parsed = selector_from_dict(selector)
    if parsed is not None and not parsed.match_labels and not parsed.match_expressions:
        e.invalid("spec.selector", selector, f"empty selector is invalid for {obj['kind'].lower()}")
    elif not matches(parsed, labels):
        e.invalid("spec.template.metadata.labels", labels, "`selector` does not match template `labels`")
    return spec


def _replicas(spec: dict[str, Any], e: Errors) -> None:
    if "replicas" not in spec or spec["replicas"] is None:
        spec["replicas"] = 1
    e.integer(spec, "replicas", "spec.replicas", minimum=0, maximum=limits.MAX_REPLICAS)


def _deployment(obj: dict[str, Any], e: Errors) -> None:
    spec = _selector_and_template(obj, e, ("Always",), selector_required=True)
    _replicas(spec, e)
    _strategy_defaults(spec, "strategy", {"maxUnavailable": "25%", "maxSurge": "25%"})
    spec.setdefault("progressDeadlineSeconds", 600)
    if obj["kind"] == "Deployment":
        validate_deployment_spec(spec, e)
    else:
        e.integer(spec, "minReadySeconds", "spec.minReadySeconds", minimum=0)


def _statefulset(obj: dict[str, Any], e: Errors) -> None:
    spec = _selector_and_template(obj, e, ("Always",), selector_required=True)
    _replicas(spec, e)
    if isinstance(spec, dict):
        default_statefulset_spec(spec)
        validate_statefulset_spec(spec, e)


def _daemonset(obj: dict[str, Any], e: Errors) -> None:
    spec = _selector_and_template(obj, e, ("Always",), selector_required=True)
    _strategy_defaults(spec, "updateStrategy", {"maxUnavailable": 1, "maxSurge": 0})


def _strategy_defaults(spec: dict[str, Any], field: str, rolling: dict[str, Any]) -> None:
    """apps/v1 defaults.go SetDefaults_Deployment / SetDefaults_DaemonSet: RollingUpdate with
    its limits, revisionHistoryLimit 10 (kubectl rollout status reads the strategy type)."""
    if not isinstance(spec, dict):
        return
    strategy = spec.setdefault(field, {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate" and isinstance(strategy.setdefault("rollingUpdate", {}), dict):
            for key, value in rolling.items():
                strategy["rollingUpdate"].setdefault(key, value)
    spec.setdefault("revisionHistoryLimit", 10)


def _job(obj: dict[str, Any], e: Errors) -> None:
    spec = _selector_and_template(obj, e, ("OnFailure", "Never"), selector_required=False)
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    bounds = {"completions": limits.MAX_JOB_COMPLETIONS, "parallelism": limits.MAX_JOB_PARALLELISM}
    for field in ("completions", "parallelism", "backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        e.integer(spec, field, f"spec.{field}", minimum=0, maximum=bounds.get(field))
    validate_completion_mode(spec, e)


# ----------------------------------------------------------------------------------------------
# Leases (coordination.k8s.io/v1): leader election records, validated as lightly as upstream

_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$")


def _lease(obj: dict[str, Any], e: Errors) -> None:
    """``spec.holderIdentity`` a string, ``leaseDurationSeconds`` > 0, ``leaseTransitions`` >= 0,
    ``acquireTime``/``renewTime`` RFC 3339 (MicroTime: ``2024-01-01T00:00:00.000000Z``)."""
    spec = _spec(obj, e)
    e.string(spec, "holderIdentity", "spec.holderIdentity")
    duration = e.integer(spec, "leaseDurationSeconds", "spec.leaseDurationSeconds")
    if duration is not None and duration <= 0:
        e.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0")
    e.integer(spec, "leaseTransitions", "spec.leaseTransitions", minimum=0)
    for field in ("acquireTime", "renewTime"):
        value = spec.get(field)
        if value is not None and not (isinstance(value, str) and _RFC3339.match(value)):
            e.invalid(f"spec.{field}", value,
                      "must be an RFC 3339 time with microseconds (2006-01-02T15:04:05.000000Z)")


def _custom_resource(obj: dict[str, Any], e: Errors) -> None:
    """A CRD kind gpusched only stores: the CRD's defaults and schema (``objects.crd_validation``);
    its webhook's rules are admission's (``cluster/admission/kueue_*.py``)."""
    apply_defaults(obj)
    validate_custom(obj, e)


# ----------------------------------------------------------------------------------------------
# RuntimeClass (node.k8s.io/v1), pkg/apis/node/validation/validation.go ValidateRuntimeClass


def _runtime_class(obj: dict[str, Any], e: Errors) -> None:
    """``handler`` a DNS-1123 label; ``overhead.podFixed`` quantities; ``scheduling.nodeSelector``
    labels and ``scheduling.tolerations`` as a pod's."""
    handler = obj.get("handler")
    if not isinstance(handler, str):
        e.invalid("handler", handler if handler is not None else "", "must be a string") \
            if handler is not None else e.required("handler")
    else:
        for msg in dns1123_label_errors(handler):
            e.invalid("handler", handler, msg)
    overhead = e.mapping(obj, "overhead", "overhead") or {}
    for name, value in sorted((e.mapping(overhead, "podFixed", "overhead.podFixed") or {}).items()):
        e.quantity(value, f"overhead.podFixed[{name}]")
    scheduling = e.mapping(obj, "scheduling", "scheduling") or {}
    validate_labels(e.string_map(scheduling, "nodeSelector", "scheduling.nodeSelector"),
                    "scheduling.nodeSelector", e)
    validate_tolerations(e.items_of(scheduling, "tolerations", "scheduling.tolerations") or [],
                         "scheduling.tolerations", e)


_VALIDATORS: dict[str, Validator] = {
    "RuntimeClass": _runtime_class,
    "Pod": _pod,
    "Deployment": _deployment,
    "ReplicaSet": _deployment,
    "DaemonSet": _daemonset,
    "StatefulSet": _statefulset,
    "Job": _job,
    "PriorityClass": _priority_class,
    "ResourceQuota": _resource_quota,
    "LimitRange": _limit_range,
    "PodDisruptionBudget": _pdb,
    "ConfigMap": _config_map,
    "Node": _node,
    "NodePool": _node_pool,
    "Lease": _lease,
    **CORE_KIND_VALIDATORS,       # Service, storage, Secret, NetworkPolicy, HPA/VPA ...
    **STOCK_KIND_VALIDATORS,      # CSINode, CSIDriver, CSIStorageCapacity, VolumeAttachment
    **DRA_VALIDATORS,             # DeviceClass, ResourceClaim, ResourceClaimTemplate
    **DRA_SLICE_VALIDATORS,       # ResourceSlice
    "ClusterPolicy": _cluster_policy,
    **{kind: _custom_resource for kind in CRD_KINDS},   # Kueue, PodGroup, JobSet
}
