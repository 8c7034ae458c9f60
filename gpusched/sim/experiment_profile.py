"""The FGD experiments' scheduling profile, run by the real ``scheduler.runner.Scheduler``.

The reference simulator (section 3.4 of ``fgd-and-alibaba-trace.md``) is kube-scheduler with the
default filters plus a GPU filter, one policy score plugin with weight 1000, every default score
plugin disabled, ``percentageOfNodesToScore: 100`` and no preemption. The same, written as a
gpusched KubeSchedulerConfiguration profile (``experiment_config``):

- PreFilter/Filter: ``NodeResourcesFit`` (cpu, memory, ``nvidia.com/gpu`` count) and
  ``GpuDevices`` (GPU model constraint, per-GPU free milli); every other default plugin off.
- Score: the policy plugin with weight ``POLICY_WEIGHT`` (10_000) and ``NodeOrder`` with weight 1.
  NodeOrder scores 1..N (N = 1213 nodes < 10_000) and has no NormalizeScore, so one point of
  policy score outweighs the whole NodeOrder range: the per-seed node order only breaks the
  policy's ties, like the reference's randomly prefixed node names (section 3.6). Because the
  NodeOrder scores are distinct, the runner's own random tie-break never fires.
- Reserve: ``GpuDevices`` (binds the GPUs a policy wrote under ``"gpu-selection"``, else the
  lowest-index fitting ones), then the policy when it keeps per-node bookkeeping
  (GpuClustering's tag counts).
- no PostFilter (a pod that fits nowhere is dropped by the protocol).

Neighbours: ``scheduler.profile`` (``resolve_profile``), ``scheduler.runner``; used by
``sim.experiment``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched import policies
from gpusched.policies import node_order
from gpusched.policies.common import POLICY_WEIGHT
from gpusched.scheduler.plugins import IN_TREE, gpu_devices, merged, node_resources_fit
from gpusched.scheduler.profile import DEFAULT_SCHEDULER_NAME, ProfileConfig, resolve_profile
from gpusched.scheduler.runner import Scheduler
from gpusched.scheduler.snapshot import Snapshot

FILTERS = (node_resources_fit.NAME, gpu_devices.NAME)
# kube-scheduler's in-tree plugins and the policies, fed to the profile from above (the scheduler
# layer does not import ``policies``)
REGISTRY = merged(IN_TREE, policies.REGISTRY)
ALL = [{"name": "*"}]


def experiment_config(policy: str, args: dict[str, Any],
                      tie_breaks: tuple[tuple[str, int], ...] = ()) -> dict[str, Any]:
    """The profile as a KubeSchedulerConfiguration ``profiles[]`` entry for ``policy`` (a plugin
    name in the registry); ``args`` (seed, target workload) go to the policy and NodeOrder.
    ``tie_breaks``: extra ``(score plugin, weight)`` between the policy and NodeOrder (their
    weight x max score must stay below ``POLICY_WEIGHT``)."""
    reserve = [{"name": gpu_devices.NAME}]
    if "reserve" in REGISTRY[policy].points:
        reserve.append({"name": policy})
    filters = [{"name": name} for name in FILTERS]
    return {
        "schedulerName": DEFAULT_SCHEDULER_NAME,
        "percentageOfNodesToScore": 100,
        "plugins": {
            "multiPoint": {"disabled": ALL},
            "preFilter": {"enabled": filters},
            "filter": {"enabled": filters},
            "score": {"enabled": [{"name": policy, "weight": POLICY_WEIGHT},
                                  *({"name": n, "weight": w} for n, w in tie_breaks),
                                  {"name": node_order.NAME, "weight": 1}]},
            "reserve": {"enabled": reserve},
        },
        "pluginConfig": [{"name": policy, "args": dict(args)},
                         {"name": node_order.NAME, "args": {"seed": args.get("seed", 0)}}],
    }


def experiment_profile(policy: str, args: dict[str, Any],
                       tie_breaks: tuple[tuple[str, int], ...] = ()) -> ProfileConfig:
    return resolve_profile(experiment_config(policy, args, tie_breaks), 0, 100, REGISTRY)


def experiment_scheduler(snapshot: Snapshot, policy: str, args: dict[str, Any],
                         tie_breaks: tuple[tuple[str, int], ...] = ()) -> Scheduler:
    """A ``Scheduler`` over ``snapshot`` running only the experiment profile; its ``rng`` (seeded
    with the run's seed) is never drawn from, as NodeOrder leaves no ties."""
    seed = int(args.get("seed", 0))
    return Scheduler(snapshot, [experiment_profile(policy, args, tie_breaks)],
                     rng=np.random.default_rng(seed))
