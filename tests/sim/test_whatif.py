"""``sim.whatif``: variants of a tiny replay, over seeds, through the real embedded cluster.

The trace: two 1-GPU T4 nodes and six 1-GPU jobs of one hour arriving a minute apart, so four of
them queue. More nodes can only shorten the queue; fewer can only lengthen it; every job still
runs its hour, so GPU-hours used are the same in every variant and idle GPU-hours follow the
node count.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gpusched.errors import UsageError
from gpusched.sim.alibaba import MIB, TraceNode
from gpusched.sim.replay import ReplayConfig, ReplayJob, ReplayTrace
from gpusched.sim.variants import Variant, parse_variant
from gpusched.sim.whatif import METRICS, SERIES, run_variants
from gpusched.sim.whatif_report import comparison_table, write_csvs, write_plots

POLICIES = ("default", "fgd", "bestfit")
SEEDS = (1, 2)
HOUR = 3600.0


def t4(name: str) -> TraceNode:
    return TraceNode(name, 16_000, 64 * 1024 * MIB, 1, "T4")


def tiny_trace() -> ReplayTrace:
    jobs = tuple(ReplayJob(f"job-{i}", arrival=60.0 * i, run_time=HOUR, cpu_milli=1000,
                           memory=1024 * MIB, num_gpu=1, gpu_milli=1000) for i in range(6))
    return ReplayTrace(nodes=(t4("t4-a"), t4("t4-b")), jobs=jobs, source="tiny")


def variants() -> list[Variant]:
    return [Variant("as is"),
            parse_variant("plus 2 T4: --add-nodes 2xT4:gpus=1,cpu=16,memory=64Gi", POLICIES),
            parse_variant("minus 1 T4: --remove-nodes 1:T4", POLICIES)]


@pytest.fixture(scope="module")
def runs() -> dict[str, list]:
    return run_variants(tiny_trace(), variants(), SEEDS, ReplayConfig(sample_every=600.0))


def values(runs: dict[str, list], variant: str, key: str) -> list[float]:
    return [r.values[key] for r in runs[variant]]


def test_adding_nodes_never_lengthens_the_wait_and_removing_never_shortens_it(runs):
    for i, seed in enumerate(SEEDS):
        plus, base, minus = (runs[v][i].values["wait_mean_min"] for v in ("plus 2 T4", "as is", "minus 1 T4"))
        assert plus < base < minus, (seed, plus, base, minus)
    # two GPUs for six one-hour jobs a minute apart: job k (k >= 2) waits; with four GPUs only 4, 5
    assert values(runs, "as is", "never_started") == [0.0, 0.0]
    assert min(values(runs, "as is", "wait_p95_min")) > 50.0
    assert max(values(runs, "plus 2 T4", "wait_p50_min")) == 0.0


def test_gpu_hours_used_are_the_jobs_hours_in_every_variant(runs):
    for name in runs:
        assert values(runs, name, "gpu_hours_used") == pytest.approx([6.0, 6.0], abs=1e-6)
    idle = {name: values(runs, name, "gpu_hours_idle")[0] for name in runs}
    assert idle["plus 2 T4"] > idle["as is"] > idle["minus 1 T4"] >= 0.0


def test_runs_are_deterministic_per_seed_and_keep_variant_and_seed_order(runs):
    assert list(runs) == ["as is", "plus 2 T4", "minus 1 T4"]
    assert [r.seed for r in runs["as is"]] == list(SEEDS)
    again = run_variants(tiny_trace(), variants()[:1], SEEDS[:1], ReplayConfig(sample_every=600.0))
    assert again["as is"][0].values == runs["as is"][0].values


def test_the_base_trace_is_not_changed():
    trace = tiny_trace()
    run_variants(trace, variants()[:2], SEEDS[:1], ReplayConfig(sample_every=600.0))
    assert trace == tiny_trace()


def test_a_variant_that_does_not_apply_fails_before_any_run():
    bad = parse_variant("h: --remove-nodes 1:H100", POLICIES)
    with pytest.raises(UsageError, match=r'--remove-nodes 1:H100: no node matches "H100"'):
        run_variants(tiny_trace(), [Variant("as is"), bad], SEEDS, ReplayConfig())


def test_table_csvs_and_plots(runs, tmp_path: Path):
    from rich.console import Console

    metrics = [m for m, _ in METRICS]
    console = Console(width=400, record=True, file=open(tmp_path / "table.txt", "w"))
    console.print(comparison_table(runs, metrics, "whatif: tiny"))
    text = console.export_text()
    assert "…" not in text
    for header in ("as is", "plus 2 T4", "Δ plus 2 T4", "minus 1 T4", "Δ minus 1 T4", "mean wait (min)"):
        assert header in text
    csvs = write_csvs(runs, metrics, tmp_path)
    rows = (tmp_path / "comparison.csv").read_text().splitlines()
    assert rows[0].startswith("variant,metric,seeds,mean,ci95_half_width")
    assert len(rows) == 1 + len(metrics) * len(runs) and len(csvs) == 2
    labels = {key: label for key, (label, _) in SERIES.items()}
    paths = write_plots(runs, metrics, labels, tmp_path, "whatif: tiny")
    assert sorted(p.name for p in paths) == ["summary.png", "summary.svg", "timeseries.png", "timeseries.svg"]
    svg = (tmp_path / "timeseries.svg").read_text()
    assert "plus 2 T4 (n=2)" in svg and "pending pods" in svg
    assert (tmp_path / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not math.isnan(float(rows[1].split(",")[4]))
    again = tmp_path / "again"
    again.mkdir()
    write_plots(runs, metrics, labels, again, "whatif: tiny")
    for name in ("timeseries.svg", "summary.svg", "timeseries.png", "summary.png"):
        assert (again / name).read_bytes() == (tmp_path / name).read_bytes(), name   # same runs, same bytes
