"""Fragmentation of the replayed cluster, read from the scheduler's own snapshot.

``FragmentationProbe(trace).amount(view)``: FGD's fragmentation amount (sum over nodes of
F_n(M), milli-GPU; section 3.3 of ``fgd-and-alibaba-trace.md``) with the trace's job shapes as
the target workload M, computed on ``cluster.scheduling.cache.cached_snapshot`` - the snapshot the
embedded scheduler schedules on - and updated only for the nodes whose free CPU or GPUs changed
(``sim.fragmentation.ClusterFragmentation``).

Neighbours: ``sim.replay_record`` (samples), ``sim.fragmentation``, ``sim.workload``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpusched.cluster.scheduling.cache import cached_snapshot
from gpusched.cluster.apiserver.view import View
from gpusched.policies.common import node_arrays
from gpusched.sim.fragmentation import ClusterFragmentation

if TYPE_CHECKING:
    from gpusched.sim.replay import ReplayTrace


class FragmentationProbe:
    """See the module docstring; 0 when the trace has no GPU jobs."""

    def __init__(self, trace: "ReplayTrace") -> None:
        from gpusched.sim.replay_profile import trace_pods
        from gpusched.sim.workload import target_workload
        pods = trace_pods(tuple(j for j in trace.jobs if j.manifest is None))
        self.shapes = target_workload(pods) if pods else []
        self.frag: ClusterFragmentation | None = None
        self.generation: object = None
        self.mark: tuple[int, int] | None = None

    def amount(self, view: View) -> float:
        if not self.shapes:
            return 0.0
        snapshot, _order = cached_snapshot(view)
        arrays = node_arrays(snapshot)
        rows = snapshot.rows_touched_since(self.mark)
        if self.frag is None or self.generation is not snapshot:
            self.frag = ClusterFragmentation(self.shapes, arrays.model_names, arrays.model_id)
            self.generation, rows = snapshot, None
        self.frag.observe(arrays.gpu_left, arrays.cpu_free, rows)   # only the nodes that changed
        self.mark = snapshot.journal_mark()
        return self.frag.amount
