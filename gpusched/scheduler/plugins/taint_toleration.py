"""TaintToleration: NoSchedule/NoExecute taints keep pods off unless tolerated; PreferNoSchedule
taints lower the score.

Filter: for each distinct taint set (``Snapshot.taint_groups``) once, the first NoSchedule or
NoExecute taint (in node order) that no toleration tolerates (upstream
``FindMatchingUntoleratedTaint``) gives the reason ``node(s) had untolerated taint {key: value}``
(text style: ``messages.TAINT_TEXT``), UnschedulableAndUnresolvable. Matching is
``Toleration.tolerates``: an empty toleration key with Exists tolerates every taint, an empty
effect matches every effect, Equal compares values.

Score: the number of PreferNoSchedule taints not tolerated by the pod's tolerations whose effect is
empty or PreferNoSchedule, normalised reversed (fewest intolerable taints -> 100).

Neighbours: reads ``Snapshot.taint_group/taint_groups``; reason text from ``scheduler.messages``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.objects.types import PodInfo, Taint, Toleration
from gpusched.scheduler import messages
from gpusched.scheduler.framework import Code, CycleState, Rejection
from gpusched.scheduler.plugins.helper.normalize_score import default_normalize
from gpusched.scheduler.snapshot import Snapshot

NAME = "TaintToleration"
FILTER_EFFECTS = ("NoSchedule", "NoExecute")


def first_untolerated(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]) -> Taint | None:
    for taint in taints:
        if taint.effect in FILTER_EFFECTS and not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


def intolerable_prefer_no_schedule(taints: tuple[Taint, ...],
                                   tolerations: tuple[Toleration, ...]) -> int:
    relevant = [t for t in tolerations if t.effect in ("", "PreferNoSchedule")]
    return sum(1 for taint in taints if taint.effect == "PreferNoSchedule"
               and not any(t.tolerates(taint) for t in relevant))


class TaintToleration:
    name = NAME

    def filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
               candidates: np.ndarray) -> list[Rejection]:
        groups = snapshot.taint_groups
        if len(groups) == 1:          # only the empty taint set
            return []
        reason_of_group: dict[int, str] = {}
        for gid, taints in enumerate(groups):
            taint = first_untolerated(taints, pod.tolerations)
            if taint is not None:
                reason_of_group[gid] = messages.untolerated_taint(taint)
        if not reason_of_group:
            return []
        group_of_node = snapshot.taint_group[candidates]
        by_reason: dict[str, list[int]] = {}
        for gid, reason in reason_of_group.items():
            by_reason.setdefault(reason, []).append(gid)
        rejections = []
        for reason, gids in by_reason.items():
            hit = np.isin(group_of_node, gids) if len(gids) > 1 else group_of_node == gids[0]
            if hit.any():
                rejections.append(Rejection(snapshot.mask(candidates, hit), reason,
                                            Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
        return rejections

    def score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
              nodes: np.ndarray) -> np.ndarray:
        per_group = np.array([intolerable_prefer_no_schedule(taints, pod.tolerations)
                              for taints in snapshot.taint_groups], dtype=np.int64)
        result: np.ndarray = per_group[snapshot.taint_group[nodes]]
        return result

    def normalize(self, state: CycleState, pod: PodInfo, nodes: np.ndarray,
                  scores: np.ndarray) -> np.ndarray:
        return default_normalize(scores, reverse=True)


def new(args: dict[str, Any] | None = None) -> TaintToleration:
    return TaintToleration()
