"""Fair sharing's dominant resource share, as Kueue's ``pkg/cache/scheduler/fair_sharing.go``.

A node (ClusterQueue or Cohort) that borrows nothing, or has no parent, has share 0. Otherwise,
per resource, ``borrowed`` sums what usage (plus a workload's request) exceeds the subtree quota
in each flavor; ``lendable`` sums, over the root's flavor-resources, what the parent could ever
give (potentialAvailable). The ratio is ``borrowed * 1000 / lendable``; the dominant resource is
the largest ratio (ties: alphabetically first). The weighted share is ``ceil(ratio / weight)``;
a weight of 0 while borrowing is MaxInt64 and sorts after every other share.

Worked example: two queues of 8 GPUs in one cohort, ``a`` uses 12: it borrows 4 of the 16 the
cohort could lend it, ratio 250; with weight 2 its weighted share is 125.

Neighbours: ``quota``; used by the admission order and fair-sharing preemption.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from gpusched.kueue.quota import FlavorResource, QuotaNode, potential_available

MAX_INT64 = 2**63 - 1


@dataclass(frozen=True)
class Share:
    """A node's DRS: the unweighted ratio (per mille), its weight and dominant resource."""

    ratio: float
    weight: float
    resource: str = ""

    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and self.ratio != 0

    def precise(self) -> float:
        if self.ratio == 0:
            return 0.0
        return math.inf if self.weight == 0 else self.ratio / self.weight

    def weighted_share(self) -> int:
        """``status.fairSharing.weightedShare``."""
        return MAX_INT64 if self.zero_weight_borrows() else math.ceil(self.precise())

    def sort_key(self) -> tuple[int, float]:
        """``CompareDRS``: zero-weight borrowers after everyone, then by share."""
        if self.zero_weight_borrows():
            return 1, self.ratio
        return 0, self.precise()


def _lendable(parent: QuotaNode) -> dict[str, int]:
    lendable: dict[str, int] = {}
    for fr in parent.root().subtree_quota:
        lendable[fr[1]] = lendable.get(fr[1], 0) + potential_available(parent, fr)
    return lendable


def dominant_resource_share(node: QuotaNode, request: Mapping[FlavorResource, int] | None = None) -> Share:
    """``node``'s share, as if ``request`` were added to its usage."""
    request = request or {}
    if node.parent is None:
        return Share(0.0, node.weight)
    borrowed: dict[str, int] = {}
    for fr, quota in node.subtree_quota.items():
        over = request.get(fr, 0) + node.usage.get(fr, 0) - quota
        if over > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + over
    if not borrowed:
        return Share(0.0, node.weight)
    lendable = _lendable(node.parent)
    best, dominant = 0.0, ""
    for resource in sorted(borrowed):
        if lendable.get(resource, 0) > 0:
            ratio = borrowed[resource] * 1000.0 / lendable[resource]
            if ratio > best:
                best, dominant = ratio, resource
    return Share(best, node.weight, dominant)
