"""The scheduling cycle: one pod through a profile's plugins over the NumPy snapshot.

``Scheduler.schedule_one(pod)``, in upstream's order:

1. Pick the profile (``pod.scheduler_name``); run PreFilter (a SKIP skips that plugin's Filter;
   a rejection fails the cycle with the PreFilter's message; nodes narrowed by a PreFilter
   (``framework.narrow_nodes``) are the only ones step 3 filters, the others are rejected as
   ``node(s) didn't satisfy plugin(s) [...]``, unresolvable).
2. Nominated node first (upstream ``evaluateNominatedNode``): if the pod's nominated node
   (``pod.nominated_node``, else the one recorded in ``Scheduler.nominated``) passes every filter
   it is the only feasible node.
3. Filter, vectorised: each plugin sees the surviving candidate rows and returns Rejections; the
   candidates narrow after each plugin (a node stops at its first failing plugin, as upstream).
4. No feasible node: PostFilter plugins run with the Diagnosis (DynamicResources, then
   DefaultPreemption; their reasons are joined with ", " as upstream's ``RunPostFilterPlugins``
   builds one Status, an UnschedulableAndUnresolvable one ending the loop alone); the result carries
   ``messages.fit_error(diagnosis)`` and, when preemption found room, the nominated node and the
   victims (the caller evicts them; the pod is retried later).

Nominated pods: ``Scheduler.nominated`` (uid -> PodInfo with ``nominated_node``) holds the pods
nominated to a node and not yet bound. Steps 1-4 run with those of priority >= the pod's counted
on their nominated nodes (``preemption.nominated_pods_added``: requests, not devices), so an
equal- or lower-priority pod - in the Filter phase and in the preemption dry run - does not take
the room a preemptor freed; higher-priority pods ignore them. Scoring runs without them, as
upstream. (Upstream also re-runs the filters without the nominated pods when they pass, which
only matters for pod affinity to a nominated pod; not modelled.) ``schedule_one`` keeps the dict
current as upstream keeps its nominator: a pod that arrives with ``nominated_node`` is recorded;
a preemption nominates the pod and drops lower-priority pods nominated to that node; binding
clears it; a failed attempt whose PostFilter ran and found no node clears it (an ineligible pod,
e.g. waiting for its victims to terminate, keeps it). Callers use ``set_nominated(pod, node)`` /
``clear_nominated(uid)`` (a deleted pod) for changes made outside.
5. ``percentageOfNodesToScore``: of the feasible nodes, the first ``num_feasible_nodes_to_find``
   in node order starting at a rotating index are kept (the index advances by the nodes
   processed, as upstream's ``nextStartNodeIndex``).
6. PreScore, Score (+ NormalizeScore), times the profile weight, summed. Unlike upstream, scoring
   runs even for a single feasible node, so score plugins that choose devices (the
   ``GPU_SELECTION_KEY`` hook) see every placement; the chosen node is the same.
7. Highest total wins; ties are broken uniformly at random with the injected seeded ``rng``
   (upstream picks uniformly among the maxima too), so decisions repeat exactly per seed.
8. Reserve (GpuDevices picks the devices), then assume: ``Snapshot.add_pod`` with the
   assignment; then Permit. A failure undoes the assume and runs every Unreserve in reverse; its
   message is upstream's one-node FitError (``0/1 nodes are available: 1 PodGroup not found.``).
   A Wait keeps the pod assumed in ``Scheduler.waiting`` (``scheduler.waiting``): the result's
   status is WAIT, and the pod binds or fails when a plugin allows or rejects it, or its wait
   times out (``reject_waiting`` undoes it then as a Permit failure).

PostFilter plugins find the running ``Scheduler`` (for ``run_filters`` what-if checks) and the
``Framework`` in the cycle state under ``SCHEDULER_KEY`` / ``FRAMEWORK_KEY``. A PostFilter's
status message is used as is for the FailedScheduling suffix (DefaultPreemption includes its
``"preemption: "`` prefix).

Neighbours: ``framework`` (contract), ``snapshot``, ``profile``, ``messages``; driven by
``scheduling_loop`` (the queue's loop) and used by ``cluster`` and ``sim``.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
from dataclasses import dataclass
from typing import Any, Callable, ContextManager

import numpy as np

from gpusched.objects.types import NO_DEVICES, PodInfo
from gpusched.scheduler import messages, preemption
from gpusched.scheduler.framework import (DEVICE_ASSIGNMENT_KEY, PODS_TO_ACTIVATE_KEY,
                                          PRE_FILTER_NODES_KEY, WAITING_PODS_KEY, Code, CycleState, Diagnosis,
                                          PreFilterNodes, Rejection, ScheduleResult,
                                          Status)
from gpusched.scheduler.profile import Framework, ProfileConfig, build_frameworks, \
    num_feasible_nodes_to_find
from gpusched.scheduler.filter_runs import filter_to_first_failure, filter_with_every_plugin
from gpusched.scheduler.rowops import true_indices
from gpusched.scheduler.snapshot import Snapshot
from gpusched.scheduler.waiting import WaitingPod, WaitingPods, permit_failure

log = logging.getLogger(__name__)

SCHEDULER_KEY = "scheduler"
FRAMEWORK_KEY = "framework"
SKIPPED_FILTERS_KEY = "skipped-filters"


@dataclass(frozen=True)
class FilterOutcome:
    """What ``run_filters`` found: feasible rows (ascending) and the Diagnosis of the others."""

    feasible: np.ndarray
    diagnosis: Diagnosis
    status: Status           # SUCCESS, or the PreFilter / plugin failure


@dataclass(frozen=True)
class Placement:
    """What ``Scheduler.place`` found: the node the pod was assumed on, or why it fits none."""

    node: str
    reasons: tuple[str, ...]


class Scheduler:
    """Runs scheduling cycles over ``snapshot``; see the module docstring."""

    def __init__(self, snapshot: Snapshot,
                 profiles: list[ProfileConfig] | dict[str, Framework] | None = None,
                 rng: np.random.Generator | None = None,
                 clock: Callable[[], float] | None = None, rng_seed: Any = None) -> None:
        self.snapshot = snapshot
        self.frameworks: dict[str, Framework] = (
            profiles if isinstance(profiles, dict) else build_frameworks(profiles))
        self._rng = rng
        self._rng_seed: Any = 0 if rng_seed is None else rng_seed
        self.clock = clock if clock is not None else (lambda: 0.0)
        self.next_start_node_index = 0
        self.nominated: dict[str, PodInfo] = {}
        self.waiting = WaitingPods()
        self.to_activate: set[str] = set()       # PODS_TO_ACTIVATE_KEY of the cycles run

    # ---- nominated pods -------------------------------------------------------------------

    def set_nominated(self, pod: PodInfo, node: str) -> None:
        """Record ``pod`` as nominated to ``node`` (``""`` clears it), e.g. from the store."""
        if not node:
            self.clear_nominated(pod.uid)
            return
        self.nominated[pod.uid] = pod if pod.nominated_node == node else \
            dataclasses.replace(pod, nominated_node=node)

    def clear_nominated(self, uid: str) -> None:
        """Forget a nomination (the pod was bound, deleted, or lost its nomination)."""
        self.nominated.pop(uid, None)

    def nominated_pods_counted(self, pod: PodInfo) -> ContextManager[Any]:
        """A block in which the nominated pods of priority >= ``pod``'s occupy their nodes."""
        if not self.nominated:
            return contextlib.nullcontext()
        return preemption.nominated_pods_added(self.snapshot, pod, list(self.nominated.values()))

    def _nominated_node_of(self, pod: PodInfo) -> str:
        if pod.nominated_node:
            return pod.nominated_node
        known = self.nominated.get(pod.uid)
        return known.nominated_node if known is not None else ""

    def _track_nomination(self, result: ScheduleResult, post_filter_ran: bool) -> None:
        pod = result.pod
        if result.scheduled:
            self.clear_nominated(pod.uid)
        elif result.nominated_node:
            node = result.nominated_node
            for uid, other in list(self.nominated.items()):
                if other.nominated_node == node and other.priority < pod.priority:
                    del self.nominated[uid]
            self.set_nominated(pod, node)
        elif post_filter_ran and not _ineligible(result):
            self.clear_nominated(pod.uid)

    @property
    def rng(self) -> np.random.Generator:
        """The tie-break generator: ``rng``, else ``default_rng(rng_seed)`` (seed 0 by default)
        built on first use, as most passes never draw from it and seeding one costs ~20 us."""
        if self._rng is None:
            self._rng = np.random.default_rng(self._rng_seed)
        return self._rng

    # ---- helpers for PostFilter / explain ------------------------------------------------

    def framework_for(self, pod: PodInfo) -> Framework | None:
        return self.frameworks.get(pod.scheduler_name)

    def run_pre_filter(self, framework: Framework, state: CycleState, pod: PodInfo) -> Status:
        """PreFilter plugins in order; records SKIPs in the state. Returns the first failure."""
        skipped: set[str] = set()
        for plugin in framework.pre_filter:
            status = plugin.pre_filter(state, pod, self.snapshot)
            if status.code == Code.SKIP:
                skipped.add(plugin.name)
            elif not status.ok:
                result: Status = status.with_plugin(plugin.name)
                return result
            narrowed: PreFilterNodes | None = state.read(PRE_FILTER_NODES_KEY)
            if narrowed is not None and not narrowed.names:     # upstream RunPreFilterPlugins
                return Status.unschedulable(messages.pre_filter_results_disjoint(narrowed.plugins),
                                            resolvable=False)
        state.write(SKIPPED_FILTERS_KEY, skipped)
        return Status()

    def run_filters(self, state: CycleState | None, pod: PodInfo,
                    candidates: np.ndarray | None = None, stop_at_first: bool = True,
                    framework: Framework | None = None) -> FilterOutcome:
        """Run the profile's Filter plugins on ``candidates`` (rows; default all).

        ``state=None`` runs PreFilter first on the current snapshot (use it after
        ``Snapshot.remove_pod`` what-ifs when PreFilter data depends on other pods); a given
        state is reused. ``stop_at_first=True`` is upstream's mode (a node stops at its first
        failing plugin); ``False`` runs every plugin on every candidate (explain).
        """
        framework = framework or self.framework_for(pod) or next(iter(self.frameworks.values()))
        snapshot = self.snapshot
        if candidates is None:
            candidates = snapshot.all_nodes()
        candidates = np.asarray(candidates, dtype=np.int64)
        if state is None:
            state = CycleState()
            status = self.run_pre_filter(framework, state, pod)
            if not status.ok:
                return FilterOutcome(candidates[:0], Diagnosis(snapshot.num_nodes, [], status), status)
        skipped = state.read(SKIPPED_FILTERS_KEY) or ()
        plugins = [plugin for plugin in framework.filter if plugin.name not in skipped]
        rejections: list[Rejection] = []
        if stop_at_first:
            feasible = filter_to_first_failure(plugins, state, pod, snapshot, candidates, rejections)
        else:
            feasible = filter_with_every_plugin(plugins, state, pod, snapshot, candidates, rejections)
        return FilterOutcome(feasible, Diagnosis(snapshot.num_nodes, rejections), Status())

    # ---- the cycle ------------------------------------------------------------------------

    def schedule_one(self, pod: PodInfo, record_scores: bool = False) -> ScheduleResult:
        """One scheduling cycle for ``pod``; on success the pod is assumed into the snapshot."""
        framework = self.framework_for(pod)
        if framework is None:
            return _no_profile(pod)
        if pod.nominated_node and pod.uid not in self.nominated:
            self.nominated[pod.uid] = pod
        state = CycleState()
        state.write(WAITING_PODS_KEY, self.waiting)
        state.write(PODS_TO_ACTIVATE_KEY, self.to_activate)
        found = self._find_feasible(framework, state, pod)
        if isinstance(found, ScheduleResult):
            return found
        result = self._schedule_on(framework, state, pod, found, record_scores)
        self._track_nomination(result, post_filter_ran=False)
        return result

    def failure(self, pod: PodInfo) -> ScheduleResult | None:
        """What ``schedule_one`` would report for ``pod`` now if it fails - the FailedScheduling
        message, the nomination and victims preemption would choose - or None when a node is
        feasible. Changes nothing: the snapshot is restored, the generator is a copy, the
        nominations are not touched (``explain`` uses it)."""
        framework = self.framework_for(pod)
        if framework is None:
            return _no_profile(pod)
        state = CycleState()
        state.write(preemption.HANDLE_KEY, preemption.FrameworkHandle(framework, copy.deepcopy(self.rng)))
        found = self._find_feasible(framework, state, pod, track=False)
        return found if isinstance(found, ScheduleResult) else None

    def place(self, pod: PodInfo, rows: np.ndarray) -> "Placement":
        """PreFilter and Filter ``pod`` on ``rows`` only, then Reserve and assume it on the
        first feasible row (first fit, no Score and no PostFilter): what cluster-autoscaler's
        simulations do with the scheduler framework (``estimator/binpacking_estimator.go``
        ``Estimate`` for template nodes, ``simulator/cluster.go`` ``findPlaceFor`` for
        scale-down). Nominations are not touched. When nothing fits, ``reasons`` are the
        rejections of ``rows[0]`` (or the PreFilter's), as the autoscaler reports them."""
        framework = self.framework_for(pod)
        if framework is None:
            return Placement("", (f"profile {pod.scheduler_name} not found",))
        rows = np.asarray(rows, dtype=np.int64)
        state = CycleState()
        status = self.run_pre_filter(framework, state, pod)
        if not status.ok:
            return Placement("", tuple(status.reasons) or (status.message,))
        outcome = self.run_filters(state, pod, rows, True, framework)
        for row in outcome.feasible:
            result = self._reserve_and_assume(framework, state.clone(), pod, int(row), 1, 1, None)
            if result.scheduled:
                return Placement(result.node, ())
            if result.status.code == Code.WAIT:      # a gang member waits there: it fits (kept
                self.waiting.pods.pop(pod.uid)       # assumed, as a simulation keeps a placed pod)
                return Placement(self.snapshot.names[int(row)], ())
        reasons = outcome.diagnosis.node_reasons(int(rows[0])) if len(rows) else []
        return Placement("", tuple(dict.fromkeys(reasons)))

    def _find_feasible(self, framework: Framework, state: CycleState, pod: PodInfo,
                       track: bool = True) -> np.ndarray | ScheduleResult:
        """Steps 1-4 with the nominated pods counted: the feasible rows, or the failed result."""
        with self.nominated_pods_counted(pod):
            status = self.run_pre_filter(framework, state, pod)
            if not status.ok:
                diagnosis = Diagnosis(self.snapshot.num_nodes, [], status)
                return self._unschedulable(framework, state, pod, diagnosis, status, track)
            outcome = self._nominated(framework, state, pod)
            if outcome is None:
                outcome = self._filter_narrowed(framework, state, pod)
            if not len(outcome.feasible):
                return self._unschedulable(framework, state, pod, outcome.diagnosis,
                                           Status(Code.UNSCHEDULABLE), track)
        return outcome.feasible

    def _filter_narrowed(self, framework: Framework, state: CycleState, pod: PodInfo) -> FilterOutcome:
        """Step 3 on the nodes the PreFilter plugins left (all without a narrowing); the others
        rejected, unresolvable, once per narrowing plugin (upstream ``findNodesThatFitPod``:
        absent nodes' status, the plugins in ``UnschedulablePlugins``)."""
        narrowed: PreFilterNodes | None = state.read(PRE_FILTER_NODES_KEY)
        if narrowed is None:
            return self.run_filters(state, pod, None, True, framework)
        index = self.snapshot.index
        rows = np.array(sorted(index[name] for name in narrowed.names if name in index),
                        dtype=np.int64)
        outcome = self.run_filters(state, pod, rows, True, framework)
        left_out = np.ones(self.snapshot.num_nodes, dtype=bool)
        left_out[rows] = False
        if left_out.any():
            reason = messages.not_in_pre_filter_result(narrowed.plugins)
            outcome.diagnosis.rejections[:0] = [
                Rejection(left_out, reason, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, plugin)
                for plugin in sorted(narrowed.plugins)]
        return outcome

    def _schedule_on(self, framework: Framework, state: CycleState, pod: PodInfo,
                     feasible: np.ndarray, record_scores: bool) -> ScheduleResult:
        """Steps 5-8: score the feasible rows, pick one, reserve and assume."""
        snapshot = self.snapshot
        nodes = self._nodes_to_score(feasible, framework.percentage_of_nodes_to_score)
        total = self._score(framework, state, pod, nodes)
        if total is None:
            status = Status(Code.ERROR, ("a PreScore plugin failed",))
            return ScheduleResult(pod, status=status, message=status.message)
        best = true_indices(total == total.max())
        pick = best[0] if len(best) == 1 else best[int(self.rng.integers(len(best)))]
        row = int(nodes[pick])
        scores = ({snapshot.names[int(n)]: int(s) for n, s in zip(nodes, total)}
                  if record_scores else None)
        return self._reserve_and_assume(framework, state, pod, row, len(feasible), len(nodes), scores)

    def _nominated(self, framework: Framework, state: CycleState, pod: PodInfo) -> FilterOutcome | None:
        name = self._nominated_node_of(pod)
        row = self.snapshot.index.get(name) if name else None
        if row is None:
            return None
        outcome = self.run_filters(state, pod, np.array([row], dtype=np.int64), True, framework)
        return outcome if len(outcome.feasible) else None

    def _nodes_to_score(self, feasible: np.ndarray, percentage: int) -> np.ndarray:
        n = self.snapshot.num_nodes
        want = num_feasible_nodes_to_find(n, percentage)
        start = self.next_start_node_index % max(n, 1)
        if len(feasible) <= want:
            return feasible
        # first `want` feasible rows in the order start, start+1, ..., n-1, 0, ..., start-1
        split = int(np.searchsorted(feasible, start))
        rotated = np.concatenate((feasible[split:], feasible[:split]))
        chosen = rotated[:want]
        last = int(chosen[-1])
        processed = (last - start) % n + 1
        self.next_start_node_index = (start + processed) % n
        return np.sort(chosen)

    def _score(self, framework: Framework, state: CycleState, pod: PodInfo,
               nodes: np.ndarray) -> np.ndarray | None:
        skipped: set[str] = set()
        for plugin in framework.pre_score:
            status = plugin.pre_score(state, pod, self.snapshot, nodes)
            if status.code == Code.SKIP:
                skipped.add(plugin.name)
            elif not status.ok:
                log.warning("PreScore %s failed for %s: %s", plugin.name, pod.key, status.message)
                return None
        total = np.zeros(len(nodes), dtype=np.int64)
        for scorer, weight, normalize in framework.score:
            if scorer.name in skipped:
                continue
            scores = scorer.score(state, pod, self.snapshot, nodes)
            if normalize is not None:
                scores = normalize(state, pod, nodes, scores)
            total += np.asarray(scores, dtype=np.int64) * weight
        return total

    def _reserve_and_assume(self, framework: Framework, state: CycleState, pod: PodInfo, row: int,
                            feasible: int, evaluated: int, scores: dict[str, int] | None
                            ) -> ScheduleResult:
        snapshot = self.snapshot
        for plugin in framework.reserve:
            status = plugin.reserve(state, pod, snapshot, row)
            if not status.ok:
                self._unreserve(framework, state, pod, row)
                status = status.with_plugin(plugin.name)
                return ScheduleResult(pod, status=status, message=status.message,
                                      feasible_nodes=feasible, evaluated_nodes=evaluated, scores=scores)
        assignment = state.read(DEVICE_ASSIGNMENT_KEY) or NO_DEVICES
        snapshot.add_pod(pod, row, assignment)
        name = snapshot.names[row]
        result = ScheduleResult(pod, node=name, assignment=assignment, feasible_nodes=feasible,
                                evaluated_nodes=evaluated, scores=scores)
        waits: dict[str, float] = {}
        for permit in framework.permit:
            status = permit.permit(state, pod, name)
            if status.code == Code.WAIT:
                waits[permit.name] = status.timeout
            elif not status.ok:
                snapshot.remove_pod(pod.uid)
                self._unreserve(framework, state, pod, row)
                return permit_failure(result, status.with_plugin(permit.name))
        if not waits:
            return result
        now = self.clock()
        self.waiting.add(WaitingPod(result, row, state, {p: now + t for p, t in waits.items()},
                                    dict(waits)))
        return dataclasses.replace(result, node="", status=Status(Code.WAIT, plugin=next(iter(waits))))

    def reject_waiting(self, waiting: WaitingPod) -> ScheduleResult:
        """Undo a rejected waiting pod (upstream's binding cycle after ``WaitOnPermit`` failed):
        forget it in the snapshot and run every Unreserve (a gang plugin's rejects its siblings);
        the failed result carries the one-node FitError of the rejection."""
        pod = waiting.pod
        if pod.uid in self.snapshot.pod_node:
            self.snapshot.remove_pod(pod.uid)
        framework = self.framework_for(pod)
        if framework is not None:
            self._unreserve(framework, waiting.state, pod, waiting.row)
        status = Status(Code.UNSCHEDULABLE, (waiting.message,), waiting.plugin)
        return permit_failure(waiting.result, status)

    def _unreserve(self, framework: Framework, state: CycleState, pod: PodInfo, row: int) -> None:
        for plugin in reversed(framework.reserve):
            plugin.unreserve(state, pod, self.snapshot, row)

    def _unschedulable(self, framework: Framework, state: CycleState, pod: PodInfo,
                       diagnosis: Diagnosis, status: Status, track: bool = True) -> ScheduleResult:
        nominated = ""
        victims: tuple[PodInfo, ...] = ()
        post_messages: list[str] = []
        # upstream runs PostFilter after any FitError, a PreFilter rejection included (every node
        # then carries the PreFilter's status: "pod has unbound immediate PersistentVolumeClaims.
        # preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
        post_filter_ran = bool(framework.post_filter)
        if post_filter_ran:
            state.write(SCHEDULER_KEY, self)
            state.write(FRAMEWORK_KEY, framework)
            for plugin in framework.post_filter:     # upstream RunPostFilterPlugins
                post = plugin.post_filter(state, pod, self.snapshot, diagnosis)
                if post.status.ok:
                    nominated, victims = post.nominated_node, post.victims
                    post_messages = []
                    break
                if post.status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    post_messages = list(post.status.reasons)    # returned alone, at once
                    break
                post_messages.extend(post.status.reasons)
                if post.status.code != Code.UNSCHEDULABLE:
                    break
        diagnosis.post_filter_message = ", ".join(post_messages)   # Status.Message() joins with ", "
        code = status.code if status.code != Code.SUCCESS else Code.UNSCHEDULABLE
        result = ScheduleResult(pod, status=Status(code, status.reasons, status.plugin),
                                message=messages.fit_error(diagnosis), nominated_node=nominated,
                                victims=tuple(victims), diagnosis=diagnosis,
                                evaluated_nodes=self.snapshot.num_nodes)
        if track:
            self._track_nomination(result, post_filter_ran)
        return result


_INELIGIBLE = (f"preemption: {preemption.MSG_POLICY_NEVER}", f"preemption: {preemption.MSG_TERMINATING}")


def _ineligible(result: ScheduleResult) -> bool:
    """The PostFilter declined to preempt (upstream leaves the nomination as it is then); other
    PostFilter reasons (DynamicResources') may precede the preemption part."""
    diagnosis = result.diagnosis
    return diagnosis is not None and diagnosis.post_filter_message.endswith(_INELIGIBLE)


def _no_profile(pod: PodInfo) -> ScheduleResult:
    status = Status(Code.ERROR, (f'profile not found for scheduler name "{pod.scheduler_name}"',))
    return ScheduleResult(pod, status=status, message=status.message)
