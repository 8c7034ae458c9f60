"""Node selection terms as node masks: upstream ``helper/node_affinity.go`` and
``component-helpers/scheduling/corev1/nodeaffinity`` (nodeSelector AND any required term; a
term ANDs its matchExpressions and matchFields; an empty term matches nothing).

Neighbours: ``plugins.node_affinity``, ``plugins.pod_topology_spread``, ``plugins.volume_binding``.
"""

from __future__ import annotations

import numpy as np

from gpusched.objects.types import NodeSelectorTerm, PodInfo, Requirement
from gpusched.scheduler.snapshot import Snapshot


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


def terms_mask(snapshot: Snapshot, terms: tuple[NodeSelectorTerm, ...] | None) -> np.ndarray:
    """Nodes (bool per row) matching any of ``terms``; every node when ``terms`` is None."""
    nodes = snapshot.all_nodes()
    if terms is None:
        return np.ones(len(nodes), dtype=bool)
    mask = np.zeros(len(nodes), dtype=bool)
    for term in terms:
        mask |= term_mask(snapshot, term, nodes)
    return mask
