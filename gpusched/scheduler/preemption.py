"""DefaultPreemption's algorithm: which running pods to evict so that a pending pod fits.

This is kube-scheduler's ``framework/preemption`` reproduced step by step (see
``shared/docs/nvidia-gpu-stack.md`` section 7.6):

1. **Eligibility** (``eligibility_message``): ``preemptionPolicy: Never`` pods never preempt; a pod
   whose nominated node still has a lower-priority pod terminating because of preemption waits.
2. **Candidate nodes**: only nodes whose filter status was Unschedulable (never
   UnschedulableAndUnresolvable); the dry run covers ``max(10% of nodes, 100)`` of them starting at
   a random offset drawn from the scheduler's seeded generator (every node when there are <= 100).
3. **Victims on a node** (``select_victims_on_node``): remove every strictly-lower-priority pod
   from the snapshot, re-run the profile's filters on that node, then *reprieve* pods in
   importance order (PDB-violating first, then the others; higher priority first, then earlier
   start) by adding each back and keeping it only if the pod still fits. The snapshot is restored
   in ``finally``, so a dry run never leaks into the cluster state.
4. **Choosing the node** (``pick_one_node``): six tie-breaks, each only among the nodes the
   previous one left (worked example in the function).

The filters are re-run through a ``FitCheck``: a callable ``fits(pod, node) -> reasons`` (empty
tuple = fits) that the PostFilter plugin builds from the runner (``preemption_fit``'s
``FrameworkFitCheck``). Nothing here reads a clock.

Speed, without changing any outcome: ``prejudge`` settles in one vectorised step the nodes
that cannot be candidates - no strictly-lower-priority pod, or (``FrameworkFitCheck.precheck``)
NodeResourcesFit rejecting the node even with every lower pod gone, read from the snapshot's
per-priority requests - and gives them the reasons the what-if would give; the reprieve skips
the what-if for a pod whose return leaves too few resources (``short_with``); the message over
all nodes is counted per reason group; a node's outcome is kept between dry runs while the node
and the preemptor's relevant fields are unchanged (``preemption_cache``). The tests
``test_preemption_precheck.py`` and ``test_preemption_cache.py`` hold the result equal to the
plain node-by-node dry run on random clusters.

PodDisruptionBudgets reach the plugin as ``PdbInfo`` values (namespace, selector, disruptions
allowed): through the plugin args ``{"pdbs": [...]}`` or ``DefaultPreemption.set_pdbs(...)`` (the
cluster calls it before each scheduling pass; see ``plugins/default_preemption.py``).

Neighbours: used by ``plugins/default_preemption.py`` (PostFilter) and ``explain.py`` (what-if);
reads and temporarily edits ``snapshot.Snapshot`` through its reversible ``remove_pod/add_pod``.
"""

from __future__ import annotations

import logging
import math
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from gpusched.objects.types import NO_DEVICES, DeviceAssignment, LabelSelector, PodInfo
from gpusched.scheduler.framework import Code, Diagnosis, PostFilterResult, SUCCESS, Status
from gpusched.objects.selectors import matches
from gpusched.scheduler.messages import histogram
from gpusched.scheduler.preemption_cache import VictimsCache
from gpusched.scheduler.preemption_fit import FrameworkFitCheck, framework_fit_check

if TYPE_CHECKING:
    from gpusched.scheduler.snapshot import Snapshot

__all__ = ["FrameworkFitCheck", "framework_fit_check"]   # re-exported: callers build fits here

log = logging.getLogger(__name__)

MAX_INT32 = 2**31 - 1
MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100

MSG_POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_TERMINATING = "not eligible due to a terminating pod on the nominated node."
MSG_NOT_HELPFUL = "Preemption is not helpful for scheduling"
MSG_NO_VICTIMS = "No preemption victims found for incoming pod"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"

FitCheck = Callable[[PodInfo, int], tuple[str, ...]]
"""``fits(pod, node)``: the reasons the profile's filters reject ``node`` for ``pod`` now; ``()`` = fits."""


HANDLE_KEY = "FrameworkHandle"
"""CycleState key under which the runner puts a ``FrameworkHandle`` before PostFilter runs."""


@dataclass(frozen=True)
class FrameworkHandle:
    """What a PostFilter plugin needs from the runner (upstream's ``framework.Handle``).

    ``framework`` is the profile's ``profile.Framework`` (its ``pre_filter`` and ``filter``
    plugin tuples are re-run on what-if snapshots); ``rng`` is the scheduler's seeded generator.
    The runner writes ``state.write(HANDLE_KEY, FrameworkHandle(framework, rng))`` each cycle.
    """

    framework: Any
    rng: np.random.Generator | None = None


@dataclass(frozen=True, slots=True)
class PdbInfo:
    """A PodDisruptionBudget as preemption sees it: pods it covers and how many may go now.

    An empty selector covers no pod (upstream preemption skips PDBs with an empty selector).
    """

    namespace: str
    selector: LabelSelector
    disruptions_allowed: int
    name: str = ""
    disrupted_pods: tuple[str, ...] = ()   # pod names already counted as disrupted


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node where evicting ``victims`` lets the pod fit; ``victims`` most important first."""

    node: int
    node_name: str
    victims: tuple[PodInfo, ...]
    num_pdb_violations: int


@dataclass(frozen=True)
class DryRun:
    """Outcome of the dry run over ``evaluated`` (potential nodes in window order, up to where it
    stopped): the candidates, and why each other evaluated node cannot help. Nodes judged without
    a what-if (no lower-priority pod; the resource pre-check) share a reason tuple:
    ``verdict[i]`` indexes ``reason_groups`` (-1: judged by the exact dry run, reasons in
    ``exact_failures``, or a candidate)."""

    candidates: tuple[Candidate, ...]
    evaluated: np.ndarray
    verdict: np.ndarray
    reason_groups: tuple[tuple[str, ...], ...]
    exact_failures: dict[int, tuple[str, ...]]

    @property
    def failures(self) -> dict[int, tuple[str, ...]]:
        """Every evaluated non-candidate node -> its reasons (built on demand; for tests/explain)."""
        out = {int(n): self.reason_groups[v] for n, v in zip(self.evaluated, self.verdict) if v >= 0}
        out.update(self.exact_failures)
        return out

    def reason_counts(self) -> dict[str, int]:
        """Nodes per reason over the failed nodes (a node counts once per distinct reason)."""
        counts: dict[str, int] = {}
        judged = self.verdict[self.verdict >= 0]
        per_group = np.bincount(judged, minlength=len(self.reason_groups)) if len(judged) else ()
        groups = list(zip(self.reason_groups, (int(c) for c in per_group)))
        groups += [(reasons, 1) for reasons in self.exact_failures.values()]
        for reasons, count in groups:
            for reason in dict.fromkeys(reasons):
                if count:
                    counts[reason] = counts.get(reason, 0) + count
        return counts

    @property
    def num_failures(self) -> int:
        return int(np.count_nonzero(self.verdict >= 0)) + len(self.exact_failures)


# ---- ordering helpers -------------------------------------------------------------------------


def start_or_latest(pod: PodInfo) -> float:
    """Upstream ``GetPodStartTime``: a pod that has not started counts as starting *now* (latest)."""
    return math.inf if pod.start_time is None else pod.start_time


def importance_key(pod: PodInfo) -> tuple[Any, ...]:
    """Sort key, most important first: higher priority, then earlier start, then creation, uid."""
    return (-pod.priority, start_or_latest(pod), pod.creation_seq, pod.uid)


def split_by_pdb(pods: Sequence[PodInfo], pdbs: Sequence[PdbInfo]) -> tuple[list[PodInfo], list[PodInfo]]:
    """Upstream ``filterPodsWithPDBViolation``: (violating, non-violating), order preserved.

    Walking the pods in order, each pod covered by a PDB uses up one of its allowed disruptions;
    a pod that drives any covering PDB below zero is *violating*.
    """
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violating: list[PodInfo] = []
    others: list[PodInfo] = []
    for pod in pods:
        breaks = False
        for i, pdb in enumerate(pdbs):
            if pdb.namespace != pod.namespace or pod.name in pdb.disrupted_pods:
                continue
            empty = not pdb.selector.match_labels and not pdb.selector.match_expressions
            if empty or not matches(pdb.selector, pod.labels):
                continue
            allowed[i] -= 1
            if allowed[i] < 0:
                breaks = True
        (violating if breaks else others).append(pod)
    return violating, others


# ---- step 1: eligibility ----------------------------------------------------------------------


def eligibility_message(pod: PodInfo, snapshot: Snapshot, unresolvable: np.ndarray | None = None) -> str:
    """Upstream ``PodEligibleToPreemptOthers``: ``""`` when the pod may preempt, else the reason."""
    if pod.preemption_policy == "Never":
        return MSG_POLICY_NEVER
    if pod.nominated_node:
        node = snapshot.index.get(pod.nominated_node)
        if node is None:
            return ""
        if unresolvable is not None and node < len(unresolvable) and unresolvable[node]:
            return ""   # the nominated node can no longer help: preempting elsewhere is allowed
        for other in snapshot.pods_on(node):
            if (other.priority < pod.priority and other.terminating
                    and other.disruption_reason == PREEMPTION_BY_SCHEDULER):
                return MSG_TERMINATING
    return ""


# ---- step 3: victims on one node --------------------------------------------------------------


@contextmanager
def pods_removed(snapshot: Snapshot, pods: Iterable[PodInfo]) -> Iterator[dict[str, tuple[PodInfo, int, DeviceAssignment]]]:
    """Remove ``pods`` from the snapshot for the duration of the block; put back what is still out.

    Yields the dict uid -> (pod, node, assignment) of pods currently removed; a caller that adds a
    pod back itself deletes its entry.
    """
    removed: dict[str, tuple[PodInfo, int, DeviceAssignment]] = {}
    try:
        for pod in pods:
            node, assignment = snapshot.remove_pod(pod.uid)
            removed[pod.uid] = (pod, node, assignment)
        yield removed
    finally:
        for pod, node, assignment in reversed(list(removed.values())):
            snapshot.add_pod(pod, node, assignment)


def minimal_removal(snapshot: Snapshot, pod: PodInfo, node: int, removable: Sequence[PodInfo],
                    reprieve_order: Sequence[Sequence[PodInfo]], fits: FitCheck
                    ) -> tuple[list[PodInfo], tuple[str, ...]]:
    """Remove all ``removable``; if ``pod`` fits, add pods back group by group, in order, keeping
    each one that does not stop the pod fitting. Returns (pods that must go, reasons if no fit).

    The snapshot is unchanged afterwards. Worked example: node with 4 GPUs, pods a (2 GPUs, prio
    5), b (1 GPU, prio 3), c (1 GPU, prio 1); the preemptor wants 2 GPUs at prio 10. Removing all
    frees 4; reprieve a -> 2 free, still fits, a stays; reprieve b -> 1 free, no fit, so b goes
    back out as a victim; reprieve c -> 1 free, no fit, c is a victim too. Victims: b, c.

    When ``fits`` offers ``short_with(pod, node, other)`` (``FrameworkFitCheck``), a pod whose
    return would leave too few resources stays out without the what-if: that is a "no fit"
    whatever the other filters say, so the outcome is the same.
    """
    must_go: list[PodInfo] = []
    short_with = getattr(fits, "short_with", None)
    with pods_removed(snapshot, removable) as removed:
        reasons = fits(pod, node)
        if reasons:
            return [], reasons
        for group in reprieve_order:
            for other in group:
                if short_with is not None and short_with(pod, node, other):
                    must_go.append(other)
                    continue
                entry = removed.pop(other.uid)
                snapshot.add_pod(other, entry[1], entry[2])
                if fits(pod, node):
                    snapshot.remove_pod(other.uid)
                    removed[other.uid] = entry
                    must_go.append(other)
    return must_go, ()


def select_victims_on_node(snapshot: Snapshot, pod: PodInfo, node: int, fits: FitCheck,
                           pdbs: Sequence[PdbInfo] = ()) -> Candidate | tuple[str, ...]:
    """Upstream ``SelectVictimsOnNode``: a Candidate, or the reasons this node cannot help."""
    lower = sorted((p for p in snapshot.pods_on(node) if p.priority < pod.priority), key=importance_key)
    if not lower:
        return (MSG_NO_VICTIMS,)
    violating, others = split_by_pdb(lower, pdbs)
    victims, reasons = minimal_removal(snapshot, pod, node, lower, (violating, others), fits)
    if reasons:
        return reasons
    violating_uids = {p.uid for p in violating}
    num_violations = sum(1 for v in victims if v.uid in violating_uids)
    return Candidate(node, snapshot.names[node], tuple(sorted(victims, key=importance_key)),
                     num_violations)


# ---- step 2: the dry run over candidate nodes -------------------------------------------------


def num_candidates(num_potential: int) -> int:
    """Upstream ``calculateNumCandidates``: max(10% of nodes, 100), capped at the node count."""
    n = num_potential * MIN_CANDIDATE_NODES_PERCENTAGE // 100
    return min(max(n, MIN_CANDIDATE_NODES_ABSOLUTE), num_potential)


def prejudge(snapshot: Snapshot, pod: PodInfo, nodes: np.ndarray, fits: FitCheck
             ) -> tuple[np.ndarray, list[tuple[str, ...]]]:
    """Necessary conditions, vectorised over ``nodes``, that decide a node without a what-if.

    Returns (verdict per node: -1 = run the exact dry run, else an index into the reason list).
    A node without strictly-lower-priority pods gets ``No preemption victims found ...``, as
    ``select_victims_on_node`` says first; when ``fits`` has a ``precheck`` (see
    ``FrameworkFitCheck``), nodes that fail it get the reasons it gives (the ones the what-if
    would give). The property test ``test_precheck_matches_plain_dry_run`` holds both equal.
    """
    verdict = np.full(len(nodes), -1, dtype=np.int64)
    groups: list[tuple[str, ...]] = [(MSG_NO_VICTIMS,)]
    has_victims = snapshot.min_pod_priority[nodes] < pod.priority
    verdict[~has_victims] = 0
    precheck = getattr(fits, "precheck", None)
    if precheck is not None and has_victims.any():
        positions = np.flatnonzero(has_victims)
        ids, reasons = precheck(pod, nodes[positions])
        failing = ids >= 0
        verdict[positions[failing]] = ids[failing] + len(groups)
        groups += reasons
    return verdict, groups


def dry_run(snapshot: Snapshot, pod: PodInfo, potential: Sequence[int] | np.ndarray, fits: FitCheck,
            pdbs: Sequence[PdbInfo] = (), rng: np.random.Generator | None = None,
            cache: VictimsCache | None = None) -> DryRun:
    """Evaluate nodes from a random offset until enough candidates are found (upstream
    ``DryRunPreemption``: stop once there is a PDB-free candidate and ``num_candidates`` in all).

    ``prejudge`` settles the nodes that cannot be candidates in one vectorised step; only the
    others get the exact what-if (``select_victims_on_node``), in the same window order, so the
    stop point, the candidates and every node's reasons are those of the plain node-by-node run.
    With <= 100 potential nodes every node is evaluated and no random number is drawn, so small
    clusters give the same answer whatever the generator's state. ``cache`` (DefaultPreemption's
    ``VictimsCache``) gives a node's outcome without the what-if when the node and the pod's
    relevant fields are those of an earlier dry run (``preemption_cache``: same outcome).
    """
    potential = np.asarray(potential, dtype=np.int64)
    wanted = num_candidates(len(potential))
    offset = 0
    if wanted < len(potential) and rng is not None:
        offset = int(rng.integers(len(potential)))
    order = np.concatenate((potential[offset:], potential[:offset]))
    verdict, groups = prejudge(snapshot, pod, order, fits)
    candidates: list[Candidate] = []
    exact_failures: dict[int, tuple[str, ...]] = {}
    non_violating = 0
    stop = len(order)
    exact = np.flatnonzero(verdict < 0).tolist()
    kept = cache.for_pod(snapshot, pod, fits, pdbs) if cache is not None and exact else None
    for position in exact:
        node = int(order[position])
        outcome = kept.get(node) if kept is not None else None
        if outcome is None:
            outcome = select_victims_on_node(snapshot, pod, node, fits, pdbs)
            if kept is not None:
                kept.put(node, outcome)
        if isinstance(outcome, Candidate):
            candidates.append(outcome)
            non_violating += outcome.num_pdb_violations == 0
            if non_violating > 0 and len(candidates) >= wanted:
                stop = position + 1
                break
        else:
            exact_failures[node] = outcome
    candidates.sort(key=lambda c: c.node)
    return DryRun(tuple(candidates), order[:stop], verdict[:stop], tuple(groups), exact_failures)


# ---- step 4: choosing one node ----------------------------------------------------------------


def earliest_start_of_most_important(victims: Sequence[PodInfo]) -> float:
    """Upstream ``GetEarliestPodStartTime``: earliest start among the highest-priority victims."""
    top = max(v.priority for v in victims)
    return min(start_or_latest(v) for v in victims if v.priority == top)


def pick_one_node(candidates: Sequence[Candidate]) -> Candidate | None:
    """Upstream ``pickOneNodeForPreemption``; each step only breaks the ties of the one before:

    1. fewest PDB violations; 2. lowest highest-victim priority; 3. smallest sum of
    (priority + MaxInt32 + 1); 4. fewest victims; 5. latest earliest-start among the
    highest-priority victims; 6. first in node order.

    Worked example, no PDBs: node A would evict priorities (5, 1), B (5), C (3, 3, 3). Step 2
    keeps only C (highest victim priority 3 < 5), so C wins although it evicts three pods.
    Without C, step 2 ties A and B at 5; step 3 compares (5 + 2^31) + (1 + 2^31) for A with
    5 + 2^31 for B, so B wins. A candidate with no victims at all wins outright.
    """
    if not candidates:
        return None
    for c in candidates:
        if not c.victims:
            return c
    steps: list[Callable[[Candidate], float]] = [
        lambda c: c.num_pdb_violations,
        lambda c: c.victims[0].priority if c.victims else -math.inf,
        lambda c: sum(v.priority + MAX_INT32 + 1 for v in c.victims),
        lambda c: len(c.victims),
        lambda c: -earliest_start_of_most_important(c.victims),
    ]
    remaining = sorted(candidates, key=lambda c: c.node)
    for key in steps:
        best = min(key(c) for c in remaining)
        remaining = [c for c in remaining if key(c) == best]
        if len(remaining) == 1:
            break
    return remaining[0]


# ---- messages ---------------------------------------------------------------------------------


def no_candidate_message(num_nodes: int, outcome: DryRun) -> str:
    """FitError text over all nodes when no node can help (see section 7.2 of the GPU doc).

    Evaluated nodes count with their reasons; unresolvable and not-evaluated nodes count as
    ``Preemption is not helpful for scheduling`` (the dry run only evaluates resolvable nodes).
    """
    counts = outcome.reason_counts()
    not_helpful = num_nodes - outcome.num_failures
    if not_helpful:
        counts[MSG_NOT_HELPFUL] = counts.get(MSG_NOT_HELPFUL, 0) + not_helpful
    return f"0/{num_nodes} nodes are available: {histogram(counts)}."


# ---- the whole PostFilter ----------------------------------------------------------------------


def unresolvable_nodes(diagnosis: Diagnosis) -> np.ndarray:
    """Nodes preemption cannot help: rejected UnschedulableAndUnresolvable (all of them when a
    PreFilter rejected the pod that way)."""
    pre = diagnosis.pre_filter_status
    if pre is not None and pre.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        return np.ones(diagnosis.num_nodes, dtype=bool)
    return diagnosis.unresolvable()


def preempt(snapshot: Snapshot, pod: PodInfo, diagnosis: Diagnosis, fits: FitCheck,
            pdbs: Sequence[PdbInfo] = (), rng: np.random.Generator | None = None,
            cache: VictimsCache | None = None) -> PostFilterResult:
    """DefaultPreemption's PostFilter: a nominated node and victims, or why there is none.

    On failure the status reason is the whole ``preemption: ...`` text that follows the
    FitError histogram. On success the status is SUCCESS; the caller evicts the victims, clears
    ``nominatedNodeName`` of lower-priority pods nominated to that node, and nominates the pod.
    """
    unresolvable = unresolvable_nodes(diagnosis)
    reason = eligibility_message(pod, snapshot, unresolvable)
    if reason:
        return PostFilterResult(Status(Code.UNSCHEDULABLE, (f"preemption: {reason}",)))
    potential = np.flatnonzero(~unresolvable)
    outcome = dry_run(snapshot, pod, potential, fits, pdbs, rng, cache)
    best = pick_one_node(outcome.candidates)
    if best is None:
        message = no_candidate_message(diagnosis.num_nodes, outcome)
        return PostFilterResult(Status(Code.UNSCHEDULABLE, (f"preemption: {message}",)))
    log.debug("preemption: %s -> node %s, victims %s", pod.key, best.node_name,
              [v.key for v in best.victims])
    return PostFilterResult(SUCCESS, best.node_name, best.victims)


# ---- nominated pods -----------------------------------------------------------------------------


@contextmanager
def nominated_pods_added(snapshot: Snapshot, pod: PodInfo, nominated: Iterable[PodInfo]) -> Iterator[list[str]]:
    """Count nominated pods of priority >= ``pod``'s as occupying their nominated nodes.

    Upstream evaluates a node "with nominated pods" so that a pod of equal or lower priority does
    not take the room a preemptor has freed. The runner wraps its Filter phase in this block,
    passing the pods that carry ``nominated_node`` and are not yet bound; they are added to the
    snapshot (resources only, no devices) and removed again on exit. Higher-priority pods being
    scheduled ignore lower nominated pods, as upstream.
    """
    added: list[str] = []
    try:
        for other in sorted(nominated, key=importance_key):
            if other.uid == pod.uid or not other.nominated_node or other.priority < pod.priority:
                continue
            node = snapshot.index.get(other.nominated_node)
            if node is None or other.uid in snapshot.pod_node:
                continue
            snapshot.add_pod(other, node, NO_DEVICES)
            added.append(other.uid)
        yield added
    finally:
        for uid in reversed(added):
            snapshot.remove_pod(uid)
