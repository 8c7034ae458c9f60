"""gpusched's GPU right-sizing: the smallest MIG profile or time-slicing share that holds a
pod's observed peak GPU utilization and framebuffer with the VPA's 15 % safety margin, and what
that saves in GPU-hours and dollars per day (``devices.prices``).

A MIG-capable model (A100, A30, H100, H200, B200) gets the smallest profile (fewest compute
slices, then least memory) with ``compute slices / all slices >= peak util x 1.15`` and
``profile memory >= peak framebuffer x 1.15``; another model gets the smallest time-slicing share
in 1/8, 1/4, 1/2 that fits both. A pod that needs its whole GPU keeps it.

Neighbours: ``cluster.controllers.autoscaling.vpa`` records the peaks; ``cli.recommend`` prints
this.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusched.devices.catalog import CATALOG
from gpusched.devices.prices import DEFAULT_PRICE, DEFAULT_PRICES

MARGIN = 0.15
SHARES = (8, 4, 2)
MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class GpuFit:
    """A suggestion for one pod: ``what`` (``MIG 1g.10gb``, ``time-slice 1/4``, ``whole GPU``)
    and the share of a GPU it uses; the saving per day for ``gpus`` whole GPUs today."""

    what: str
    share: float
    gpu_hours_saved_per_day: float
    usd_saved_per_day: float


def fit(model_name: str, peak_util: float, peak_memory_bytes: float, gpus: int = 1,
        prices: dict[str, float] | None = None) -> GpuFit:
    model = CATALOG.get(model_name)
    need_compute = min(1.0, peak_util / 100.0 * (1 + MARGIN))
    need_memory_mib = peak_memory_bytes / MIB * (1 + MARGIN)
    what, share = "whole GPU", 1.0
    if model is not None and model.mig is not None:
        geometry = model.mig
        candidates = sorted((p for p in geometry.profiles if "+" not in p.name),
                            key=lambda p: (p.compute_slices, p.memory_mib))
        for profile in candidates:
            part = profile.compute_slices / geometry.compute_slices
            if part >= need_compute and profile.memory_mib >= need_memory_mib and part < 1.0:
                what, share = f"MIG {profile.name}", part
                break
    elif model is not None:
        for parts in SHARES:
            if 1 / parts >= need_compute and model.memory_mib / parts >= need_memory_mib:
                what, share = f"time-slice 1/{parts}", 1 / parts
                break
    price = (prices or DEFAULT_PRICES).get(model_name, DEFAULT_PRICE)
    saved = (1.0 - share) * max(1, gpus) * 24.0
    return GpuFit(what, share, round(saved, 3), round(saved * price, 2))
