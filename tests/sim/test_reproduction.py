"""Reproduction of the published FGD results on a reduced seed set (the full set: scripts/compare_fgd.py).

Why this set: the default workload is the paper's headline experiment, and the six policies
differ most there in *how* they choose (random, dot product, tags, packing, best fit,
fragmentation), so all six run; two seeds (42, 43) keep the test at about 2 minutes on the
2-core machine (12 runs; FGD is ~18 s of it). The other eight workloads vary the trace, not
the code path (they are covered by the full comparison in docs/fgd-results.md).

The check: the mean over the two seeds of the GPU allocation at arrived 100 % and 130 % is within
the issue's 0.5 points of the published mean over seeds 42-51. A mean over two seeds also carries
seed noise, so where the published seed-to-seed spread is large (GpuClustering and GpuPacking:
sample sd about 0.6) the tolerance is widened to two standard errors of a two-seed mean
(``2 * sd / sqrt(2)``), never narrowed below 0.5.
"""

from __future__ import annotations

import csv
import math
import statistics
from functools import lru_cache
from pathlib import Path

import pytest

from gpusched.sim.experiment import POLICIES, RunSpec, run

WORKLOAD = "openb_pod_list_default"
SEEDS = (42, 43)
TOLERANCE = 0.5
POINTS = (100, 130)
PUBLISHED_POLICIES = ("random", "dotprod", "clustering", "packing", "bestfit", "fgd")


def published(published_dir: Path, label: str, point: int) -> tuple[float, float]:
    """(mean, sample sd) over the published seeds for the default workload."""
    with open(published_dir / "analysis_allo_discrete.csv", newline="") as handle:
        values = [float(r[str(point)]) for r in csv.DictReader(handle)
                  if r["workload"] == WORKLOAD and r["sc_policy"] == label]
    assert len(values) == 10
    return statistics.mean(values), statistics.stdev(values)


@lru_cache(maxsize=None)
def ours(trace_dir: Path, policy: str) -> tuple[tuple[float, ...], ...]:
    nodes, pods = trace_dir / "openb_node_list_gpu_node.csv", trace_dir / f"{WORKLOAD}.csv"
    return tuple(run(RunSpec(str(nodes), str(pods), policy, seed)).allocation for seed in SEEDS)


@pytest.mark.parametrize("policy", PUBLISHED_POLICIES)
def test_allocation_matches_published_mean(trace_dir: Path, published_dir: Path, policy: str):
    allocations = ours(trace_dir, policy)
    for point in POINTS:
        mean, sd = published(published_dir, POLICIES[policy][0], point)
        tolerance = max(TOLERANCE, 2 * sd / math.sqrt(len(SEEDS)))
        mine = statistics.mean(a[point] for a in allocations)
        assert abs(mine - mean) <= tolerance, (
            f"{policy} @{point}: gpusched {mine:.2f} vs published {mean:.2f} (tolerance {tolerance:.2f})")


def test_runs_are_deterministic(trace_dir: Path):
    nodes, pods = trace_dir / "openb_node_list_gpu_node.csv", trace_dir / f"{WORKLOAD}.csv"
    again = run(RunSpec(str(nodes), str(pods), "bestfit", SEEDS[0])).allocation
    assert again == ours(trace_dir, "bestfit")[0]
