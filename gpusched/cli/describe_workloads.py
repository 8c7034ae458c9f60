"""``describe`` pages of the workload kinds in kubectl's layout: Deployment, ReplicaSet, Job and
DaemonSet.

Each page mirrors one function of kubectl's ``pkg/describe/describe.go`` (named in its
docstring), with dates in Go's RFC1123Z and the same tabbed cells; ``cli.output.tabwrite`` aligns
them as kubectl's tabwriter does. Values come from the stored object as it is, as kubectl reads
them through ``gpusched serve``.

Neighbours: ``cli.describe_template`` (the Pod Template block), ``cli.describe_base`` (shared
blocks), ``cli.describe`` (dispatch).
"""

from __future__ import annotations

from typing import Any, cast

from gpusched.cli.describe_base import (NONE, Related, annotation_lines, controlled_by, event_lines,
                                        go_value, kube_date, label_lines, meta, selector_text)
from gpusched.cli.describe_template import pod_template_lines
from gpusched.cli.output import parse_timestamp
from gpusched.objects.duration import format_duration

HASH_LABEL = "pod-template-hash"   # appsv1.DefaultDeploymentUniqueLabelKey


def _head(obj: dict[str, Any]) -> list[str]:
    return [f"Name:\t{meta(obj).get('name', '')}", f"Namespace:\t{meta(obj).get('namespace', '')}"]


def _labels_and_annotations(obj: dict[str, Any]) -> list[str]:
    return [*label_lines("Labels", meta(obj).get("labels")),
            *annotation_lines("Annotations", meta(obj).get("annotations"))]


def _conditions(obj: dict[str, Any]) -> list[str]:
    """The Deployment/ReplicaSet ``Conditions:`` table (type cell printed as ``"%v "``)."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    if not conditions:
        return []
    return ["Conditions:", "  Type\tStatus\tReason", "  ----\t------\t------"] + [
        f"  {c.get('type', '')} \t{c.get('status', '')}\t{c.get('reason', '')}" for c in conditions]


# ---- Deployment -----------------------------------------------------------------------------


def describe_deployment(deployment: dict[str, Any], related: Related) -> list[str]:
    """describe.go describeDeployment (with DeploymentDescriber's old/new ReplicaSet lookup)."""
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    strategy = spec.get("strategy") or {}
    lines = [*_head(deployment),
             f"CreationTimestamp:\t{kube_date(meta(deployment).get('creationTimestamp'))}",
             *_labels_and_annotations(deployment),
             f"Selector:\t{selector_text(spec.get('selector'))}",
             f"Replicas:\t{spec.get('replicas', 1)} desired | {status.get('updatedReplicas', 0)} updated"
             f" | {status.get('replicas', 0)} total | {status.get('availableReplicas', 0)} available"
             f" | {status.get('unavailableReplicas', 0)} unavailable",
             f"StrategyType:\t{strategy.get('type', '')}",
             f"MinReadySeconds:\t{spec.get('minReadySeconds', 0)}"]
    if strategy.get("rollingUpdate") is not None:
        rolling = strategy["rollingUpdate"]
        lines.append(f"RollingUpdateStrategy:\t{rolling.get('maxUnavailable', 0)} max unavailable, "
                     f"{rolling.get('maxSurge', 0)} max surge")
    lines += pod_template_lines(spec.get("template"))
    lines += _conditions(deployment)
    old, new = replica_sets_of(deployment, related.lookup("ReplicaSet", meta(deployment).get("namespace")))
    if old or new:
        lines += [f"OldReplicaSets:\t{_rs_summary(old)}", f"NewReplicaSet:\t{_rs_summary(new)}"]
    return lines + event_lines(related.events, related.clock)


def replica_sets_of(deployment: dict[str, Any], replica_sets: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """kubectl's deploymentutil.GetAllReplicaSetsInChunks: the ReplicaSets the Deployment controls,
    oldest first (name breaks ties); the new one is the oldest whose template equals the
    Deployment's ignoring ``pod-template-hash``; all others are old."""
    uid = meta(deployment).get("uid")
    owned = [rs for rs in replica_sets if any(o.get("controller") and o.get("uid") == uid
                                             for o in meta(rs).get("ownerReferences") or [])]
    owned.sort(key=lambda rs: (meta(rs).get("creationTimestamp") or "", meta(rs).get("name", "")))
    template = _without_hash((deployment.get("spec") or {}).get("template"))
    new = next((rs for rs in owned if _without_hash((rs.get("spec") or {}).get("template")) == template), None)
    return [rs for rs in owned if rs is not new], [new] if new else []


def _without_hash(template: dict[str, Any] | None) -> dict[str, Any]:
    """A pod template with the hash label dropped and empty values pruned (apimachinery's
    Semantic.DeepEqual treats empty and nil maps and lists alike)."""
    template = dict(template or {})
    metadata = dict(template.get("metadata") or {})
    metadata["labels"] = {k: v for k, v in (metadata.get("labels") or {}).items() if k != HASH_LABEL}
    template["metadata"] = metadata
    return cast("dict[str, Any]", _pruned(template))      # a dict prunes to a dict


def _pruned(value: object) -> object:
    if isinstance(value, dict):
        return {k: _pruned(v) for k, v in value.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _rs_summary(replica_sets: list[dict[str, Any]]) -> str:
    """describe.go printReplicaSetsByLabels: ``name (status/spec replicas created)``, comma-joined."""
    return ", ".join(f"{meta(rs).get('name', '')} ({(rs.get('status') or {}).get('replicas', 0)}/"
                     f"{(rs.get('spec') or {}).get('replicas', 1)} replicas created)"
                     for rs in replica_sets) or NONE


# ---- ReplicaSet and DaemonSet ---------------------------------------------------------------


def pod_counts(owner: dict[str, Any], pods: list[dict[str, Any]]) -> str:
    """describe.go getPodStatusForController: the owner's pods (controller ownerReference by UID)
    by phase, as ``R Running / W Waiting / S Succeeded / F Failed``."""
    uid = meta(owner).get("uid")
    phases = [(p.get("status") or {}).get("phase") for p in pods
              if any(o.get("controller") and o.get("uid") == uid for o in meta(p).get("ownerReferences") or [])]
    return (f"{phases.count('Running')} Running / {phases.count('Pending')} Waiting / "
            f"{phases.count('Succeeded')} Succeeded / {phases.count('Failed')} Failed")


def describe_replicaset(rs: dict[str, Any], related: Related) -> list[str]:
    """describe.go describeReplicaSet."""
    spec, status = rs.get("spec") or {}, rs.get("status") or {}
    pods = related.lookup("Pod", meta(rs).get("namespace"))
    lines = [*_head(rs), f"Selector:\t{selector_text(spec.get('selector'), NONE)}",
             *_labels_and_annotations(rs), *controlled_by(rs),
             f"Replicas:\t{status.get('replicas', 0)} current / {spec.get('replicas', 1)} desired",
             f"Pods Status:\t{pod_counts(rs, pods)}",
             *pod_template_lines(spec.get("template")), *_conditions(rs)]
    return lines + event_lines(related.events, related.clock)


def describe_daemonset(daemon: dict[str, Any], related: Related) -> list[str]:
    """describe.go describeDaemonSet (the ``Number of Nodes`` lines have no tab: not aligned)."""
    spec, status = daemon.get("spec") or {}, daemon.get("status") or {}
    node_selector = ((spec.get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
    pods = related.lookup("Pod", meta(daemon).get("namespace"))
    lines = [f"Name:\t{meta(daemon).get('name', '')}", f"Selector:\t{selector_text(spec.get('selector'))}",
             f"Node-Selector:\t{','.join(f'{k}={v}' for k, v in sorted(node_selector.items())) or NONE}",
             *_labels_and_annotations(daemon),
             f"Desired Number of Nodes Scheduled: {status.get('desiredNumberScheduled', 0)}",
             f"Current Number of Nodes Scheduled: {status.get('currentNumberScheduled', 0)}",
             f"Number of Nodes Scheduled with Up-to-date Pods: {status.get('updatedNumberScheduled', 0)}",
             f"Number of Nodes Scheduled with Available Pods: {status.get('numberAvailable', 0)}",
             f"Number of Nodes Misscheduled: {status.get('numberMisscheduled', 0)}",
             f"Pods Status:\t{pod_counts(daemon, pods)}",
             *pod_template_lines(spec.get("template"))]
    return lines + event_lines(related.events, related.clock)


# ---- Job ------------------------------------------------------------------------------------


def describe_job(job: dict[str, Any], related: Related) -> list[str]:
    """describe.go describeJob."""
    spec = job.get("spec") or {}
    lines = [*_head(job), f"Selector:\t{selector_text(spec.get('selector'))}",
             *_labels_and_annotations(job), *controlled_by(job), *_job_spec_lines(spec),
             *_job_status_lines(job), *pod_template_lines(spec.get("template"))]
    return lines + event_lines(related.events, related.clock)


def _job_spec_lines(spec: dict[str, Any]) -> list[str]:
    lines = [f"Parallelism:\t{spec['parallelism']}"] if spec.get("parallelism") is not None else []
    lines.append(f"Completions:\t{spec.get('completions') if spec.get('completions') is not None else '<unset>'}")
    for title, field in (("Completion Mode", "completionMode"), ("Suspend", "suspend"),
                         ("Backoff Limit", "backoffLimit"),
                         ("TTL Seconds After Finished", "ttlSecondsAfterFinished")):
        if spec.get(field) is not None:
            lines.append(f"{title}:\t{go_value(spec[field])}")
    return lines


def _job_status_lines(job: dict[str, Any]) -> list[str]:
    spec, status = job.get("spec") or {}, job.get("status") or {}
    start, done = status.get("startTime"), status.get("completionTime")
    lines = [f"Start Time:\t{kube_date(start)}"] if start else []
    if done:
        lines.append(f"Completed At:\t{kube_date(done)}")
    if start and done:
        lines.append(f"Duration:\t{format_duration(_seconds(done) - _seconds(start))}")
    if spec.get("activeDeadlineSeconds") is not None:
        lines.append(f"Active Deadline Seconds:\t{spec['activeDeadlineSeconds']}s")
    ready = f" ({status['ready']} Ready)" if status.get("ready") is not None else ""
    lines.append(f"Pods Statuses:\t{status.get('active', 0)} Active{ready} / "
                 f"{status.get('succeeded', 0)} Succeeded / {status.get('failed', 0)} Failed")
    if spec.get("completionMode") == "Indexed":
        lines.append(f"Completed Indexes:\t{_cap_indexes(status.get('completedIndexes') or '')}")
    return lines


def _seconds(timestamp: str) -> float:
    return parse_timestamp(timestamp) or 0.0


def _cap_indexes(indexes: str, soft_limit: int = 50) -> str:
    """describe.go capIndexesListOrNone: cut after the first comma past 50 characters."""
    if not indexes:
        return NONE
    cut = indexes.find(",", soft_limit)
    return indexes if cut < 0 or len(indexes) <= soft_limit else indexes[:cut + 1] + "..."
