"""The batch/v1 Job integration's pure half, as Kueue's ``pkg/controller/jobs/job/job_controller.go``
and ``pkg/podset/podset.go``: the Job's :class:`~gpusched.kueue.jobframework.Integration` (one
PodSet ``main`` of ``min(parallelism, completions)`` pods; run by merging its PodSet's info into the
template; restored to the Workload's template, suspended), the admission written into a
Workload's status from a flavor assignment, and the pod template an admitted PodSet runs with
(the flavors' nodeLabels merged into ``nodeSelector``, their tolerations appended without
duplicates; a conflicting selector key is upstream's permanent ``invalid admission check
PodSetUpdate`` error), with the PodSet label, the Workload annotation and, for a PodSet placed by
topology, the ``kueue.x-k8s.io/topology`` scheduling gate the topology ungater removes.

Neighbours: ``jobframework`` (the generic half: names, the Workload), ``flavors`` (the
assignment), ``amounts``; the Kueue controllers write what these build.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from gpusched.kueue.amounts import amount_string
from gpusched.kueue.flavors import Assignment
from gpusched.kueue.jobframework import (DEFAULT_PODSET, NO_META, Integration, PodSetInfo, PodSetMeta,
                                         workload_for)
from gpusched.kueue.pods_ready import job_pods_ready
from gpusched.kueue.tas_assignment import encode
from gpusched.kueue.tas_request import JOB_COMPLETION_INDEX, topology_request_field

MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"


def pods_count(job: Mapping[str, Any]) -> int:
    """``podsCount``: parallelism (default 1), at most completions."""
    spec = job.get("spec") or {}
    count = int(spec.get("parallelism", 1) if spec.get("parallelism") is not None else 1)
    completions = spec.get("completions")
    return min(count, int(completions)) if completions is not None else count


def _podsets(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``PodSets``: one PodSet ``main`` of the Job's template, with its topology request and the
    ``job-min-parallelism`` annotation's ``minCount``."""
    meta = job.get("metadata") or {}
    template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
    podset: dict[str, Any] = {"name": DEFAULT_PODSET, "count": pods_count(job), "template": template}
    topology = topology_request_field((template.get("metadata") or {}).get("annotations") or {}, JOB_COMPLETION_INDEX)
    if topology:
        podset["topologyRequest"] = topology
    minimum = (meta.get("annotations") or {}).get(MIN_PARALLELISM)
    if minimum is not None and str(minimum).isdigit():
        podset["minCount"] = int(minimum)
    return [podset]


def _run_with_podsets_info(job: Mapping[str, Any], infos: Sequence[PodSetInfo]) -> tuple[dict[str, Any], str]:
    """``RunWithPodSetsInfo``: the template with every PodSet's flavors (a Job has one) and the
    first PodSet's meta merged in, unsuspended; or the conflict error."""
    node_labels: dict[str, str] = {}
    tolerations: list[dict[str, Any]] = []
    for info in infos:
        node_labels.update(info.node_selector)
        tolerations.extend(info.tolerations)
    template, error = admitted_template((job.get("spec") or {}).get("template") or {}, node_labels, tolerations,
                                        infos[0].meta if infos else NO_META)
    if error:
        return dict(job), error
    body = copy.deepcopy(dict(job))
    body["spec"]["template"] = template
    body["spec"]["suspend"] = False
    return body, ""


def _restore_podsets_info(job: Mapping[str, Any], workload_podsets: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``RestorePodSetsInfo`` + ``Suspend``: the template the Workload recorded, suspended, its
    ``startTime`` cleared."""
    body = copy.deepcopy(dict(job))
    body["spec"]["suspend"] = True
    if workload_podsets:
        body["spec"]["template"] = copy.deepcopy(workload_podsets[0].get("template") or {})
    body.setdefault("status", {}).pop("startTime", None)
    return body


def _priority_class(job: Mapping[str, Any]) -> str | None:
    """``PriorityClass``: the pod template's ``priorityClassName``."""
    name = (((job.get("spec") or {}).get("template") or {}).get("spec") or {}).get("priorityClassName")
    return str(name) if name else None


JOB = Integration("Job", "batch/v1", "Complete", _podsets, _run_with_podsets_info, _restore_podsets_info,
                  job_pods_ready, _priority_class)


def workload_for_job(job: Mapping[str, Any], priority: int = 0, priority_class: str | None = None) -> dict[str, Any]:
    """The Workload Kueue creates for a queued Job (its controller owner is the Job)."""
    return workload_for(JOB, job, priority, priority_class)


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


def _merge_meta(out: dict[str, Any], meta: PodSetMeta) -> None:
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
                      meta: PodSetMeta = NO_META) -> tuple[dict[str, Any], str]:
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
