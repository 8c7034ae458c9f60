"""DynamicResources: the DRA plugin of the default profile, as it behaves for pods without
ResourceClaims (gpusched has no ResourceClaim, ResourceSlice or DeviceClass objects).

Upstream ``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go``, enabled by
default since DRA went GA in v1.34 (``applyFeatureGates`` in ``apis/config/v1/default_plugins.go``
inserts it just before DefaultPreemption):

- PreFilter: a pod that references no claim gets Skip (its Filter does not run).
- PostFilter: runs for every pod no node fits, before DefaultPreemption; with no claims it
  returns Unschedulable ``no new claims to deallocate``. The framework joins the PostFilter
  reasons with ``", "`` (``RunPostFilterPlugins``), which is why a v1.34+ FailedScheduling
  message reads ``... no new claims to deallocate, preemption: ...``.

Neighbours: the runner's PostFilter loop; registered in ``plugins/__init__``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.objects.types import PodInfo
from gpusched.scheduler.framework import (SKIP, Code, CycleState, Diagnosis, PostFilterResult,
                                          Rejection, Status)
from gpusched.scheduler.snapshot import Snapshot

NAME = "DynamicResources"
NO_CLAIMS = "no new claims to deallocate"


class DynamicResources:
    name = NAME

    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        return SKIP

    def filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
               candidates: np.ndarray) -> list[Rejection]:
        return []

    def post_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                    diagnosis: Diagnosis) -> PostFilterResult:
        return PostFilterResult(Status(Code.UNSCHEDULABLE, (NO_CLAIMS,)))


def new(args: dict[str, Any] | None = None) -> DynamicResources:
    return DynamicResources()
