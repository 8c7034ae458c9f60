"""InterPodAffinity: required affinity (incl. the first pod of a series), anti-affinity, existing
pods' anti-affinity, namespaces, and preferred-term scoring."""

from __future__ import annotations

import pytest

from gpusched.objects.types import (
    LabelSelector, PodAffinityTerm, PodInfo, WeightedPodAffinityTerm,
)
from gpusched.scheduler.framework import Code
from gpusched.scheduler.plugins import inter_pod_affinity as ipa
from gpusched.scheduler.snapshot import Snapshot

from .builders import filter_outcome, labelled_snapshot, score_outcome

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"

_seq = iter(range(10**6))


def sel(app: str) -> LabelSelector:
    return LabelSelector(match_labels=(("app", app),))


def term(app: str, key: str = ZONE, namespaces=()) -> PodAffinityTerm:
    return PodAffinityTerm(sel(app), key, tuple(namespaces))


def make_pod(app: str = "", ns: str = "default", **kw) -> PodInfo:
    n = next(_seq)
    return PodInfo(ns, f"p{n}", f"uid-{n}", {}, labels={"app": app} if app else {}, **kw)


NODES = {"a1": {ZONE: "a"}, "a2": {ZONE: "a"}, "b1": {ZONE: "b"}, "x": {}}

AFF = (ipa.REASON_AFFINITY, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
ANTI = (ipa.REASON_ANTI_AFFINITY, Code.UNSCHEDULABLE)
EXISTING = (ipa.REASON_EXISTING_ANTI_AFFINITY, Code.UNSCHEDULABLE)


def run_filter(snap: Snapshot, pod: PodInfo) -> dict[str, tuple[str, Code]]:
    return filter_outcome(ipa.new(), snap, pod)


FILTER_CASES = [
    ("affinity-zone-satisfied", {"a1": [make_pod("db")]}, make_pod("web", pod_affinity=(term("db"),)),
     {"b1": AFF, "x": AFF}),
    ("affinity-hostname", {"a1": [make_pod("db")]}, make_pod("web", pod_affinity=(term("db", HOST),)),
     {"a2": AFF, "b1": AFF, "x": AFF}),
    ("affinity-no-match-anywhere", {"a1": [make_pod("cache")]}, make_pod("web", pod_affinity=(term("db"),)),
     {"a1": AFF, "a2": AFF, "b1": AFF, "x": AFF}),
    ("first-pod-in-series-allowed-where-key-exists", {}, make_pod("web", pod_affinity=(term("web"),)),
     {"x": AFF}),
    ("affinity-other-namespace-pod-does-not-count", {"a1": [make_pod("db", ns="other")]},
     make_pod("web", pod_affinity=(term("db"),)), {n: AFF for n in NODES}),
    ("affinity-term-namespaces-list", {"a1": [make_pod("db", ns="other")]},
     make_pod("web", pod_affinity=(term("db", namespaces=["other"]),)), {"b1": AFF, "x": AFF}),
    ("affinity-all-terms-one-pod", {"a1": [make_pod("db")], "b1": [make_pod("cache")]},
     make_pod("web", pod_affinity=(term("db"), term("cache"))), {n: AFF for n in NODES}),
    ("anti-affinity-zone", {"a1": [make_pod("web")]}, make_pod("web", pod_anti_affinity=(term("web"),)),
     {"a1": ANTI, "a2": ANTI}),
    ("anti-affinity-hostname", {"a1": [make_pod("web")]}, make_pod("web", pod_anti_affinity=(term("web", HOST),)),
     {"a1": ANTI}),
    ("anti-affinity-nothing-matches", {"a1": [make_pod("db")]}, make_pod("web", pod_anti_affinity=(term("web"),)),
     {}),
    ("existing-pod-anti-affinity", {"a1": [make_pod("db", pod_anti_affinity=(term("web"),))]}, make_pod("web"),
     {"a1": EXISTING, "a2": EXISTING}),
    ("existing-pod-anti-affinity-other-app", {"a1": [make_pod("db", pod_anti_affinity=(term("web"),))]},
     make_pod("api"), {}),
    ("affinity-reported-before-anti", {"a1": [make_pod("db")], "b1": [make_pod("web")]},
     make_pod("web", pod_affinity=(term("db"),), pod_anti_affinity=(term("web"),)),
     {"b1": AFF, "x": AFF}),
]


@pytest.mark.parametrize("placed,pod,expected", [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES])
def test_filter(placed, pod, expected):
    assert run_filter(labelled_snapshot(NODES, placed), pod) == expected


def run_score(snap: Snapshot, pod: PodInfo) -> dict[str, int]:
    return score_outcome(ipa.new(), snap, pod)


def weighted(w: int, app: str, key: str = ZONE) -> WeightedPodAffinityTerm:
    return WeightedPodAffinityTerm(w, term(app, key))


SCORE_CASES = [
    ("preferred-affinity-zone", {"a1": [make_pod("db")]},
     make_pod("web", preferred_pod_affinity=(weighted(5, "db"),)), {"a1": 100, "a2": 100, "b1": 0, "x": 0}),
    ("preferred-anti-affinity", {"a1": [make_pod("web")]},
     make_pod("web", preferred_pod_anti_affinity=(weighted(5, "web"),)), {"a1": 0, "a2": 0, "b1": 100, "x": 100}),
    # +10 in zone a from affinity to db, -5 on host b1 from anti-affinity: a=10, b1=-5, x=0
    ("mixed-weights", {"a1": [make_pod("db")], "b1": [make_pod("web")]},
     make_pod("web", preferred_pod_affinity=(weighted(10, "db"),),
              preferred_pod_anti_affinity=(weighted(5, "web", HOST),)), {"a1": 100, "a2": 100, "b1": 0, "x": 33}),
    ("existing-pod-preferred-affinity-to-incoming", {"b1": [make_pod("db", preferred_pod_affinity=(weighted(3, "web"),))]},
     make_pod("web"), {"a1": 0, "a2": 0, "b1": 100, "x": 0}),
    ("existing-pod-required-affinity-hard-weight", {"b1": [make_pod("db", pod_affinity=(term("web"),))]},
     make_pod("web"), {"a1": 0, "a2": 0, "b1": 100, "x": 0}),
    ("no-terms-anywhere-skips", {"a1": [make_pod("db")]}, make_pod("web"), {}),
]


@pytest.mark.parametrize("placed,pod,expected", [c[1:] for c in SCORE_CASES], ids=[c[0] for c in SCORE_CASES])
def test_score(placed, pod, expected):
    assert run_score(labelled_snapshot(NODES, placed), pod) == expected
