"""The v1beta2 compressed TopologyAssignment (``pkg/util/tas/tas_assignment_test.go``
``V1Beta2From`` cases, single-slice encoding) and the topology ungater's choice of domain per
gated pod (``pkg/controller/tas/topology_ungater.go``)."""

from __future__ import annotations

import pytest

from gpusched.kueue.tas import DomainCount, TopologyAssignment
from gpusched.kueue.tas_assignment import PodView, decode, encode, pods_to_ungate

HOST = "kubernetes.io/hostname"


def ta(levels, *domains):
    return TopologyAssignment(tuple(levels), tuple(DomainCount(tuple(v), c) for v, c in domains))


ENCODINGS = [
    ("empty", ta(["a"]), {"levels": ["a"], "slices": []}),
    ("one domain", ta(["a", "b"], (["a1", "b1"], 4)),
     {"levels": ["a", "b"], "slices": [{"domainCount": 1, "valuesPerLevel": [{"universal": "a1"}, {"universal": "b1"}],
                                        "podCounts": {"universal": 4}}]}),
    ("multiple domains, different counts, common prefix and suffix",
     ta(["a", "b"], (["p.a1.s", "p.b1.s"], 1), (["p.a2.s", "p.b2.s"], 2)),
     {"levels": ["a", "b"], "slices": [{"domainCount": 2, "valuesPerLevel": [
         {"individual": {"prefix": "p.a", "suffix": ".s", "roots": ["1", "2"]}},
         {"individual": {"prefix": "p.b", "suffix": ".s", "roots": ["1", "2"]}}], "podCounts": {"individual": [1, 2]}}]}),
    ("multiple domains, same counts, max prefix & suffix overlap partially",
     ta(["a"], (["abacacada"], 1), (["abacada"], 1)),
     {"levels": ["a"], "slices": [{"domainCount": 2, "valuesPerLevel": [
         {"individual": {"prefix": "ab", "suffix": "acada", "roots": ["ac", ""]}}], "podCounts": {"universal": 1}}]}),
    ("multiple domains, same counts, max prefix & suffix overlap fully, shrinking strings",
     ta(["a"], (["ababa"], 1), (["aba"], 1)),
     {"levels": ["a"], "slices": [{"domainCount": 2, "valuesPerLevel": [
         {"individual": {"suffix": "aba", "roots": ["ab", ""]}}], "podCounts": {"universal": 1}}]}),
]


@pytest.mark.parametrize("internal,v1beta2", [c[1:] for c in ENCODINGS], ids=[c[0] for c in ENCODINGS])
def test_encode_and_decode_round_trip(internal, v1beta2):
    assert encode(internal) == v1beta2
    assert decode(v1beta2) == internal


@pytest.mark.parametrize("raw", [None, "x", {"levels": [HOST], "slices": [{"domainCount": 2, "valuesPerLevel": [
    {"individual": {"roots": ["a"]}}], "podCounts": {"universal": 1}}]}], ids=["none", "string", "short-roots"])
def test_decode_refuses_what_it_cannot_read(raw):
    assert decode(raw) is None


TWO_HOSTS = ta([HOST], (["x1"], 2), (["x2"], 1))


@pytest.mark.parametrize("pods,expected", [
    ([PodView("p-c", True, {}), PodView("p-a", True, {}), PodView("p-b", True, {})],
     [("p-a", "x1"), ("p-b", "x1"), ("p-c", "x2")]),
    ([PodView("p-a", False, {HOST: "x1"}), PodView("p-b", True, {}), PodView("p-c", True, {})],
     [("p-b", "x1"), ("p-c", "x2")]),
    ([PodView("p-a", True, {}, rank=2), PodView("p-b", True, {}, rank=0), PodView("p-c", True, {}, rank=1)],
     [("p-a", "x2"), ("p-b", "x1"), ("p-c", "x1")]),
    ([PodView("p-a", True, {}, rank=0), PodView("p-b", True, {}, rank=0), PodView("p-c", True, {}, rank=1)],
     [("p-a", "x1"), ("p-b", "x1"), ("p-c", "x2")]),
], ids=["greedy-by-name", "greedy-counts-ungated", "by-rank", "conflicting-ranks-greedy"])
def test_pods_to_ungate(pods, expected):
    """assignGatedPodsToDomainsGreedy / assignGatedPodsToDomainsByRanks."""
    got = pods_to_ungate(TWO_HOSTS, pods, 3)
    assert [(name, labels[HOST]) for name, labels in got] == expected
