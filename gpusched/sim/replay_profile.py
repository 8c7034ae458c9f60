"""The scheduler profile a replay runs: the default one, or an FGD-study policy as a full profile.

``policy="default"``: the embedded cluster's default profile (kube-scheduler's defaults, as for
every other command). Any other name is a policy of ``sim.experiment.POLICIES`` (fgd, bestfit,
packing, clustering, dotprod, random and the FGD variants), run as the FGD study's scoring on
top of the *default* filters, queue sort and DefaultPreemption (unlike the fill-only
experiment, a replay has priorities and preemption): every default score plugin is disabled at
``score``; the policy scores with weight ``POLICY_WEIGHT`` and the per-seed ``NodeOrder`` breaks
its ties (``sim.experiment_profile``); Reserve adds the policy after GpuDevices when it keeps
per-node bookkeeping. The policy's target workload is the trace's own shapes
(``sim.workload.target_workload``).

Neighbours: ``sim.experiment`` / ``sim.experiment_profile`` (policies, args),
``scheduler.profile.resolve_profile``; used by ``sim.replay``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpusched.errors import UsageError
from gpusched.scheduler.profile import ProfileConfig, resolve_profile
from gpusched.sim.alibaba import TracePod

if TYPE_CHECKING:
    from gpusched.sim.replay import ReplayJob, ReplayTrace

DEFAULT_POLICY = "default"


def policy_names() -> list[str]:
    from gpusched.sim.experiment import POLICIES
    return [DEFAULT_POLICY, *POLICIES]


def trace_pods(jobs: "tuple[ReplayJob, ...]") -> list[TracePod]:
    """The jobs as FGD's pod records (for the target workload)."""
    return [TracePod(j.name, j.cpu_milli, j.memory, j.num_gpu, j.gpu_milli, "|".join(j.gpu_models))
            for j in jobs]


def replay_profiles(trace: "ReplayTrace", policy: str, seed: int) -> list[ProfileConfig] | None:
    """The profiles for ``policy`` (None: the default profile); see the module docstring."""
    from gpusched.sim.experiment import POLICIES, POLICY_ARGS, TIE_BREAKS
    from gpusched.sim.experiment_profile import REGISTRY, experiment_config
    from gpusched.sim.workload import target_workload
    if policy == DEFAULT_POLICY:
        return None
    if policy not in POLICIES:
        raise UsageError(f'unknown policy "{policy}" (one of {", ".join(policy_names())})')
    plugin = POLICIES[policy][1]
    args = {"seed": seed, "target_workload": target_workload(trace_pods(trace.jobs)),
            **POLICY_ARGS.get(policy, {})}
    config: dict[str, Any] = experiment_config(plugin, args, TIE_BREAKS.get(policy, ()))
    plugins = config["plugins"]
    del plugins["multiPoint"], plugins["preFilter"], plugins["filter"]   # the defaults stay
    plugins["score"]["disabled"] = [{"name": "*"}]
    plugins["reserve"]["enabled"] = [e for e in plugins["reserve"]["enabled"]
                                     if e["name"] == plugin]
    return [resolve_profile(config, 0, 100, REGISTRY)]
