"""What a change of the view tells other parts of the cluster, noted as the view changes.

- :func:`capacity_changed`: something that may let a pending pod fit (a pod left its node, a
  Node, PersistentVolume(Claim) or StorageClass changed): a new ``View.epoch`` and an entry of
  ``View.capacity_log`` for the scheduling queue's hints (``cluster.queueing``);
- :func:`note_pod_end`: a running GPU pod stopped; a trimmed copy for ``gpusched.metrics``.

Neighbours: called by ``cluster.view`` (create, update, delete) and by the controllers that
finish pods; read by ``cluster.queueing`` and ``gpusched.metrics``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpusched.objects.types import ANN_ASSIGNED_DEVICES

if TYPE_CHECKING:
    from gpusched.cluster.view import View


def capacity_changed(view: View, pod: dict[str, Any] | None = None) -> None:
    """A new ``epoch``, logged as ``[epoch, node, priority]``: the node ``pod`` left (its
    nominated node for a pending pod, "" for neither) and its priority; no pod: ``"*"``, any
    node."""
    view.epoch += 1
    spec, status = (pod.get("spec") or {}, pod.get("status") or {}) if pod else ({}, {})
    node = (spec.get("nodeName") or status.get("nominatedNodeName") or "") if pod else "*"
    view.capacity_log.append([view.epoch, node, int(spec.get("priority") or 0)])


def note_pod_end(view: View, old: dict[str, Any], new: dict[str, Any] | None) -> None:
    """Keep a trimmed copy of a GPU pod that stops running (deleted, or Succeeded/Failed) with
    ``end`` = the virtual time, in ``view.stats["ended_pods"]``: ``gpusched.metrics`` integrates
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
               "end": view.clock}
    view.stats.setdefault("ended_pods", []).append(trimmed)
