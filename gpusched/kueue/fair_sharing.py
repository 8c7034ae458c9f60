"""Fair sharing's dominant resource share, as Kueue's ``pkg/cache/scheduler/fair_sharing.go``,
and the ``fairSharing`` section of Kueue's Configuration that turns it on.

A node (ClusterQueue or Cohort) that borrows nothing, or has no parent, has share 0. Otherwise,
per resource, ``borrowed`` sums what usage (plus a workload's request) exceeds the subtree quota
in each flavor; ``lendable`` sums, over the root's flavor-resources, what the parent could ever
give (potentialAvailable). The ratio is ``borrowed * 1000 / lendable``; the dominant resource is
the largest ratio (ties: alphabetically first). The weighted share is ``ceil(ratio / weight)``;
a weight of 0 while borrowing is an infinite share: MaxInt64 in ``weightedShare``, and it sorts
after every finite share (``CompareDRS``; two infinite shares compare by their ratios).

Worked example: two queues of 8 GPUs in one cohort, ``a`` uses 12: it borrows 4 of the 16 the
cohort could lend it, ratio 250; with weight 2 its weighted share is 125.

Neighbours: ``quota``; used by the cycle's order (``fair_iterator``), fair-sharing preemption
(``fair_preemption``) and the metrics.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpusched.kueue.quota import FlavorResource, QuotaNode, potential_available

MAX_INT64 = 2**63 - 1
LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"
DEFAULT_STRATEGIES = (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE)


@dataclass(frozen=True)
class FairSharing:
    """Kueue's Configuration ``fairSharing`` (present: fair sharing is on). The preemption
    strategies default to both rules (``parseStrategies``)."""

    preemption_strategies: tuple[str, ...] = DEFAULT_STRATEGIES


def fair_sharing_config(configuration: Mapping[str, Any] | None) -> FairSharing | None:
    """The ``fairSharing`` of a Configuration dict, None when absent (fair sharing off). Kueue's
    configuration validation admits three lists: both strategies in the default order, or either
    one alone; anything else keeps the default here."""
    section = (configuration or {}).get("fairSharing")
    if not isinstance(section, Mapping):
        return None
    strategies = tuple(section.get("preemptionStrategies") or ())
    allowed = (DEFAULT_STRATEGIES, DEFAULT_STRATEGIES[:1], DEFAULT_STRATEGIES[1:])
    return FairSharing(strategies if strategies in allowed else DEFAULT_STRATEGIES)


@dataclass(frozen=True)
class Share:
    """A node's DRS: the unweighted ratio (per mille), its weight, dominant resource and the
    flavor-resources it borrows (``borrowedFRs``)."""

    ratio: float
    weight: float
    resource: str = ""
    borrowed: tuple[FlavorResource, ...] = ()

    @property
    def borrowing(self) -> bool:
        """``IsBorrowing``: usage past the quota in some flavor-resource (even with a ratio of
        0, when nothing above could lend that resource)."""
        return bool(self.borrowed)

    def borrowing_on(self, requested: Mapping[FlavorResource, int]) -> bool:
        """``IsBorrowingOn``: borrows on a flavor-resource ``requested`` asks for."""
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed)

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
        """``CompareDRS``: zero-weight borrowers after everyone (by ratio), then by share."""
        if self.zero_weight_borrows():
            return 1, self.ratio
        return 0, self.precise()


NEGATIVE = Share(-1.0, 1.0)
"""``NegativeDRS``: below every share, the start of a search for the highest."""


def compare(a: Share, b: Share) -> int:
    """``CompareDRS``: -1, 0 or 1."""
    ka, kb = a.sort_key(), b.sort_key()
    return (ka > kb) - (ka < kb)


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
    frs: list[FlavorResource] = []
    for fr, quota in node.subtree_quota.items():
        over = request.get(fr, 0) + node.usage.get(fr, 0) - quota
        if over > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + over
            frs.append(fr)
    if not borrowed:
        return Share(0.0, node.weight)
    lendable = _lendable(node.parent)
    best, dominant = 0.0, ""
    for resource in sorted(borrowed):
        if lendable.get(resource, 0) > 0:
            ratio = borrowed[resource] * 1000.0 / lendable[resource]
            if ratio > best:
                best, dominant = ratio, resource
    return Share(best, node.weight, dominant, tuple(sorted(frs)))
