"""The cohort tree and its quota arithmetic, as Kueue's ``pkg/cache/scheduler/resource_node.go``.

Every ClusterQueue and Cohort is a node holding, per (flavor, resource):
- ``quotas``: nominalQuota, borrowingLimit (None: unlimited), lendingLimit (None: all lendable);
- ``subtree_quota``: its own nominal plus what each child lends up (child subtree quota minus
  the child's local quota);
- ``usage``: a ClusterQueue's admitted usage; a Cohort's is what its children use past their
  local quota.

``local_quota`` is what lendingLimit keeps out of the parent's reach: max(0, subtree - lending).

Worked example (resource_node_test.go style): cohort ``c`` with two queues of nominal 10 GPUs,
``a`` with lendingLimit 4. c.subtree = (10 - 6) + 10 = 14. ``a`` uses 8: 6 of it is local, 2
counts in c. ``b`` may then use available(b) = 14 - 2 = 12 GPUs; ``a`` may use 6 - 6 + (14 - 2)
= 12 more only up to its borrowingLimit if one is set.

Neighbours: ``objects.quantity`` (parsing); used by ``flavors``, ``fair_sharing``, ``preemption``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpusched.objects.quantity import canonical

FlavorResource = tuple[str, str]
"""(flavor, resource), Kueue's ``resources.FlavorResource``."""


@dataclass(frozen=True)
class ResourceQuota:
    """One flavor-resource's limits on a node, in canonical units."""

    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(eq=False)
class QuotaNode:
    """A ClusterQueue (``is_cohort`` False) or a Cohort in the tree."""

    name: str
    is_cohort: bool
    quotas: dict[FlavorResource, ResourceQuota] = field(default_factory=dict)
    parent: QuotaNode | None = None
    children: list[QuotaNode] = field(default_factory=list)
    subtree_quota: dict[FlavorResource, int] = field(default_factory=dict)
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    weight: float = 1.0

    def local_quota(self, fr: FlavorResource) -> int:
        """Capacity only this subtree sees: what lendingLimit keeps from the parent."""
        quota = self.quotas.get(fr)
        if quota is not None and quota.lending_limit is not None:
            return max(0, self.subtree_quota.get(fr, 0) - quota.lending_limit)
        return 0

    def borrowing_with(self, fr: FlavorResource, val: int) -> bool:
        """True when ``val`` more would take usage past the subtree quota."""
        return self.usage.get(fr, 0) + val > self.subtree_quota.get(fr, 0)

    def path_to_root(self) -> Iterator[QuotaNode]:
        """This node's ancestors, parent first."""
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def root(self) -> QuotaNode:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def path(self) -> str:
        """``/root/.../name``, the preemptor/preemptee path Kueue prints."""
        names = [self.name] + [node.name for node in self.path_to_root()]
        return "/" + "/".join(reversed(names))


def local_available(node: QuotaNode, fr: FlavorResource) -> int:
    """Unused local (non-lendable) quota."""
    return max(0, node.local_quota(fr) - node.usage.get(fr, 0))


def available(node: QuotaNode, fr: FlavorResource) -> int:
    """How much more ``node`` may use now, through borrowing limits and the tree (may be
    negative after over-admission)."""
    if node.parent is None:
        return node.subtree_quota.get(fr, 0) - node.usage.get(fr, 0)
    parent_available = available(node.parent, fr)
    quota = node.quotas.get(fr)
    if quota is not None and quota.borrowing_limit is not None:
        stored_in_parent = node.subtree_quota.get(fr, 0) - node.local_quota(fr)
        used_in_parent = max(0, node.usage.get(fr, 0) - node.local_quota(fr))
        parent_available = min(stored_in_parent - used_in_parent + quota.borrowing_limit, parent_available)
    return local_available(node, fr) + parent_available


def potential_available(node: QuotaNode, fr: FlavorResource) -> int:
    """The most ``node`` could ever use with no usage anywhere, within borrowing limits."""
    if node.parent is None:
        return node.subtree_quota.get(fr, 0)
    most = node.local_quota(fr) + potential_available(node.parent, fr)
    quota = node.quotas.get(fr)
    if quota is not None and quota.borrowing_limit is not None:
        most = min(node.subtree_quota.get(fr, 0) + quota.borrowing_limit, most)
    return most


def add_usage(node: QuotaNode, fr: FlavorResource, val: int) -> None:
    """Count ``val`` on ``node``; what exceeds its local quota bubbles up to the parent."""
    free_local = local_available(node, fr)
    node.usage[fr] = node.usage.get(fr, 0) + val
    if node.parent is not None and val > free_local:
        add_usage(node.parent, fr, val - free_local)


def remove_usage(node: QuotaNode, fr: FlavorResource, val: int) -> None:
    """Undo ``add_usage``: the part stored in the parent leaves it first."""
    stored_in_parent = node.usage.get(fr, 0) - node.local_quota(fr)
    node.usage[fr] = node.usage.get(fr, 0) - val
    if stored_in_parent > 0 and node.parent is not None:
        remove_usage(node.parent, fr, min(val, stored_in_parent))


def node_height(node: QuotaNode) -> int:
    """Distance to the furthest leaf (a cohort with only queues has height 1)."""
    height = min(len(node.children), 1)
    for child in node.children:
        if child.is_cohort:
            height = max(height, node_height(child) + 1)
    return height


def lowest_fitting_subtree(cq: QuotaNode, fr: FlavorResource, val: int) -> tuple[int, bool]:
    """Kueue's ``FindHeightOfLowestSubtreeThatFits``: the borrowing level (0 = none) and
    whether that subtree is smaller than the whole tree (a reclaim may then be possible)."""
    if cq.parent is None or not cq.borrowing_with(fr, val):
        return 0, cq.parent is not None
    remaining = val - local_available(cq, fr)
    for node in cq.path_to_root():
        if not node.borrowing_with(fr, remaining):
            return node_height(node), node.parent is not None
        remaining -= local_available(node, fr)
    return node_height(cq.root()), False


def refresh(root: QuotaNode) -> None:
    """Recompute subtree quotas and cohort usages from the leaves' usage (``updateCohortResourceNode``)."""
    root.subtree_quota = {fr: quota.nominal for fr, quota in root.quotas.items()}
    if not root.is_cohort:
        return
    root.usage = {}
    for child in root.children:
        refresh(child)
        for fr, child_quota in child.subtree_quota.items():
            root.subtree_quota[fr] = root.subtree_quota.get(fr, 0) + child_quota - child.local_quota(fr)
        for fr, child_usage in child.usage.items():
            root.usage[fr] = root.usage.get(fr, 0) + max(0, child_usage - child.local_quota(fr))


def _optional(resource: str, value: Any) -> int | None:
    return None if value is None else canonical(resource, value)


def quotas_of(spec: Mapping[str, Any]) -> dict[FlavorResource, ResourceQuota]:
    """The (flavor, resource) quotas of a ClusterQueue's or Cohort's ``spec.resourceGroups``."""
    quotas: dict[FlavorResource, ResourceQuota] = {}
    for group in spec.get("resourceGroups") or ():
        for flavor in group.get("flavors") or ():
            for res in flavor.get("resources") or ():
                name = res["name"]
                quotas[(flavor["name"], name)] = ResourceQuota(
                    canonical(name, res.get("nominalQuota", 0)),
                    _optional(name, res.get("borrowingLimit")),
                    _optional(name, res.get("lendingLimit")))
    return quotas


@dataclass
class CohortForest:
    """Every ClusterQueue and Cohort node by name, and the cohorts caught in a cycle."""

    queues: dict[str, QuotaNode]
    cohorts: dict[str, QuotaNode]
    cyclic: frozenset[str]

    def roots(self) -> list[QuotaNode]:
        nodes = [*self.cohorts.values(), *self.queues.values()]
        return [node for node in nodes if node.parent is None and node.name not in self.cyclic]

    def in_cycle(self, cq: QuotaNode) -> bool:
        """True for a queue whose cohort chain loops: Kueue disables it until the loop goes."""
        return cq.parent is not None and cq.parent.name in self.cyclic


def _weight(spec: Mapping[str, Any]) -> float:
    weight = (spec.get("fairSharing") or {}).get("weight")
    return 1.0 if weight is None else float(canonical("cpu", weight)) / 1000


def _cohort(cohorts: dict[str, QuotaNode], name: str) -> QuotaNode:
    """The named cohort, made implicit (no quota, no parent) when no object names it."""
    if name not in cohorts:
        cohorts[name] = QuotaNode(name, True)
    return cohorts[name]


def _find_cycles(parent_of: Mapping[str, str]) -> frozenset[str]:
    cyclic: set[str] = set()
    for start in parent_of:
        seen: list[str] = []
        node: str | None = start
        while node is not None and node not in seen and node not in cyclic:
            seen.append(node)
            node = parent_of.get(node)
        if node is not None and node in seen:
            cyclic.update(seen[seen.index(node):])
    return frozenset(cyclic)


def build_forest(cluster_queues: Sequence[Mapping[str, Any]],
                 cohort_objects: Sequence[Mapping[str, Any]] = ()) -> CohortForest:
    """The tree(s) of ``cluster_queues`` and ``cohort_objects`` (v1beta2 dicts), usage empty."""
    cohorts: dict[str, QuotaNode] = {}
    parent_of: dict[str, str] = {}
    for obj in cohort_objects:
        spec = obj.get("spec") or {}
        node = _cohort(cohorts, obj["metadata"]["name"])
        node.quotas, node.weight = quotas_of(spec), _weight(spec)
        if spec.get("parentName"):
            parent_of[node.name] = spec["parentName"]
    cyclic = _find_cycles(parent_of)
    for child, parent in parent_of.items():
        if child not in cyclic:
            _link(cohorts[child], _cohort(cohorts, parent))
    queues: dict[str, QuotaNode] = {}
    for obj in cluster_queues:
        spec = obj.get("spec") or {}
        cq = QuotaNode(obj["metadata"]["name"], False, quotas_of(spec), weight=_weight(spec))
        queues[cq.name] = cq
        if spec.get("cohortName"):
            _link(cq, _cohort(cohorts, spec["cohortName"]))
    forest = CohortForest(queues, cohorts, cyclic)
    for root in forest.roots():
        refresh(root)
    return forest


def _link(child: QuotaNode, parent: QuotaNode) -> None:
    child.parent = parent
    parent.children.append(child)
