"""kube-scheduler's FailedScheduling text (``FitError.Error()``) and the plugins' reason strings.

Format (``../shared/docs/nvidia-gpu-stack.md`` section 7.2)::

    "0/<N> nodes are available:"
      + (a PreFilter rejected the pod:  " <prefilter msg>.")
      + (else, reasons recorded:        " " + ", ".join(sorted("<count> <reason>")) + ".")
      + (a PostFilter message:          " " + <postfilter msg>)

Reasons are counted per reason, not per node (a node failing two resources adds one to each), and
the sort is a plain string sort, so ``"10 Insufficient cpu"`` sorts before ``"2 Insufficient cpu"``.

Taint text depends on the Kubernetes version. gpusched emulates v1.35, whose TaintToleration
reason is ``node(s) had untolerated taint(s)`` (kubernetes PR #134740, cherry-picked to 1.34 in
#135023, dropped the taint's key and value from pod status). ``TAINT_TEXT`` selects the style:
``TAINT_TEXT_V1_35`` (the default) or ``TAINT_TEXT_WITH_KEY`` (releases before it:
``node(s) had untolerated taint {dedicated: gpu}``), the older wording kept only behind this
option: ``set_taint_text(TAINT_TEXT_WITH_KEY)`` before scheduling, or the environment variable
``GPUSCHED_TAINT_TEXT=with-key`` read at import.

Neighbours: reads ``framework.Diagnosis``; used by ``runner``, plugins, ``preemption``, ``explain``.
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np

from gpusched.objects.types import Taint
from gpusched.scheduler.framework import Diagnosis

# Reason strings, upstream wording.
TOO_MANY_PODS = "Too many pods"
NODE_UNSCHEDULABLE = "node(s) were unschedulable"
NODE_NAME_MISMATCH = "node(s) didn't match the requested node name"
NODE_AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
NODE_AFFINITY_CONFLICT = "pod affinity terms conflict"   # PreFilter: matchFields names no node
GPU_MODEL_MISMATCH = "node(s) didn't match Pod's GPU model"       # gpusched's own plugin
NODE_PORTS_TAKEN = "node(s) didn't have free ports for the requested pod ports"   # nodeports.ErrReason

TAINT_TEXT_WITH_KEY = "node(s) had untolerated taint {{{key}: {value}}}"
TAINT_TEXT_V1_35 = "node(s) had untolerated taint(s)"
TAINT_TEXT_STYLES = {"v1.35": TAINT_TEXT_V1_35, "with-key": TAINT_TEXT_WITH_KEY}
TAINT_TEXT = TAINT_TEXT_STYLES.get(os.environ.get("GPUSCHED_TAINT_TEXT", ""), TAINT_TEXT_V1_35)


def insufficient(resource: str) -> str:
    """``Insufficient <resource>`` as NodeResourcesFit words it."""
    return f"Insufficient {resource}"


def not_in_pre_filter_result(plugins: frozenset[str]) -> str:
    """The reason of the nodes a PreFilterResult left out (``schedule_one.go``
    ``findNodesThatFitPod``; Go's ``%v`` of a sorted string slice).

    >>> not_in_pre_filter_result(frozenset({"NodeAffinity"}))
    "node(s) didn't satisfy plugin(s) [NodeAffinity]"
    """
    return f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]"


def pre_filter_results_disjoint(plugins: frozenset[str]) -> str:
    """The PreFilter status when the narrowing plugins allow no common node (``framework.go``
    ``RunPreFilterPlugins``)."""
    if len(plugins) == 1:
        return f"node(s) didn't satisfy plugin {next(iter(plugins))}"
    return f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}] simultaneously"


def untolerated_taint(taint: Taint) -> str:
    """The TaintToleration reason for ``taint`` in the selected ``TAINT_TEXT`` style.

    >>> untolerated_taint(Taint("dedicated", "gpu", "NoSchedule")) in (
    ...     "node(s) had untolerated taint(s)", "node(s) had untolerated taint {dedicated: gpu}")
    True
    """
    return TAINT_TEXT.format(key=taint.key, value=taint.value)


def set_taint_text(text: str) -> None:
    """Select the taint reason style: ``TAINT_TEXT_WITH_KEY`` or ``TAINT_TEXT_V1_35``."""
    global TAINT_TEXT
    TAINT_TEXT = text


def reason_counts(diagnosis: Diagnosis) -> Counter[str]:
    """Nodes per reason: the union of the nodes every Rejection with that reason names."""
    masks: dict[str, np.ndarray] = {}
    for rejection in diagnosis.rejections:
        seen = masks.get(rejection.reason)
        masks[rejection.reason] = rejection.nodes if seen is None else (seen | rejection.nodes)
    return Counter({reason: int(np.count_nonzero(mask)) for reason, mask in masks.items()
                    if mask.any()})


def histogram(counts: Counter[str] | dict[str, int]) -> str:
    """``"<count> <reason>"`` items, string-sorted and joined by ``", "``."""
    return ", ".join(sorted(f"{count} {reason}" for reason, count in counts.items()))


def fit_error(diagnosis: Diagnosis) -> str:
    """kube-scheduler's FailedScheduling message for ``diagnosis``.

    >>> import numpy as np
    >>> from gpusched.scheduler.framework import Rejection
    >>> d = Diagnosis(3, [Rejection(np.array([True, False, False]), "Insufficient nvidia.com/gpu"),
    ...                   Rejection(np.array([False, True, True]), "node(s) were unschedulable")])
    >>> fit_error(d)
    '0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) were unschedulable.'
    """
    text = f"0/{diagnosis.num_nodes} nodes are available:"
    if diagnosis.pre_filter_status is not None and diagnosis.pre_filter_status.message:
        text += f" {diagnosis.pre_filter_status.message}."
    else:
        counts = reason_counts(diagnosis)
        if counts:
            text += f" {histogram(counts)}."
    if diagnosis.post_filter_message:
        text += f" {diagnosis.post_filter_message}"
    return text
