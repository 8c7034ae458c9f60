"""kubectl's node and label commands on the view: label, taint, cordon/uncordon, drain, and
gpusched's ``condition`` (what a kubelet or the node lifecycle controller reports).

Messages are kubectl's: ``node/gpu-1 labeled``, ``'k' already has a value (v), and --overwrite
is false``, ``node/gpu-1 tainted``, ``node/gpu-1 cordoned`` / ``already cordoned``, and for drain
``evicting pod <ns>/<name>``, ``pod/<name> evicted``, ``node/<name> drained``, with the refusal
texts ``cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): ...``.

NoExecute taints get ``timeAdded`` (the virtual time they were added), from which
``tolerationSeconds`` are counted.

Neighbours: ``cluster.cluster`` (the facade), ``controllers.nodes.node_lifecycle`` (eviction, PDBs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from gpusched.cluster.apiserver import write
from gpusched.cluster.controllers.common import controller_of, delete_pod, is_terminal
from gpusched.cluster.controllers.nodes.node_lifecycle import EvictionRefused, evict
from gpusched.errors import GpuschedError, NotFoundError, UsageError
from gpusched.cluster.apiserver.view import View
from gpusched.objects.kinds import KindInfo
from gpusched.objects.types import Taint


class DrainError(UsageError):
    """A drain that stopped; ``lines`` holds what kubectl printed before the error."""

    def __init__(self, message: str, lines: list[str]) -> None:
        super().__init__(message)
        self.lines = lines


def _ref(info: KindInfo, name: str) -> str:
    return f"{info.singular}.{info.group}/{name}" if info.group else f"{info.singular}/{name}"


def _node(view: View, name: str) -> dict[str, Any]:
    node = view.copy("Node", name)
    if node is None:
        raise NotFoundError("nodes", name)
    return node


def label(view: View, info: KindInfo, name: str, changes: dict[str, str | None], namespace: str,
          overwrite: bool) -> str:
    body = view.copy(info.kind, name, namespace)
    if body is None:
        plural = f"{info.plural}.{info.group}" if info.group else info.plural
        raise NotFoundError(plural, name)
    labels = body.setdefault("metadata", {}).setdefault("labels", {})
    removed_only = all(v is None for v in changes.values())
    for key, value in changes.items():
        if value is None:
            labels.pop(key, None)
        elif key in labels and labels[key] != value and not overwrite:
            raise UsageError(f"'{key}' already has a value ({labels[key]}), and --overwrite is false")
        else:
            labels[key] = value
    if not labels:
        body["metadata"].pop("labels")
    if not write.update(view, body):
        return f"{_ref(info, name)} not labeled"
    return f"{_ref(info, name)} {'unlabeled' if removed_only else 'labeled'}"


def taint(view: View, node_name: str, add: list[Taint], remove: list[tuple[str, str | None]],
          overwrite: bool) -> str:
    node = _node(view, node_name)
    taints = _remove_taints(list((node.setdefault("spec", {})).get("taints") or []), remove)
    taints = _add_taints(view, node_name, taints, add, overwrite)
    if taints:
        node["spec"]["taints"] = taints
    else:
        node["spec"].pop("taints", None)
    write.update(view, node)
    return f"node/{node_name} {'tainted' if add else 'untainted'}"


def _remove_taints(taints: list[dict[str, Any]],
                   remove: list[tuple[str, str | None]]) -> list[dict[str, Any]]:
    """``key[:effect]-``: drop the matching taints; one that matches nothing is an error."""
    for key, effect in remove:
        kept = [t for t in taints if not (t.get("key") == key and (not effect or t.get("effect") == effect))]
        if len(kept) == len(taints):
            raise UsageError(f'taint "{key}:{effect}" not found' if effect else f'taint "{key}" not found')
        taints = kept
    return taints


def _add_taints(view: View, node_name: str, taints: list[dict[str, Any]], add: list[Taint],
                overwrite: bool) -> list[dict[str, Any]]:
    """``key[=value]:effect``: append each taint, replacing one with the same key and effect
    only with --overwrite; NoExecute taints get ``timeAdded``."""
    for new in add:
        same = [t for t in taints if t.get("key") == new.key and t.get("effect") == new.effect]
        if same and not overwrite:
            raise UsageError(f"node {node_name} already has {new.key} taint(s) with same effect(s) "
                             "and --overwrite is false")
        taints = [t for t in taints if t not in same]
        entry = {"key": new.key, "effect": new.effect}
        if new.value:
            entry["value"] = new.value
        if new.effect == "NoExecute":
            entry["timeAdded"] = view.timestamp()
        taints.append(entry)
    return taints


def cordon(view: View, node_name: str, unschedulable: bool) -> str:
    node = _node(view, node_name)
    verb = "cordoned" if unschedulable else "uncordoned"
    if bool(node.get("spec", {}).get("unschedulable")) == unschedulable:
        return f"node/{node_name} already {verb}"
    if unschedulable:
        node.setdefault("spec", {})["unschedulable"] = True
    else:
        node.setdefault("spec", {}).pop("unschedulable", None)
    write.update(view, node)
    return f"node/{node_name} {verb}"


# Ready's reason and message by status: the kubelet's ReadyCondition setter
# (kubernetes pkg/kubelet/nodestatus/setters.go: "KubeletReady", "kubelet is posting ready
# status"; "KubeletNotReady" with its failing checks as the message) and the node lifecycle
# controller's tryUpdateNodeHealth for a silent kubelet (pkg/controller/nodelifecycle/
# node_lifecycle_controller.go: every condition Unknown, "NodeStatusUnknown",
# "Kubelet stopped posting node status.").
READY_REPORTS = {
    "True": ("KubeletReady", "kubelet is posting ready status"),
    "False": ("KubeletNotReady", "node made NotReady with gpusched condition"),
    "Unknown": ("NodeStatusUnknown", "Kubelet stopped posting node status."),
}


def parse_condition(text: str) -> str:
    """``Ready=False`` -> ``False``; only the Ready condition, with True, False or Unknown."""
    ctype, sep, status = text.partition("=")
    if not sep or ctype != "Ready":
        raise UsageError(f'invalid condition "{text}": expected Ready=True, Ready=False or '
                         "Ready=Unknown (only the Ready condition can be set)")
    if status not in READY_REPORTS:
        raise UsageError(f'invalid condition "{text}": the status must be True, False or Unknown')
    return status


def set_ready(view: View, node_name: str, status: str) -> str:
    """Report the node's Ready condition as ``status``. Unknown is what the node lifecycle
    controller writes when the kubelet goes silent: every condition Unknown; True brings the
    kubelet's own report back. The node lifecycle controller then adds or removes the
    ``not-ready``/``unreachable`` taints (NoSchedule and NoExecute), and pods without a matching
    toleration are evicted when their tolerationSeconds (300 s from DefaultTolerationSeconds)
    run out (``advance``)."""
    from gpusched.cluster.kubelet.node_status import kubelet_status
    node = _node(view, node_name)
    now = view.timestamp()
    reported = {c["type"]: c for c in kubelet_status(node, now)["conditions"]}
    reason, message = READY_REPORTS[status]
    conditions = []
    for cond in (node.get("status") or {}).get("conditions") or list(reported.values()):
        cond = dict(cond)
        if cond.get("type") == "Ready":
            wanted = {"status": status, "reason": reason, "message": message}
        elif status == "Unknown":
            wanted = {"status": "Unknown", "reason": reason, "message": message}
        elif cond.get("status") == "Unknown" and cond.get("type") in reported:
            kubelet = reported[cond["type"]]
            wanted = {k: kubelet[k] for k in ("status", "reason", "message")}
        else:
            conditions.append(cond)
            continue
        if cond.get("status") != wanted["status"]:
            cond["lastTransitionTime"] = now
        if status != "Unknown":
            cond["lastHeartbeatTime"] = now
        cond.update(wanted)
        conditions.append(cond)
    node.setdefault("status", {})["conditions"] = conditions
    write.update_status(view, node)
    return f"node/{node_name} condition Ready={status}"


# kubectl drain's pod filters (k8s.io/kubectl/pkg/drain/filters.go, Helper.makeFilters): each
# returns None when it lets the pod be evicted, else the message of why the pod stays; the first
# filter that keeps a pod decides, as GetPodsForDeletion (drain.go) stops at the first status
# whose Delete is false. Finished pods (Succeeded, Failed) pass every filter ("Any finished pod
# can be removed"). gpusched has no mirror pods, so no mirrorPodFilter. As upstream,
# localStorageFilter comes before unreplicatedFilter: a pod with no controller and an emptyDir is
# refused for its local storage unless --delete-emptydir-data lets it on to the next filter.
DAEMON_SET_FATAL = "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
UNMANAGED_FATAL = "cannot delete Pods that declare no controller (use --force to override)"
LOCAL_STORAGE_FATAL = ("cannot delete Pods with local storage (use --delete-emptydir-data to "
                       "override)")


@dataclass(frozen=True)
class DrainOptions:
    """kubectl drain's flags that decide which pods may go (drain.Helper's fields)."""

    ignore_daemonsets: bool = False
    delete_emptydir_data: bool = False
    force: bool = False


@dataclass(frozen=True)
class PodDeleteList:
    """What GetPodsForDeletion found: the pods to evict, the DaemonSet pods left alone
    (``<ns>/<name>``), and the refusals (message -> pod keys, in the order first met, the
    DaemonSet refusal last)."""

    pods: list[dict[str, Any]]
    daemon_set_pods: list[str]
    errors: dict[str, list[str]]


def _daemon_set_filter(pod: dict[str, Any], options: DrainOptions) -> str | None:
    """daemonSetFilter: a running DaemonSet pod is never evicted (its controller ignores the
    cordon); whether that refuses the drain or only warns is decided for the whole list."""
    owner = controller_of(pod)
    if owner is None or owner.get("kind") != "DaemonSet" or is_terminal(pod):
        return None
    return DAEMON_SET_FATAL


def _unreplicated_filter(pod: dict[str, Any], options: DrainOptions) -> str | None:
    """unreplicatedFilter: a pod no controller would recreate goes only with --force."""
    if is_terminal(pod) or controller_of(pod) is not None or options.force:
        return None
    return UNMANAGED_FATAL


def _local_storage_filter(pod: dict[str, Any], options: DrainOptions) -> str | None:
    """localStorageFilter: a pod with an emptyDir goes only with --delete-emptydir-data."""
    if is_terminal(pod) or not _has_emptydir(pod) or options.delete_emptydir_data:
        return None
    return LOCAL_STORAGE_FATAL


PodFilter = Callable[[dict[str, Any], DrainOptions], "str | None"]
POD_FILTERS: tuple[PodFilter, ...] = (_daemon_set_filter, _local_storage_filter,
                                      _unreplicated_filter)


def pods_for_deletion(pods: list[dict[str, Any]], options: DrainOptions) -> PodDeleteList:
    """GetPodsForDeletion (drain.go): run each pod through POD_FILTERS."""
    evict: list[dict[str, Any]] = []
    daemon: list[str] = []
    errors: dict[str, list[str]] = {}
    for pod in pods:
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        kept = next((why for keep in POD_FILTERS if (why := keep(pod, options)) is not None), None)
        if kept is None:
            evict.append(pod)
        elif kept == DAEMON_SET_FATAL:
            daemon.append(key)
        else:
            errors.setdefault(kept, []).append(key)
    if daemon and not options.ignore_daemonsets:
        errors[DAEMON_SET_FATAL] = daemon
    return PodDeleteList(evict, daemon, errors)


def drain_refused(node_name: str, errors: dict[str, list[str]]) -> UsageError:
    """kubectl's refusal (k8s.io/kubectl/pkg/cmd/drain/drain.go RunDrain): one
    ``<message>: <pods>`` per reason, bracketed when several (an aggregate error's text)."""
    texts = [f"{what}: {', '.join(keys)}" for what, keys in errors.items()]
    body = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return UsageError(f'unable to drain node "{node_name}" due to error: {body}, '
                      "continuing command...")


def drain(view: View, node_name: str, ignore_daemonsets: bool, delete_emptydir_data: bool,
          force: bool, settle: Callable[[View], None] | None = None) -> tuple[list[str], GpuschedError | None]:
    """Cordon, check, evict: kubectl's RunDrain (RunCordonOrUncordon, then
    deleteOrEvictPodsSimple: GetPodsForDeletion, DeleteOrEvictPods). Returns kubectl's lines
    and the error to raise after committing.

    An eviction a PDB refuses is retried after ``settle(view)`` (controllers and scheduler) has
    let replacement pods start, as kubectl retries; it fails when nothing changes any more.
    """
    lines = [cordon(view, node_name, True)]
    pods = [p for p in view.list("Pod") if (p.get("spec") or {}).get("nodeName") == node_name]
    found = pods_for_deletion(pods, DrainOptions(ignore_daemonsets, delete_emptydir_data, force))
    if found.errors:
        return lines, drain_refused(node_name, found.errors)
    if found.daemon_set_pods:
        lines.append(f"Warning: ignoring DaemonSet-managed Pods: {', '.join(found.daemon_set_pods)}")
    refused = _evict_pods(view, found.pods, lines, settle)
    if refused:
        return lines, EvictionRefused("; ".join(refused))
    lines.append(f"node/{node_name} drained")
    return lines, None


def _evict_pods(view: View, pods: list[dict[str, Any]], lines: list[str],
                settle: Callable[[View], None] | None) -> list[str]:
    """evictPods (k8s.io/kubectl/pkg/drain/drain.go): evict each pod, retrying the ones a PDB
    refuses while settling changes something; returns the last round's refusals (empty when all went)."""
    remaining = pods
    refused: list[str] = []
    while remaining:
        refused, blocked = _evict_round(view, remaining, lines)
        if not blocked or len(blocked) == len(remaining) and not _progress(view, settle):
            break
        remaining = blocked   # kubectl retries refused evictions once replacements are healthy
    return refused


def _evict_round(view: View, pods: list[dict[str, Any]],
                 lines: list[str]) -> tuple[list[str], list[dict[str, Any]]]:
    """One pass over ``pods``: finished pods are deleted, the others evicted; appends kubectl's
    lines and returns the refusal texts and the refused pods."""
    refused: list[str] = []
    blocked: list[dict[str, Any]] = []
    for pod in pods:
        meta = pod["metadata"]
        current = view.get("Pod", meta["name"], meta["namespace"])
        if current is None:
            continue
        if is_terminal(current):
            delete_pod(view, current)
            continue
        if f"evicting pod {meta['namespace']}/{meta['name']}" not in lines:
            lines.append(f"evicting pod {meta['namespace']}/{meta['name']}")
        try:
            evict(view, current)
        except EvictionRefused as err:
            refused.append(f'error when evicting pods/"{meta["name"]}" -n '
                           f'"{meta["namespace"]}": {err}')
            blocked.append(current)
            continue
        lines.append(f"pod/{meta['name']} evicted")
    return refused, blocked


def _progress(view: View, settle: Callable[[View], None] | None) -> bool:
    """Let controllers and the scheduler run (replacements start); True when anything changed."""
    if settle is None:
        return False
    before = view.mutations
    settle(view)
    return view.mutations != before


def _has_emptydir(pod: dict[str, Any]) -> bool:
    return any("emptyDir" in (v or {}) for v in (pod.get("spec") or {}).get("volumes") or [])
