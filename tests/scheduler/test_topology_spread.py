"""PodTopologySpread: skew filtering (hostname and zone), missing labels, minDomains, counting
rules (namespace, nodeSelector), and ScheduleAnyway scoring."""

from __future__ import annotations

import decimal
import math

import pytest

from gpusched.objects.types import LabelSelector, PodInfo, TopologySpreadConstraint
from gpusched.scheduler.framework import Code, CycleState, SKIP
from gpusched.scheduler.plugins import pod_topology_spread as pts
from gpusched.scheduler.snapshot import Snapshot

from .builders import filter_outcome, labelled_snapshot, score_outcome

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
WEB = LabelSelector(match_labels=(("app", "web"),))


_seq = iter(range(10**6))


def make_pod(labels=None, ns="default", spread=(), node_selector=None) -> PodInfo:
    n = next(_seq)
    return PodInfo(ns, f"p{n}", f"uid-{n}", {}, labels=labels or {}, topology_spread=tuple(spread),
                   node_selector=node_selector or {})


def web(ns="default"):
    return make_pod({"app": "web"}, ns)


def hard(key, skew=1, selector=WEB, min_domains=None):
    return TopologySpreadConstraint(skew, key, "DoNotSchedule", selector, min_domains)


def soft(key, skew=1, selector=WEB):
    return TopologySpreadConstraint(skew, key, "ScheduleAnyway", selector)


THREE_ZONED = {"a1": {ZONE: "a"}, "a2": {ZONE: "a"}, "b1": {ZONE: "b"}}


def run_filter(snap: Snapshot, pod: PodInfo) -> dict[str, tuple[str, Code]]:
    return filter_outcome(pts.new(), snap, pod)


SKEWED = (pts.REASON_CONSTRAINTS, Code.UNSCHEDULABLE)
MISSING = (pts.REASON_MISSING_LABEL, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

FILTER_CASES = [
    ("zone-skew-rejects-fuller-zone", THREE_ZONED, {"a1": [web()], "a2": [web()], "b1": [web()]},
     make_pod({"app": "web"}, spread=[hard(ZONE)]), {"a1": SKEWED, "a2": SKEWED}),
    ("zone-balanced-all-pass", THREE_ZONED, {"a1": [web()], "b1": [web()]},
     make_pod({"app": "web"}, spread=[hard(ZONE)]), {}),
    ("hostname-skew", {"n1": {}, "n2": {}}, {"n1": [web()]},
     make_pod({"app": "web"}, spread=[hard(HOST)]), {"n1": SKEWED}),
    ("max-skew-2-allows", {"n1": {}, "n2": {}}, {"n1": [web()]},
     make_pod({"app": "web"}, spread=[hard(HOST, skew=2)]), {}),
    ("incoming-not-matching-selector-no-self-count", THREE_ZONED, {"a1": [web()], "a2": [web()], "b1": [web()]},
     make_pod({"app": "db"}, spread=[hard(ZONE)]), {}),
    ("missing-zone-label", {"a1": {ZONE: "a"}, "x": {}}, {},
     make_pod({"app": "web"}, spread=[hard(ZONE)]), {"x": MISSING}),
    ("min-domains-not-reached-min-is-zero", THREE_ZONED, {"a1": [web()], "b1": [web()]},
     make_pod({"app": "web"}, spread=[hard(ZONE, min_domains=3)]), {"a1": SKEWED, "a2": SKEWED, "b1": SKEWED}),
    ("min-domains-reached", THREE_ZONED, {"a1": [web()], "b1": [web()]},
     make_pod({"app": "web"}, spread=[hard(ZONE, min_domains=2)]), {}),
    ("other-namespace-not-counted", THREE_ZONED, {"a1": [web("other"), web("other")]},
     make_pod({"app": "web"}, spread=[hard(ZONE)]), {}),
    ("node-selector-excludes-zone-from-domains", THREE_ZONED, {"a1": [web()]},
     make_pod({"app": "web"}, spread=[hard(ZONE)], node_selector={ZONE: "a"}), {}),
    ("empty-zone-is-a-domain", THREE_ZONED, {"a1": [web()]},
     make_pod({"app": "web"}, spread=[hard(ZONE)]), {"a1": SKEWED, "a2": SKEWED}),
    ("two-constraints-both-apply", THREE_ZONED, {"a1": [web()], "b1": [web()]},
     make_pod({"app": "web"}, spread=[hard(ZONE), hard(HOST)]), {"a1": SKEWED, "b1": SKEWED}),
    ("schedule-anyway-never-filters", THREE_ZONED, {"a1": [web(), web()]},
     make_pod({"app": "web"}, spread=[soft(ZONE)]), {}),
]


@pytest.mark.parametrize("nodes,placed,pod,expected", [c[1:] for c in FILTER_CASES],
                         ids=[c[0] for c in FILTER_CASES])
def test_filter(nodes, placed, pod, expected):
    assert run_filter(labelled_snapshot(nodes, placed), pod) == expected


def test_pod_without_constraints_skips():
    snap = labelled_snapshot(THREE_ZONED)
    assert pts.new().pre_filter(CycleState(), make_pod(), snap) == SKIP


def run_score(snap: Snapshot, pod: PodInfo) -> dict[str, int]:
    return score_outcome(pts.new(), snap, pod)


SCORE_CASES = [
    # n1 raw = round(2 * ln(4)) = 3, n2 raw 0 -> 100 * (3 + 0 - s) / 3
    ("hostname-fewer-pods-scores-higher", {"n1": {}, "n2": {}}, {"n1": [web(), web()]},
     make_pod({"app": "web"}, spread=[soft(HOST)]), {"n1": 0, "n2": 100}),
    ("all-empty-all-max", {"n1": {}, "n2": {}}, {}, make_pod({"app": "web"}, spread=[soft(HOST)]),
     {"n1": 100, "n2": 100}),
    # zones a (2 pods) and b (0): weight ln(2+2); a raw round(2.77)=3 -> 0, b -> 100; x lacks key -> 0
    ("zone-and-missing-key", {"a1": {ZONE: "a"}, "b1": {ZONE: "b"}, "x": {}}, {"a1": [web(), web()]},
     make_pod({"app": "web"}, spread=[soft(ZONE)]), {"a1": 0, "b1": 100, "x": 0}),
    ("hard-only-skips-score", {"n1": {}}, {}, make_pod({"app": "web"}, spread=[hard(HOST)]), {}),
]


@pytest.mark.parametrize("nodes,placed,pod,expected", [c[1:] for c in SCORE_CASES],
                         ids=[c[0] for c in SCORE_CASES])
def test_score(nodes, placed, pod, expected):
    assert run_score(labelled_snapshot(nodes, placed), pod) == expected


# domain counts whose log(size + 2) this machine's C library (glibc on x86-64) rounds to the
# wrong neighbour float (found by comparing 200,000 sizes with 40-digit logarithms), and ordinary ones
WEIGHT_SIZES = [("small", 0), ("three-zones", 3), ("libm-off-by-one-ulp-9168", 9168),
                ("libm-off-by-one-ulp-136835", 136835), ("large", 50_000)]


@pytest.mark.parametrize("size", [c[1] for c in WEIGHT_SIZES], ids=[c[0] for c in WEIGHT_SIZES])
def test_normalizing_weight_is_the_correctly_rounded_logarithm(size):
    # upstream topologyNormalizingWeight = math.Log(float64(size + 2)) (kubernetes
    # pkg/scheduler/framework/plugins/podtopologyspread/scoring.go); ours the same on every machine
    exact = decimal.Context(prec=50).ln(size + 2)
    weight = pts.normalizing_weight(size)
    neighbour = math.nextafter(weight, math.inf if decimal.Decimal(weight) < exact else -math.inf)
    assert abs(decimal.Decimal(weight) - exact) <= abs(decimal.Decimal(neighbour) - exact)
