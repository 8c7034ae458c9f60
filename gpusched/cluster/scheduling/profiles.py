"""Which profiles the embedded scheduler runs, for which pods, and the Scheduler of one pass.

- the served scheduler names: ``default-scheduler`` and gpusched's named GPU-scoring profiles
  (``scheduler.profile.GPUSCHED_PROFILES``: ``gpusched-binpack`` / ``gpusched-spread``), plus
  the profiles an in-process caller configured (:func:`use_profiles`, as ``--config``);
- :func:`pending_pods` (queue order; the queue-order modes and the autoscaler list them),
  :func:`is_gated` (``spec.schedulingGates``);
- :func:`make_scheduler`: the profiles over a snapshot, with the PodDisruptionBudgets and
  claims their plugins read and the nominated pods registered; :func:`kept_frameworks`: the
  plugin instances kept between passes.

Neighbours: ``scheduler.profile``/``scheduler.runner``, ``cluster.scheduling.host``,
``cluster.scheduling.backfill``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpusched.cluster.controllers.storage import volumes
from gpusched.cluster.scheduling import dra
from gpusched.cluster.scheduling.cache import creation_key
from gpusched.cluster.apiserver.view import ObjectSource, View
from gpusched.objects.pod import pod_info
from gpusched.objects.selectors import selector_from_dict

if TYPE_CHECKING:
    from gpusched.scheduler.runner import Scheduler
    from gpusched.scheduler.snapshot import Snapshot

SCHEDULER_NAME = "default-scheduler"
# The embedded scheduler serves the default profile and gpusched's named GPU-scoring profiles
# (scheduler.profile.GPUSCHED_PROFILES: spec.schedulerName gpusched-binpack / gpusched-spread).
# scheduler-plugins-scheduler: the default profile with Coscheduling (profile.COSCHEDULING_PROFILE).
SERVED_NAMES = (SCHEDULER_NAME, "gpusched-binpack", "gpusched-spread", "scheduler-plugins-scheduler")


def make_scheduler(snapshot: Snapshot, view: View, order: dict[str, int] | None = None,
                   frameworks: dict[str, Any] | None = None,
                   nominated: list[dict[str, Any]] | None = None) -> Scheduler:
    """The default profile(s) over ``snapshot``, seeded from (seed, resourceVersion), with the
    PodDisruptionBudgets handed to DefaultPreemption. With ``order`` (from ``build_snapshot``),
    pending pods that carry ``status.nominatedNodeName`` are registered as nominated, so they
    count on that node for pods of equal or lower priority, as upstream's nominator does.
    ``frameworks``: the plugin instances to run (kept between passes by ``schedule_pending``);
    None builds them from the profiles. ``nominated``: the pending pods that carry a nomination,
    in queue order, when the caller keeps them (the scheduling queue's host); None lists them."""
    from gpusched.scheduler.preemption import PdbInfo
    from gpusched.scheduler.runner import Scheduler
    profiles: Any = frameworks if frameworks is not None else configured_profiles(view)
    scheduler = Scheduler(snapshot, profiles, clock=view.now, rng_seed=[view.seed, view.rv])
    pdbs = [PdbInfo(pdb["metadata"]["namespace"],
                    selector_from_dict((pdb.get("spec") or {}).get("selector") or {}),
                    int((pdb.get("status") or {}).get("disruptionsAllowed", 0)),
                    pdb["metadata"]["name"])
            for pdb in view.list("PodDisruptionBudget")]
    claims = volumes.claim_infos(view)
    dra.hand_objects(view, scheduler)
    for framework in scheduler.frameworks.values():
        plugin = framework.plugins.get("DefaultPreemption")
        if plugin is not None and hasattr(plugin, "set_pdbs"):
            plugin.set_pdbs(pdbs)
        binding = framework.plugins.get("VolumeBinding")
        if binding is not None and hasattr(binding, "set_claims"):
            binding.set_claims(claims)
        gangs = framework.plugins.get("Coscheduling")
        if gangs is not None and hasattr(gangs, "set_pod_groups"):
            groups, members, gated = pod_groups(view)
            gangs.set_pod_groups(groups, members, view.now(), gated)
    if order is not None:
        _register_nominated(scheduler, pending_pods(view) if nominated is None else nominated,
                            order, view.memo.setdefault(NOMINATED_MEMO, {}))
    return scheduler


POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


def pod_groups(view: View) -> tuple[dict[tuple[str, str], Any], dict[tuple[str, str], tuple[str, ...]],
                                    dict[tuple[str, str], int]]:
    """Coscheduling's informers: every PodGroup (``PodGroupInfo``), the uids of the pods
    labelled ``scheduling.x-k8s.io/pod-group`` for each (namespace, group), and how many of
    them have scheduling gates."""
    from gpusched.scheduler.plugins.coscheduling import pod_group_info
    groups = {(pg["metadata"]["namespace"], pg["metadata"]["name"]): pod_group_info(pg)
              for pg in view.list("PodGroup")}
    members: dict[tuple[str, str], list[str]] = {}
    gated: dict[tuple[str, str], int] = {}
    if groups:
        for pod in view.list("Pod"):
            name = (pod["metadata"].get("labels") or {}).get(POD_GROUP_LABEL)
            if name:
                key = (pod["metadata"]["namespace"], name)
                members.setdefault(key, []).append(pod["metadata"]["uid"])
                if is_gated(pod):
                    gated[key] = gated.get(key, 0) + 1
    return groups, {key: tuple(uids) for key, uids in members.items()}, gated


NOMINATED_MEMO = "scheduler-nominated-infos"


def _register_nominated(scheduler: Scheduler, pods: list[dict[str, Any]],
                        order: dict[str, int], kept: dict[str, tuple[Any, ...]]) -> None:
    """Pending pods that carry ``status.nominatedNodeName`` count on that node (the nominator).

    Upstream's nominator keeps each nominated pod's PodInfo from the event that nominated it;
    here ``kept`` (uid -> (body, resourceVersion, creation order, PodInfo)) keeps it between
    passes, so a pass under overload, with many nominated pods waiting for their victims to
    leave, derives a PodInfo only for a pod whose body changed, not for every nominated pod."""
    fresh: dict[str, tuple[Any, ...]] = {}
    for pod in pods:
        node = (pod.get("status") or {}).get("nominatedNodeName", "")
        if not node:
            continue
        uid = pod["metadata"]["uid"]
        seq, version = order.get(uid, 0), pod["metadata"].get("resourceVersion")
        entry = kept.get(uid)
        if entry is None or entry[0] is not pod or entry[1] != version or entry[2] != seq:
            entry = (pod, version, seq, pod_info(pod, seq))
        fresh[uid] = entry
        scheduler.set_nominated(entry[3], node)
    kept.clear()
    kept.update(fresh)


PROFILES_MEMO = "scheduler-profiles"


def use_profiles(view: View, profiles: list[Any]) -> None:
    """Run the embedded scheduler with these ``ProfileConfig`` s instead of the default profile,
    as a kube-scheduler started with ``--config``, for this view's life (in-process callers such
    as ``sim.replay``; never stored). gpusched's named profiles are still served."""
    view.memo[PROFILES_MEMO] = {"profiles": list(profiles)}
    view.memo.pop("scheduler-frameworks", None)


def configured_profiles(view: View) -> list[Any] | None:
    """The profiles of :func:`use_profiles`, or None for the default profile."""
    memo = view.memo.get(PROFILES_MEMO)
    return list(memo["profiles"]) if memo else None


def kept_frameworks(view: View, snapshot: Any) -> dict[str, Any]:
    """The profiles' plugin instances for the scheduler's cached snapshot, built once per
    snapshot (upstream's scheduler builds its frameworks once at start-up): plugins that cache
    per-node work between cycles (the FGD policies' scores) keep it between passes."""
    from gpusched.scheduler.profile import build_frameworks
    memo = view.memo.setdefault("scheduler-frameworks", {})
    if memo.get("snapshot") is not snapshot:
        memo["snapshot"] = snapshot
        memo["frameworks"] = build_frameworks(configured_profiles(view))
    frameworks: dict[str, Any] = memo["frameworks"]
    return frameworks


def served_names(view: View) -> tuple[str, ...]:
    """The scheduler names the embedded scheduler serves: the defaults and configured ones."""
    profiles = configured_profiles(view) or []
    return SERVED_NAMES + tuple(p.scheduler_name for p in profiles
                                if p.scheduler_name not in SERVED_NAMES)


def pending_pods(view: ObjectSource, scheduler_names: tuple[str, ...] = SERVED_NAMES) -> list[dict[str, Any]]:
    """Unbound, unfinished pods for these schedulers, in queue order. Pods naming another
    scheduler are left alone, as upstream kube-scheduler leaves them to that scheduler."""
    pods = [p for p in view.unbound_pods()      # an index: no scan of the bound pods
            if ((p.get("spec") or {}).get("schedulerName") or SCHEDULER_NAME) in scheduler_names]
    return sorted(pods, key=lambda p: (-int((p.get("spec") or {}).get("priority") or 0),
                                       creation_key(p)))


def is_gated(pod: dict[str, Any]) -> bool:
    """``spec.schedulingGates`` not empty: the SchedulingGates PreEnqueue plugin keeps the pod out
    of the scheduling queue until every gate is removed (``pkg/scheduler/framework/plugins/
    schedulinggates``); it is never attempted, so it gets no FailedScheduling."""
    return bool((pod.get("spec") or {}).get("schedulingGates"))


# kube-scheduler's buckets: scheduling_attempt_duration_seconds ExponentialBuckets(0.001, 2, 15),