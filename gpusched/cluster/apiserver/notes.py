"""What a write tells the scheduling queue and the metrics, noted as the write happens.

- :func:`capacity_changed`: something that may let a pending pod fit (a pod left its node, a
  Node, PersistentVolume(Claim) or StorageClass changed): a new epoch and an entry of the
  capacity log, the scheduling queue's hints (``scheduler.queue``);
- :func:`note_pod_end`: a running GPU pod stopped; a trimmed copy for ``gpusched.metrics``;
- :func:`judged_entries_dropped`: the capacity log without the entries every waiting pod has
  judged, before a write stores it.

Both work on the few fields of the state they keep (:class:`Noted`), not on the view: the view
calls them from its writes, and so do the kubelet and the controllers that finish pods, without
this module knowing the view (no import cycle).

Neighbours: called by ``apiserver.view`` (create, update, delete), the kubelet and the
controllers that finish pods; read by ``scheduler.queue`` and ``gpusched.metrics``.
"""

from __future__ import annotations

import bisect
from typing import Any, Protocol

from gpusched.objects.types import ANN_ASSIGNED_DEVICES


class Noted(Protocol):
    """The state the notes keep: the capacity epoch and its log, the metrics' stats, the clock
    (``apiserver.view.View`` has them)."""

    epoch: int
    capacity_log: list[list[Any]]
    stats: dict[str, Any]
    clock: float


# DynamicResources' events (dynamicresources.go EventsToRegister: claims, slices and classes
# added or updated; a claim deleted frees its devices): each retries the pending pods.
DRA_KINDS = ("ResourceClaim", "ResourceSlice", "DeviceClass")


def capacity_changed(state: Noted, pod: dict[str, Any] | None = None) -> None:
    """A new ``epoch``, logged as ``[epoch, node, priority]``: the node ``pod`` left (its
    nominated node for a pending pod, "" for neither) and its priority; no pod: ``"*"``, any
    node."""
    state.epoch += 1
    spec, status = (pod.get("spec") or {}, pod.get("status") or {}) if pod else ({}, {})
    node = (spec.get("nodeName") or status.get("nominatedNodeName") or "") if pod else "*"
    state.capacity_log.append([state.epoch, node, int(spec.get("priority") or 0)])


def note_pod_end(state: Noted, old: dict[str, Any], new: dict[str, Any] | None) -> None:
    """Keep a trimmed copy of a GPU pod that stops running (deleted, or Succeeded/Failed) with
    ``end`` = the virtual time, in ``state.stats["ended_pods"]``: ``gpusched.metrics`` integrates
    GPU-hours, utilization and energy over pod lifetimes, and a deleted pod would otherwise vanish.
    """
    if (old.get("status") or {}).get("phase") != "Running":
        return
    if new is not None and (new.get("status") or {}).get("phase") == "Running":
        return
    meta, spec = old.get("metadata") or {}, old.get("spec") or {}
    annotations = meta.get("annotations") or {}
    if ANN_ASSIGNED_DEVICES not in annotations:
        return
    trimmed = {"metadata": {k: meta[k] for k in ("name", "namespace", "uid", "annotations",
                                                  "labels", "ownerReferences") if k in meta},
               "spec": {k: spec[k] for k in ("nodeName", "priorityClassName", "priority",
                                             "containers") if k in spec},
               "end": state.clock}
    state.stats.setdefault("ended_pods", []).append(trimmed)


def judged_entries_dropped(state: Noted, attempts: dict[str, int]) -> None:
    """Drop the capacity log's entries that every pod the queue keeps has judged: a pod reads
    only the entries newer than the epoch of its last attempt (``attempts``: pod uid -> epoch;
    a pod never attempted reads none), the rule of ``scheduler.queue``'s own trim. Run before
    each write stores the log: with no pod waiting the log is empty, where each Node's create
    made it one entry longer and each write encoded it whole (1,000 nodes: 1,000 entries
    encoded by every write and parsed by the other process's refresh)."""
    log = state.capacity_log
    if not log:
        return
    oldest = min(attempts.values(), default=state.epoch)
    if int(log[0][0]) <= oldest:
        del log[: bisect.bisect_right(log, oldest, key=lambda entry: int(entry[0]))]
