"""The Cluster Autoscaler's status ConfigMap ``kube-system/cluster-autoscaler-status``.

Layout as ``clusterstate/api/types.go`` (``ClusterAutoscalerStatus``) written by
``clusterstate/utils/status.go`` ``WriteStatusConfigMap``: ``data.status`` is YAML with
``time``, ``autoscalerStatus`` (``Running``), ``clusterWide`` and one entry per node group
under ``nodeGroups`` (``health`` with ``nodeCounts``, ``cloudProviderTarget``, ``minSize``,
``maxSize``; ``scaleUp`` ``InProgress``/``NoActivity``; ``scaleDown``
``CandidatesPresent``/``NoCandidates`` with ``candidates``), each with ``lastProbeTime`` and
``lastTransitionTime``; the annotation ``cluster-autoscaler.kubernetes.io/last-updated`` in
``ConfigMapLastUpdateFormat``. Upstream rewrites it every loop (10 s); gpusched rewrites it
when anything but the times changed, so ``lastProbeTime`` is the last change. The autoscaler's
own events (``ScaledUpGroup``, ``ScaleDown``, ``ScaleDownEmpty``, ``InvalidConfig``) are
recorded on this ConfigMap, as upstream's ``LogEventRecorder``.

Neighbours: ``controllers.autoscaling.autoscaler`` (calls ``ensure``, ``record``, ``write``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import copy
import hashlib
import json

from gpusched.cluster.apiserver import write as writes
from gpusched.cluster.controllers.autoscaling.autoscaler_config import COMPONENT, NAMESPACE, Config
from gpusched.cluster.apiserver.view import View
from gpusched.objects import limits

if TYPE_CHECKING:
    from gpusched.cluster.controllers.autoscaling.autoscaler_groups import Group

STATUS_MAP = "cluster-autoscaler-status"
LAST_UPDATED = "cluster-autoscaler.kubernetes.io/last-updated"
DIGEST = "gpusched.io/status-digest"


def ensure(view: View, config: Config) -> None:
    """Create the ConfigMap (``Initializing``) if missing; report configuration problems."""
    body = view.get("ConfigMap", STATUS_MAP, NAMESPACE)
    if body is None:
        body = writes.create(view, {"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": STATUS_MAP, "namespace": NAMESPACE,
                                         "annotations": {LAST_UPDATED: _stamp(view)}},
                            "data": {"status": "autoscalerStatus: Initializing\n"}})
    for problem in config.problems:
        view.record_event(body, "InvalidConfig", problem, "Warning", COMPONENT)


def record(view: View, reason: str, message: str, type_: str = "Normal") -> None:
    body = view.get("ConfigMap", STATUS_MAP, NAMESPACE)
    if body is not None:
        view.record_event(body, reason, message, type_, COMPONENT)


def _stamp(view: View) -> str:
    """``2006-01-02 15:04:05.999999999 -0700 MST`` of the cluster clock."""
    iso = view.timestamp()
    return f"{iso[:10]} {iso[11:19]} +0000 UTC"


def _counts(view: View, names: list[str], draining: int) -> dict[str, Any]:
    from gpusched.cluster.controllers.common import ready_status
    nodes = [view.get("Node", n) for n in names]
    registered = [n for n in nodes if n is not None]
    ready = sum(1 for n in registered if ready_status(n) == "True")
    return {"registered": {"total": len(registered), "ready": ready, "notStarted": 0,
                           "beingDeleted": draining,
                           "unready": {"total": len(registered) - ready, "resourceUnready": 0}},
            "longUnregistered": 0, "unregistered": 0}


def _group_status(view: View, group: Group) -> dict[str, Any]:
    status = group.status
    draining = len(status.get("draining") or {})
    candidates = len(status.get("unneeded") or {})
    return {"name": group.name,
            "health": {"status": "Healthy", "nodeCounts": _counts(view, group.nodes, draining),
                       "cloudProviderTarget": group.target, "minSize": group.min_nodes,
                       "maxSize": group.max_nodes},
            "scaleUp": {"status": "InProgress" if group.upcoming else "NoActivity"},
            "scaleDown": ({"status": "CandidatesPresent", "candidates": candidates}
                          if candidates else {"status": "NoCandidates"})}


def _cluster_wide(view: View, groups: list[Any], config: Config) -> dict[str, Any]:
    names = [n for g in groups for n in g.nodes]
    draining = sum(len(g.status.get("draining") or {}) for g in groups)
    candidates = sum(len(g.status.get("unneeded") or {}) for g in groups)
    up = any(g.upcoming for g in groups)
    return {"health": {"status": "Healthy", "nodeCounts": _counts(view, names, draining)},
            "scaleUp": {"status": "InProgress" if up else "NoActivity"},
            "scaleDown": ({"status": "CandidatesPresent", "candidates": candidates}
                          if candidates else {"status": "NoCandidates"})}


def _with_times(section: dict[str, Any], now: str, old: dict[str, Any] | None) -> dict[str, Any]:
    """``section`` with lastProbeTime (now) and lastTransitionTime (kept while the status
    string did not change)."""
    out = copy.deepcopy(section)
    same = old is not None and old.get("status") == section.get("status")
    out["lastProbeTime"] = now
    out["lastTransitionTime"] = old.get("lastTransitionTime", now) if old is not None and same else now
    return out


def write(view: View, config: Config, groups: list[Any]) -> None:
    """``WriteStatusConfigMap``: the status document, rewritten when its content (all but the
    times) changed."""
    import yaml
    body = view.get("ConfigMap", STATUS_MAP, NAMESPACE)
    if body is None:
        return
    content: dict[str, Any] = {"clusterWide": _cluster_wide(view, groups, config),
               "nodeGroups": [_group_status(view, g) for g in groups]}
    digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:16]
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    if annotations.get(DIGEST) == digest:
        return
    old_wide, old_groups = _previous(body)
    now = view.timestamp()
    wide = {key: _with_times(value, now, (old_wide or {}).get(key))
            for key, value in content["clusterWide"].items()}
    node_groups = [_group_with_times(entry, now, old_groups.get(entry["name"]) or {})
                   for entry in content["nodeGroups"]]
    document = {"time": _stamp(view), "autoscalerStatus": "Running", "clusterWide": wide,
                "nodeGroups": node_groups}
    new = copy.deepcopy(body)
    new["metadata"].setdefault("annotations", {}).update({LAST_UPDATED: _stamp(view), DIGEST: digest})
    new["data"] = {"status": yaml.safe_dump(document, sort_keys=False)}
    writes.update(view, new)


def _previous(body: dict[str, Any]) -> tuple[Any, dict[Any, Any]]:
    """The written document's clusterWide section and node groups by name (None and {} when
    it does not read)."""
    import yaml
    try:
        old = limits.safe_load((body.get("data") or {}).get("status", "")) or {}
    except (yaml.YAMLError, limits.LimitError):
        old = {}
    old_wide = old.get("clusterWide") if isinstance(old, dict) else None
    groups = old.get("nodeGroups") if isinstance(old, dict) else None
    old_groups = {g.get("name"): g for g in groups if isinstance(g, dict)} \
        if isinstance(groups, list) else {}
    return old_wide, old_groups


def _group_with_times(entry: dict[str, Any], now: str, previous: dict[str, Any]) -> dict[str, Any]:
    """A node group's entry with each section's probe and transition times."""
    return {"name": entry["name"], **{key: _with_times(entry[key], now, previous.get(key))
                                      for key in ("health", "scaleUp", "scaleDown")}}
