"""Filter's answer for many nodes at once: per claims' shape, each snapshot row's outcome,
asked of the allocator again only on the rows whose node changed since.

``AllocationMemo`` keeps one outcome per (node, claims); looking it up on every candidate row is
still a Python loop over 1,000 nodes for each pod. Here each shape (the claims' specs, the
memo's signature) keeps NumPy rows - the node epoch each row was last checked at and whether it
fits - so a cycle compares two arrays, then visits only the stale rows (the nodes something was
allocated on, or freed, since that shape was last filtered: usually a handful). Rows follow the
snapshot's: a new snapshot, rows shifted (a node removed: a new journal epoch) or new slices or
classes (the global epoch) start every shape afresh.

Neighbours: ``helper.dra_allocate`` (the memo), ``helper.dra_manager`` (epochs and what
changed), the plugin.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from gpusched.scheduler.plugins.helper.dra_allocate import AllocationMemo, NodeOutcome
from gpusched.scheduler.snapshot import Snapshot


@dataclass
class _Shape:
    seen: np.ndarray                      # int64 per row: the node epoch it was checked at
    fits: np.ndarray                      # bool per row
    errors: dict[int, NodeOutcome] = field(default_factory=dict)   # rows the allocator errored on


class RowOutcomes:
    """See the module docstring."""

    def __init__(self, memo: AllocationMemo) -> None:
        self.memo = memo
        self._layout: tuple[Any, ...] = ()
        self._epochs = np.zeros(0, dtype=np.int64)
        self._shapes: dict[tuple[str, ...], _Shape] = {}

    def _sync(self, snapshot: Snapshot) -> None:
        """Row epochs current: rebuilt for a new layout, else the nodes bumped since."""
        manager = self.memo.manager
        layout = (id(snapshot), snapshot.num_nodes, snapshot.journal_mark()[0], manager.epoch("")[1])
        changed = manager.take_bumped()
        if layout != self._layout or changed is None:
            self._layout = layout
            self._shapes.clear()
            self._epochs = np.array([manager.epochs.get(name, 0) for name in snapshot.names],
                                    dtype=np.int64)
            return
        for name in changed:
            row = snapshot.index.get(name)
            if row is not None:
                self._epochs[row] = manager.epochs.get(name, 0)

    def fits(self, snapshot: Snapshot, candidates: np.ndarray, claims: Sequence[dict[str, Any]],
             signature: tuple[str, ...]) -> tuple[np.ndarray, dict[int, NodeOutcome]]:
        """Per candidate, whether the claims can be allocated there; the rows (of all rows,
        not only the candidates) where the allocator failed with an error, and their outcomes."""
        self._sync(snapshot)
        shape = self._shapes.get(signature)
        if shape is None:
            count = snapshot.num_nodes
            shape = self._shapes[signature] = _Shape(np.full(count, -1, dtype=np.int64),
                                                      np.zeros(count, dtype=bool))
        stale = candidates[shape.seen[candidates] != self._epochs[candidates]]
        for row in stale.tolist():
            node = snapshot.nodes[row]
            outcome = self.memo.outcome(node.name, node.labels, claims, signature)
            shape.seen[row] = self._epochs[row]
            shape.fits[row] = outcome.allocations is not None
            if outcome.error:
                shape.errors[row] = outcome
            else:
                shape.errors.pop(row, None)
        return shape.fits[candidates], shape.errors
