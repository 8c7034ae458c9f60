"""DynamicResources: the DRA plugin of the default profile, as upstream's
``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go`` (v1.35/v1.36,
``resource.k8s.io/v1``), enabled by default since DRA went GA in v1.34 (``applyFeatureGates``
inserts it just before DefaultPreemption).

- PreFilter: a pod that references no claim (and asks for no DRA-backed extended resource) gets
  Skip. Otherwise its claims must exist, be its own when generated from a template, not be
  deleted, in use by others or in flight, and name existing DeviceClasses
  (``helper.dra_claims``: upstream's texts, UnschedulableAndUnresolvable).
- Filter, per node: an allocated claim whose ``status.allocation.nodeSelector`` does not select
  the node -> ``resourceclaim not available on the node``; the claims to allocate are handed to
  ``gpusched.dra.allocator`` on the node (``helper.dra_allocate``, outcomes kept per node until
  its devices change); no complete solution -> ``cannot allocate all claims``. Both are
  UnschedulableAndUnresolvable, so preemption reports such nodes as "Preemption is not helpful
  for scheduling": as in v1.36, a pod's devices are never freed by preempting their holders.
  The allocator's reason on each node is kept for ``explain`` (``framework.NODE_DETAILS_KEY``).
- PostFilter: a pod with no claims -> Unschedulable ``no new claims to deallocate``; a claim
  not available on a node and reserved for no other pod is deallocated (``deallocation of
  ResourceClaim completed``); KEP-5004's claim from an earlier cycle is deleted (``deletion of
  ResourceClaim completed``); else ``still not schedulable``. The framework joins the PostFilter
  reasons with ``", "``: ``... still not schedulable, preemption: 0/N nodes are available: ...``.
- Reserve: the node's allocation is taken from Filter's outcome and signalled as in flight
  (``DraManager.signal_pending``), so the next pod sees those devices in use. Unreserve drops it.
- PreBind (``pre_bind``, called by the host before Bind): the claim writes - the finalizer
  ``resource.kubernetes.io/delete-protection``, ``status.allocation`` and the pod appended to
  ``status.reservedFor`` (a shared claim's list grows) - which the host applies through the one
  write path and hands back (``assumed``); PostFilter's deallocations wait in ``writes``.

**How objects reach the plugin.** ``set_objects(DraObjects)`` before each pass (the embedded
cluster's ``cluster.scheduling.dra``; the benchmark's own). KEP-5004 (extended resources backed
by a DeviceClass) lives in ``helper.dra_extended``.

**What it imports.** Every pass runs the plugin, most pods reference no claim, and
``gpusched.dra`` (the allocator, the CEL runtime) is most of what a one-pod ``apply`` would
import: the plugin and its helpers import it in the functions that run for a claim or a DRA
object (``helper.dra_manager``'s parsing, ``helper.dra_allocate``'s allocator call, Score,
``helper.dra_explain``), never at module level (``tests/cli/test_startup_imports.py``).

Neighbours: ``helper.dra_manager``, ``helper.dra_claims``, ``helper.dra_allocate``,
``helper.dra_extended``; the runner's PostFilter loop; registered in ``plugins/__init__``.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from gpusched.objects.selectors import node_selector_matches
from gpusched.objects.types import PodInfo
from gpusched.scheduler.framework import (DRA_DELEGATED_KEY, NODE_DETAILS_KEY, SKIP, SUCCESS, Code,
                                          CycleState, Diagnosis, PostFilterResult,
                                          Rejection, Status)
from gpusched.scheduler.plugins.helper import dra_extended
from gpusched.scheduler.plugins.helper.dra_allocate import (CANNOT_ALLOCATE, AllocationMemo,
                                                            NodeOutcome)
from gpusched.scheduler.plugins.helper.dra_rows import RowOutcomes
from gpusched.scheduler.plugins.helper.normalize_score import default_normalize
from gpusched.scheduler.plugins.helper.dra_claims import (ClaimProblem, PodClaims, claim_ref,
                                                          find_claims, reserved_for, sort_claims)
from gpusched.scheduler.plugins.helper.dra_manager import (FINALIZER, ClaimKey, ClaimWrite,
                                                           DraManager, DraObjects, claim_key)
from gpusched.scheduler.snapshot import Snapshot

NAME = "DynamicResources"
NO_CLAIMS = "no new claims to deallocate"
STILL_NOT_SCHEDULABLE = "still not schedulable"
DEALLOCATED = "deallocation of ResourceClaim completed"
DELETED = "deletion of ResourceClaim completed"
NOT_AVAILABLE = "resourceclaim not available on the node"


@dataclass
class _Cycle:
    """The plugin's cycle state (upstream ``stateData``; ``clone`` returns itself, as upstream)."""

    claims: PodClaims = field(default_factory=PodClaims)
    special: int | None = None                     # index of KEP-5004's claim in claims.bodies
    extended: dra_extended.PodExtended | None = None
    signature: tuple[str, ...] = ()
    special_bodies: dict[str, dict[str, Any] | None] = field(default_factory=dict)   # by node
    unavailable: set[int] = field(default_factory=set)
    allocations: dict[int, dict[str, Any]] = field(default_factory=dict)   # Reserve's, by index
    node: str = ""

    def clone(self) -> "_Cycle":
        return self


class DynamicResources:
    name = NAME

    def __init__(self) -> None:
        self.manager = DraManager()
        self.memo = AllocationMemo(self.manager)
        self.rows = RowOutcomes(self.memo)
        self.reserved: dict[str, _Cycle] = {}       # pod uid -> its cycle, Reserve to PreBind
        self.writes: list[ClaimWrite] = []          # PostFilter's, applied by the host

    def set_objects(self, objects: DraObjects) -> None:
        self.manager.refresh(objects)

    # ---- PreFilter ------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        data = _Cycle()
        state.write(NAME, data)
        try:
            bodies = find_claims(pod, self.manager)
            data.extended = dra_extended.pod_extended(pod, self.manager)
            special = dra_extended.find_or_make_claim(pod, self.manager) if data.extended else None
            if not bodies and special is None:
                return SKIP
            data.claims = sort_claims(pod, bodies, self.manager, special)
        except ClaimProblem as problem:
            return Status.unschedulable(str(problem), resolvable=False)
        if special is not None and data.extended is not None:
            data.special = len(data.claims.bodies) - 1
            state.write(DRA_DELEGATED_KEY, frozenset(
                name for name in data.extended.requests if name in data.extended.classes))
        data.signature = self.memo.signature(
            [data.claims.bodies[i] for i in data.claims.pending if i != data.special])
        return SUCCESS

    # ---- Filter ---------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
               candidates: np.ndarray) -> list[Rejection]:
        data: _Cycle | None = state.read(NAME)
        if data is None or not data.claims.bodies:
            return []
        details: dict[str, Callable[[str], str]] = state.read(NODE_DETAILS_KEY) or {}
        details[NAME] = functools.partial(self._explain, data, pod, snapshot)
        state.write(NODE_DETAILS_KEY, details)
        if data.special is None and not data.claims.available_on:
            return self._filter_rows(data, snapshot, candidates)
        by_reason: dict[tuple[str, Code], np.ndarray] = {}
        for row in candidates.tolist():
            reason, _ = self._filter_node(data, pod, snapshot, row)
            if reason is not None:
                by_reason.setdefault(reason, np.zeros(snapshot.num_nodes, dtype=bool))[row] = True
        return [Rejection(mask, reason, code) for (reason, code), mask in by_reason.items()]

    def _filter_rows(self, data: _Cycle, snapshot: Snapshot,
                     candidates: np.ndarray) -> list[Rejection]:
        """Pending claims only (no allocated claim, no KEP-5004 claim): the same on every node
        but for the node, so ``helper.dra_rows`` answers for all rows at once."""
        pending = [data.claims.bodies[i] for i in data.claims.pending]
        fits, errors = self.rows.fits(snapshot, candidates, pending, data.signature)
        if fits.all():
            return []
        failed = candidates[~fits]
        by_reason: dict[str, list[int]] = {}
        for row in (r for r in errors if r in set(failed.tolist())) if errors else ():
            by_reason.setdefault(errors[row].error, []).append(row)
        rejections = []
        plain = np.zeros(snapshot.num_nodes, dtype=bool)
        plain[failed] = True
        for reason, rows in by_reason.items():
            plain[rows] = False
            mask = np.zeros(snapshot.num_nodes, dtype=bool)
            mask[rows] = True
            rejections.append(Rejection(mask, reason, Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
        if plain.any():
            rejections.insert(0, Rejection(plain, CANNOT_ALLOCATE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
        return rejections

    def _explain(self, data: _Cycle, pod: PodInfo, snapshot: Snapshot, node: str) -> str:
        """What ``explain`` shows after this plugin's reason on ``node``."""
        row = snapshot.index.get(node)
        if row is None:
            return ""
        _, detail = self._filter_node(data, pod, snapshot, row)
        return detail() if callable(detail) else detail

    def _filter_node(self, data: _Cycle, pod: PodInfo, snapshot: Snapshot, row: int
                     ) -> tuple[tuple[str, Code] | None, str | Callable[[], str]]:
        """One node: (reason and code, or None when it passes; what explain shows: the
        allocator's text, or ``dra_explain.why`` unevaluated)."""
        node = snapshot.nodes[row]
        special_body = None
        if data.extended is not None and data.special is not None:
            special_body, problem = dra_extended.node_claim(
                data.extended, data.claims.bodies[data.special], node, snapshot.allocatable[row],
                snapshot.resources)
            if problem:
                return (problem, Code.UNSCHEDULABLE_AND_UNRESOLVABLE), ""
        unavailable = [i for i, terms in data.claims.available_on.items()
                       if not node_selector_matches(terms, node.labels, node.name)]
        pending = [data.claims.bodies[i] for i in data.claims.pending if i != data.special]
        if special_body is not None:
            pending.append(special_body)
        if pending:
            signature = data.signature + ((dra_extended.signature(special_body),)
                                          if special_body is not None else ())
            outcome = self.memo.outcome(node.name, node.labels, pending, signature)
            if outcome.allocations is None:
                if outcome.error:
                    return (outcome.error, Code.UNSCHEDULABLE_AND_UNRESOLVABLE), outcome.reason
                from gpusched.scheduler.plugins.helper import dra_explain     # its CEL selectors
                detail: str | Callable[[], str] = outcome.reason if outcome.reason != CANNOT_ALLOCATE else \
                    functools.partial(dra_explain.why, self.manager, node.name, node.labels, pending)
                return (CANNOT_ALLOCATE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE), detail
            data.special_bodies[node.name] = special_body
        if unavailable:
            data.unavailable.update(unavailable)
            return (NOT_AVAILABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE), ""
        return None, ""

    # ---- PostFilter -----------------------------------------------------------------------

    def post_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                    diagnosis: Diagnosis) -> PostFilterResult:
        data: _Cycle | None = state.read(NAME)
        if data is None or not data.claims.bodies:
            return PostFilterResult(Status(Code.UNSCHEDULABLE, (NO_CLAIMS,)))
        for index in sorted(data.unavailable):      # upstream picks one at random
            if index == data.special:
                continue
            body = data.claims.bodies[index]
            holders = (body.get("status") or {}).get("reservedFor") or ()
            if not holders or (len(holders) == 1 and holders[0].get("uid") == pod.uid):
                freed = copy.deepcopy(body)
                for key in ("reservedFor", "allocation", "devices"):
                    freed.setdefault("status", {}).pop(key, None)
                self.writes.append(ClaimWrite(freed))
                return PostFilterResult(Status(Code.UNSCHEDULABLE, (DEALLOCATED,)))
        if data.special is not None and dra_extended.stored(data.claims.bodies[data.special]):
            self.writes.append(ClaimWrite(data.claims.bodies[data.special], delete=True))
            return PostFilterResult(Status(Code.UNSCHEDULABLE, (DELETED,)))
        return PostFilterResult(Status(Code.UNSCHEDULABLE, (STILL_NOT_SCHEDULABLE,)))

    # ---- PreScore / Score (firstAvailable's rank) -----------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                  nodes: np.ndarray) -> Status:
        """Skip unless a pending claim has a ``firstAvailable`` request (every other node
        scores 0 upstream)."""
        data: _Cycle | None = state.read(NAME)
        if data is None or not any(
                request.get("firstAvailable")
                for i in data.claims.pending if i != data.special
                for request in ((data.claims.bodies[i].get("spec") or {}).get("devices") or {})
                .get("requests") or ()):
            return SKIP
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
              nodes: np.ndarray) -> np.ndarray:
        """upstream ``Score``/``computeScore``: per allocated subrequest, 8 minus its index."""
        from gpusched.dra.allocator import Allocated, first_available_score
        data: _Cycle = state.read(NAME)
        scores = np.zeros(len(nodes), dtype=np.int64)
        for position, row in enumerate(nodes.tolist()):
            outcome, indices, _ = self._node_outcome(data, snapshot, row)
            if outcome is not None and outcome.allocations is not None:
                claims = [self.manager.parsed(data.claims.bodies[i]) for i in indices
                          if i != data.special]
                scores[position] = first_available_score(
                    claims, Allocated(outcome.allocations[:len(claims)]))
        return scores

    def normalize(self, state: CycleState, pod: PodInfo, nodes: np.ndarray,
                  scores: np.ndarray) -> np.ndarray:
        return default_normalize(scores, reverse=False)

    # ---- Reserve / Unreserve --------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, node: int) -> Status:
        data: _Cycle | None = state.read(NAME)
        if data is None or not data.claims.bodies:
            return SUCCESS
        name = snapshot.names[node]
        data.node = name
        self.reserved[pod.uid] = data
        outcome, indices, special_body = self._node_outcome(data, snapshot, node)
        if not indices:
            return SUCCESS              # nothing to allocate (KEP-5004's claim: device plugin here)
        if outcome is None or outcome.allocations is None:    # Filter found one: not in a cycle
            return Status(Code.ERROR, ("claim allocation not found for node",))
        for index, allocation in zip(indices, outcome.allocations):
            body = special_body if index == data.special else data.claims.bodies[index]
            assert body is not None
            data.allocations[index] = copy.deepcopy(allocation)
            pending_body = copy.deepcopy(body)
            pending_body.setdefault("status", {})["allocation"] = data.allocations[index]
            self.manager.signal_pending(_uid(body), pending_body)
        return SUCCESS

    def _node_outcome(self, data: _Cycle, snapshot: Snapshot, row: int
                      ) -> tuple[NodeOutcome | None, list[int], dict[str, Any] | None]:
        """Filter's outcome on the chosen node (kept: no allocator run), the claim indices its
        allocations belong to, and KEP-5004's claim made for the node."""
        name = snapshot.names[row]
        special_body = data.special_bodies.get(name)
        indices: list[int] = [i for i in data.claims.pending if i != data.special]
        if special_body is not None and data.special is not None:
            indices.append(data.special)
        if not indices:
            return None, indices, special_body
        bodies = [special_body if i == data.special else data.claims.bodies[i] for i in indices]
        signature = data.signature + ((dra_extended.signature(special_body),)
                                      if special_body is not None else ())
        outcome = self.memo.outcome(name, snapshot.nodes[row].labels,
                                    [b for b in bodies if b is not None], signature)
        return outcome, indices, special_body

    def unreserve(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, node: int) -> None:
        data: _Cycle | None = state.read(NAME)
        self.reserved.pop(pod.uid, None)
        if data is None:
            return
        for index in data.allocations:
            body = data.special_bodies.get(data.node) if index == data.special \
                else data.claims.bodies[index]
            if body is not None:
                self.manager.remove_pending(_uid(body))
        data.allocations.clear()

    # ---- PreBind and the host's writes ----------------------------------------------------

    def pre_bind(self, pod: PodInfo, node: str) -> list[ClaimWrite]:
        """The claim writes binding ``pod`` to ``node`` needs (upstream ``PreBind``/``bindClaim``):
        each claim not yet reserved for the pod gets Reserve's allocation (and the finalizer) and
        the pod in ``reservedFor``. Raises ClaimProblem when a claim changed meanwhile."""
        data = self.reserved.pop(pod.uid, None)
        if data is None:
            return []
        writes = []
        for index, body in enumerate(data.claims.bodies):
            allocation = data.allocations.get(index)
            if index == data.special:
                node_body = data.special_bodies.get(data.node)
                write = dra_extended.prebind_write(data.extended, node_body, pod, allocation)
                if write is not None:
                    writes.append(write)
                continue
            if reserved_for(body, pod.uid):
                continue
            writes.append(ClaimWrite(self._bound(body, pod, allocation)))
        return writes

    def _bound(self, body: dict[str, Any], pod: PodInfo,
               allocation: dict[str, Any] | None) -> dict[str, Any]:
        latest = copy.deepcopy(self.manager.claim(claim_key(body)) or body)
        meta, status = latest["metadata"], latest.setdefault("status", {})
        if meta.get("deletionTimestamp"):
            raise ClaimProblem(f"claim {claim_ref(latest)} got deleted in the meantime")
        if allocation is not None:
            if status.get("allocation"):
                raise ClaimProblem(f"claim {claim_ref(latest)} got allocated elsewhere in the meantime")
            if FINALIZER not in (meta.get("finalizers") or ()):
                meta["finalizers"] = [*(meta.get("finalizers") or ()), FINALIZER]
            status["allocation"] = allocation
        status["reservedFor"] = [*(status.get("reservedFor") or ()),
                                 {"resource": "pods", "name": pod.name, "uid": pod.uid}]
        return latest

    def assumed(self, written: ClaimWrite, stored: dict[str, Any] | None) -> None:
        """The host wrote ``written`` (``stored``: the stored claim after it, None if deleted)."""
        if stored is None:
            self.manager.remove_pending(_uid(written.body))
            self.manager.forget(claim_key(written.body))
        else:
            self.manager.assume(stored, _uid(written.body))

    def failed_pre_bind(self, pod: PodInfo) -> None:
        """PreBind failed: the in-flight allocations are dropped (upstream's Unreserve)."""
        data = self.reserved.pop(pod.uid, None)
        if data is not None:
            state = CycleState()
            state.write(NAME, data)
            self.unreserve(state, pod, Snapshot(), 0)

    def take_writes(self) -> list[ClaimWrite]:
        writes, self.writes = self.writes, []
        return writes


def _uid(body: dict[str, Any]) -> str:
    return str((body.get("metadata") or {}).get("uid") or claim_key(body))


def new(args: dict[str, Any] | None = None) -> DynamicResources:
    return DynamicResources()


__all__ = ["NAME", "ClaimKey", "ClaimWrite", "DynamicResources", "new"]
