"""``gpusched whatif``: the same replay under two or more variants, over the same seeds.

1. ``base_scenario``: the trace's nodes and the baseline policy become a ``sim.variants.Scenario``;
2. every variant is applied to it up front (a spec that does not apply fails before any run);
3. ``run_variants`` replays the trace once per (variant, seed) with ``sim.replay.replay``: the
   variant's nodes replace the trace's, its policy is the replay's policy, its device-plugin
   config becomes the device plugin's ConfigMap, its quotas ResourceQuotas, its MIG layouts the
   nodes' ``nvidia.com/mig.config`` labels; the seed is the replay's seed, so a seed means the
   same arrivals and tie-breaking in every variant (the differences are paired);
4. each result is reduced to a ``sim.whatif_report.RunMetrics`` (``METRICS``, ``SERIES``).

Runs are independent and deterministic, so ``jobs > 1`` runs them in a process pool and gives
the same numbers.

Neighbours: ``sim.replay`` (one run), ``sim.variants``, ``sim.whatif_report``; used by
``cli.whatif``.
"""

from __future__ import annotations

import logging
import multiprocessing
from dataclasses import replace
from typing import Any, Callable, Sequence

from gpusched.sim.alibaba import node_manifest
from gpusched.sim.experiment import POLICIES as EXPERIMENT_POLICIES
from gpusched.sim.replay import ReplayConfig, ReplayResult, ReplayTrace, replay
from gpusched.sim.replay_record import Sample
from gpusched.sim.variants import Scenario, Variant
from gpusched.sim.whatif_report import Metric, RunMetrics, Series

log = logging.getLogger(__name__)
HOUR = 3600.0
POLICIES: tuple[str, ...] = ("default", *EXPERIMENT_POLICIES)    # what sim.replay accepts
PLUGIN_CONFIGMAP = ("kube-system", "nvidia-device-plugin-config")



def waits(result: ReplayResult) -> list[float]:
    """Every trace pod's wait in seconds; a pod that never started waited until the replay ended
    (a lower bound), so a variant cannot look better by leaving pods pending."""
    end = result.summary.span_seconds
    return [p.wait if p.wait is not None else max(0.0, end - p.arrival)
            for p in result.pods if p.job]


def _percentile(values: list[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(values, q)) if values else 0.0


def _allocation(result: ReplayResult) -> float:
    s = result.summary
    total = s.gpu_hours_used + s.gpu_hours_idle
    return 100.0 * s.gpu_hours_used / total if total else 0.0


def _series(result: ReplayResult, read: Callable[[Sample], float]) -> Series:
    return Series(tuple(x.time for x in result.samples), tuple(read(x) for x in result.samples))


def _allocated_percent(sample: Sample) -> float:
    return 100.0 * sample.gpu_milli_allocated / sample.gpu_milli_capacity if sample.gpu_milli_capacity else 0.0


# The comparison's rows: (metric, how to read it off a replay result).
METRICS: tuple[tuple[Metric, Callable[[ReplayResult], float]], ...] = (
    (Metric("wait_mean_min", "mean wait (min)", 2), lambda r: _mean(waits(r)) / 60),
    (Metric("wait_p50_min", "p50 wait (min)", 2), lambda r: _percentile(waits(r), 50) / 60),
    (Metric("wait_p95_min", "p95 wait (min)", 1), lambda r: _percentile(waits(r), 95) / 60),
    (Metric("wait_p99_min", "p99 wait (min)", 1), lambda r: _percentile(waits(r), 99) / 60),
    (Metric("never_started", "pods never started", 1), lambda r: r.summary.never_started),
    (Metric("preemptions", "preemptions", 1), lambda r: r.summary.preemptions),
    (Metric("gpu_hours_used", "GPU-hours used", 0, "higher"), lambda r: r.summary.gpu_hours_used),
    (Metric("gpu_hours_idle", "GPU-hours idle", 0), lambda r: r.summary.gpu_hours_idle),
    (Metric("gpu_allocation_pct", "GPU allocation (% of GPU-hours)", 2, "higher"), _allocation),
)
# Time series plotted per variant: key -> (axis label, how to read (times, values)).
SERIES: dict[str, tuple[str, Callable[[ReplayResult], Series]]] = {
    "pending": ("pending pods", lambda r: _series(r, lambda x: x.pending)),
    "running": ("running pods", lambda r: _series(r, lambda x: x.running)),
    "allocation": ("GPUs allocated (%)", lambda r: _series(r, _allocated_percent)),
}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def base_scenario(trace: ReplayTrace, policy: str) -> Scenario:
    return Scenario(nodes=trace.nodes, policy=policy)


def plugin_configmap(path: str) -> dict[str, Any]:
    """The device plugin's ConfigMap (``devices.plugin_config``: a single key is the config every
    node gets, config-manager's ``single`` fallback)."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    namespace, name = PLUGIN_CONFIGMAP
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace}, "data": {"config": text}}


def replay_inputs(trace: ReplayTrace, scenario: Scenario, seed: int,
                  base: ReplayConfig) -> tuple[ReplayTrace, ReplayConfig]:
    """The (trace, config) of one run of ``scenario`` with ``seed``."""
    extra: list[dict[str, Any]] = []
    if scenario.plugin_config:
        extra.append(plugin_configmap(scenario.plugin_config))
    namespaces = sorted({q.namespace for q in scenario.quotas} - {"default"})
    extra += [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in namespaces]
    extra += [q.manifest() for q in scenario.quotas]
    extra += _mig_nodes(scenario)
    config = replace(base, policy=scenario.policy or base.policy, seed=seed,
                     extra=base.extra + tuple(extra))
    return replace(trace, nodes=scenario.nodes), config


def _mig_nodes(scenario: Scenario) -> list[dict[str, Any]]:
    """The nodes with a MIG layout, re-applied with the ``nvidia.com/mig.config`` label (the
    replay creates the plain nodes first; an apply of the same node updates it)."""
    from gpusched.devices.mig import MIG_CONFIG_LABEL

    layouts = dict(scenario.mig_layouts)
    docs = []
    for node in scenario.nodes:
        if node.name in layouts:
            doc = node_manifest(node)
            doc["metadata"]["labels"][MIG_CONFIG_LABEL] = layouts[node.name]
            docs.append(doc)
    return docs


def metrics_of(result: ReplayResult, seed: int) -> RunMetrics:
    return RunMetrics(seed, {m.key: float(read(result)) for m, read in METRICS},
                      {key: read(result) for key, (_, read) in SERIES.items()})


Advance = Callable[[float], None]     # progress: this many runs more are done (fractions too)


def _one(item: tuple[str, ReplayTrace, ReplayConfig],
         advance: Advance | None = None) -> tuple[str, RunMetrics]:
    name, trace, config = item
    done = [0.0]

    def step(seconds: float, total: float) -> None:
        fraction = min(1.0, seconds / total) if total > 0 else 0.0
        if advance and fraction > done[0]:
            advance(fraction - done[0])
            done[0] = fraction
    result = replay(trace, config, step if advance else None)
    if advance:
        advance(1.0 - done[0])
    log.info("whatif %s seed %d: %s", name, config.seed, result.summary)
    return name, metrics_of(result, config.seed)


def _pooled(item: tuple[str, ReplayTrace, ReplayConfig]) -> tuple[str, RunMetrics]:
    return _one(item)


def run_variants(trace: ReplayTrace, variants: Sequence[Variant], seeds: Sequence[int],
                 base: ReplayConfig, jobs: int = 1,
                 advance: Advance | None = None) -> dict[str, list[RunMetrics]]:
    """Every (variant, seed) run; variant order kept, runs in seed order."""
    scenario = base_scenario(trace, base.policy)
    scenarios = {v.name: v.apply(scenario) for v in variants}     # all specs apply, or fail now
    items = [(name, *replay_inputs(trace, s, seed, base))
             for name, s in scenarios.items() for seed in seeds]
    results: dict[str, list[RunMetrics]] = {v.name: [] for v in variants}
    if jobs > 1:
        with multiprocessing.get_context("spawn").Pool(min(jobs, len(items))) as pool:
            for name, metrics in pool.imap(_pooled, items):
                results[name].append(metrics)
                if advance:
                    advance(1.0)
    else:
        for item in items:
            name, metrics = _one(item, advance)
            results[name].append(metrics)
    return results
