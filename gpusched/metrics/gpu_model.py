"""The documented model behind the cluster's GPU metrics: per-model physics and per-pod workload.

Physics per catalog model (``PHYSICS``; kept here, not in ``devices.catalog``, because only the
metrics use it): NVML name (the ``modelName`` label), idle and board-limit (TDP) power in W, the
temperature at idle and at full load in C, the maximum SM and memory clocks in MHz, and whether
the part has HBM (only HBM parts report ``DCGM_FI_DEV_MEMORY_TEMP``). Values are the vendors'
datasheet TDPs and boost clocks; idle power and temperatures are typical readings (documented
approximations, see ``docs/monitoring.md``).

Per pod (:func:`pod_util`, :func:`pod_memory_mib`): the annotations ``gpusched.io/gpu-util``
(0-100) and ``gpusched.io/gpu-memory`` (a quantity such as ``12Gi``, per GPU), else defaults per
workload kind, found from the pod's owner:

==========================  ===========  ============================
workload                    utilization  memory (share of the device)
==========================  ===========  ============================
training (owner Job)        90 %         80 %
inference (owner ReplicaSet
of a Deployment)            40 %         30 %
plain pod (anything else)   60 %         50 %
==========================  ===========  ============================

A Deployment with a load curve (``gpusched.io/load``, see ``cluster.clock.load``) drives its running
pods' utilization instead of the default (``cluster.usage``, the same source the HPA and the
metrics APIs read).

Neighbours: ``cluster_source`` integrates these over pod lifetimes; ``cli.monitor`` (top pods).
"""

from __future__ import annotations

from typing import Any

import logging
from dataclasses import dataclass

from gpusched.cluster import usage
from gpusched.objects.quantity import QuantityError, canonical

log = logging.getLogger(__name__)

ANN_GPU_UTIL = "gpusched.io/gpu-util"
ANN_GPU_MEMORY = "gpusched.io/gpu-memory"
MIB = 1 << 20
IDLE_SM_CLOCK_MHZ = 210            # what an idle data-centre GPU reports
THERMAL_TIME_CONSTANT_S = 120.0    # temperature approaches its steady state with this e-folding time
HBM_TEMP_OFFSET_C = 5              # HBM stacks run a little hotter than the GPU die
DRIVER_VERSION = "550.54.15"       # the modelled driver (label DCGM_FI_DRIVER_VERSION)


@dataclass(frozen=True, slots=True)
class Physics:
    nvml_name: str
    idle_w: float
    tdp_w: float
    idle_c: float
    full_c: float
    sm_clock_mhz: int
    mem_clock_mhz: int
    hbm: bool


_V100 = ("Tesla V100-SXM2-16GB", 40.0, 300.0, 32.0, 78.0, 1530, 877, True)
PHYSICS: dict[str, Physics] = {name: Physics(*values) for name, values in {
    "V100-16GB": _V100,
    "V100M16": _V100,
    "V100-32GB": ("Tesla V100-SXM2-32GB",) + _V100[1:],
    "V100M32": ("Tesla V100-SXM2-32GB",) + _V100[1:],
    "A100-40GB": ("NVIDIA A100-SXM4-40GB", 55.0, 400.0, 30.0, 76.0, 1410, 1215, True),
    "A100-80GB": ("NVIDIA A100-SXM4-80GB", 60.0, 400.0, 30.0, 76.0, 1410, 1593, True),
    "A30": ("NVIDIA A30", 30.0, 165.0, 30.0, 72.0, 1440, 1215, True),
    "A10": ("NVIDIA A10", 20.0, 150.0, 32.0, 78.0, 1695, 6251, False),
    "L4": ("NVIDIA L4", 16.0, 72.0, 30.0, 74.0, 2040, 6251, False),
    "L40S": ("NVIDIA L40S", 35.0, 350.0, 30.0, 80.0, 2520, 9001, False),
    "T4": ("Tesla T4", 10.0, 70.0, 30.0, 75.0, 1590, 5001, False),
    "H100-80GB": ("NVIDIA H100 80GB HBM3", 70.0, 700.0, 30.0, 78.0, 1980, 2619, True),
    "H100-NVL": ("NVIDIA H100 NVL", 60.0, 400.0, 30.0, 76.0, 1785, 2619, True),
    "H200-141GB": ("NVIDIA H200", 75.0, 700.0, 30.0, 78.0, 1980, 3201, True),
    "B200": ("NVIDIA B200", 120.0, 1000.0, 30.0, 80.0, 1965, 3996, True),
    "GB200": ("NVIDIA GB200", 130.0, 1200.0, 30.0, 80.0, 1965, 3996, True),
    "GB10": ("NVIDIA GB10", 5.0, 140.0, 35.0, 80.0, 2418, 4266, False),
    "H100-PCIE": ("NVIDIA H100 PCIe", 50.0, 350.0, 30.0, 78.0, 1755, 1593, True),
    "A10G": ("NVIDIA A10G", 20.0, 300.0, 30.0, 78.0, 1710, 6251, False),
    "RTX-6000-ADA": ("NVIDIA RTX 6000 Ada Generation", 20.0, 300.0, 30.0, 80.0, 2505, 10001, False),
    "RTX-4090": ("NVIDIA GeForce RTX 4090", 20.0, 450.0, 30.0, 80.0, 2520, 10501, False),
    "P100": ("Tesla P100-PCIE-16GB", 30.0, 250.0, 32.0, 78.0, 1328, 715, True),
    "G2": ("Alibaba G2", 30.0, 250.0, 30.0, 76.0, 1500, 5000, False),
    "G3": ("Alibaba G3", 30.0, 250.0, 30.0, 76.0, 1500, 5000, False),
}.items()}
DEFAULT_PHYSICS = Physics("NVIDIA GPU", 30.0, 250.0, 30.0, 76.0, 1500, 5000, False)

# (utilization %, memory share of the device) by workload kind; see the module docstring.
WORKLOAD_DEFAULTS = usage.WORKLOAD_DEFAULTS     # one table with the HPA's metric source


def physics_of(model_name: str) -> Physics:
    return PHYSICS.get(model_name, DEFAULT_PHYSICS)


def workload_kind(pod: dict[str, Any]) -> str:
    """``training`` (owned by a Job), ``inference`` (owned by a ReplicaSet) or ``pod``."""
    owners = (pod.get("metadata") or {}).get("ownerReferences") or []
    kinds = {ref.get("kind") for ref in owners}
    return "training" if "Job" in kinds else "inference" if "ReplicaSet" in kinds else "pod"


def _annotation(pod: dict[str, Any], key: str) -> str | None:
    return ((pod.get("metadata") or {}).get("annotations") or {}).get(key)


def pod_util(pod: dict[str, Any]) -> float:
    """Expected GPU utilization of the pod in percent (0-100)."""
    raw = _annotation(pod, ANN_GPU_UTIL)
    if raw is not None:
        try:
            return min(100.0, max(0.0, float(raw)))
        except ValueError:
            log.warning("pod %s: ignoring %s=%r (expected 0-100)",
                        pod["metadata"].get("name"), ANN_GPU_UTIL, raw)
    return float(WORKLOAD_DEFAULTS[workload_kind(pod)][0])


def pod_memory_mib(pod: dict[str, Any], device_mib: int) -> int:
    """Framebuffer the pod uses on one device of ``device_mib`` MiB (capped at it)."""
    raw = _annotation(pod, ANN_GPU_MEMORY)
    if raw is not None:
        try:
            return min(device_mib, canonical("memory", raw) // MIB)
        except (QuantityError, ValueError):
            log.warning("pod %s: ignoring %s=%r (expected a quantity like 12Gi)",
                        pod["metadata"].get("name"), ANN_GPU_MEMORY, raw)
    return int(device_mib * WORKLOAD_DEFAULTS[workload_kind(pod)][1])


def power_w(physics: Physics, util: float) -> float:
    """Board power: idle + (TDP - idle) x utilization, within [idle, TDP]."""
    share = min(100.0, max(0.0, util)) / 100.0
    return physics.idle_w + (physics.tdp_w - physics.idle_w) * share


def steady_temp_c(physics: Physics, util: float) -> float:
    share = min(100.0, max(0.0, util)) / 100.0
    return physics.idle_c + (physics.full_c - physics.idle_c) * share


def reserved_mib(total_mib: int) -> int:
    """Framebuffer the driver reserves (NVML v2 ``reserved``): modelled as total / 64."""
    return total_mib // 64
