"""Kueue's v1beta2 compressed topologyAssignment as v0.19 writes it (``objects.topology_assignment``),
cases from ``pkg/util/tas/tas_assignment_test.go``: the hostname-prefix runs
(``TestCompactTopologyAssignmentEncodingWithHostnamePrefixRuns``), the domain order kept, and the
size comparison with one compact slice (``TestV1Beta2FromInternal_hostnamePrefixFeatureGateAndFallback``)."""

from __future__ import annotations

import pytest

from gpusched.objects.topology_assignment import by_hostname_prefix, decode, encode

HOST = "kubernetes.io/hostname"


def hosts(*pairs):
    return [((name,), count) for name, count in pairs]


def individual(prefix, roots, suffix=None):
    values = {"prefix": prefix, "roots": roots}
    if suffix:
        values["suffix"] = suffix
    return {"individual": values}


def piece(values, counts):
    pods = {"universal": counts[0]} if len(set(counts)) == 1 else {"individual": counts}
    return {"domainCount": len(counts), "valuesPerLevel": [values], "podCounts": pods}


CASES = [
    ("GKE node pools",
     hosts(("gke-c-pool-a-hash1-aa", 3), ("gke-c-pool-a-hash1-bb", 3), ("gke-c-pool-b-hash2-cc", 4),
           ("gke-c-pool-b-hash2-dd", 5)),
     [piece(individual("gke-c-pool-a-hash1-", ["aa", "bb"]), [3, 3]),
      piece(individual("gke-c-pool-b-hash2-", ["cc", "dd"]), [4, 5])]),
    ("AWS EKS private DNS names",
     hosts(("ip-10-24-34-0.us-west-2.compute.internal", 2), ("ip-10-24-34-1.us-west-2.compute.internal", 2),
           ("ip-10-24-35-0.us-west-2.compute.internal", 3), ("ip-10-24-35-1.us-west-2.compute.internal", 4)),
     [piece(individual("ip-10-24-34-", ["0", "1"], ".us-west-2.compute.internal"), [2, 2]),
      piece(individual("ip-10-24-35-", ["0", "1"], ".us-west-2.compute.internal"), [3, 4])]),
]


@pytest.mark.parametrize("domains,slices", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostname_prefix_runs(domains, slices):
    encoded = by_hostname_prefix([HOST], domains)
    assert encoded == {"levels": [HOST], "slices": slices}
    assert decode(encoded) == ((HOST,), domains)


def test_prefix_runs_keep_the_domain_order():
    """..._preservesDomainOrder: interleaved pools make four slices, decoded in the same order."""
    domains = hosts(("gke-c-pool-a-hash1-aa", 1), ("gke-c-pool-b-hash2-cc", 2), ("gke-c-pool-a-hash1-bb", 3),
                    ("gke-c-pool-b-hash2-dd", 4))
    encoded = by_hostname_prefix([HOST], domains)
    assert len(encoded["slices"]) == 4
    assert decode(encoded) == ((HOST,), domains)


def two_pools(count):
    """``hostnamePrefixAssignment``: pool-a-node-NNNNN then pool-b-node-NNNNN, one pod each."""
    half = count // 2
    return hosts(*((f"pool-{'a' if i < half else 'b'}-node-{(i if i < half else i - half):05d}", 1)
                   for i in range(count)))


@pytest.mark.parametrize("count,slices", [(1, 1), (4, 1), (20, 2)],
                         ids=["enabled keeps one-slice hostname-prefix encoding",
                              "enabled uses smaller single-slice encoding",
                              "enabled uses smaller hostname-prefix encoding"])
def test_the_shorter_encoding_wins(count, slices):
    encoded = encode([HOST], two_pools(count))
    assert len(encoded["slices"]) == slices
    assert decode(encoded) == ((HOST,), two_pools(count))
