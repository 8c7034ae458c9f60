"""The batch/v1 Job integration's pure half, as Kueue's ``pkg/controller/jobs/job/job_controller.go``,
``jobframework/workload_names.go`` and ``pkg/podset/podset.go``: the Workload a queued Job gets
(one PodSet ``main`` of ``min(parallelism, completions)`` pods, named
``job-<name>-<first 5 hex of sha1(kind, group, name, uid)>``), the admission written into its
status from a flavor assignment, and the pod template an admitted Job runs with (the flavors'
nodeLabels merged into ``nodeSelector``, their tolerations appended without duplicates; a
conflicting selector key is upstream's permanent ``invalid admission check PodSetUpdate`` error),
with the PodSet label, the Workload annotation and, for a PodSet placed by topology, the
``kueue.x-k8s.io/topology`` scheduling gate the topology ungater removes.

Neighbours: ``flavors`` (the assignment), ``inputs`` (flavors), ``amounts``; the Kueue
controllers write what these build.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from gpusched.kueue.amounts import amount_string
from gpusched.kueue.flavors import Assignment
from gpusched.kueue.tas_assignment import encode
from gpusched.kueue.tas_request import (JOB_COMPLETION_INDEX, PODSET_LABEL, TOPOLOGY_GATE, UNCONSTRAINED,
                                        WORKLOAD_ANNOTATION, topology_request_field)

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
DEFAULT_PODSET = "main"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
_MAX_PREFIX = 253 - 1 - 5


def workload_name(owner_name: str, owner_uid: str, kind: str = "Job", group: str = "batch") -> str:
    """``GetWorkloadNameForOwnerWithGVK``.

    >>> workload_name("sample", "uid-1")[:11]
    'job-sample-'
    """
    digest = hashlib.sha1(f"{kind}\n{group}\n{owner_name}\n{owner_uid}".encode()).hexdigest()
    return f"{(kind.lower() + '-' + owner_name)[:_MAX_PREFIX]}-{digest[:5]}"


def pods_count(job: Mapping[str, Any]) -> int:
    """``podsCount``: parallelism (default 1), at most completions."""
    spec = job.get("spec") or {}
    count = int(spec.get("parallelism", 1) if spec.get("parallelism") is not None else 1)
    completions = spec.get("completions")
    return min(count, int(completions)) if completions is not None else count


def workload_for_job(job: Mapping[str, Any], priority: int = 0, priority_class: str | None = None) -> dict[str, Any]:
    """The Workload Kueue creates for a queued Job (its controller owner is the Job)."""
    meta = job.get("metadata") or {}
    spec = job.get("spec") or {}
    template = copy.deepcopy(spec.get("template") or {})
    podset: dict[str, Any] = {"name": DEFAULT_PODSET, "count": pods_count(job), "template": template}
    topology = topology_request_field((template.get("metadata") or {}).get("annotations") or {}, JOB_COMPLETION_INDEX)
    if topology:
        podset["topologyRequest"] = topology
    minimum = (meta.get("annotations") or {}).get(MIN_PARALLELISM)
    if minimum is not None and str(minimum).isdigit():
        podset["minCount"] = int(minimum)
    body: dict[str, Any] = {"queueName": (meta.get("labels") or {}).get(QUEUE_LABEL, ""),
                            "podSets": [podset], "priority": priority, "active": True}
    if priority_class:
        body["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                    "name": priority_class}
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": meta.get("name", ""), "uid": meta.get("uid", ""),
             "controller": True, "blockOwnerDeletion": True}
    return {"apiVersion": KUEUE_API, "kind": "Workload",
            "metadata": {"name": workload_name(meta.get("name", ""), meta.get("uid", "")),
                         "namespace": meta.get("namespace", "default"), "ownerReferences": [owner],
                         "labels": {"kueue.x-k8s.io/job-uid": meta.get("uid", "")}},
            "spec": body}


def admission_of(cluster_queue: str, assignment: Assignment) -> dict[str, Any]:
    """``status.admission`` from a flavor assignment."""
    podsets = []
    for podset in assignment.podsets:
        podsets.append({
            "name": podset.name,
            "flavors": {res: choice.name for res, choice in sorted(podset.flavors.items())},
            "resourceUsage": {res: amount_string(res, podset.requests.get(res, 0))
                              for res in sorted(podset.flavors)},
            "count": podset.count,
        })
        if podset.topology is not None:
            podsets[-1]["topologyAssignment"] = encode(podset.topology)
    return {"clusterQueue": cluster_queue, "podSetAssignments": podsets}


def _toleration_key(toleration: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(toleration.get(field) or "") for field in ("key", "operator", "value", "effect"))


def podset_meta(workload: Mapping[str, Any], index: int) -> tuple[dict[str, str], dict[str, str], list[str]]:
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


def _merge_meta(out: dict[str, Any], meta: tuple[dict[str, str], dict[str, str], list[str]]) -> None:
    labels, annotations, gates = meta
    metadata = out.setdefault("metadata", {})
    for field, values in (("labels", labels), ("annotations", annotations)):
        if values:
            metadata[field] = {**(metadata.get(field) or {}), **values}
    spec = out.setdefault("spec", {})
    have = [g for g in spec.get("schedulingGates") or [] if isinstance(g, dict)]
    names = {g.get("name") for g in have}
    if gates:
        spec["schedulingGates"] = have + [{"name": gate} for gate in gates if gate not in names]


def admitted_template(template: Mapping[str, Any], node_labels: Mapping[str, str],
                      tolerations: Sequence[Mapping[str, Any]],
                      meta: tuple[dict[str, str], dict[str, str], list[str]] = ({}, {}, [])) -> tuple[dict[str, Any], str]:
    """The pod template with the flavors' labels and tolerations and ``meta``
    (``podset_meta``) merged in (``podset.Merge``), or the unchanged template and the conflict
    error."""
    out = copy.deepcopy(dict(template))
    _merge_meta(out, meta)
    spec = out.setdefault("spec", {})
    selector = dict(spec.get("nodeSelector") or {})
    for key, value in node_labels.items():
        if key in selector and selector[key] != value:
            return dict(template), (f"invalid admission check PodSetUpdate: conflict for nodeSelector: "
                                    f"conflict for key={key}, value1={selector[key]}, value2={value}")
        selector[key] = value
    if selector:
        spec["nodeSelector"] = selector
    have = list(spec.get("tolerations") or [])
    seen = {_toleration_key(t) for t in have}
    for toleration in tolerations:
        if _toleration_key(toleration) not in seen:
            have.append(dict(toleration))
            seen.add(_toleration_key(toleration))
    if have:
        spec["tolerations"] = have
    return out, ""
