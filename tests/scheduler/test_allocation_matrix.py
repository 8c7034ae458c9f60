"""``plugins.helper.resources.allocation_matrix``: the default resources' two-column gather gives
what the column-by-column build gives (upstream ``calculateResourceAllocatableRequest``,
``pkg/scheduler/framework/plugins/noderesources/resource_allocation.go``), for the scored rows
in any order, with and without upstream's non-zero cpu/memory defaults."""

from __future__ import annotations

import numpy as np
import pytest

from gpusched.scheduler.plugins.helper.resources import allocation_matrix, by_column
from tests.scheduler.builders import make_node, make_pod, snapshot_of

CPU_MEMORY = (("cpu", 1), ("memory", 1))


def _snapshot():
    """Three nodes of different sizes, two of them with pods (one requesting nothing)."""
    snap = snapshot_of(make_node("a", cpu="4", memory="8Gi"), make_node("b", gpus=2, cpu="96", memory="1Ti"),
                       make_node("c", cpu="8", memory="16Gi"))
    snap.add_pod(make_pod(cpu="1", memory="2Gi"), "a")
    snap.add_pod(make_pod(), "c")
    snap.add_pod(make_pod(cpu="500m", memory="1Gi", gpus=1), "b")
    return snap


@pytest.mark.parametrize("pod_fields", [dict(cpu="500m", memory="1Gi", gpus=1), dict(), dict(cpu="2")],
                         ids=["one-gpu-pod", "best-effort-pod", "cpu-only-pod"])
@pytest.mark.parametrize("rows", [[0, 1, 2], [2, 0], []], ids=["all-rows", "two-rows-reversed", "no-rows"])
@pytest.mark.parametrize("nonzero", [True, False], ids=["non-zero-defaults", "real-requests"])
def test_cpu_memory_gather_equals_the_column_build(pod_fields, rows, nonzero):
    snap = _snapshot()
    pod = make_pod(**pod_fields)
    vec = snap.request_vector(pod)
    nodes = np.array(rows, dtype=np.int64)
    fast = allocation_matrix(snap, pod, vec, nodes, CPU_MEMORY, nonzero)
    plain = by_column(snap, pod, vec, nodes, CPU_MEMORY, nonzero)
    for got, want in zip(fast, plain):
        assert got.dtype == want.dtype == np.int64
        assert got.shape == want.shape == (len(rows), 2)
        assert got.tolist() == want.tolist()
