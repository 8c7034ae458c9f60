"""The columns ``gpusched get`` prints for each kind, as kubectl's table printers show them.

One ``Columns`` entry per kind in ``COLUMNS``: the header, the extra ``-o wide`` header, and a
function from (object, clock) to the cells. Objects are plain Kubernetes-shaped dicts as the
store returns them; missing fields print as kubectl prints them (``<none>``, ``0``, blank).

Neighbours: ``cli.output`` (alignment, ages), ``cli.commands`` (the ``get`` command).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from gpusched.cli.columns_kueue import KUEUE_COLUMNS
from gpusched.cli.columns_kinds import KIND_COLUMNS, _age, _meta, _name, _spec, _status  # shared cell readers
from gpusched.cli.columns_stock import STOCK_COLUMNS
from gpusched.cli.output import Clock, parse_timestamp
from gpusched.objects.duration import format_duration as human_duration
from gpusched.objects.kinds import resolve_kind

NONE = "<none>"
Row = list[str]


@dataclass(frozen=True)
class Columns:
    header: tuple[str, ...]
    cells: Callable[[dict[str, Any], Clock], Row]
    wide_header: tuple[str, ...] = ()
    wide_cells: Callable[[dict[str, Any], Clock], Row] | None = None
    wide_order: tuple[int, ...] = ()     # a CRD's wide columns among the others (ClusterQueue)


# ---- pods -----------------------------------------------------------------------------------


def pod_status_text(pod: dict[str, Any]) -> str:
    """The STATUS column: kubectl's printPod reason (kubernetes pkg/printers/internalversion/
    printers.go): the phase or the pod's reason, SchedulingGated, the first failing init container,
    else the first container's waiting or terminated reason, then Terminating or Unknown."""
    status = _status(pod)
    phase = str(status.get("phase") or "Pending")
    init = _init_reason(pod)
    reason = init or _pod_reason(status, phase)
    statuses = status.get("containerStatuses") or []
    if not init or _condition_true(status, "Initialized"):
        reason = _containers_reason(status, statuses, reason)
    if not statuses and not init and reason == phase:
        # gpusched's kubelet may record no container statuses for a finished pod; kubectl would
        # then read the containers' terminated reasons, which say Completed or Error
        reason = {"Succeeded": "Completed", "Failed": "Error"}.get(phase, phase)
    return _deleting_reason(pod, phase) or reason


def _pod_reason(status: dict[str, Any], phase: str) -> str:
    if any(c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated"
           for c in status.get("conditions") or []):      # printPod: PodReasonSchedulingGated
        return "SchedulingGated"
    return str(status.get("reason") or "") or phase


def _containers_reason(status: dict[str, Any], statuses: list[dict[str, Any]], reason: str) -> str:
    reason = _container_reason(statuses, reason)
    if reason == "Completed" and any(_running_ready(cs) for cs in statuses):
        return "Running" if _condition_true(status, "Ready") else "NotReady"
    return reason


def _deleting_reason(pod: dict[str, Any], phase: str) -> str:
    if not _meta(pod).get("deletionTimestamp"):
        return ""
    if _status(pod).get("reason") == "NodeLost":
        return "Unknown"
    return "" if phase in ("Succeeded", "Failed") else "Terminating"


def _condition_true(status: dict[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in status.get("conditions") or [])


def _running_ready(cs: dict[str, Any]) -> bool:
    state = cs.get("state") or {}
    return bool(cs.get("ready")) and "running" in state and not _state_reason(state)


def _init_reason(pod: dict[str, Any]) -> str:
    """printPod's init-container walk: the first init container that has not exited 0 decides
    (Init:<reason>, Init:ExitCode:N, Init:Signal:N or Init:i/n); a started sidecar (restartPolicy
    Always) is skipped; "" when every one is done."""
    sidecars = {c.get("name") for c in _spec(pod).get("initContainers") or []
                if c.get("restartPolicy") == "Always"}
    total = len(_spec(pod).get("initContainers") or [])
    for i, cs in enumerate(_status(pod).get("initContainerStatuses") or []):
        if not (cs.get("name") in sidecars and cs.get("started")):
            reason = _init_status_reason(cs.get("state") or {}, f"Init:{i}/{total}")
            if reason:
                return reason
    return ""


def _init_status_reason(state: dict[str, Any], counted: str) -> str:
    """One init container's reason, "" when it exited 0 (the walk goes on to the next)."""
    terminated = state.get("terminated")
    if terminated is not None:
        return "Init:" + _terminated_reason(terminated) if (terminated or {}).get("exitCode") else ""
    waiting = (state.get("waiting") or {}).get("reason") or ""
    if waiting and waiting != "PodInitializing":
        return "Init:" + str(waiting)
    return counted


def _container_reason(statuses: list[dict[str, Any]], reason: str) -> str:
    """printPod walks the containers from the last to the first and each reason it finds
    overwrites the one before, so the first container's reason is the one shown."""
    for cs in reversed(statuses):
        reason = _state_reason(cs.get("state") or {}) or reason
    return reason


def _state_reason(state: dict[str, Any]) -> str:
    if (state.get("waiting") or {}).get("reason"):
        return str(state["waiting"]["reason"])
    if "terminated" in state:
        return _terminated_reason(state["terminated"] or {})
    return ""


def _terminated_reason(terminated: dict[str, Any]) -> str:
    """A terminated state's reason, else ``Signal:N`` or ``ExitCode:N`` as printPod writes them."""
    if terminated.get("reason"):
        return str(terminated["reason"])
    if terminated.get("signal"):
        return f"Signal:{terminated['signal']}"
    return f"ExitCode:{terminated.get('exitCode') or 0}"


def _pod_ready(pod: dict[str, Any]) -> str:
    containers = _spec(pod).get("containers") or []
    statuses = _status(pod).get("containerStatuses")
    if statuses:
        ready = sum(1 for cs in statuses if cs.get("ready"))
    else:
        ready = len(containers) if _status(pod).get("phase") == "Running" else 0
    return f"{ready}/{len(containers)}"


def _pod_restarts(pod: dict[str, Any]) -> str:
    return str(sum(int(cs.get("restartCount", 0)) for cs in _status(pod).get("containerStatuses") or []))


def _pod_cells(pod: dict[str, Any], clock: Clock) -> Row:
    return [_name(pod), _pod_ready(pod), pod_status_text(pod), _pod_restarts(pod), _age(pod, clock)]


def _pod_wide(pod: dict[str, Any], clock: Clock) -> Row:
    status = _status(pod)
    return [status.get("podIP") or NONE, _spec(pod).get("nodeName") or NONE,
            status.get("nominatedNodeName") or NONE, NONE]


# ---- nodes ----------------------------------------------------------------------------------


def node_status_text(node: dict[str, Any]) -> str:
    """``Ready``, ``NotReady`` or ``Unknown``, plus ``,SchedulingDisabled`` when cordoned."""
    conditions = _status(node).get("conditions")
    text = "Ready"
    if conditions:
        ready = [c for c in conditions if c.get("type") == "Ready"]
        text = "Unknown" if not ready else ("Ready" if ready[0].get("status") == "True" else "NotReady")
    if _spec(node).get("unschedulable"):
        text += ",SchedulingDisabled"
    return text


def node_roles(node: dict[str, Any]) -> str:
    roles = sorted(key.split("/", 1)[1] for key in (_meta(node).get("labels") or {})
                   if key.startswith("node-role.kubernetes.io/") and "/" in key)
    return ",".join(role for role in roles if role) or NONE


def _node_cells(node: dict[str, Any], clock: Clock) -> Row:
    info = _status(node).get("nodeInfo") or {}
    return [_name(node), node_status_text(node), node_roles(node), _age(node, clock),
            info.get("kubeletVersion", "")]


def _node_wide(node: dict[str, Any], clock: Clock) -> Row:
    addresses = {a.get("type"): a.get("address") for a in _status(node).get("addresses") or []}
    info = _status(node).get("nodeInfo") or {}
    return [addresses.get("InternalIP") or NONE, addresses.get("ExternalIP") or NONE,
            info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>"]


# ---- workloads ------------------------------------------------------------------------------


def _template_containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return ((_spec(obj).get("template") or {}).get("spec") or {}).get("containers") or []


def _workload_wide(obj: dict[str, Any], clock: Clock) -> Row:
    containers = _template_containers(obj)
    selector = (_spec(obj).get("selector") or {}).get("matchLabels") or {}
    return [",".join(c.get("name", "") for c in containers) or NONE,
            ",".join(c.get("image", "") for c in containers) or NONE,
            ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or NONE]


def _deployment_cells(obj: dict[str, Any], clock: Clock) -> Row:
    status, replicas = _status(obj), _spec(obj).get("replicas", 1)
    return [_name(obj), f"{status.get('readyReplicas', 0)}/{replicas}",
            str(status.get("updatedReplicas", 0)), str(status.get("availableReplicas", 0)),
            _age(obj, clock)]


def _replicaset_cells(obj: dict[str, Any], clock: Clock) -> Row:
    status = _status(obj)
    return [_name(obj), str(_spec(obj).get("replicas", 1)), str(status.get("replicas", 0)),
            str(status.get("readyReplicas", 0)), _age(obj, clock)]


def _daemonset_cells(obj: dict[str, Any], clock: Clock) -> Row:
    status = _status(obj)
    selector = ((_spec(obj).get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
    return [_name(obj), str(status.get("desiredNumberScheduled", 0)),
            str(status.get("currentNumberScheduled", 0)), str(status.get("numberReady", 0)),
            str(status.get("updatedNumberScheduled", 0)), str(status.get("numberAvailable", 0)),
            ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or NONE, _age(obj, clock)]


def job_duration(job: dict[str, Any], clock: Clock) -> str:
    status = _status(job)
    start = parse_timestamp(status.get("startTime"))
    if start is None:
        return ""
    end = parse_timestamp(status.get("completionTime"))
    return human_duration((end if end is not None else clock.now) - start)


def _job_cells(obj: dict[str, Any], clock: Clock) -> Row:
    spec, status = _spec(obj), _status(obj)
    completions = spec.get("completions")
    if completions is None:
        target = f"1 of {spec['parallelism']}" if int(spec.get("parallelism", 1) or 1) > 1 else "1"
    else:
        target = str(completions)
    return [_name(obj), f"{status.get('succeeded', 0)}/{target}", job_duration(obj, clock),
            _age(obj, clock)]


# ---- policy and config ----------------------------------------------------------------------


def _priorityclass_cells(obj: dict[str, Any], clock: Clock) -> Row:
    return [_name(obj), str(obj.get("value", 0)), str(bool(obj.get("globalDefault", False))).lower(),
            _age(obj, clock)]


def quota_columns(quota: dict[str, Any]) -> tuple[str, str]:
    """REQUEST and LIMIT: ``key: used/hard`` pairs sorted by key, ``limits.*`` in LIMIT."""
    hard = _status(quota).get("hard") or _spec(quota).get("hard") or {}
    used = _status(quota).get("used") or {}
    requests: list[str] = []
    limits: list[str] = []
    for key in sorted(hard):
        cell = f"{key}: {used.get(key, '0')}/{hard[key]}"
        (limits if key.startswith("limits.") else requests).append(cell)
    return ", ".join(requests), ", ".join(limits)


def _quota_cells(obj: dict[str, Any], clock: Clock) -> Row:
    return [_name(obj), _age(obj, clock), *quota_columns(obj)]


def _limitrange_cells(obj: dict[str, Any], clock: Clock) -> Row:
    return [_name(obj), str(_meta(obj).get("creationTimestamp", ""))]


def _pdb_cells(obj: dict[str, Any], clock: Clock) -> Row:
    spec = _spec(obj)
    return [_name(obj), str(spec.get("minAvailable", "N/A")), str(spec.get("maxUnavailable", "N/A")),
            str(_status(obj).get("disruptionsAllowed", 0)), _age(obj, clock)]


def _configmap_cells(obj: dict[str, Any], clock: Clock) -> Row:
    data = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
    return [_name(obj), str(data), _age(obj, clock)]


def _namespace_cells(obj: dict[str, Any], clock: Clock) -> Row:
    return [_name(obj), str(_status(obj).get("phase", "Active")), _age(obj, clock)]


def event_time(event: dict[str, Any]) -> str | None:
    """The timestamp an event is ordered and aged by: its series' last observation (events.k8s.io
    recorders), else last seen, else first seen, else created (printers.go printEvent)."""
    series = event.get("series")
    if isinstance(series, dict) and series.get("lastObservedTime"):
        return str(series["lastObservedTime"])
    return (event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp")
            or _meta(event).get("creationTimestamp"))


def event_object(event: dict[str, Any]) -> str:
    involved = event.get("involvedObject") or event.get("regarding") or {}
    kind = str(involved.get("kind", ""))
    try:
        kind = resolve_kind(kind).singular
    except Exception:  # an event about a kind gpusched does not store: print it lower-cased
        kind = kind.lower()
    return f"{kind}/{involved.get('name', '')}"


def _event_cells(obj: dict[str, Any], clock: Clock) -> Row:
    return [clock.age(event_time(obj)), str(obj.get("type", "Normal")), str(obj.get("reason", "")),
            event_object(obj), str(obj.get("message", obj.get("note", ""))).strip()]


def _event_wide(obj: dict[str, Any], clock: Clock) -> Row:
    """SUBOBJECT, SOURCE (``formatEventSource``: component, else reportingComponent; then the
    host, else reportingInstance), FIRST SEEN (else eventTime), COUNT (the series' count, else
    count, else 1), NAME."""
    source = obj.get("source") or {}
    component = source.get("component") or obj.get("reportingComponent") or ""
    host = source.get("host") or obj.get("reportingInstance") or ""
    series = obj.get("series") if isinstance(obj.get("series"), dict) else None
    count = (series or {}).get("count") or obj.get("count") or 1
    first = obj.get("firstTimestamp") or obj.get("eventTime")
    return [str((obj.get("involvedObject") or {}).get("fieldPath", "")),
            f"{component}, {host}" if host else str(component), clock.age(first), str(count),
            _name(obj)]


def _nodepool_cells(obj: dict[str, Any], clock: Clock) -> Row:
    """NODES: the registered nodes of an autoscaled pool (``status.nodes``), else the spec's;
    MIN/MAX: the Cluster Autoscaler bounds (``<none>`` for a fixed pool)."""
    spec = _spec(obj)
    gpu = spec.get("gpu") or {}
    count = spec.get("count", len(spec.get("names") or []))
    registered = (obj.get("status") or {}).get("nodes")
    autoscaled = spec.get("minNodes") is not None
    if autoscaled and isinstance(registered, list):
        count = len(registered)
    low = str(spec["minNodes"]) if autoscaled else NONE
    high = str(spec.get("maxNodes", NONE)) if autoscaled else NONE
    return [_name(obj), str(count), low, high, str(gpu.get("model") or NONE),
            str(gpu.get("count", 0)), _age(obj, clock)]


def _clusterpolicy_cells(obj: dict[str, Any], clock: Clock) -> Row:
    """The CRD's printer columns: Status (.status.state), Age."""
    return [_name(obj), str((obj.get("status") or {}).get("state", "")), _age(obj, clock)]


def _lease_cells(obj: dict[str, Any], clock: Clock) -> Row:
    """kubectl's printLease: NAME, HOLDER (blank when released), AGE."""
    return [_name(obj), str(_spec(obj).get("holderIdentity") or ""), _age(obj, clock)]


def _generic_cells(obj: dict[str, Any], clock: Clock) -> Row:
    return [_name(obj), _age(obj, clock)]


COLUMNS: dict[str, Columns] = {
    "Pod": Columns(("NAME", "READY", "STATUS", "RESTARTS", "AGE"), _pod_cells,
                   ("IP", "NODE", "NOMINATED NODE", "READINESS GATES"), _pod_wide),
    "Node": Columns(("NAME", "STATUS", "ROLES", "AGE", "VERSION"), _node_cells,
                    ("INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"),
                    _node_wide),
    "Deployment": Columns(("NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"), _deployment_cells,
                          ("CONTAINERS", "IMAGES", "SELECTOR"), _workload_wide),
    "ReplicaSet": Columns(("NAME", "DESIRED", "CURRENT", "READY", "AGE"), _replicaset_cells,
                          ("CONTAINERS", "IMAGES", "SELECTOR"), _workload_wide),
    "DaemonSet": Columns(("NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE",
                          "NODE SELECTOR", "AGE"), _daemonset_cells,
                         ("CONTAINERS", "IMAGES", "SELECTOR"), _workload_wide),
    "Job": Columns(("NAME", "COMPLETIONS", "DURATION", "AGE"), _job_cells,
                   ("CONTAINERS", "IMAGES", "SELECTOR"), _workload_wide),
    "PriorityClass": Columns(("NAME", "VALUE", "GLOBAL-DEFAULT", "AGE"), _priorityclass_cells),
    "ResourceQuota": Columns(("NAME", "AGE", "REQUEST", "LIMIT"), _quota_cells),
    "LimitRange": Columns(("NAME", "CREATED AT"), _limitrange_cells),
    "PodDisruptionBudget": Columns(("NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS",
                                    "AGE"), _pdb_cells),
    "ConfigMap": Columns(("NAME", "DATA", "AGE"), _configmap_cells),
    "Namespace": Columns(("NAME", "STATUS", "AGE"), _namespace_cells),
    "Event": Columns(("LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"), _event_cells,
                     ("SUBOBJECT", "SOURCE", "FIRST SEEN", "COUNT", "NAME"), _event_wide,
                     # -o wide: LAST SEEN TYPE REASON OBJECT SUBOBJECT SOURCE MESSAGE FIRST SEEN COUNT NAME
                     (0, 1, 2, 3, 5, 6, 4, 7, 8, 9)),
    "NodePool": Columns(("NAME", "NODES", "MIN", "MAX", "GPU-MODEL", "GPUS-PER-NODE", "AGE"),
                        _nodepool_cells),
    "Lease": Columns(("NAME", "HOLDER", "AGE"), _lease_cells),
    **{kind: Columns(*spec) for kind, spec in KIND_COLUMNS.items()},   # Service, storage, ...
    **{kind: Columns(*spec) for kind, spec in STOCK_COLUMNS.items()},  # CSINode, DRA, ...
    "ClusterPolicy": Columns(("NAME", "STATUS", "AGE"), _clusterpolicy_cells),
    **{kind: Columns(*spec) for kind, spec in KUEUE_COLUMNS.items()},  # Kueue, PodGroup, JobSet
}


def table_rows(kind: str, objects: list[dict[str, Any]], clock: Clock, wide: bool,
               with_namespace: bool) -> tuple[list[str], list[Row]]:
    """Header and rows for ``get``; ``with_namespace`` prepends NAMESPACE as ``-A`` does."""
    columns = COLUMNS.get(kind, Columns(("NAME", "AGE"), _generic_cells))
    header = list(columns.header)
    if wide and columns.wide_cells:
        header += columns.wide_header
    order = columns.wide_order if wide and columns.wide_cells else ()
    if order:
        header = [header[i] for i in order]
    rows = []
    for obj in objects:
        row = columns.cells(obj, clock)
        if wide and columns.wide_cells:
            row += columns.wide_cells(obj, clock)
        if order:
            row = [row[i] for i in order]
        if with_namespace:
            row = [str(_meta(obj).get("namespace", "")), *row]
        rows.append(row)
    if with_namespace:
        header = ["NAMESPACE", *header]
    return header, rows
