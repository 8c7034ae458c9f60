"""DefaultPreemption: the PostFilter plugin that evicts lower-priority pods to make room.

The algorithm lives in ``scheduler.preemption`` (eligibility, dry run, reprieve, six
tie-breaks); this module adapts it to the framework:

- the runner puts itself and the profile's ``Framework`` in the cycle state (keys ``scheduler``
  and ``framework``) before PostFilter (other callers may put a ``preemption.FrameworkHandle``
  under ``preemption.HANDLE_KEY`` instead); the plugin re-runs that profile's PreFilter and
  Filter plugins on what-if snapshots and draws the dry-run offset from the scheduler's
  generator;
- PodDisruptionBudgets: plugin args ``{"pdbs": [PdbInfo, ...]}`` or ``set_pdbs(...)`` on the
  profile's instance (the embedded cluster calls it when PDBs or their status change);
- the instance keeps the dry run's per-node outcomes between cycles (``preemption_cache``).

Returns ``PostFilterResult(SUCCESS, nominated_node, victims)`` or a status whose reason is the
``preemption: ...`` message.

Neighbours: ``scheduler.preemption``; registered in ``plugins/__init__``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

from gpusched.objects.types import PodInfo
from gpusched.scheduler import preemption
from gpusched.scheduler.framework import Code, CycleState, Diagnosis, PostFilterResult, Status
from gpusched.scheduler.preemption import PdbInfo
from gpusched.scheduler.preemption_cache import VictimsCache

if TYPE_CHECKING:
    from gpusched.scheduler.snapshot import Snapshot

NAME = "DefaultPreemption"
# The keys under which ``runner.Scheduler`` puts itself and the profile's Framework before
# PostFilter (``runner.SCHEDULER_KEY`` / ``FRAMEWORK_KEY``; not imported: the runner imports
# the plugin registry, which imports this module).
RUNNER_SCHEDULER_KEY = "scheduler"
RUNNER_FRAMEWORK_KEY = "framework"


class DefaultPreemption:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        self.pdbs: tuple[PdbInfo, ...] = ()
        self.victims = VictimsCache()      # per-node dry-run outcomes kept between cycles
        self.set_pdbs((args or {}).get("pdbs", ()))

    def set_pdbs(self, pdbs: Iterable[PdbInfo]) -> None:
        """Replace the PodDisruptionBudgets preemption tries not to violate."""
        self.pdbs = tuple(pdbs)

    def post_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, diagnosis: Diagnosis) -> PostFilterResult:
        handle = state.read(preemption.HANDLE_KEY)
        if handle is None and state.read(RUNNER_FRAMEWORK_KEY) is not None:
            scheduler = state.read(RUNNER_SCHEDULER_KEY)
            handle = preemption.FrameworkHandle(state.read(RUNNER_FRAMEWORK_KEY), getattr(scheduler, "rng", None))
        if handle is None:
            return PostFilterResult(Status(Code.ERROR, (f"{NAME}: the runner put no FrameworkHandle in the cycle state",)))
        fits = preemption.framework_fit_check(handle.framework, snapshot)
        return preemption.preempt(snapshot, pod, diagnosis, fits, self.pdbs, handle.rng, self.victims)


def new(args: Mapping[str, Any] | None = None) -> DefaultPreemption:
    return DefaultPreemption(args)
