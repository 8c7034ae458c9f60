"""Kueue's job framework, pure half (``pkg/controller/jobframework/interface.go`` ``GenericJob``,
``workload_names.go``, ``pkg/podset/podset.go`` ``PodSetInfo``/``FromAssignment``): what every
integration of a suspendable owner with pod templates shares. An :class:`Integration` is the
small adapter one kind gives (its PodSets, how it runs with the admitted PodSets' info, how its
templates are restored, which condition ends it); :func:`workload_for` builds the Workload any
of them gets, :func:`podset_infos` what an admitted Workload's PodSets carry back, and
:func:`finished` whether the owner is done.

Neighbours: ``jobs`` (the batch/v1 Job integration), ``jobsets`` (JobSet); the one reconciler
over either is ``cluster.controllers.kueue.jobframework``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpusched.kueue.tas_request import PODSET_LABEL, TOPOLOGY_GATE, UNCONSTRAINED, WORKLOAD_ANNOTATION

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
DEFAULT_PODSET = "main"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
_MAX_PREFIX = 253 - 1 - 5

# What ``FromAssignment`` puts on an admitted PodSet's template besides the flavors: labels,
# annotations, scheduling gates.
PodSetMeta = tuple[dict[str, str], dict[str, str], list[str]]
NO_META: PodSetMeta = ({}, {}, [])


def workload_name(owner_name: str, owner_uid: str, kind: str = "Job", group: str = "batch") -> str:
    """``GetWorkloadNameForOwnerWithGVK``.

    >>> workload_name("sample", "uid-1")[:11]
    'job-sample-'
    """
    digest = hashlib.sha1(f"{kind}\n{group}\n{owner_name}\n{owner_uid}".encode()).hexdigest()
    return f"{(kind.lower() + '-' + owner_name)[:_MAX_PREFIX]}-{digest[:5]}"


@dataclass(frozen=True)
class PodSetInfo:
    """``podset.PodSetInfo`` of one admitted PodSet: its flavors' nodeLabels and tolerations, and
    ``meta`` (:func:`podset_meta`)."""

    name: str
    node_selector: dict[str, str]
    tolerations: list[dict[str, Any]]
    meta: PodSetMeta


def _no_priority_class(_owner: Mapping[str, Any]) -> str | None:
    return None


@dataclass(frozen=True)
class Integration:
    """``GenericJob`` for one kind, over the raw object.

    ``podsets`` is ``PodSets``; ``run_with_podsets_info`` returns the object to write, unsuspended
    with the infos merged into its templates, or the unchanged object and a conflict error;
    ``restore_podsets_info`` returns it suspended with the Workload's recorded templates;
    ``complete`` is the condition type that finishes it successfully (``Failed`` finishes it
    either way); ``pods_ready`` is ``PodsReady`` (waitForPodsReady's test); ``priority_class`` is
    ``JobWithPriorityClass`` (none by default)."""

    kind: str
    api_version: str
    complete: str
    podsets: Callable[[Mapping[str, Any]], list[dict[str, Any]]]
    run_with_podsets_info: Callable[[Mapping[str, Any], Sequence[PodSetInfo]], tuple[dict[str, Any], str]]
    restore_podsets_info: Callable[[Mapping[str, Any], Sequence[Mapping[str, Any]]], dict[str, Any]]
    pods_ready: Callable[[Mapping[str, Any]], bool]
    priority_class: Callable[[Mapping[str, Any]], str | None] = _no_priority_class

    def workload_name(self, owner: Mapping[str, Any]) -> str:
        """The name of the Workload ``owner`` gets."""
        meta = owner.get("metadata") or {}
        group = self.api_version.split("/")[0]
        return workload_name(str(meta.get("name", "")), str(meta.get("uid", "")), kind=self.kind, group=group)


def workload_for(integration: Integration, owner: Mapping[str, Any], priority: int = 0,
                 priority_class: str | None = None) -> dict[str, Any]:
    """The Workload Kueue creates for a queued ``owner`` (its controller owner is ``owner``)."""
    meta = owner.get("metadata") or {}
    body: dict[str, Any] = {"queueName": (meta.get("labels") or {}).get(QUEUE_LABEL, ""),
                            "podSets": integration.podsets(owner), "priority": priority, "active": True}
    if priority_class:
        body["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                    "name": priority_class}
    reference = {"apiVersion": integration.api_version, "kind": integration.kind, "name": meta.get("name", ""),
                 "uid": meta.get("uid", ""), "controller": True, "blockOwnerDeletion": True}
    return {"apiVersion": KUEUE_API, "kind": "Workload",
            "metadata": {"name": integration.workload_name(owner),
                         "namespace": meta.get("namespace", "default"), "ownerReferences": [reference],
                         "labels": {"kueue.x-k8s.io/job-uid": meta.get("uid", "")}},
            "spec": body}


def finished(integration: Integration, owner: Mapping[str, Any]) -> tuple[str, bool] | None:
    """``Finished``: the message and success of the owner's first true terminal condition
    (``complete`` or ``Failed``), or None while it runs."""
    for item in (owner.get("status") or {}).get("conditions") or ():
        if item.get("type") in (integration.complete, "Failed") and item.get("status") == "True":
            return str(item.get("message") or ""), item.get("type") == integration.complete
    return None


def podset_meta(workload: Mapping[str, Any], index: int) -> PodSetMeta:
    """What ``getPodSetsInfoFromStatus`` adds to an admitted PodSet's pod template besides the
    flavors: the ``kueue.x-k8s.io/podset`` label, the ``kueue.x-k8s.io/workload`` annotation,
    and for a PodSet placed by topology the ``kueue.x-k8s.io/topology`` scheduling gate (with
    ``podset-unconstrained-topology: "true"`` when TAS was implied) (``podset.FromAssignment``)."""
    assignments = ((workload.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []
    podsets = (workload.get("spec") or {}).get("podSets") or []
    if index >= len(assignments) or index >= len(podsets):
        return {}, {}, []
    labels = {PODSET_LABEL: str(assignments[index].get("name", DEFAULT_PODSET))}
    annotations = {WORKLOAD_ANNOTATION: str((workload.get("metadata") or {}).get("name", ""))}
    if not assignments[index].get("topologyAssignment"):
        return labels, annotations, []
    request = podsets[index].get("topologyRequest") or {}
    if not any(key in request for key in ("required", "preferred", "unconstrained")):
        annotations[UNCONSTRAINED] = "true"
    return labels, annotations, [TOPOLOGY_GATE]


def podset_infos(workload: Mapping[str, Any], flavor_spec: Callable[[str], Mapping[str, Any]]) -> list[PodSetInfo]:
    """One :class:`PodSetInfo` per PodSet assignment of the admitted ``workload``: the nodeLabels
    and tolerations of its flavors (``flavor_spec``: a ResourceFlavor's spec by name, in name
    order) and its :func:`podset_meta`."""
    infos = []
    assignments = ((workload.get("status") or {}).get("admission") or {}).get("podSetAssignments") or ()
    for index, podset in enumerate(assignments):
        labels: dict[str, str] = {}
        tolerations: list[dict[str, Any]] = []
        for name in sorted(set((podset.get("flavors") or {}).values())):
            spec = flavor_spec(name)
            labels.update(spec.get("nodeLabels") or {})
            tolerations.extend(spec.get("tolerations") or [])
        infos.append(PodSetInfo(str(podset.get("name", "")), labels, tolerations, podset_meta(workload, index)))
    return infos
