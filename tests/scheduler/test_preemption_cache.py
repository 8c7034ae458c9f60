"""DefaultPreemption's kept what-if outcomes (``scheduler.preemption_cache``) change nothing but
speed: a series of dry runs sharing one ``VictimsCache``, with the cluster changing between
them, gives each time the candidates, victims, per-node reasons, stop point and message of the
plain node-by-node dry run; a repeat on unchanged nodes runs no what-if; and pods whose
what-if reads more than one node are never served from it.

Upstream: ``pkg/scheduler/framework/preemption/preemption.go`` (DryRunPreemption) and
``plugins/defaultpreemption/default_preemption.go`` (SelectVictimsOnNode) define the outcome
kept here."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gpusched.objects.types import LabelSelector, PodAffinityTerm, TopologySpreadConstraint
from gpusched.scheduler import preemption as pre
from gpusched.scheduler.preemption_cache import VictimsCache
from tests.scheduler.builders import make_node, make_pod, scheduler_of
from tests.scheduler.test_preemption_precheck import (POD_KINDS, node_strategy, plain, pod_strategy,
                                                      random_cluster)


def dry_runs(scheduler, pod, cache, seed=3):
    """(with the cache, plain): the DryRun and PreemptResult of each on the same snapshot."""
    framework = scheduler.framework_for(pod)
    outcome = scheduler.run_filters(None, pod, None, True, framework)
    snap = scheduler.snapshot
    fits = pre.framework_fit_check(framework, snap)
    potential = np.flatnonzero(~pre.unresolvable_nodes(outcome.diagnosis))
    runs = []
    for check, kept in ((fits, cache), (plain(fits), None)):
        dry = pre.dry_run(snap, pod, potential, check, (), np.random.default_rng(seed), kept)
        result = pre.preempt(snap, pod, outcome.diagnosis, check, (), np.random.default_rng(seed), kept)
        runs.append((dry, result))
    return runs


def assert_same(runs):
    (fast_dry, fast), (slow_dry, slow) = runs
    assert (fast.status, fast.nominated_node) == (slow.status, slow.nominated_node)
    assert [v.uid for v in fast.victims] == [v.uid for v in slow.victims]
    assert fast_dry.failures == slow_dry.failures
    assert fast_dry.evaluated.tolist() == slow_dry.evaluated.tolist()
    assert [(c.node, [v.uid for v in c.victims], c.num_pdb_violations) for c in fast_dry.candidates] \
        == [(c.node, [v.uid for v in c.victims], c.num_pdb_violations) for c in slow_dry.candidates]


@settings(max_examples=60, deadline=None)
@given(nodes=st.lists(node_strategy, min_size=1, max_size=6),
       pods=st.lists(pod_strategy, min_size=0, max_size=24),
       pending=st.lists(pod_strategy, min_size=1, max_size=4),
       changes=st.lists(st.tuples(st.booleans(), st.integers(0, 30)), min_size=1, max_size=4))
def test_cached_dry_runs_match_plain_ones_as_the_cluster_changes(nodes, pods, pending, changes):
    scheduler = random_cluster(nodes, pods)
    snap, cache = scheduler.snapshot, VictimsCache()
    for round_, (remove, pick) in enumerate(changes):
        for i, (kind, prio, cpu, _) in enumerate(pending):        # alike pods: same key, new uid
            pod = make_pod(f"pending-{round_}-{i}", cpu=str(cpu * 2), priority=prio + 1, **POD_KINDS[kind])
            assert_same(dry_runs(scheduler, pod, cache))
        placed = sorted(snap.pod_node)
        if remove and placed:                                      # a pod ends
            snap.remove_pod(placed[pick % len(placed)])
        elif placed:                                               # a victim is marked terminating
            victim = snap.pod(placed[pick % len(placed)])
            row, assignment = snap.remove_pod(victim.uid)
            snap.add_pod(replace(victim, terminating=True), row, assignment)


def what_ifs(monkeypatch):
    """The nodes of the exact what-ifs (``select_victims_on_node``) the cached side runs."""
    calls = []
    real = pre.select_victims_on_node

    def counted(*args, **kwargs):
        if isinstance(args[3], pre.FrameworkFitCheck):        # not the plain reference
            calls.append(args[2])
        return real(*args, **kwargs)
    monkeypatch.setattr(pre, "select_victims_on_node", counted)
    return calls


def full_cluster():
    scheduler = scheduler_of(*(make_node(f"n{i}", gpus=2, model="T4", cpu="8") for i in range(4)))
    for i in range(8):
        scheduler.schedule_one(make_pod(f"low-{i}", gpus=1, cpu="1", priority=i % 2))
    return scheduler


def test_a_repeat_on_unchanged_nodes_runs_no_what_if(monkeypatch):
    scheduler, cache = full_cluster(), VictimsCache()
    calls = what_ifs(monkeypatch)
    first = dry_runs(scheduler, make_pod("want-a", gpus=2, cpu="1", priority=5), cache)
    assert calls == [0, 1, 2, 3], "dry_run evaluates every node, preempt's run finds them kept"
    calls.clear()
    second = dry_runs(scheduler, make_pod("want-b", gpus=2, cpu="1", priority=5), cache)
    assert calls == [], "an alike pod on unchanged nodes"
    assert_same(second)
    assert [v.uid for v in first[0][1].victims] == [v.uid for v in second[0][1].victims]


def test_a_changed_node_is_evaluated_again(monkeypatch):
    scheduler, cache = full_cluster(), VictimsCache()
    dry_runs(scheduler, make_pod("want-a", gpus=2, cpu="1", priority=5), cache)
    snap = scheduler.snapshot
    victim = snap.pods_on("n2")[0]
    row, assignment = snap.remove_pod(victim.uid)
    snap.add_pod(replace(victim, terminating=True), row, assignment)     # a new PodInfo on n2
    calls = what_ifs(monkeypatch)
    runs = dry_runs(scheduler, make_pod("want-b", gpus=2, cpu="1", priority=5), cache)
    assert_same(runs)
    assert calls == [row], "only the changed node again"


def test_a_different_priority_is_a_different_entry(monkeypatch):
    scheduler, cache = full_cluster(), VictimsCache()
    dry_runs(scheduler, make_pod("want-a", gpus=2, cpu="1", priority=5), cache)
    calls = what_ifs(monkeypatch)
    assert_same(dry_runs(scheduler, make_pod("want-b", gpus=2, cpu="1", priority=1), cache))
    assert calls == [2], "n2 (the others are settled by the pre-check) for the new priority"


EVERYWHERE = LabelSelector(match_labels=(("app", "x"),))


@pytest.mark.parametrize("fields,placed", [
    (dict(pod_anti_affinity=(PodAffinityTerm(EVERYWHERE, "kubernetes.io/hostname"),)), {}),
    (dict(topology_spread=(TopologySpreadConstraint(1, "kubernetes.io/hostname", "DoNotSchedule",
                                                    EVERYWHERE),)), {}),
    (dict(), dict(pod_anti_affinity=(PodAffinityTerm(EVERYWHERE, "kubernetes.io/hostname"),))),
], ids=["own-anti-affinity", "own-topology-spread", "a-placed-pod-has-anti-affinity"])
def test_what_ifs_that_read_other_nodes_are_not_kept(fields, placed):
    scheduler = scheduler_of(make_node("n0", cpu="2"), make_node("n1", cpu="2"))
    scheduler.schedule_one(make_pod("low", cpu="2", priority=0, labels={"app": "x"}, **placed))
    pod = make_pod("want", cpu="2", priority=5, labels={"app": "x"}, **fields)
    fits = pre.framework_fit_check(scheduler.framework_for(pod), scheduler.snapshot)
    assert VictimsCache().for_pod(scheduler.snapshot, pod, fits, ()) is None


def test_pdbs_or_another_snapshot_start_afresh():
    scheduler = full_cluster()
    cache = VictimsCache()
    dry_runs(scheduler, make_pod("want-a", gpus=2, cpu="1", priority=5), cache)
    assert cache.entries
    pod = make_pod("want-b", gpus=2, cpu="1", priority=5)
    fits = pre.framework_fit_check(scheduler.framework_for(pod), scheduler.snapshot)
    pdb = pre.PdbInfo("default", EVERYWHERE, 0, "pdb")
    assert cache.for_pod(scheduler.snapshot, pod, fits, (pdb,)) is not None and not cache.entries
