"""The web page's arithmetic: GPU usage, allocation, fragmentation, and the chart's history.

Per node the page shows one cell per device the device plugin advertises (``NodeDevices.rows()``:
a whole GPU, a time-slice/MPS replica, a MIG instance, or a fractional share), each with its
holder or free (built by ``server.web.index``). From those rows:

- allocation: the used share of all physical GPUs; per GPU ``used`` is the fractional shares'
  milli-GPU / 1000, else the held share of its devices weighted by size (a MIG instance weighs
  its compute slices, ``3g.20gb`` = 3; a whole GPU or a replica weighs 1);
- fragmentation: the share of the free GPU capacity that sits on partially used GPUs (free
  capacity no whole-GPU pod can use). Worked example: GPUs used 1.0, 0.5, 0.0, 0.0 -> free
  0 + 0.5 + 1 + 1 = 2.5, of which 0.5 on a partial GPU -> 20 %.

:class:`History` keeps (clock, allocation, fragmentation) points in the server process, at most
one per store change (resourceVersion): ``web.recorder`` records one after changes (throttled),
a summary request records the state it read. It is bounded but keeps the whole time axis: when
it holds ``points`` points, the older half is thinned to every second point, so recent changes
keep their detail and old ones are downsampled.

Neighbours: ``devices.node.DeviceRow``; used by ``server.web.index`` and ``server.web.routes``.
"""

from __future__ import annotations

import threading
from typing import Any

from gpusched.devices.node import DeviceRow
from gpusched.objects.digits import is_digits

HISTORY_POINTS = 240


def _weight(profile: str) -> int:
    """Compute slices of a MIG profile (``3g.20gb`` -> 3); 1 for a GPU or a replica."""
    head = profile.split("g.", 1)[0] if "g." in profile else ""
    return int(head) if is_digits(head) else 1


def gpu_usage(rows: list[DeviceRow]) -> list[float]:
    """Used share (0..1) of each physical GPU, from ``NodeDevices.rows()``."""
    by_gpu: dict[int, list[DeviceRow]] = {}
    for row in rows:
        by_gpu.setdefault(row.gpu_index, []).append(row)
    usage: list[float] = []
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


class History:
    """Bounded (clock, allocation, fragmentation) points, one per resourceVersion, older ones
    downsampled (see the module docstring)."""

    def __init__(self, points: int = HISTORY_POINTS) -> None:
        self.limit = max(4, points)
        self._points: list[dict[str, Any]] = []
        self._last_rv = ""
        self._lock = threading.Lock()

    def record(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        """Add the point of ``data`` (a new resourceVersion only); returns all points."""
        with self._lock:
            if data["resourceVersion"] != self._last_rv:
                self._last_rv = data["resourceVersion"]
                self._points.append({"clock": data["clock"], "allocation": data["allocation"],
                                     "fragmentation": data["fragmentation"]})
                if len(self._points) > self.limit:
                    half = len(self._points) // 2
                    self._points = self._points[:half:2] + self._points[half:]
            return list(self._points)

    def points(self) -> list[dict[str, Any]]:
        """The recorded points, oldest first (records nothing)."""
        with self._lock:
            return list(self._points)
