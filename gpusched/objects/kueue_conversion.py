"""Kueue's ``v1beta1`` objects, converted to ``v1beta2`` (the storage version) on the way in.

Kueue's CRDs serve both versions, ``v1beta1`` marked ``deprecated: true`` with the
``deprecationWarning`` "This version is deprecated. Use v1beta2 instead." (the
``+kubebuilder:deprecatedversion`` marker of ``apis/kueue/v1beta1/*_types.go``); the API server
sends that text as a ``Warning`` header with every v1beta1 request, which kubectl prints as
``Warning: This version is deprecated. Use v1beta2 instead.``. The conversion webhook turns a
v1beta1 object into the v1beta2 one stored (``apis/kueue/v1beta1/*_conversion.go``):

- ClusterQueue: ``spec.cohort`` -> ``spec.cohortName``; ``spec.admissionChecks: [a]`` ->
  ``spec.admissionChecksStrategy.admissionChecks: [{name: a}]``; ``flavorFungibility``
  ``whenCanBorrow: Borrow`` and ``whenCanPreempt: Preempt`` -> ``MayStopSearch``;
- Workload: ``spec.priorityClassName`` with ``spec.priorityClassSource``
  ``kueue.x-k8s.io/workloadpriorityclass`` -> ``spec.priorityClassRef`` {group kueue.x-k8s.io,
  kind WorkloadPriorityClass}, ``scheduling.k8s.io/priorityclass`` -> {group scheduling.k8s.io,
  kind PriorityClass}, no source -> no reference; ``status.accumulatedPastExexcutionTimeSeconds``
  (v1beta1's spelling) -> ``accumulatedPastExecutionTimeSeconds``; an admission's flat
  ``topologyAssignment.domains`` -> v1beta2's compressed ``slices`` (``topology_assignment``);
- LocalQueue: ``status.flavorUsage`` -> ``status.flavorsUsage``; ``status.flavors`` dropped;
- ResourceFlavor, Cohort, WorkloadPriorityClass, Topology: the same fields.

:func:`to_v1beta1` is the way back (``Convert_v1beta2_*_To_v1beta1_*``), for what ``serve``
answers on a v1beta1 path: ``cohortName`` -> ``cohort``, ``priorityClassRef`` ->
``priorityClassName`` and ``priorityClassSource``, ``flavorsUsage`` -> ``flavorUsage``, a
``topologyAssignment``'s slices -> flat domains.

Neighbours: ``objects.strict`` and ``server.decoding`` convert before decoding;
``objects.kinds`` accepts ``kueue.x-k8s.io/v1beta1`` for these kinds.
"""

from __future__ import annotations

from typing import Any, Callable

import copy

from gpusched.objects import topology_assignment

GROUP = "kueue.x-k8s.io"
V1BETA1, V1BETA2 = f"{GROUP}/v1beta1", f"{GROUP}/v1beta2"
DEPRECATION_WARNING = "This version is deprecated. Use v1beta2 instead."
KINDS = frozenset({"ResourceFlavor", "ClusterQueue", "Cohort", "LocalQueue", "Workload",
                   "WorkloadPriorityClass", "Topology"})
PRIORITY_SOURCES = {"kueue.x-k8s.io/workloadpriorityclass": (GROUP, "WorkloadPriorityClass"),
                    "scheduling.k8s.io/priorityclass": ("scheduling.k8s.io", "PriorityClass")}


def _section(obj: dict[str, Any], key: str) -> dict[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def _cluster_queue(obj: dict[str, Any]) -> None:
    spec = _section(obj, "spec")
    if "cohort" in spec:
        spec["cohortName"] = spec.pop("cohort")
    checks = spec.pop("admissionChecks", None)
    if isinstance(checks, list) and checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": name} for name in checks]}
    fungibility = _section(spec, "flavorFungibility")
    if fungibility.get("whenCanBorrow") == "Borrow":
        fungibility["whenCanBorrow"] = "MayStopSearch"
    if fungibility.get("whenCanPreempt") == "Preempt":
        fungibility["whenCanPreempt"] = "MayStopSearch"


def _workload(obj: dict[str, Any]) -> None:
    spec = _section(obj, "spec")
    name = spec.pop("priorityClassName", None)
    source = spec.pop("priorityClassSource", None)
    if isinstance(source, str) and source in PRIORITY_SOURCES:
        group, kind = PRIORITY_SOURCES[source]
        spec["priorityClassRef"] = {"group": group, "kind": kind, "name": name or ""}
    status = _section(obj, "status")
    if "accumulatedPastExexcutionTimeSeconds" in status:
        status["accumulatedPastExecutionTimeSeconds"] = status.pop("accumulatedPastExexcutionTimeSeconds")
    _topology_assignments(status, topology_assignment.from_v1beta1)


def _topology_assignments(status: dict[str, Any], convert: Callable[[Any], Any]) -> None:
    """Each ``status.admission.podSetAssignments[].topologyAssignment`` converted (copies)."""
    admission = status.get("admission")
    if not isinstance(admission, dict) or not isinstance(admission.get("podSetAssignments"), list):
        return
    assignments = [dict(a, topologyAssignment=convert(a["topologyAssignment"]))
                   if isinstance(a, dict) and "topologyAssignment" in a else a
                   for a in admission["podSetAssignments"]]
    status["admission"] = dict(admission, podSetAssignments=assignments)


def _local_queue(obj: dict[str, Any]) -> None:
    status = _section(obj, "status")
    status.pop("flavors", None)
    if "flavorUsage" in status:
        status["flavorsUsage"] = status.pop("flavorUsage")


CONVERSIONS: dict[str, Callable[[dict[str, Any]], None]] = {
    "ClusterQueue": _cluster_queue, "Workload": _workload, "LocalQueue": _local_queue,
}


def is_v1beta1(obj: object) -> bool:
    return isinstance(obj, dict) and obj.get("apiVersion") == V1BETA1 and obj.get("kind") in KINDS


def to_storage_version(obj: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(the object as v1beta2, the warnings to send); anything but a Kueue v1beta1 object is
    returned as it is. ``obj`` is not changed."""
    if not is_v1beta1(obj):
        return obj, []
    out = copy.copy(obj)        # shallow copies keep a YAML mapping's repeated-key marks
    for key in ("spec", "status"):
        if isinstance(out.get(key), dict):
            out[key] = copy.copy(out[key])
            if isinstance(out[key].get("flavorFungibility"), dict):
                out[key]["flavorFungibility"] = copy.copy(out[key]["flavorFungibility"])
    out["apiVersion"] = V1BETA2
    convert = CONVERSIONS.get(str(obj["kind"]))
    if convert is not None:
        convert(out)
    return out, [DEPRECATION_WARNING]


def _back(obj: dict[str, Any]) -> None:
    """v1beta2 -> v1beta1 of the fields v1beta1 names differently (the others are shared)."""
    spec, status = _section(obj, "spec"), _section(obj, "status")
    if obj.get("kind") == "ClusterQueue" and "cohortName" in spec:
        spec["cohort"] = spec.pop("cohortName")
    if obj.get("kind") == "Workload":
        ref = spec.pop("priorityClassRef", None)
        for source, (group, kind) in PRIORITY_SOURCES.items():
            if isinstance(ref, dict) and (ref.get("group"), ref.get("kind")) == (group, kind):
                spec["priorityClassSource"], spec["priorityClassName"] = source, ref.get("name", "")
        if "accumulatedPastExecutionTimeSeconds" in status:
            status["accumulatedPastExexcutionTimeSeconds"] = status.pop("accumulatedPastExecutionTimeSeconds")
        _topology_assignments(status, topology_assignment.to_v1beta1)
    if obj.get("kind") == "LocalQueue" and "flavorsUsage" in status:
        status["flavorUsage"] = status.pop("flavorsUsage")


def to_v1beta1(obj: dict[str, Any]) -> dict[str, Any]:
    """A stored (v1beta2) Kueue object as v1beta1 presents it; ``obj`` is not changed."""
    if not (isinstance(obj, dict) and obj.get("apiVersion") == V1BETA2 and obj.get("kind") in KINDS):
        return obj
    out = dict(obj, apiVersion=V1BETA1)
    for key in ("spec", "status"):
        if isinstance(out.get(key), dict):
            out[key] = dict(out[key])
    _back(out)
    return out
