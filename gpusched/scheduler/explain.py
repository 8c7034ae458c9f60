"""``explain``: why a pod runs where it does, or why it waits, and the smallest change that helps.

``explain(scheduler, pod) -> Explanation`` runs the pod's profile without changing anything:

0. the message is the one ``schedule_one`` would write for the pod now, `` preemption: ...`` part
   included (``Scheduler.failure``: same filter phase with nominated pods counted, same
   PostFilter, on a copy of the generator), ``""`` when a node is feasible;
1. PreFilter, then **every** Filter plugin on **every** node (``run_filters(stop_at_first=False)``)
   so each node lists all the plugins that reject it and why (nominated pods counted as in 0);
2. PreScore/Score/NormalizeScore per plugin for the feasible nodes (weighted, as the runner sums);
3. when no node is feasible, candidate changes, each checked by re-running the filters on a
   modified copy of the pod (or a what-if snapshot), keeping those that make some node feasible:
   tolerate one taint (not the node lifecycle controller's ``node.kubernetes.io/*``: for those the
   change is on the node: ``uncordon``, or ``node-condition`` once the node is Ready), drop one nodeSelector key / the required node affinity / one pod
   (anti-)affinity term / one spread constraint, ask for fewer GPUs (the largest count that fits
   anywhere), the victims DefaultPreemption would choose (those of step 0; a profile without
   PostFilter gets DefaultPreemption's dry run as a what-if), and the smallest set
   of running pods on one node whose finishing would free room (fewest pods; reprieve order
   priority then start time, as preemption; ties by node order).
   Each suggestion carries its change as data (``Suggestion.edit``, ops in ``EDITS``) so a
   program can apply it (tests/cluster/test_explain_suggestions_property.py does).

``render_table(expl)`` gives a table a person reads in one glance (NODE | RESULT | REASONS/SCORE)
followed by the suggestions; ``to_json(expl)`` a plain dict for ``-o json``.

Neighbours: drives ``runner.Scheduler`` (``run_pre_filter``, ``run_filters``, profiles) and
``preemption`` (dry run, minimal removal); used by ``cluster`` (``Cluster.explain``) and the CLI.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

from gpusched.objects.types import PodInfo, Taint, Toleration
from gpusched.scheduler import preemption
from gpusched.scheduler.framework import (NODE_DETAILS_KEY, Code, CycleState, Diagnosis, NodeDetail,
                                          PostFilterResult, ScheduleResult)

if TYPE_CHECKING:
    from gpusched.scheduler.profile import Framework
    from gpusched.scheduler.runner import FilterOutcome, Scheduler
    from gpusched.scheduler.snapshot import Snapshot

GPU = "nvidia.com/gpu"


@dataclass(frozen=True)
class NodeVerdict:
    node: str
    feasible: bool
    reasons: tuple[tuple[str, str], ...] = ()     # (plugin, reason), in plugin order
    scores: tuple[tuple[str, int], ...] = ()      # (plugin, weighted normalised score)
    total: int | None = None


@dataclass(frozen=True)
class Suggestion:
    kind: str            # toleration | node-selector | node-affinity | pod-affinity | ... | preemption | finishing
    change: str          # what to change, in words
    nodes: tuple[str, ...] = ()    # where the pod would then fit
    pods: tuple[str, ...] = ()     # pods to remove (preemption / finishing)
    at: float | None = None        # finishing: virtual seconds when the room is free
    edit: tuple[tuple[str, Any], ...] = ()   # the change as data (``EDITS``), for -o json and tests


# What ``Suggestion.edit`` holds, one (op, value) pair; ``-o json`` writes it as ``{"op", "value"}``:
EDITS = {
    "add-toleration": "spec.tolerations += value ({key, operator: Equal, value, effect})",
    "remove-node-selector": "delete spec.nodeSelector[value]",
    "remove-required-node-affinity": "delete spec.affinity.nodeAffinity.requiredDuringScheduling...",
    "remove-term": "delete the value[index]-th term of value[field] (podAffinity, podAntiAffinity, "
                   "topologySpreadConstraints with DoNotSchedule)",
    "set-gpus": "the pod asks for value nvidia.com/gpu in all",
    "uncordon": "gpusched uncordon value (the node)",
    "wait-untainted": "nothing to edit: value.node takes the pod once the node lifecycle controller "
                      "removes value.taint (the node's condition clears)",
    "evict": "done by the scheduler itself: DefaultPreemption evicts value (pod keys)",
    "wait-until": "nothing to edit: the room is free at virtual second value",
}
CORDON_TAINT = "node.kubernetes.io/unschedulable"
NODE_STATE_TAINTS = "node.kubernetes.io/"     # set by the node lifecycle controller, not for pods


@dataclass(frozen=True)
class Fact:
    """One thing a person needs to know at a glance, with the same facts as JSON fields."""

    kind: str            # unknown-resource | too-large | not-offered | cordoned | not-ready | running | ...
    text: str
    fields: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Explanation:
    pod: str
    message: str                          # FailedScheduling text, "" when it fits
    nodes: tuple[NodeVerdict, ...]
    suggestions: tuple[Suggestion, ...] = ()
    facts: tuple[Fact, ...] = ()          # the cluster layer's diagnosis (``cluster.explain_facts``)
    workload: str = ""                    # ``deployment/web`` when a workload is explained (its
                                          # oldest Pending pod is ``pod``, "" when none)

    @property
    def feasible(self) -> tuple[str, ...]:
        return tuple(v.node for v in self.nodes if v.feasible)


# ---- filters and scores ----------------------------------------------------------------------


def _feasible_rows(scheduler: Scheduler, framework: Framework, pod: PodInfo) -> np.ndarray:
    with scheduler.nominated_pods_counted(pod):
        return scheduler.run_filters(None, pod, None, True, framework).feasible


def _scores(scheduler: Scheduler, framework: Framework, state: CycleState, pod: PodInfo, rows: np.ndarray) -> dict[int, list[tuple[str, int]]]:
    per_node: dict[int, list[tuple[str, int]]] = {int(r): [] for r in rows}
    if not len(rows):
        return per_node
    skipped = set()
    for plugin in framework.pre_score:
        status = plugin.pre_score(state, pod, scheduler.snapshot, rows)
        if status.code == Code.SKIP:
            skipped.add(plugin.name)
    for scorer, weight, normalize in framework.score:
        if scorer.name in skipped:
            continue
        raw = np.asarray(scorer.score(state, pod, scheduler.snapshot, rows), dtype=np.int64)
        if normalize is not None:
            raw = np.asarray(normalize(state, pod, rows, raw), dtype=np.int64)
        for row, value in zip(rows, raw * weight):
            per_node[int(row)].append((scorer.name, int(value)))
    return per_node


# ---- suggestions ----------------------------------------------------------------------------------


def _try(scheduler: Scheduler, framework: Framework, kind: str, change: str, pod: PodInfo,
         edit: tuple[tuple[str, Any], ...] = ()) -> Suggestion | None:
    rows = _feasible_rows(scheduler, framework, pod)
    if not len(rows):
        return None
    return Suggestion(kind, change, tuple(scheduler.snapshot.names[int(r)] for r in rows), edit=edit)


def _node_state(scheduler: Scheduler, framework: Framework, pod: PodInfo, taint: Taint) -> list[Suggestion]:
    """A taint the node lifecycle controller sets (cordon, NotReady, pressure): tolerating it is
    no advice for a pod, so the what-if names the nodes and the cluster change instead."""
    toleration = Toleration(taint.key, "Equal", taint.value, taint.effect)
    found = _try(scheduler, framework, "", "", dataclasses.replace(
        pod, tolerations=pod.tolerations + (toleration,)))
    if found is None:
        return []
    if taint.key == CORDON_TAINT:
        return [Suggestion("uncordon", f"uncordon {node} (gpusched uncordon {node})", (node,),
                           edit=(("uncordon", node),)) for node in found.nodes]
    return [Suggestion("node-condition", f"{node} takes it once its {taint.key} taint is gone (the "
                       "node lifecycle controller removes it when the node's condition clears)", (node,),
                       edit=(("wait-untainted", {"node": node, "taint": taint.key}),))
            for node in found.nodes]


def _relaxations(snapshot: Snapshot, pod: PodInfo) -> list[tuple[str, str, PodInfo, tuple[Any, ...]]]:
    replace = dataclasses.replace
    out: list[tuple[str, str, PodInfo, tuple[Any, ...]]] = []
    seen = set()
    for taints in snapshot.taint_groups:
        for taint in taints:
            if taint.effect == "PreferNoSchedule" or taint in seen:
                continue
            seen.add(taint)
            if any(t.tolerates(taint) for t in pod.tolerations) or taint.key.startswith(NODE_STATE_TAINTS):
                continue
            toleration = Toleration(taint.key, "Equal", taint.value, taint.effect)
            as_data = {"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect}
            out.append(("toleration", f"tolerate taint {taint.key}={taint.value}:{taint.effect}",
                        replace(pod, tolerations=pod.tolerations + (toleration,)),
                        (("add-toleration", as_data),)))
    for key in sorted(pod.node_selector):
        selector = {k: v for k, v in pod.node_selector.items() if k != key}
        out.append(("node-selector", f"drop nodeSelector {key}={pod.node_selector[key]}",
                    replace(pod, node_selector=selector), (("remove-node-selector", key),)))
    if pod.required_terms is not None:
        out.append(("node-affinity", "drop the required node affinity", replace(pod, required_terms=None),
                    (("remove-required-node-affinity", True),)))
    for field, label, spec in (("pod_affinity", "pod affinity", "podAffinity"),
                               ("pod_anti_affinity", "pod anti-affinity", "podAntiAffinity"),
                               ("topology_spread", "topology spread constraint", "topologySpreadConstraints")):
        terms = getattr(pod, field)
        for i, term in enumerate(terms):
            key = getattr(term, "topology_key", "")
            out.append((field.replace("_", "-"), f"drop {label} #{i + 1} (topologyKey {key})",
                        replace(pod, **{field: terms[:i] + terms[i + 1:]}),
                        (("remove-term", {"field": spec, "index": i, "topologyKey": key}),)))
    return out


def _node_state_taints(snapshot: Snapshot, pod: PodInfo) -> list[Taint]:
    seen: list[Taint] = []
    for taints in snapshot.taint_groups:
        for taint in taints:
            if taint.key.startswith(NODE_STATE_TAINTS) and taint.effect != "PreferNoSchedule" \
                    and taint not in seen and not any(t.tolerates(taint) for t in pod.tolerations):
                seen.append(taint)
    return seen


def _fewer_gpus(scheduler: Scheduler, framework: Framework, pod: PodInfo) -> Suggestion | None:
    wanted = pod.requests.get(GPU, 0)
    for count in range(wanted - 1, 0, -1):
        smaller = dataclasses.replace(pod, requests={**pod.requests, GPU: count})
        found = _try(scheduler, framework, "fewer-gpus", f"ask for {count} {GPU} instead of {wanted}", smaller,
                     (("set-gpus", count),))
        if found:
            return found
    return None


def _preemption(scheduler: Scheduler, framework: Framework, pod: PodInfo,
                failed: ScheduleResult) -> Suggestion | None:
    result: ScheduleResult | PostFilterResult = failed
    if not framework.post_filter:
        fits = preemption.framework_fit_check(framework, scheduler.snapshot)
        pdbs = getattr(framework.plugins.get("DefaultPreemption"), "pdbs", ())
        assert failed.diagnosis is not None     # explain() asks only for a failure with a diagnosis
        with scheduler.nominated_pods_counted(pod):
            result = preemption.preempt(scheduler.snapshot, pod, failed.diagnosis, fits, pdbs, rng=None)
    if not result.nominated_node:
        return None
    victims = tuple(v.key for v in result.victims)
    return Suggestion("preemption", f"preemption would evict {len(result.victims)} lower-priority pod(s)",
                      (result.nominated_node,), victims, edit=(("evict", list(victims)),))


@dataclass(frozen=True)
class Finishing:
    """When running pods end on their own (``cluster.explain_facts.finish_times``): pod key ->
    virtual seconds; ``now`` and ``stamp`` (seconds -> RFC 3339) word the suggestion."""

    times: Mapping[str, float]
    now: float
    stamp: Callable[[float], str]


def _finishing(scheduler: Scheduler, framework: Framework, pod: PodInfo, unresolvable: np.ndarray,
               finishing: Finishing | None = None) -> Suggestion | None:
    """The earliest room from pods that will finish (only those in ``finishing.times`` when
    given): per node, the smallest set of such pods whose leaving lets the pod fit."""
    snapshot = scheduler.snapshot
    fits = preemption.framework_fit_check(framework, snapshot)
    best: _Room | None = None
    for row in np.flatnonzero(~unresolvable):
        candidate = _room_on(snapshot, pod, int(row), fits, finishing)
        if candidate is not None and (best is None or candidate[:2] < best[:2]):
            best = candidate
    if best is None:
        return None
    return _finishing_suggestion(snapshot.names[best[2]], best, finishing)


_Room = tuple[float, int, int, list[PodInfo]]
"""(when, how many pods, row, the pods): a node's room from finishing pods; least first."""


def _room_on(snapshot: Snapshot, pod: PodInfo, row: int, fits: preemption.FitCheck,
             finishing: Finishing | None) -> _Room | None:
    """The smallest set of ``row``'s running pods whose finishing lets ``pod`` fit there."""
    running = sorted(snapshot.pods_on(row), key=preemption.importance_key)
    if finishing is not None:   # reprieve the latest finishers first: the room comes soonest
        running = sorted((p for p in running if p.key in finishing.times),
                         key=lambda p: -finishing.times[p.key])
    if not running:
        return None
    gone, reasons = preemption.minimal_removal(snapshot, pod, row, running, (running,), fits)
    if reasons or not gone:
        return None
    when = max((finishing.times[p.key] for p in gone), default=0.0) if finishing else 0.0
    return (when, len(gone), row, gone)


def _finishing_suggestion(node: str, room: _Room, finishing: Finishing | None) -> Suggestion:
    when, count, _, gone = room
    if finishing is None:
        return Suggestion("finishing", f"room frees up on {node} when {count} pod(s) finish",
                          (node,), tuple(p.key for p in gone))
    from gpusched.objects.duration import format_duration

    text = (f"room frees up on {node} in {format_duration(max(0.0, when - finishing.now))} "
            f"(at {finishing.stamp(when)}) when {count} pod(s) finish")
    return Suggestion("finishing", text, (node,), tuple(p.key for p in gone), when,
                      (("wait-until", when),))


# ---- the entry point ------------------------------------------------------------------------------


def explain(scheduler: Scheduler, pod: PodInfo, finishing: Finishing | None = None) -> Explanation:
    """Per node reasons and scores for ``pod``, plus suggestions when it fits nowhere;
    ``finishing`` limits the "room frees up" suggestion to pods that will end on their own."""
    framework = scheduler.framework_for(pod) or next(iter(scheduler.frameworks.values()))
    snapshot = scheduler.snapshot
    failed = scheduler.failure(pod)
    message = failed.message if failed is not None else ""
    state = CycleState()
    names = snapshot.names
    with scheduler.nominated_pods_counted(pod):
        status = scheduler.run_pre_filter(framework, state, pod)
        if not status.ok:
            return Explanation(pod.key, message,
                               tuple(NodeVerdict(n, False, ((status.plugin, status.message),)) for n in names))
        outcome = scheduler.run_filters(state, pod, None, False, framework)
    per_node_scores = _scores(scheduler, framework, state, pod, outcome.feasible)
    verdicts = _verdicts(names, outcome, per_node_scores, state.read(NODE_DETAILS_KEY) or {})
    if failed is None or failed.diagnosis is None or failed.diagnosis.pre_filter_status is not None:
        return Explanation(pod.key, message, verdicts)
    return Explanation(pod.key, message, verdicts,
                       _suggestions(scheduler, framework, pod, failed, failed.diagnosis, finishing))


def _verdicts(names: list[str], outcome: FilterOutcome,
              per_node_scores: dict[int, list[tuple[str, int]]],
              details: dict[str, NodeDetail]) -> tuple[NodeVerdict, ...]:
    """Each node's rejections (every plugin's, in plugin order, with the plugin's detail for
    the node: DynamicResources' request and selector that failed) or its scores and total."""
    verdicts: list[NodeVerdict] = []
    for row, name in enumerate(names):
        reasons = tuple((r.plugin, _detailed(r.reason, details.get(r.plugin), name))
                        for r in outcome.diagnosis.rejections if r.nodes[row])
        scores = tuple(per_node_scores.get(row, ()))
        total = sum(s for _, s in scores) if row in per_node_scores else None
        verdicts.append(NodeVerdict(name, row in per_node_scores, reasons, scores, total))
    return tuple(verdicts)


def _detailed(reason: str, detail: NodeDetail | None, node: str) -> str:
    text = detail(node) if detail is not None else ""
    return f"{reason}: {text}" if text and text != reason else reason


def _suggestions(scheduler: Scheduler, framework: Framework, pod: PodInfo, failed: ScheduleResult,
                 diagnosis: Diagnosis, finishing: Finishing | None) -> tuple[Suggestion, ...]:
    """Step 3: the relaxations that make some node feasible, the node-state changes, fewer
    GPUs, preemption's victims and the room from finishing pods, in that order."""
    snapshot = scheduler.snapshot
    suggestions = [s for kind, change, changed, edit in _relaxations(snapshot, pod)
                   if (s := _try(scheduler, framework, kind, change, changed, edit))]
    for taint in _node_state_taints(snapshot, pod):
        suggestions.extend(_node_state(scheduler, framework, pod, taint))
    for found in (_fewer_gpus(scheduler, framework, pod),
                  _preemption(scheduler, framework, pod, failed),
                  _finishing(scheduler, framework, pod, preemption.unresolvable_nodes(diagnosis),
                             finishing)):
        if found:
            suggestions.append(found)
    return tuple(suggestions)


# ---- output -----------------------------------------------------------------------------------------


def render_table(expl: Explanation) -> str:
    """The facts first (one line each), then NODE | RESULT | REASONS/SCORE, the message and the
    suggestions."""
    head = [fact.text for fact in expl.facts]
    if expl.workload and not expl.pod:
        return "\n".join(head + ["", f"{expl.workload} has no Pending pod to explain."])
    if expl.workload:
        head += ["", f"Its oldest Pending pod, {expl.pod}:"]
    lines = _node_table(expl.nodes)
    if head:
        lines = head + [""] + lines
    if expl.message:
        lines += ["", expl.message]
    return "\n".join(lines + _suggestion_lines(expl))


def _verdict_row(v: NodeVerdict) -> tuple[str, str, str]:
    if v.feasible:
        detail = f"score {v.total}" + (" (" + ", ".join(f"{p} {s}" for p, s in v.scores) + ")" if v.scores else "")
        return (v.node, "fits", detail)
    return (v.node, "rejected", "; ".join(f"{p}: {r}" if p else r for p, r in v.reasons))


def _node_table(verdicts: tuple[NodeVerdict, ...]) -> list[str]:
    rows = [("NODE", "RESULT", "REASONS/SCORE")] + [_verdict_row(v) for v in verdicts]
    widths = [max(len(r[i]) for r in rows) for i in range(2)]
    return [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c}".rstrip() for a, b, c in rows]


def _suggestion_lines(expl: Explanation) -> list[str]:
    if expl.suggestions:
        lines = ["", "Smallest changes that would let it run now:"]
        for s in expl.suggestions:
            where = f" -> fits on {', '.join(s.nodes)}" if s.nodes else ""
            pods = f" ({', '.join(s.pods)})" if s.pods else ""
            lines.append(f"  - {s.change}{pods}{where}")
        return lines
    if expl.message:
        return ["", "No single change found that lets it run now."]
    return []


def to_json(expl: Explanation) -> dict[str, Any]:
    """A JSON-ready dict: pod, message, feasible, nodes (reasons/scores), suggestions."""
    return {
        **({"workload": expl.workload} if expl.workload else {}),
        "pod": expl.pod,
        "message": expl.message,
        "feasible": list(expl.feasible),
        "nodes": [{"node": v.node, "feasible": v.feasible,
                   "reasons": [{"plugin": p, "reason": r} for p, r in v.reasons],
                   "scores": {p: s for p, s in v.scores}, "total": v.total} for v in expl.nodes],
        "suggestions": [{"kind": s.kind, "change": s.change, "nodes": list(s.nodes), "pods": list(s.pods),
                         **({"at": s.at} if s.at is not None else {}),
                         "edit": [{"op": op, "value": value} for op, value in s.edit]}
                        for s in expl.suggestions],
        "facts": [{"kind": f.kind, "text": f.text, **dict(f.fields)} for f in expl.facts],
    }
