"""Deployment controller, as kube-controller-manager's (pkg/controller/deployment).

One ReplicaSet per pod template, named ``<deployment>-<pod-template-hash>`` and selected with the
``pod-template-hash`` label. What happens on each sync, following upstream:

- **RollingUpdate** (default; ``rolling.go`` rolloutRolling): the new ReplicaSet is scaled up as
  far as ``maxSurge`` allows (``NewRSNewReplicas``), old ones are scaled down as far as
  ``maxUnavailable`` allows (``reconcileOldReplicaSets``: unhealthy replicas first, then oldest
  ReplicaSets first). Both default to 25 %; surge rounds up, unavailable rounds down, and both 0
  becomes unavailable 1 (``ResolveFenceposts``). A surge pod that cannot be scheduled stays
  Pending and counts as unavailable, so old pods keep running until it is available.
- **Recreate** (``recreate.go``): old ReplicaSets go to 0, the new one is created/scaled only
  once no old pod is still running.
- **Scaling** a Deployment whose template did not change (``sync.go`` scale): the one active
  ReplicaSet takes the new count, else it is spread proportionally (``GetProportion``).
- **Revisions**: ``deployment.kubernetes.io/revision`` on the ReplicaSets and the Deployment; a
  template that matches an old ReplicaSet (``rollout undo``) reuses it with the next revision and
  records the old number in ``deployment.kubernetes.io/revision-history``. Deployment annotations
  (``kubernetes.io/change-cause`` among them) are copied to the new ReplicaSet. Old ReplicaSets
  at 0 beyond ``revisionHistoryLimit`` (default 10) are deleted, oldest revision first.
- **Conditions** (``sync.go`` syncRolloutStatus, ``progress.go``): Available
  (MinimumReplicasAvailable / MinimumReplicasUnavailable) and Progressing (NewReplicaSetCreated,
  ReplicaSetUpdated, NewReplicaSetAvailable, ProgressDeadlineExceeded after
  ``progressDeadlineSeconds``, default 600, without progress; DeploymentPaused).

Pods are available as soon as they are Running (readiness probes and ``minReadySeconds`` are not
modelled). ``next_time`` is the next progress deadline.

Neighbours: creates ReplicaSets for ``controllers.workloads.replicaset``; ``deployment_util``
(numbers, owned ReplicaSets), ``deployment_status`` (status and conditions); ``cli.rollout`` reads
the revisions this module writes.
"""

from __future__ import annotations

from typing import Any

import copy
import math

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.controllers.base import WorkQueue, controller, itself
from gpusched.cluster.controllers.common import owned_pods, owner_reference, template_hash
from gpusched.cluster.controllers.workloads.deployment_status import (_complete, _set_progressing,
                                                                      _sync_status)
from gpusched.cluster.controllers.workloads.deployment_util import (ANN_DESIRED, ANN_MAX,
                                                                    ANN_REVISION,
                                                                    ANN_REVISION_HISTORY, COMPONENT,
                                                                    DEFAULT_HISTORY_LIMIT,
                                                                    HASH_LABEL, _SKIP_ANNOTATIONS,
                                                                    _replicas, _rolling,
                                                                    _status_int, canonical,
                                                                    max_surge, max_unavailable,
                                                                    new_rs_new_replicas, revision,
                                                                    split_sets)
from gpusched.cluster.apiserver.view import View
from gpusched.errors import GpuschedError
from gpusched.objects import limits

# ---- the sync ----------------------------------------------------------------------------------

# The informers (``deployment_controller.go`` NewDeploymentController): Deployments,
# ReplicaSets enqueue their Deployment (addReplicaSet ...), and pods the Deployment of their
# ReplicaSet (deletePod, ``getDeploymentForPod``).
QUEUE = WorkQueue("Deployment", (itself("Deployment"), controller("ReplicaSet", "Deployment"),
                                 controller("Pod", "ReplicaSet", "Deployment")))


def reconcile(view: View, changes: Changes | None = None) -> None:
    """Every Deployment, or (``changes``) those its informers enqueue (``QUEUE``)."""
    for deploy in QUEUE.objects(view, changes):
        reconcile_one(view, deploy)


def reconcile_one(view: View, deploy: dict[str, Any]) -> None:
    ns, name = deploy["metadata"]["namespace"], deploy["metadata"]["name"]
    spec = deploy.get("spec") or {}
    new, old = split_sets(view, deploy)
    rollout = not (spec.get("paused") or _is_scaling_event(deploy, new, old))
    if not rollout:
        if new is not None:
            new = _sync_new_set(view, deploy, new, old)
        _scale(view, deploy, new, old)
    elif _rolling(deploy) is not None:
        _rollout_rolling(view, deploy, new, old)
    else:
        _rollout_recreate(view, deploy, new, old)
    deploy = view.get("Deployment", name, ns) or deploy
    new, old = split_sets(view, deploy)
    if spec.get("paused") or _complete(deploy, deploy.get("status") or {}):
        _cleanup(view, deploy, old)
        new, old = split_sets(view, deploy)
    _sync_status(view, deploy, new, old, rollout)


def _is_scaling_event(deploy: dict[str, Any], new: dict[str, Any] | None, old: list[dict[str, Any]]) -> bool:
    """``isScalingEvent``: an active ReplicaSet whose desired-replicas annotation differs."""
    want = str(_replicas(deploy))
    for rs in ([new] if new is not None else []) + old:
        desired = (rs["metadata"].get("annotations") or {}).get(ANN_DESIRED)
        if _replicas(rs) > 0 and desired is not None and desired != want:
            return True
    return False


def _rollout_rolling(view: View, deploy: dict[str, Any], new: dict[str, Any] | None, old: list[dict[str, Any]]) -> None:
    new = _new_set(view, deploy, new, old)
    if new is None:
        return
    if _reconcile_new(view, deploy, new, old):
        return
    _reconcile_old(view, deploy, new, old)


def _reconcile_new(view: View, deploy: dict[str, Any], new: dict[str, Any], old: list[dict[str, Any]]) -> bool:
    """``reconcileNewReplicaSet``; True when it scaled."""
    want, have = _replicas(deploy), _replicas(new)
    if have == want:
        return False
    if have > want:
        return _scale_set(view, deploy, new, want)
    return _scale_set(view, deploy, new, new_rs_new_replicas(deploy, [new, *old], have))


def _reconcile_old(view: View, deploy: dict[str, Any], new: dict[str, Any], old: list[dict[str, Any]]) -> bool:
    """``reconcileOldReplicaSets``: as many old replicas go as ``maxUnavailable`` allows."""
    if sum(_replicas(rs) for rs in old) == 0:
        return False
    all_count = sum(_replicas(rs) for rs in [new, *old])
    min_available = _replicas(deploy) - max_unavailable(deploy)
    new_unavailable = _replicas(new) - _status_int(new, "availableReplicas")
    max_scaled_down = all_count - min_available - new_unavailable
    if max_scaled_down <= 0:
        return False
    cleaned, old = _cleanup_unhealthy(view, deploy, old, max_scaled_down)
    scaled = _scale_down_old(view, deploy, [new, *old], old, min_available)
    return cleaned + scaled > 0


def _cleanup_unhealthy(view: View, deploy: dict[str, Any], old: list[dict[str, Any]],
                       max_cleanup: int) -> tuple[int, list[dict[str, Any]]]:
    """``cleanupUnhealthyReplicas``: drop old replicas that are not available, oldest set first."""
    total, out = 0, []
    for rs in old:
        if total >= max_cleanup or _replicas(rs) == 0:
            out.append(rs)
            continue
        unhealthy = _replicas(rs) - _status_int(rs, "availableReplicas")
        if unhealthy <= 0:
            out.append(rs)
            continue
        count = min(max_cleanup - total, unhealthy)
        _scale_set(view, deploy, rs, _replicas(rs) - count)
        out.append(_fresh(view, rs))
        total += count
    return total, out


def _scale_down_old(view: View, deploy: dict[str, Any], all_sets: list[dict[str, Any]], old: list[dict[str, Any]],
                    min_available: int) -> int:
    """``scaleDownOldReplicaSetsForRollingUpdate``: available pods above the minimum go."""
    available = sum(_status_int(rs, "availableReplicas") for rs in all_sets)
    total = available - min_available
    done = 0
    for rs in old:
        if done >= total:
            break
        if _replicas(rs) == 0:
            continue
        count = min(_replicas(rs), total - done)
        _scale_set(view, deploy, rs, _replicas(rs) - count)
        done += count
    return max(done, 0)


def _rollout_recreate(view: View, deploy: dict[str, Any], new: dict[str, Any] | None, old: list[dict[str, Any]]) -> None:
    """``rolloutRecreate``: old sets to 0, wait for their pods to be gone, then the new set."""
    scaled = False
    for rs in old:
        if _replicas(rs) > 0:
            scaled = _scale_set(view, deploy, rs, 0) or scaled
    if scaled or _old_pods_running(view, old):
        return
    new = _new_set(view, deploy, new, old)
    if new is None:
        return
    _scale_set(view, deploy, new, _replicas(deploy))


def _old_pods_running(view: View, old: list[dict[str, Any]]) -> bool:
    """``oldPodsRunning``: an old ReplicaSet still reports pods, or owns a non-finished pod."""
    if any(_status_int(rs, "replicas") > 0 for rs in old):
        return True
    return any((pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
               for rs in old for pod in owned_pods(view, rs))


def _scale(view: View, deploy: dict[str, Any], new: dict[str, Any] | None, old: list[dict[str, Any]]) -> None:
    """``sync.go`` scale: one active set takes the count; else a saturated new set empties the
    old ones; else (RollingUpdate) the difference is spread proportionally."""
    want = _replicas(deploy)
    sets = [rs for rs in ([new] if new is not None else []) + old]
    active = [rs for rs in sets if _replicas(rs) > 0]
    target = _find_active_or_latest(new, old, sets, active)
    if target is not None:
        _scale_set(view, deploy, target, want)
        return
    if _is_saturated(deploy, new):
        for rs in old:
            if _replicas(rs) > 0:
                _scale_set(view, deploy, rs, 0)
        return
    if _rolling(deploy) is None or not active:
        return
    _scale_proportionally(view, deploy, active)


def _find_active_or_latest(new: dict[str, Any] | None, old: list[dict[str, Any]],
                           sets: list[dict[str, Any]],
                           active: list[dict[str, Any]]) -> dict[str, Any] | None:
    """``FindActiveOrLatest``: the only set with replicas; with none, the new set or else the
    newest old one; None when several have replicas."""
    if len(active) == 1:
        return active[0]
    if not active and sets:
        return new if new is not None else max(old, key=_created)
    return None


def _is_saturated(deploy: dict[str, Any], new: dict[str, Any] | None) -> bool:
    """``IsSaturated``: the new set wants and has all of the Deployment's replicas available."""
    want = _replicas(deploy)
    return new is not None and _replicas(new) == want and _status_int(new, "availableReplicas") == want


def _created(rs: dict[str, Any]) -> tuple[Any, ...]:
    return rs["metadata"].get("creationTimestamp", ""), rs["metadata"]["name"]


def _scale_proportionally(view: View, deploy: dict[str, Any], active: list[dict[str, Any]]) -> None:
    want = _replicas(deploy)
    allowed = want + max_surge(deploy) if want > 0 else 0
    to_add = allowed - sum(_replicas(rs) for rs in active)
    if to_add == 0:
        return
    # ReplicaSetsBySizeNewer (adding) / BySizeOlder (removing): largest first, then newer or
    # older first on ties (two stable sorts).
    active = sorted(active, key=_created, reverse=to_add > 0)
    active = sorted(active, key=lambda rs: -_replicas(rs))
    added, sizes = 0, {}
    for rs in active:
        share = _proportion(deploy, rs, to_add, added)
        sizes[rs["metadata"]["name"]] = _replicas(rs) + share
        added += share
    for i, rs in enumerate(active):
        size = sizes[rs["metadata"]["name"]]
        if i == 0:
            size = max(0, size + to_add - added)
        _scale_set(view, deploy, rs, size)


def _proportion(deploy: dict[str, Any], rs: dict[str, Any], to_add: int, added: int) -> int:
    """``GetProportion`` with ``getReplicaSetFraction``."""
    if _replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    want = _replicas(deploy)
    if want == 0:
        fraction = -_replicas(rs)
    else:
        annotated = (rs["metadata"].get("annotations") or {}).get(ANN_MAX, "")
        base = limits.small_int(annotated)
        base = _status_int(deploy, "replicas") if base is None else base
        size = _replicas(rs) * (want + max_surge(deploy)) / base if base else _replicas(rs)
        fraction = int(math.floor(size + 0.5)) - _replicas(rs)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


# ---- creating and scaling ReplicaSets ----------------------------------------------------------

def _max_old_revision(old: list[dict[str, Any]]) -> int:
    return max((revision(rs) for rs in old), default=0)


def _copied_annotations(deploy: dict[str, Any]) -> dict[str, str]:
    annotations = (deploy["metadata"].get("annotations") or {})
    return {k: v for k, v in annotations.items() if k not in _SKIP_ANNOTATIONS}


def _new_set(view: View, deploy: dict[str, Any], new: dict[str, Any] | None,
             old: list[dict[str, Any]]) -> dict[str, Any] | None:
    """``getNewReplicaSet`` with createIfNotExisted: the new set synced, or created (None when
    the create was refused)."""
    if new is None:
        return _create_new_set(view, deploy, old)
    return _sync_new_set(view, deploy, new, old)


def _create_new_set(view: View, deploy: dict[str, Any],
                    old: list[dict[str, Any]]) -> dict[str, Any] | None:
    """``getNewReplicaSet`` with createIfNotExisted: name, hash label, revision, annotations.
    A create admission refuses (a quota on ``count/replicasets.apps``) is a Warning event
    ``ReplicaSetCreateError`` and ``Progressing=False`` with that reason, as upstream
    (sync.go ``FailedRSCreateReason``); None then."""
    meta, spec = deploy["metadata"], deploy.get("spec") or {}
    template = copy.deepcopy(spec.get("template") or {})
    hash_ = template_hash(canonical(template))
    template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = hash_
    selector = copy.deepcopy(spec.get("selector") or {})
    selector.setdefault("matchLabels", {})[HASH_LABEL] = hash_
    want = _replicas(deploy)
    annotations = {**_copied_annotations(deploy), ANN_REVISION: str(_max_old_revision(old) + 1),
                   ANN_DESIRED: str(want), ANN_MAX: str(want + max_surge(deploy))}
    rs: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
          "metadata": {"name": f"{meta['name']}-{hash_}", "namespace": meta["namespace"],
                       "labels": dict(template["metadata"]["labels"]), "annotations": annotations,
                       "ownerReferences": [owner_reference(deploy)]},
          "spec": {"replicas": 0, "selector": selector, "template": template}}
    if spec.get("minReadySeconds"):
        rs["spec"]["minReadySeconds"] = spec["minReadySeconds"]
    count = new_rs_new_replicas(deploy, [rs, *old], 0)
    rs["spec"]["replicas"] = count
    try:
        created = write.create(view, rs)
    except GpuschedError as err:
        message = f'Failed to create new replica set "{rs["metadata"]["name"]}": {err}'
        _set_progressing(view, deploy, "False", "ReplicaSetCreateError", message)
        view.record_event(deploy, "ReplicaSetCreateError", message, "Warning", COMPONENT)
        return None
    if count > 0:
        view.record_event(deploy, "ScalingReplicaSet",
                          f"Scaled up replica set {rs['metadata']['name']} from 0 to {count}",
                          "Normal", COMPONENT)
    _set_revision(view, deploy, annotations[ANN_REVISION])
    _set_progressing(view, deploy, "True", "NewReplicaSetCreated",
                     f'Created new replica set "{rs["metadata"]["name"]}"')
    return created


def _sync_new_set(view: View, deploy: dict[str, Any], new: dict[str, Any], old: list[dict[str, Any]]) -> dict[str, Any]:
    """``SetNewReplicaSetAnnotations`` on an existing new set: copied annotations, and the next
    revision when an old template comes back (the old number goes to revision-history)."""
    body = copy.deepcopy(new)
    annotations = body["metadata"].setdefault("annotations", {})
    annotations.update(_copied_annotations(deploy))
    wanted = _max_old_revision(old) + 1
    current = revision(new)
    if current < wanted:
        if current > 0:
            history = [h for h in annotations.get(ANN_REVISION_HISTORY, "").split(",") if h]
            annotations[ANN_REVISION_HISTORY] = ",".join([*history, str(current)])
        annotations[ANN_REVISION] = str(wanted)
    write.update(view, body)
    new = _fresh(view, new)
    _set_revision(view, deploy, annotations[ANN_REVISION])
    return new


def _set_revision(view: View, deploy: dict[str, Any], value: str) -> None:
    body = view.copy("Deployment", deploy["metadata"]["name"], deploy["metadata"]["namespace"])
    if body is None:
        return
    annotations = body["metadata"].setdefault("annotations", {})
    if annotations.get(ANN_REVISION) != value:
        annotations[ANN_REVISION] = value
        write.update(view, body)


def _scale_set(view: View, deploy: dict[str, Any], rs: dict[str, Any], replicas: int) -> bool:
    """``scaleReplicaSetAndRecordEvent``: spec.replicas and the desired/max annotations."""
    rs = _fresh(view, rs)
    old = _replicas(rs)
    body = copy.deepcopy(rs)
    body["spec"]["replicas"] = replicas
    want = _replicas(deploy)
    annotations = body["metadata"].setdefault("annotations", {})
    annotations[ANN_DESIRED] = str(want)
    annotations[ANN_MAX] = str(want + max_surge(deploy))
    write.update(view, body)
    if old == replicas:
        return False
    verb = "up" if replicas > old else "down"
    view.record_event(deploy, "ScalingReplicaSet",
                      f"Scaled {verb} replica set {rs['metadata']['name']} from {old} to {replicas}",
                      "Normal", COMPONENT)
    return True


def _fresh(view: View, rs: dict[str, Any]) -> dict[str, Any]:
    return view.get("ReplicaSet", rs["metadata"]["name"], rs["metadata"]["namespace"]) or rs


def _cleanup(view: View, deploy: dict[str, Any], old: list[dict[str, Any]]) -> None:
    """``cleanupDeployment``: empty old ReplicaSets beyond revisionHistoryLimit, oldest first."""
    limit = int((deploy.get("spec") or {}).get("revisionHistoryLimit", DEFAULT_HISTORY_LIMIT))
    empty = [rs for rs in old if _replicas(rs) == 0 and _status_int(rs, "replicas") == 0]
    for rs in sorted(empty, key=lambda r: (revision(r), _created(r)))[:max(0, len(empty) - limit)]:
        write.delete(view, "ReplicaSet", rs["metadata"]["name"], rs["metadata"]["namespace"])
