"""NodeAffinity: ``spec.nodeSelector`` and ``requiredDuringSchedulingIgnoredDuringExecution``
filter nodes; ``preferredDuringScheduling...`` terms score them.

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

from gpusched.objects.types import NodeSelectorTerm, PodInfo, Requirement
from gpusched.scheduler import messages
from gpusched.scheduler.framework import (MAX_NODE_SCORE, Code, CycleState, Rejection, SKIP,
                                          SUCCESS, Status)
from gpusched.scheduler.snapshot import Snapshot

NAME = "NodeAffinity"


def requirement_mask(snapshot: Snapshot, req: Requirement, nodes: np.ndarray) -> np.ndarray:
    """Which of ``nodes`` satisfy one NodeSelectorRequirement on their labels."""
    ids, vocab = snapshot.label_ids(req.key)
    op = req.operator
    # table[v] = result for vocab id v; table[-1] (the extra last slot) = result for "absent",
    # so indexing with ids (-1 for absent) needs no special case.
    table = np.zeros(len(vocab) + 1, dtype=bool)
    if op in ("In", "NotIn"):
        for value in req.values:
            vid = vocab.get(value)
            if vid is not None:
                table[vid] = True
        if op == "NotIn":
            table = ~table
    elif op == "Exists":
        table[:-1] = True
    elif op == "DoesNotExist":
        table[-1] = True
    elif op in ("Gt", "Lt"):
        try:
            bound = int(req.values[0]) if len(req.values) == 1 else None
        except ValueError:
            bound = None
        if bound is not None:
            numbers = snapshot.label_numbers(req.key)
            with np.errstate(invalid="ignore"):
                table[:-1] = numbers > bound if op == "Gt" else numbers < bound
    result: np.ndarray = table[ids[nodes]]
    return result


def field_mask(snapshot: Snapshot, req: Requirement, nodes: np.ndarray) -> np.ndarray:
    """matchFields: only ``metadata.name`` with In / NotIn, as upstream."""
    if req.key != "metadata.name" or req.operator not in ("In", "NotIn"):
        return np.zeros(len(nodes), dtype=bool)
    rows = [snapshot.index[v] for v in req.values if v in snapshot.index]
    hit = np.isin(nodes, np.array(rows, dtype=np.int64))
    return hit if req.operator == "In" else ~hit


def term_mask(snapshot: Snapshot, term: NodeSelectorTerm, nodes: np.ndarray) -> np.ndarray:
    if not term.match_expressions and not term.match_fields:
        return np.zeros(len(nodes), dtype=bool)
    ok = np.ones(len(nodes), dtype=bool)
    for req in term.match_expressions:
        ok &= requirement_mask(snapshot, req, nodes)
    for req in term.match_fields:
        ok &= field_mask(snapshot, req, nodes)
    return ok


def required_mask(snapshot: Snapshot, pod: PodInfo, nodes: np.ndarray) -> np.ndarray:
    """nodeSelector AND (any required term)."""
    ok = np.ones(len(nodes), dtype=bool)
    for key, value in pod.node_selector.items():
        ok &= requirement_mask(snapshot, Requirement(key, "In", (value,)), nodes)
    if pod.required_terms is not None:
        any_term = np.zeros(len(nodes), dtype=bool)
        for term in pod.required_terms:
            any_term |= term_mask(snapshot, term, nodes)
        ok &= any_term
    return ok


class NodeAffinity:
    name = NAME

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


def default_normalize(scores: np.ndarray, reverse: bool) -> np.ndarray:
    """Upstream ``helper.DefaultNormalizeScore``: scale to 0..100 by the max, optionally reversed."""
    top = int(scores.max(initial=0))
    if top == 0:
        return np.full(len(scores), MAX_NODE_SCORE if reverse else 0, dtype=np.int64)
    out = MAX_NODE_SCORE * scores.astype(np.int64) // top
    return MAX_NODE_SCORE - out if reverse else out


def new(args: dict[str, Any] | None = None) -> NodeAffinity:
    return NodeAffinity()
