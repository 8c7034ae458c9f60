"""NodeAffinity: ``spec.nodeSelector`` and ``requiredDuringSchedulingIgnoredDuringExecution``
filter nodes; ``preferredDuringScheduling...`` terms score them.

PreFilter (upstream ``PreFilter``): SKIP for a pod without nodeSelector and required terms;
when every required term names nodes with ``matchFields`` ``metadata.name In`` (a DaemonSet's
pods, a pod pinned to one node), the named nodes (a term's name lists intersected, the terms'
sets united) are the only ones filtered (``framework.narrow_nodes``), and the others are
reported as ``node(s) didn't satisfy plugin(s) [NodeAffinity]``; terms that name no node in
common fail the cycle, ``pod affinity terms conflict``, UnschedulableAndUnresolvable.

Filter: every nodeSelector pair must match, and (when required terms exist) at least one term
must match: terms are ORed, a term's expressions ANDed, an empty term matches nothing.
Operators (upstream ``NodeSelectorRequirement``): In, NotIn (an absent label matches), Exists,
DoesNotExist, Gt / Lt (the single value and the node's label parsed as integers; an absent or
non-integer label does not match). ``matchFields`` supports ``metadata.name``. Reason
``node(s) didn't match Pod's node affinity/selector``, UnschedulableAndUnresolvable.

Score: the sum of the weights of the preferred terms a node matches, normalised to 0..100 by the
highest score (upstream ``DefaultNormalizeScore``). PreScore skips pods without preferred terms.

Matching is vectorised over nodes via ``Snapshot.label_ids``: a requirement is evaluated once per
distinct label value (plus once for "absent"), then looked up per node.

Neighbours: reads ``Snapshot.label_ids/label_numbers``; reason text from ``scheduler.messages``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.objects.types import NodeSelectorTerm, PodInfo
from gpusched.scheduler import messages
from gpusched.scheduler.framework import (MAX_NODE_SCORE, Code, CycleState, Rejection, SKIP,
                                          SUCCESS, Status, narrow_nodes)
from gpusched.scheduler.plugins.helper.node_affinity import required_mask, term_mask
from gpusched.scheduler.plugins.helper.normalize_score import default_normalize
from gpusched.scheduler.snapshot import Snapshot

NAME = "NodeAffinity"


class NodeAffinity:
    name = NAME

    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        if not pod.node_selector and pod.required_terms is None:
            return SKIP
        names = named_nodes(pod.required_terms or ())
        if names is None:
            return SUCCESS
        if not names:
            return Status.unschedulable(messages.NODE_AFFINITY_CONFLICT, resolvable=False)
        narrow_nodes(state, NAME, names)
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
               candidates: np.ndarray) -> list[Rejection]:
        if not pod.node_selector and pod.required_terms is None:
            return []
        bad = ~required_mask(snapshot, pod, candidates)
        if not bad.any():
            return []
        return [Rejection(snapshot.mask(candidates, bad), messages.NODE_AFFINITY_MISMATCH,
                          Code.UNSCHEDULABLE_AND_UNRESOLVABLE)]

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                  nodes: np.ndarray) -> Status:
        return SUCCESS if pod.preferred_terms else SKIP

    def score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
              nodes: np.ndarray) -> np.ndarray:
        total = np.zeros(len(nodes), dtype=np.int64)
        for preferred in pod.preferred_terms:
            if preferred.weight:
                total += preferred.weight * term_mask(snapshot, preferred.term, nodes)
        return total

    def normalize(self, state: CycleState, pod: PodInfo, nodes: np.ndarray,
                  scores: np.ndarray) -> np.ndarray:
        return default_normalize(scores, reverse=False)


def named_nodes(terms: tuple[NodeSelectorTerm, ...]) -> frozenset[str] | None:
    """The nodes the required terms name by ``metadata.name In``, or None when some term (or
    no term at all) leaves every node possible. A term's name lists are ANDed (intersected),
    the terms ORed (united)::

        [{metadata.name In [a, b]}, {metadata.name In [b, c]}]  -> a term: {b}
        that term, or a second term {metadata.name In [d]}      -> {b, d}
        a term with only matchExpressions                       -> None (any node)
    """
    if not terms:
        return None
    names: set[str] = set()
    for term in terms:
        lists = [frozenset(r.values) for r in term.match_fields
                 if r.key == "metadata.name" and r.operator == "In"]
        if not lists:
            return None
        names |= frozenset.intersection(*lists)
    return frozenset(names)


def new(args: dict[str, Any] | None = None) -> NodeAffinity:
    return NodeAffinity()
