"""The trace ``gpusched whatif`` replays: ``sim.replay_input.alibaba_trace`` (the openb node list
and pod list, read and checked there: arrival = ``creation_time``, run time = ``deletion_time``
minus ``scheduled_time``), with two knobs on top: arrivals divided by ``time_scale`` (run times
unchanged) and only the ``first`` N pods by arrival.

Why ``time_scale``: the openb pod list is a sample of pod specs, not a load trace. Replayed at
its own times it keeps under 1 % of the 6,212 GPUs busy (``fgd-and-alibaba-trace.md`` 2.4), so
no variant of the cluster changes any wait. Dividing the arrival times by a factor is the load
the cluster would see if the same pods came that much faster.

Neighbours: ``sim.replay_input`` (the reader), ``sim.replay``; used by ``cli.whatif``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gpusched.errors import UsageError
from gpusched.sim.replay import ReplayTrace
from gpusched.sim.replay_input import alibaba_trace as read_alibaba


def alibaba_trace(nodes_csv: str | Path, pods_csv: str | Path, time_scale: float = 1.0,
                  first: int | None = None) -> ReplayTrace:
    """The ReplayTrace of an openb node list (GPU nodes) and pod list; see the module docstring."""
    if not 0 < time_scale <= 1e6:
        raise UsageError(f"invalid --time-scale {time_scale:g}: must be in (0, 1e6]")
    trace = read_alibaba(nodes_csv, pods_csv)
    if not trace.jobs:
        raise UsageError(f"{pods_csv}: no pods")
    jobs = trace.jobs[:first] if first is not None else trace.jobs
    scaled = tuple(replace(j, arrival=j.arrival / time_scale) for j in jobs)
    source = Path(pods_csv).name + (f" (arrivals / {time_scale:g})" if time_scale != 1 else "")
    return replace(trace, jobs=scaled, source=source + (f", first {first} pods" if first else ""))
