"""How hard a replay loads the cluster: ``--time-scale K`` and ``--load X`` of replay and whatif.

- :func:`looped`: the trace ``N`` times back to back (loop i arrives ``i x`` the trace's span
  later, its pods named ``NAME-loop<i>``), for more work than the trace holds: the openb pods
  ask for 98 % of their cluster's GPUs, so no compression alone loads it past that.
- :func:`time_scaled`: arrivals divided by ``K`` (``creation_time / K``), run times unchanged,
  so about K times as many pods run at once. ``K = 1`` returns the trace itself.
- :func:`peak_demand`: the most GPUs the trace's pods would hold at one instant on a cluster
  with no limit (every pod starts when it arrives and holds ``num_gpu x gpu_milli`` until its
  run time is over; a pod without a run time holds its GPUs to the end). This is the offered
  load at its peak: a real cluster can only be busier than this if pods wait, and pods wait
  when this comes near the GPU capacity.
- :func:`scale_for_load`: the ``K`` (1 .. ``MAX_TIME_SCALE``) whose peak demand is ``X`` times
  the cluster's GPUs (bisection on log K, to 0.1 %), or a one-line error naming the most the
  trace can offer at all (its pods' total GPU request, when they all overlap).

Why compression and not a denser synthetic workload: the pods, their shapes, QoS classes and
run times stay the trace's own; only the arrival rate changes, which is the question "what if
the same work came K times faster". ``docs/capacity-planning.md`` shows what that does to the
openb trace, whose pods add up to 98 % of its cluster's GPUs.

Neighbours: ``sim.replay`` (``ReplayTrace``); used by ``cli.replay`` and ``cli.whatif``.
"""

from __future__ import annotations

import copy
import math
from dataclasses import replace

from gpusched.errors import UsageError
from gpusched.sim.replay import ReplayJob, ReplayTrace

MAX_TIME_SCALE = 1e6
MAX_LOOPS = 100
MAX_JOBS = 1_000_000
FOREVER = math.inf


def check_time_scale(k: float, flag: str = "--time-scale") -> float:
    """``k`` if it is a number in [1e-6, 1e6]; else a one-line error."""
    if not (math.isfinite(k) and 1 / MAX_TIME_SCALE <= k <= MAX_TIME_SCALE):
        raise UsageError(f"invalid {flag} {k:g}: must be a number from 1e-06 to 1e+06 "
                         "(arrival times are divided by it)")
    return k


def time_scaled(trace: ReplayTrace, k: float) -> ReplayTrace:
    """The trace with every arrival divided by ``k``; run times, order and everything else kept."""
    check_time_scale(k)
    if k == 1:
        return trace
    jobs = tuple(replace(j, arrival=j.arrival / k) for j in trace.jobs)
    return replace(trace, jobs=jobs, source=f"{trace.source} (arrivals / {k:g})")


def looped(trace: ReplayTrace, loops: int) -> ReplayTrace:
    """The trace ``loops`` times back to back; see the module docstring. ``loops = 1``: itself."""
    if not 1 <= loops <= MAX_LOOPS:
        raise UsageError(f"invalid --loops {loops}: must be 1 to {MAX_LOOPS}")
    if loops == 1 or not trace.jobs:
        return trace
    if loops * len(trace.jobs) > MAX_JOBS:
        raise UsageError(f"invalid --loops {loops}: {loops} x {len(trace.jobs):,} pods is more "
                         f"than {MAX_JOBS:,}")
    span = max(j.arrival for j in trace.jobs) - min(j.arrival for j in trace.jobs)
    jobs = tuple(_renamed(j, i, span) if i else j for i in range(loops) for j in trace.jobs)
    return replace(trace, jobs=jobs, source=f"{trace.source} (x{loops} loops)")


def _renamed(job: ReplayJob, loop: int, span: float) -> ReplayJob:
    """Loop ``loop``'s copy of ``job``: ``-loop<i>`` on its name (and its manifest's)."""
    name = f"{job.name}-loop{loop}"
    manifest = job.manifest
    if manifest is not None:
        manifest = copy.deepcopy(manifest)
        manifest.setdefault("metadata", {})["name"] = f"{manifest['metadata'].get('name', job.name)}-loop{loop}"
    return replace(job, name=name, arrival=job.arrival + loop * span, manifest=manifest)


def capacity_gpus(trace: ReplayTrace) -> float:
    return float(sum(n.gpus for n in trace.nodes))


def peak_demand(trace: ReplayTrace, k: float = 1.0) -> float:
    """GPUs held at the busiest instant with arrivals / ``k`` on an unlimited cluster.

    A pod ending at the instant another starts has left (ends sort before starts)."""
    events: list[tuple[float, int, float]] = []
    for job in trace.jobs:
        gpus = job.gpus
        if gpus <= 0:
            continue
        start = job.arrival / k
        end = start + job.run_time if job.run_time is not None else FOREVER
        events += [(start, 1, gpus), (end, 0, -gpus)]
    events.sort()
    held = peak = 0.0
    for _, _, delta in events:
        held += delta
        peak = max(peak, held)
    return peak


def scale_for_load(trace: ReplayTrace, load: float) -> float:
    """The time scale whose peak demand is ``load`` x the cluster's GPUs; see the docstring."""
    capacity = capacity_gpus(trace)
    if not (math.isfinite(load) and 0 < load <= 10) or capacity <= 0:
        raise UsageError(f"invalid --load {load:g}: must be a fraction of the cluster's GPUs "
                         "in (0, 10], e.g. 0.95")
    target = load * capacity
    if peak_demand(trace, 1.0) >= target:
        return 1.0
    most = peak_demand(trace, MAX_TIME_SCALE)
    if most < target:
        raise UsageError(f"invalid --load {load:g}: {trace.source} can offer at most "
                         f"{most / capacity:.3f} of the cluster's {capacity:,.0f} GPUs "
                         f"(its pods ask for {sum(j.gpus for j in trace.jobs):,.1f} GPUs in all)")
    low, high = 0.0, math.log(MAX_TIME_SCALE)       # log K: peak(low) < target <= peak(high)
    while high - low > 1e-3:
        middle = (low + high) / 2
        if peak_demand(trace, math.exp(middle)) >= target:
            high = middle
        else:
            low = middle
    return _round_up(math.exp(high))


def _round_up(value: float, digits: int = 4) -> float:
    """``value`` rounded up to ``digits`` significant digits (12_345.6 -> 12_350.0)."""
    step = 10.0 ** (math.floor(math.log10(value)) - digits + 1)
    return float(f"{math.ceil(value / step - 1e-9) * step:.{digits}g}")
