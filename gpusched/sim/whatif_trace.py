"""The trace ``gpusched whatif`` replays: ``sim.replay_input.alibaba_trace`` (the openb node list
and pod list, read and checked there: arrival = ``creation_time``, run time = ``deletion_time``
minus ``scheduled_time``), with four knobs on top: only the ``first`` N pods by arrival, the trace
``loops`` times back to back, and arrivals divided by ``time_scale``, or by the time scale that makes the peak GPU demand
``load`` times the cluster's GPUs (``sim.replay_load``; run times unchanged).

Why: the openb pod list is a sample of pod specs, not a load trace. Replayed at its own times
it keeps under 1 % of the 6,212 GPUs busy (``fgd-and-alibaba-trace.md`` 2.4), so no variant of
the cluster changes any wait. Dividing the arrival times by a factor is the load the cluster
would see if the same pods came that much faster. The factor is fixed from the trace's own
cluster ("as is"), so every variant replays the same arrivals.

Neighbours: ``sim.replay_input`` (the reader), ``sim.replay_load``, ``sim.replay``; used by
``cli.whatif``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gpusched.errors import UsageError
from gpusched.sim.replay import ReplayTrace
from gpusched.sim.replay_input import alibaba_trace as read_alibaba
from gpusched.sim.replay_load import check_time_scale, looped, scale_for_load, time_scaled


def alibaba_trace(nodes_csv: str | Path, pods_csv: str | Path, time_scale: float = 1.0,
                  first: int | None = None, load: float | None = None,
                  loops: int = 1) -> ReplayTrace:
    """The ReplayTrace of an openb node list (GPU nodes) and pod list; see the module docstring."""
    check_time_scale(time_scale)
    trace = read_alibaba(nodes_csv, pods_csv)
    if not trace.jobs:
        raise UsageError(f"{pods_csv}: no pods")
    if first is not None:
        trace = replace(trace, jobs=trace.jobs[:first])
    trace = looped(trace, loops)
    scale = scale_for_load(trace, load) if load is not None else time_scale
    scaled = time_scaled(replace(trace, source=Path(pods_csv).name), scale)
    notes = [f"first {first} pods"] if first else []
    notes += [f"{loops} loops"] if loops != 1 else []
    notes += [f"arrivals / {scale:g}"] if scale != 1 else []
    notes += [f"peak load {load:g}"] if load is not None else []
    return replace(scaled, source=Path(pods_csv).name + (f" ({', '.join(notes)})" if notes else ""))
