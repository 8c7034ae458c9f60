"""FitError text: counting per reason, plain string sort, PreFilter and PostFilter parts."""

import numpy as np
import pytest

from gpusched.objects.types import Taint
from gpusched.scheduler import messages
from gpusched.scheduler.framework import Code, Diagnosis, Rejection, Status


def rej(n: int, rows: list[int], reason: str) -> Rejection:
    mask = np.zeros(n, dtype=bool)
    mask[rows] = True
    return Rejection(mask, reason)


CASES = [
    ("one-reason", Diagnosis(1, [rej(1, [0], "Insufficient nvidia.com/gpu")]),
     "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."),
    ("issue-example", Diagnosis(4, [rej(4, [0], "Insufficient nvidia.com/gpu"),
                                    rej(4, [1], "node(s) didn't match Pod's node affinity/selector"),
                                    rej(4, [2, 3], "node(s) had untolerated taint {dedicated: gpu}")],
                                post_filter_message="preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."),
     "0/4 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) didn't match Pod's node "
     "affinity/selector, 2 node(s) had untolerated taint {dedicated: gpu}. preemption: 0/4 nodes are "
     "available: 4 Preemption is not helpful for scheduling."),
    ("string-sort-10-before-2", Diagnosis(12, [rej(12, list(range(10)), "Insufficient cpu"),
                                               rej(12, [10, 11], "Insufficient memory")]),
     "0/12 nodes are available: 10 Insufficient cpu, 2 Insufficient memory."),
    ("counts-per-reason-not-node", Diagnosis(2, [rej(2, [0, 1], "Insufficient cpu"),
                                                 rej(2, [0], "Insufficient nvidia.com/gpu")]),
     "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 2 Insufficient cpu."),
    ("same-reason-twice-is-union", Diagnosis(3, [rej(3, [0, 1], "Insufficient cpu"),
                                                 rej(3, [1, 2], "Insufficient cpu")]),
     "0/3 nodes are available: 3 Insufficient cpu."),
    ("prefilter", Diagnosis(5, [], Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                          ("persistentvolumeclaim \"data\" not found",))),
     "0/5 nodes are available: persistentvolumeclaim \"data\" not found."),
    ("no-nodes", Diagnosis(0, []), "0/0 nodes are available:"),
    ("never-policy", Diagnosis(1, [rej(1, [0], "Insufficient cpu")],
                               post_filter_message="preemption: not eligible due to preemptionPolicy=Never."),
     "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."),
]


@pytest.mark.parametrize("diagnosis,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_fit_error(diagnosis, expected):
    assert messages.fit_error(diagnosis) == expected


@pytest.mark.parametrize("style,taint,expected", [
    (messages.TAINT_TEXT_WITH_KEY, Taint("dedicated", "gpu", "NoSchedule"), "node(s) had untolerated taint {dedicated: gpu}"),
    (messages.TAINT_TEXT_WITH_KEY, Taint("gpu", "", "NoExecute"), "node(s) had untolerated taint {gpu: }"),
    (messages.TAINT_TEXT_V1_35, Taint("dedicated", "gpu", "NoSchedule"), "node(s) had untolerated taint(s)"),
], ids=["with-key", "empty-value", "v1.35"])
def test_taint_text_styles(style, taint, expected):
    previous = messages.TAINT_TEXT
    messages.set_taint_text(style)
    try:
        assert messages.untolerated_taint(taint) == expected
    finally:
        messages.set_taint_text(previous)
