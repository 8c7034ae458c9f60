"""The FGD experiment protocol (sections 3.1, 3.2, 3.7 of ``fgd-and-alibaba-trace.md``).

One run = (pod list, policy, seed, tune):

1. the GPU nodes of the node list become a ``Snapshot`` (``NodeInfo`` + ``NodeDevices``);
2. the untuned pod list gives the target workload; the list is shuffled and tuned with the seed
   (``sim.workload``);
3. pods are submitted one by one to the real ``scheduler.runner.Scheduler`` running the
   experiment profile (``sim.experiment_profile``: the policy score plugin + NodeOrder ties):
   ``schedule_one`` assumes a placed pod into the snapshot; failures are dropped, nothing
   departs, nothing is preempted;
4. after every pod: arrived milli (failed pods included), allocated milli, fragmentation amount
   and idle milli; ``discretise`` samples them at arrived = 0..130 % like the reference's merge
   script (mean over the events whose rounded arrived % equals the point, else over +-1).

Neighbours: ``sim.alibaba``, ``sim.workload``, ``sim.fragmentation``,
``sim.experiment_profile``; used by
``sim.report`` / ``sim.commands``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpusched.devices.catalog import lookup_model
from gpusched.devices.node import NodeDevices
from gpusched.errors import UsageError
from gpusched.policies import (bestfit, dotprod, fgd, fgd_fill, gpuclustering, gpupacking,
                               random, saturated_first)
from gpusched.policies.common import node_arrays
from gpusched.policies.fragmentation import TargetShape
from gpusched.scheduler.framework import ScheduleResult
from gpusched.scheduler.runner import Scheduler
from gpusched.scheduler.snapshot import Snapshot
from gpusched.sim.alibaba import (TraceNode, TracePod, load_nodes, load_pods, node_info, pod_info,
                                  workload_name)
from gpusched.sim.experiment_profile import experiment_scheduler
from gpusched.sim.fragmentation import ClusterFragmentation
from gpusched.sim.workload import target_workload, tuned_sequence

log = logging.getLogger(__name__)

POINTS = 131                     # arrived-% points 0..130
PROGRESS_BATCH = 250             # pods between two progress reports of a run
SATURATED_FIRST_WEIGHT = 1_250   # > NodeOrder's range (1..1213), x 7 < the policy's 10_000
# CLI name -> (published sc_policy label, score plugin name in the registry)
POLICIES = {
    "random": ("01-Random", random.NAME),
    "dotprod": ("02-DotProd", dotprod.NAME),
    "clustering": ("03-GpuClustering", gpuclustering.NAME),
    "packing": ("04-GpuPacking", gpupacking.NAME),
    "bestfit": ("05-BestFit", bestfit.NAME),
    "fgd": ("06-FGD", fgd.NAME),
    "fgdsat": ("08-FGD-SaturatedFirst", fgd.NAME),
    "fgdfill": ("09-FGD-Fill", fgd_fill.NAME),
}
# CLI name -> extra args for the policy plugin (none since the score-resolution variants, which
# did not beat FGD, left the code: docs/fgd-results.md keeps their results)
POLICY_ARGS: dict[str, dict[str, int]] = {}
# CLI name -> tie-break score plugins (name, weight) between the policy and NodeOrder
TIE_BREAKS: dict[str, tuple[tuple[str, int], ...]] = {
    "fgdsat": ((saturated_first.NAME, SATURATED_FIRST_WEIGHT),),
}


@dataclass(frozen=True)
class RunSpec:
    nodes_csv: str
    pods_csv: str
    policy: str
    seed: int
    tune: float = 1.3


@dataclass(frozen=True)
class RunResult:
    workload: str
    policy: str                  # published label, e.g. "06-FGD"
    tune: float
    seed: int
    total_gpus: int
    allocation: tuple[float, ...]            # % at arrived 0..130 (nan where no event)
    fragmentation: tuple[float, ...]         # % of all GPUs
    fragmentation_ratio: tuple[float, ...]   # % of idle GPUs
    pods: int = 0
    failed: int = 0


@functools.lru_cache(maxsize=4)
def _nodes(path: str) -> tuple[TraceNode, ...]:
    nodes = tuple(load_nodes(path, gpu_only=True))
    if not nodes:
        raise UsageError(f"{path}: no GPU nodes")
    return nodes


@functools.lru_cache(maxsize=4)
def _pods(path: str) -> tuple[TracePod, ...]:
    pods = tuple(load_pods(path))
    if not pods:                        # the workload's sampling needs at least one (was numpy's "high <= 0")
        raise UsageError(f"{path}: no pods (a header only)")
    return pods


def build_snapshot(nodes: Iterable[TraceNode]) -> Snapshot:
    snapshot = Snapshot()
    for node in nodes:
        devices = NodeDevices.build(node.name, lookup_model(node.model), node.gpus) if node.gpus else None
        snapshot.add_node(node_info(node), devices)
    return snapshot


def policy_label(policy: str) -> str:
    if policy not in POLICIES:
        raise UsageError(f'unknown policy "{policy}" (one of {", ".join(POLICIES)})')
    return POLICIES[policy][0]


# called after every submitted pod with (pod index, the cycle's result, fragmentation amount)
Observer = Callable[[int, ScheduleResult, float], None]


def run(spec: RunSpec, observe: Observer | None = None, limit: int | None = None,
        progress: Callable[[int, int], None] | None = None) -> RunResult:
    """One run of the protocol; deterministic for a given spec. ``observe`` sees every pod's
    decision (tests); ``limit`` stops after that many pods (a prefix of the run); ``progress``
    gets ``(pods done, pods in the run)`` every ``PROGRESS_BATCH`` pods and once at the end."""
    label = policy_label(spec.policy)
    nodes, pods = _nodes(spec.nodes_csv), list(_pods(spec.pods_csv))
    if not nodes:
        raise UsageError(f"{spec.nodes_csv}: no GPU nodes")
    snapshot = build_snapshot(nodes)
    capacity = sum(n.gpus for n in nodes) * 1000
    shapes = target_workload(pods)
    args = {"seed": spec.seed, "target_workload": shapes, **POLICY_ARGS.get(spec.policy, {})}
    scheduler = experiment_scheduler(snapshot, POLICIES[spec.policy][1], args,
                                     TIE_BREAKS.get(spec.policy, ()))
    metric = Metric(scheduler, snapshot, shapes)
    frag = metric.frag
    sequence = tuned_sequence(pods, spec.seed, spec.tune, capacity)[:limit]
    arrived = np.zeros(len(sequence), dtype=np.int64)
    used = np.zeros(len(sequence), dtype=np.int64)
    amount = np.zeros(len(sequence))
    idle = np.zeros(len(sequence))
    arrived_milli = used_milli = failed = 0
    frag_now = frag.amount, frag.idle             # changes only when a pod is placed
    for i, (pod, name) in enumerate(sequence):
        arrived_milli += pod.total_gpu_milli
        result = scheduler.schedule_one(pod_info(pod, i, name))
        if result.scheduled:
            used_milli += pod.total_gpu_milli
            metric.observe()
            frag_now = frag.amount, frag.idle
        else:
            failed += 1
        arrived[i], used[i], (amount[i], idle[i]) = arrived_milli, used_milli, frag_now
        if observe is not None:
            observe(i, result, float(amount[i]))
        if progress is not None and (i + 1) % PROGRESS_BATCH == 0 and i + 1 < len(sequence):
            progress(i + 1, len(sequence))
    if progress is not None:
        progress(len(sequence), len(sequence))          # exactly one final report per run
    log.info("%s %s seed %d: %d pods, %d failed", workload_name(spec.pods_csv), label, spec.seed,
             len(sequence), failed)
    return RunResult(workload_name(spec.pods_csv), label, spec.tune, spec.seed, capacity // 1000,
                     *discretise(arrived, used, amount, idle, capacity), pods=len(sequence), failed=failed)


class Metric:
    """The cluster fragmentation after every placement: the FGD policy's own per-node sums when
    the profile runs FGD with the run's target workload (the same numbers, computed once),
    else a ``ClusterFragmentation`` that recomputes the rows the snapshot journal names."""

    def __init__(self, scheduler: Scheduler, snapshot: Snapshot, shapes: list[TargetShape]) -> None:
        self.snapshot = snapshot
        plugins = next(iter(scheduler.frameworks.values())).plugins
        policy = plugins.get(fgd.NAME)
        self.policy = policy if isinstance(policy, fgd.PolicyFGD) and policy.shapes == shapes else None
        arrays = node_arrays(snapshot)
        shared = self.policy.fragmentation_state(snapshot) if self.policy is not None else None
        self.frag = ClusterFragmentation(shapes, arrays.model_names, arrays.model_id, shared)
        if shared is None:
            self.frag.observe(arrays.gpu_left, arrays.cpu_free)
        self.cpu_col = snapshot.resources["cpu"]
        self.mark = snapshot.journal_mark()

    def observe(self) -> None:
        if self.policy is not None:
            self.policy.fragmentation_state(self.snapshot)
            return
        # the snapshot's own views: only the touched rows are read (no per-pod copy)
        snapshot = self.snapshot
        self.frag.observe(snapshot.gpu_free_milli, snapshot.free[:, self.cpu_col],
                          snapshot.rows_touched_since(self.mark))
        self.mark = snapshot.journal_mark()


def decision_lines(spec: RunSpec, limit: int | None = None) -> list[str]:
    """A run as text, for byte-for-byte comparisons: one line per pod (``index node gpus milli
    fragmentation-amount``, the float's ``repr``) and one per discretised curve."""
    lines: list[str] = []

    def observe(i: int, result: ScheduleResult, amount: float) -> None:
        gpus = ",".join(str(g) for g in result.assignment.gpu_indices)
        lines.append(f"{i} {result.node or '-'} {gpus or '-'} {result.assignment.milli} {amount!r}")

    result = run(spec, observe, limit)
    for field in ("allocation", "fragmentation", "fragmentation_ratio"):
        lines.append(f"{field} " + " ".join(repr(v) for v in getattr(result, field)))
    return lines


def discretise(arrived: np.ndarray, used: np.ndarray, amount: np.ndarray, idle: np.ndarray,
               capacity: int) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
    """Sample per-event series at arrived = 0..130 % (the reference's merge rule).

    Each event's arrived % is rounded to an integer (half to even, as Python's ``round``), its
    values to 2 decimals; a point's value is the mean over the events at that point, or over the
    events within +-1 when none is exactly there, rounded to 2 decimals; nan if none.
    """
    point = np.round(arrived / capacity * 100.0)
    series = [np.round(used / capacity * 100.0, 2), np.round(amount / capacity * 100.0, 2),
              np.round(np.divide(amount, idle, out=np.zeros_like(amount), where=idle > 0) * 100.0, 2)]
    out: list[list[float]] = [[], [], []]
    for x in range(POINTS):
        hit = point == x
        if not hit.any():
            hit = (point >= x - 1) & (point <= x + 1)
        for k, values in enumerate(series):
            out[k].append(round(float(values[hit].mean()), 2) if hit.any() else float("nan"))
    return tuple(out[0]), tuple(out[1]), tuple(out[2])


MAX_SEEDS = 10_000                  # the most seeds one --seeds (or a sweep's seeds) names


def parse_seeds(text: str) -> list[int]:
    """``"42-51"`` -> 42..51, ``"42,45"`` -> [42, 45]."""
    seeds: list[int] = []
    try:
        for part in text.split(","):
            low, _, high = part.strip().partition("-")
            span = range(int(low), int(high or low) + 1)
            if len(seeds) + len(span) > MAX_SEEDS:      # before the list is built: 1-99999999999
                raise UsageError(f'invalid --seeds "{text}": at most {MAX_SEEDS:,} seeds')
            seeds.extend(span)
    except ValueError:
        raise UsageError(f'invalid --seeds "{text}": use a range like 42-51 or a list like 42,43') from None
    if not seeds:
        raise UsageError(f'invalid --seeds "{text}": no seed')
    return seeds


def parse_policies(text: str) -> list[str]:
    names = [p.strip() for p in text.split(",") if p.strip()]
    for name in names:
        policy_label(name)
    return names


def check_inputs(nodes_csv: str, pods_csv: str) -> None:
    for path in (nodes_csv, pods_csv):
        if not Path(path).is_file():
            raise UsageError(f"{path}: no such file")
