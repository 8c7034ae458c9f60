"""Kueue's scheduler state kept across passes (``pkg/cache/queue`` and ``pkg/cache/scheduler``):
the quota forest with every admitted Workload's usage (the cache the scheduler's snapshot is
taken from), the queue manager (``gpusched.kueue.manager``) and the pending/admitted counts of
each LocalQueue, all updated by the changes a pass is handed instead of by listing every
Workload at each pass.

Built from the store (:func:`build`) on a pass without changes (a process that just loaded its
view, as upstream's manager is rebuilt from the informers' first list: every pending Workload in
its heap) and whenever a queue object changes (ClusterQueue, Cohort, LocalQueue, ResourceFlavor,
Topology, WorkloadPriorityClass, Namespace, Kueue's Configuration; a Node while a flavor is
topology-aware). A pass
with changes applies each changed Workload (:func:`apply_changes`): a Workload that held quota
and no longer does (finished, deleted, evicted by another controller) gives its usage back and
requeues its cohort tree's inadmissible Workloads; a changed pending one goes back to its heap.
What the scheduler wrote itself (the resourceVersions of the keys its previous pass changed) is
not a change.

Everything here is derivable from the store: :func:`build` with ``derived`` parks each pending
BestEffortFIFO Workload whose QuotaReserved=False carries a reason the scheduling cycle wrote
(it was found inadmissible and nothing has requeued it since: a requeue is followed by a pass
that decides it again before the settle ends), so a rebuild between two settles holds what the
kept state holds (``tests/cluster/controllers/kueue/test_queues_rebuild.py``).

Neighbours: ``snapshot`` (the store's inputs), ``scheduler`` (the passes), ``gpusched.kueue``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.apiserver.view import Key, View
from gpusched.cluster.controllers.kueue.configuration import CONFIG_NAME, CONFIG_NAMESPACE
from gpusched.cluster.controllers.kueue.pods_ready import backing_off
from gpusched.cluster.controllers.kueue.snapshot import (World, admitted_of, condition, is_true, pending_of,
                                                         read_world, route)
from gpusched.cluster.controllers.kueue.topology import topologies
from gpusched.kueue import conditions as cond
from gpusched.kueue.cycle import NO_LONGER_FITS, OVERLAPPING
from gpusched.kueue.manager import BYPASSED, QueueManager
from gpusched.kueue.preemption import Admitted

MEMO = "kueue-queues"
QUEUE_KINDS = frozenset({"ClusterQueue", "Cohort", "LocalQueue", "ResourceFlavor", "Topology",
                         "WorkloadPriorityClass", "Namespace"})
CONFIGURATION = ("ConfigMap", CONFIG_NAMESPACE, CONFIG_NAME)     # Kueue's Configuration (fairSharing)
# QuotaReserved=False reasons that are not the verdict of a scheduling cycle: the Workload waits
# for its (first or next) evaluation.
NOT_A_VERDICT = frozenset({"", "PendingEvaluation", "Pending", "Misconfigured", "WaitingForPreemptedWorkloads"})

# Verdicts that say nothing of the Workload's shape (another head of the cycle took the quota)
NOT_A_SHAPE_VERDICT = frozenset({NO_LONGER_FITS, OVERLAPPING})


@dataclass
class State:
    """The kept state of Kueue's scheduler on one view."""

    world: World
    manager: QueueManager
    counted: dict[str, tuple[tuple[str, str], int]] = field(default_factory=dict)  # key -> (LocalQueue, 0/1)
    lq_counts: dict[tuple[str, str], list[int]] = field(default_factory=dict)   # [pending, admitted]
    written: dict[Key, str] = field(default_factory=dict)     # key -> resourceVersion it last wrote
    released: set[str] = field(default_factory=set)           # ClusterQueues whose tree is requeued next
    deferred: list[str] = field(default_factory=list)         # Workloads pushed back at the next pass
    tas: bool = False

    def count(self, view: View, key: str) -> None:
        """Recount one Workload in its LocalQueue's [pending, admitted] (finished: neither)."""
        old = self.counted.pop(key, None)
        if old is not None:
            self.lq_counts[old[0]][old[1]] -= 1
        namespace, _, name = key.partition("/")
        wl = view.get("Workload", name, namespace)
        if wl is None or is_true(wl, "Finished"):
            return
        lq = (namespace, str((wl.get("spec") or {}).get("queueName", "")))
        slot = 1 if (wl.get("status") or {}).get("admission") else 0
        self.counted[key] = (lq, slot)
        self.lq_counts.setdefault(lq, [0, 0])[slot] += 1

    def cq_counts(self) -> dict[str, list[int]]:
        by_cq: dict[str, list[int]] = {}
        for lq, (pending, admitted) in self.lq_counts.items():
            entry = by_cq.setdefault(self.world.local_queues.get(lq, ""), [0, 0])
            entry[0] += pending
            entry[1] += admitted
        return by_cq


def _trees(world: World) -> dict[str, str]:
    return {name: node.root().name if node.parent is not None else name
            for name, node in world.snapshot.forest.queues.items()}


def _parked_verdict(wl: dict[str, Any]) -> bool:
    found = condition(wl, "QuotaReserved")
    return found is not None and found.get("status") == "False" and str(found.get("reason", "")) not in NOT_A_VERDICT


def build(view: View, derived: bool) -> State:
    """The state from the store: every admitted Workload's usage, every pending one in its heap
    (``derived``: parked when its condition says a cycle found it inadmissible)."""
    world = read_world(view)
    state = State(world, QueueManager(_trees(world), {n: p.strategy for n, p in world.snapshot.policies.items()}),
                  tas=any(f.topology_name for f in world.snapshot.flavors.values()))
    for wl in view.list("Workload"):
        key = f"{wl['metadata'].get('namespace', '')}/{wl['metadata']['name']}"
        state.count(view, key)
        _enqueue(view, state, wl, derived)
    return state


def _eligible(view: View, wl: dict[str, Any]) -> bool:
    return not (is_true(wl, "Finished") or (wl.get("status") or {}).get("admission")
                or (wl.get("spec") or {}).get("active") is False or backing_off(view, wl))


def _enqueue(view: View, state: State, wl: dict[str, Any], derived: bool) -> None:
    """A Workload as it is now: into the cache when it holds quota, into its queue when it is
    pending (parked when ``derived`` says so), out of both otherwise."""
    key = f"{wl['metadata'].get('namespace', '')}/{wl['metadata']['name']}"
    holder = admitted_of(wl, state.world.snapshot.forest.queues)
    if holder is not None:
        state.manager.delete(key)
        state.world.snapshot.admit(holder)
        return
    if not _eligible(view, wl):
        state.manager.delete(key)
        return
    cq, refusal = route(view, state.world, wl)
    if refusal is not None:
        state.manager.delete(key)
        note_pending(view, wl, refusal)
        return
    item = pending_of(wl, cq)
    if derived and not state.manager.strict.get(cq, False) and _parked_verdict(wl):
        state.manager.park(item)
        found = condition(wl, "QuotaReserved") or {}
        if str(found.get("message", "")) not in NOT_A_SHAPE_VERDICT:
            state.manager.fail(item, str(found.get("reason", "")))
        return
    bypassed = state.manager.push(item)
    if bypassed:
        note_pending(view, wl, cond.pending(bypassed, BYPASSED))


def note_pending(view: View, wl: dict[str, Any], condition_: cond.Condition) -> None:
    from gpusched.cluster.controllers.kueue.status import set_status
    if set_status(view, wl, condition_):
        view.record_event(wl, condition_.reason, condition_.message, "Warning", "kueue-admission")


def _same_holder(old: Admitted, new: Admitted | None) -> bool:
    return new is not None and (old.cluster_queue, dict(old.usage)) == (new.cluster_queue, dict(new.usage))


def released_in(state: State, body: dict[str, Any], deleted: bool) -> str:
    """The ClusterQueue whose tree a changed Workload gave quota back to ("" for none): deleted or
    finished with an admission, or evicted (Evicted True, no admission). Read from the body
    alone, so a kept state and one rebuilt from the store requeue the same trees."""
    admission = (body.get("status") or {}).get("admission")
    if admission and (deleted or is_true(body, "Finished")):
        return str(admission.get("clusterQueue", ""))
    if not admission and not deleted and is_true(body, "Evicted"):
        namespace = str(body["metadata"].get("namespace", "default"))
        return state.world.local_queues.get((namespace, str((body.get("spec") or {}).get("queueName", ""))), "")
    return ""


def _workload_changed(view: View, state: State, key: Key, body: dict[str, Any] | None) -> None:
    """One Workload changed by someone else: its usage out of the cache when it no longer holds
    it, its cohort tree requeued when its body says it gave quota back (``released_in``), then
    into its queue or the cache as it is now."""
    name = f"{key[1]}/{key[2]}"
    snapshot = state.world.snapshot
    held = snapshot.holding(name)
    live = view.objects.get(key)
    now = admitted_of(live, snapshot.forest.queues) if live is not None else None
    if held is not None and not _same_holder(held, now):
        snapshot.evict(name)
    last = live if live is not None else body
    released = released_in(state, last, deleted=live is None) if last is not None else ""
    if released:
        state.manager.requeue_tree(released)
    if live is None:
        state.manager.delete(name)
    elif now is not None:
        state.world.snapshot.admit(now)
        state.manager.delete(name)
    else:
        _enqueue(view, state, live, derived=False)
    state.count(view, name)


def _own(view: View, state: State, key: Key) -> bool:
    body = view.objects.get(key)
    return body is not None and state.written.get(key) == body["metadata"].get("resourceVersion")


def apply_changes(view: View, state: State | None, changes: Changes | None) -> State:
    """The state after ``changes`` (see the module docstring); a new one when there is none, on
    a pass without changes, or when a queue object changed."""
    if changes is None:
        return build(view, derived=False)
    if state is None:
        state = build(view, derived=True)
    keys = [k for k in sorted(changes.keys) if not _own(view, state, k)]
    if any(k[0] in QUEUE_KINDS or k == CONFIGURATION or (state.tas and k[0] == "Node") for k in keys):
        return build(view, derived=False)
    for key in keys:
        if key[0] == "Workload":
            _workload_changed(view, state, key, changes.body(key))
    return state


def start_pass(view: View, state: State) -> None:
    """What the previous pass left for this one: the trees its preemptions released, its
    victims and its preemptors back in their heaps; the topology snapshot read anew."""
    for cq in sorted(state.released):
        state.manager.requeue_tree(cq)
    state.released.clear()
    for key in state.deferred:
        namespace, _, name = key.partition("/")
        wl = view.get("Workload", name, namespace)
        if wl is not None:
            _enqueue(view, state, wl, derived=False)
    state.deferred.clear()
    if state.tas:
        state.world.snapshot.topologies = topologies(view, state.world.snapshot.flavors)


def end_pass(view: View, state: State, start: int) -> None:
    """Remember what this pass wrote (not a change for the next one) and recount it."""
    state.written = {}
    for key in sorted(view.journal_since(start)):
        body = view.objects.get(key)
        if body is None:
            continue
        state.written[key] = body["metadata"].get("resourceVersion")
        if key[0] == "Workload":
            state.count(view, f"{key[1]}/{key[2]}")


def state_of(view: View, changes: Changes | None) -> State:
    state = apply_changes(view, view.memo.get(MEMO, {}).get("state"), changes)
    view.memo[MEMO] = {"state": state}
    return state
