"""The web page's data: GPU cells per node, allocation, fragmentation, pending pods, history.

``summary(view)`` reads one consistent view of the store (inside the cluster worker's read):

- per node, one cell per device the device plugin advertises, from ``NodeDevices.rows()``: a
  whole GPU, a time-slice/MPS replica, a MIG instance, or a fractional share, each with its
  holder (namespace, name, priority) or free;
- allocation: the used share of all physical GPUs; per GPU ``used`` is the fractional shares'
  milli-GPU / 1000, else the held share of its devices weighted by size (a MIG instance weighs
  its compute slices, ``3g.20gb`` = 3; a whole GPU or a replica weighs 1);
- fragmentation: the share of the free GPU capacity that sits on partially used GPUs (free
  capacity no whole-GPU pod can use). Worked example: GPUs used 1.0, 0.5, 0.0, 0.0 -> free
  0 + 0.5 + 1 + 1 = 2.5, of which 0.5 on a partial GPU -> 20 %;
- pending pods with their PodScheduled=False message (kube-scheduler's FitError text).

:class:`History` is a ring buffer of (clock, allocation, fragmentation) kept by the server
process, at most one point per store change (resourceVersion): ``web.recorder`` records one
after changes (throttled), a summary request records the state it read.

Neighbours: ``cluster.scheduling.build_snapshot`` (devices with holders); served by
``server.web.routes``.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from gpusched.cluster.controllers.common import is_terminal
from gpusched.cluster.scheduling import build_snapshot

HISTORY_POINTS = 240
RECENT_EVENTS = 30


def _weight(profile: str) -> int:
    """Compute slices of a MIG profile (``3g.20gb`` -> 3); 1 for a GPU or a replica."""
    head = profile.split("g.", 1)[0] if "g." in profile else ""
    return int(head) if head.isdigit() else 1


def gpu_usage(rows: list[Any]) -> list[float]:
    """Used share (0..1) of each physical GPU, from ``NodeDevices.rows()``."""
    by_gpu: dict[int, list[Any]] = {}
    for row in rows:
        by_gpu.setdefault(row.gpu_index, []).append(row)
    usage = []
    for index in sorted(by_gpu):
        gpu_rows = by_gpu[index]
        shares = [r.milli for r in gpu_rows if r.resource == "gpusched.io/gpu-milli"]
        if shares:
            usage.append(min(1.0, sum(shares) / 1000))
            continue
        total = sum(_weight(r.profile) for r in gpu_rows)
        held = sum(_weight(r.profile) for r in gpu_rows if r.holder)
        usage.append(held / total if total else 0.0)
    return usage


def fragmentation(usage: list[float]) -> float:
    """Share of free capacity on partially used GPUs (see the module docstring), 0..1."""
    free = sum(1.0 - u for u in usage)
    partial = sum(1.0 - u for u in usage if 0.0 < u < 1.0)
    return partial / free if free > 0 else 0.0


def _pod_ref(pod: dict[str, Any] | None) -> dict[str, Any]:
    if pod is None:
        return {}
    meta = pod["metadata"]
    return {"pod": f"{meta['namespace']}/{meta['name']}", "namespace": meta["namespace"],
            "priority": int((pod.get("spec") or {}).get("priority") or 0)}


def _pending(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for pod in pods:
        if (pod.get("spec") or {}).get("nodeName") or is_terminal(pod):
            continue
        condition = next((c for c in (pod.get("status") or {}).get("conditions") or []
                          if c.get("type") == "PodScheduled"), {})
        out.append({**_pod_ref(pod), "name": pod["metadata"]["name"],
                    "schedulerName": (pod.get("spec") or {}).get("schedulerName", ""),
                    "message": condition.get("message", "")})
    return sorted(out, key=lambda p: (-p["priority"], p["pod"]))


def summary(view: Any) -> dict[str, Any]:
    """The page's data from one view (see the module docstring)."""
    snapshot, _ = build_snapshot(view)
    pods = view.list("Pod")
    by_uid = {p["metadata"]["uid"]: p for p in pods}
    nodes, all_usage = [], []
    for row, info in enumerate(snapshot.nodes):
        devices = snapshot.devices[row]
        rows = devices.rows() if devices is not None else []
        usage = gpu_usage(rows)
        all_usage += usage
        cells = [{"gpu": r.gpu_index, "device": r.device_id, "resource": r.resource,
                  "profile": r.profile, "replica": r.replica, "milli": r.milli,
                  **_pod_ref(by_uid.get(r.holder))} for r in rows]
        nodes.append({"name": info.name, "model": info.gpu_model, "gpus": len(usage),
                      "unschedulable": info.unschedulable, "usage": usage, "cells": cells})
    events = view.list_events(None)          # oldest first
    return {"resourceVersion": str(view.rv), "clock": view.now(), "nodes": nodes,
            "allocation": sum(all_usage) / len(all_usage) if all_usage else 0.0,
            "fragmentation": fragmentation(all_usage), "pending": _pending(pods),
            "events": [{"type": e.get("type", ""), "reason": e.get("reason", ""),
                        "object": f"{e['involvedObject'].get('kind', '')}/"
                                  f"{e['involvedObject'].get('name', '')}",
                        "message": e.get("message", ""), "count": e.get("count", 1),
                        "source": (e.get("source") or {}).get("component", ""),
                        "lastTimestamp": e.get("lastTimestamp", "")}
                       for e in events[-RECENT_EVENTS:]]}


class History:
    """Ring buffer of (clock, allocation, fragmentation), one point per resourceVersion."""

    def __init__(self, points: int = HISTORY_POINTS) -> None:
        self._points: deque[dict[str, Any]] = deque(maxlen=points)
        self._last_rv = ""
        self._lock = threading.Lock()

    def record(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        with self._lock:
            if data["resourceVersion"] != self._last_rv:
                self._last_rv = data["resourceVersion"]
                self._points.append({"clock": data["clock"], "allocation": data["allocation"],
                                     "fragmentation": data["fragmentation"]})
            return list(self._points)

    def points(self) -> list[dict[str, Any]]:
        """The recorded points, oldest first (records nothing)."""
        with self._lock:
            return list(self._points)
