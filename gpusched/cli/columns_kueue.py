"""``get`` columns of Kueue's kinds, PodGroup and JobSet: their CRDs' ``additionalPrinterColumns``.

kubectl upper-cases a CRD column's name; a ``priority: 1`` column shows only with ``-o wide``
and keeps its place among the others; a path that finds nothing is an empty cell
(apiextensions' tableconvertor gives ``nil``). A CRD that declares no columns gets NAME and AGE
(``serveDefaultColumnsIfEmpty``): ResourceFlavor, Cohort, Topology.

- ClusterQueue (``kueue.x-k8s.io_clusterqueues.yaml``, v1beta2): ``Cohort`` .spec.cohortName,
  ``Strategy`` .spec.queueingStrategy (wide), ``Pending Workloads`` .status.pendingWorkloads,
  ``Admitted Workloads`` .status.admittedWorkloads (wide); no Age.
- LocalQueue: ``ClusterQueue`` .spec.clusterQueue, ``Pending Workloads``, ``Admitted
  Workloads``; no Age.
- Workload: ``Queue`` .spec.queueName, ``Reserved in`` .status.admission.clusterQueue,
  ``Admitted`` and ``Finished`` (the status of that condition), ``Age``.
- WorkloadPriorityClass: ``Value`` .value; no Age.
- PodGroup (scheduler-plugins ``manifests/coscheduling/crd.yaml``): Phase, MinMember, Running,
  Succeeded, Failed, Age. JobSet (``jobset.x-k8s.io_jobsets.yaml``): TerminalState, Restarts,
  Completed, Suspended, Age.

``KUEUE_COLUMNS``: kind -> (header, cells, wide header, wide cells, wide order), the wide order
placing each wide column where the CRD lists it.

Neighbours: ``cli.columns`` (registers these), ``cli.output`` (Clock).
"""

from __future__ import annotations

from typing import Any, Callable

from gpusched.cli.output import Clock

Row = list[str]
Cells = Callable[[dict[str, Any], Clock], Row]


def _at(obj: Any, *path: str) -> str:
    """A printed cell: the value at ``path`` (``true``/``false`` for booleans), else empty."""
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    if obj is None:
        return ""
    if isinstance(obj, bool):
        return "true" if obj else "false"
    return str(obj)


def _condition(obj: dict[str, Any], kind: str) -> str:
    """``.status.conditions[?(@.type=='<kind>')].status``."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == kind:
            return _at(condition, "status")
    return ""


def _age(obj: dict[str, Any], clock: Clock) -> str:
    return clock.age((obj.get("metadata") or {}).get("creationTimestamp"))


def _name(obj: dict[str, Any]) -> str:
    return _at(obj, "metadata", "name")


def _cluster_queue(obj: dict[str, Any], clock: Clock) -> Row:
    return [_name(obj), _at(obj, "spec", "cohortName"), _at(obj, "status", "pendingWorkloads")]


def _cluster_queue_wide(obj: dict[str, Any], clock: Clock) -> Row:
    return [_at(obj, "spec", "queueingStrategy"), _at(obj, "status", "admittedWorkloads")]


def _local_queue(obj: dict[str, Any], clock: Clock) -> Row:
    return [_name(obj), _at(obj, "spec", "clusterQueue"), _at(obj, "status", "pendingWorkloads"),
            _at(obj, "status", "admittedWorkloads")]


def _workload(obj: dict[str, Any], clock: Clock) -> Row:
    return [_name(obj), _at(obj, "spec", "queueName"), _at(obj, "status", "admission", "clusterQueue"),
            _condition(obj, "Admitted"), _condition(obj, "Finished"), _age(obj, clock)]


def _priority_class(obj: dict[str, Any], clock: Clock) -> Row:
    return [_name(obj), _at(obj, "value")]


def _pod_group(obj: dict[str, Any], clock: Clock) -> Row:
    return [_name(obj), _at(obj, "status", "phase"), _at(obj, "spec", "minMember"),
            _at(obj, "status", "running"), _at(obj, "status", "succeeded"),
            _at(obj, "status", "failed"), _age(obj, clock)]


def _job_set(obj: dict[str, Any], clock: Clock) -> Row:
    return [_name(obj), _at(obj, "status", "terminalState"), _at(obj, "status", "restarts"),
            _condition(obj, "Completed"), _at(obj, "spec", "suspend"), _age(obj, clock)]


KUEUE_COLUMNS: dict[str, tuple[tuple[str, ...], Cells, tuple[str, ...], Cells | None, tuple[int, ...]]] = {
    "ClusterQueue": (("NAME", "COHORT", "PENDING WORKLOADS"), _cluster_queue,
                     ("STRATEGY", "ADMITTED WORKLOADS"), _cluster_queue_wide, (0, 1, 3, 2, 4)),
    "LocalQueue": (("NAME", "CLUSTERQUEUE", "PENDING WORKLOADS", "ADMITTED WORKLOADS"),
                   _local_queue, (), None, ()),
    "Workload": (("NAME", "QUEUE", "RESERVED IN", "ADMITTED", "FINISHED", "AGE"), _workload,
                 (), None, ()),
    "WorkloadPriorityClass": (("NAME", "VALUE"), _priority_class, (), None, ()),
    "PodGroup": (("NAME", "PHASE", "MINMEMBER", "RUNNING", "SUCCEEDED", "FAILED", "AGE"),
                 _pod_group, (), None, ()),
    "JobSet": (("NAME", "TERMINALSTATE", "RESTARTS", "COMPLETED", "SUSPENDED", "AGE"), _job_set,
               (), None, ()),
}
