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

Neighbours: creates ReplicaSets for ``controllers.replicaset``; ``cli.rollout`` reads the
revisions this module writes.
"""

from __future__ import annotations

from typing import Any

import copy
import math
from datetime import datetime

from gpusched.cluster.changes import Changes
from gpusched.cluster.controllers.common import (controller_of, owner_reference, set_status,
                                                 template_hash)
from gpusched.cluster.store import EPOCH, dumps
from gpusched.cluster.view import View

COMPONENT = "deployment-controller"
ANN_REVISION = "deployment.kubernetes.io/revision"
ANN_REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
ANN_DESIRED = "deployment.kubernetes.io/desired-replicas"
ANN_MAX = "deployment.kubernetes.io/max-replicas"
HASH_LABEL = "pod-template-hash"
# deployment_util.go annotationsToSkip: never copied from a Deployment to its ReplicaSets.
_SKIP_ANNOTATIONS = frozenset({
    "kubectl.kubernetes.io/last-applied-configuration", ANN_REVISION, ANN_REVISION_HISTORY,
    ANN_DESIRED, ANN_MAX, "deprecated.deployment.rollback.to"})
DEFAULT_PROGRESS_DEADLINE = 600
DEFAULT_HISTORY_LIMIT = 10


# ---- deployment_util.go: numbers --------------------------------------------------------------

def scaled_value(value: object, total: int, round_up: bool) -> int | None:
    """``GetScaledValueFromIntOrPercent``: an int, or ``"25%"`` of ``total`` rounded up or down;
    None when ``value`` is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%") or not text[:-1].isdigit():
        return None
    exact = int(text[:-1]) * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def resolve_fenceposts(max_surge: object, max_unavailable: object, desired: int) -> tuple[int, int]:
    """``ResolveFenceposts``: (surge, unavailable); surge rounds up, unavailable down, and when
    both come out 0 unavailable is 1 so a rollout can always progress."""
    surge = scaled_value("25%" if max_surge is None else max_surge, desired, True)
    unavailable = scaled_value("25%" if max_unavailable is None else max_unavailable, desired,
                               False)
    surge = (scaled_value("25%", desired, True) or 0) if surge is None else surge
    unavailable = (scaled_value("25%", desired, False) or 0) if unavailable is None else unavailable
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def _replicas(body: dict[str, Any] | None) -> int:
    return int(((body or {}).get("spec") or {}).get("replicas", 1) if body else 0)


def _status_int(body: dict[str, Any] | None, field: str) -> int:
    return int(((body or {}).get("status") or {}).get(field, 0) or 0)


def _rolling(deploy: dict[str, Any]) -> dict[str, Any] | None:
    strategy = (deploy.get("spec") or {}).get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return None
    return strategy.get("rollingUpdate") or {}


def max_surge(deploy: dict[str, Any]) -> int:
    """``MaxSurge``: 0 unless RollingUpdate."""
    rolling = _rolling(deploy)
    if rolling is None:
        return 0
    return resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"),
                              _replicas(deploy))[0]


def max_unavailable(deploy: dict[str, Any]) -> int:
    """``MaxUnavailable``: 0 unless RollingUpdate with replicas > 0; at most ``replicas``."""
    rolling, want = _rolling(deploy), _replicas(deploy)
    if rolling is None or want == 0:
        return 0
    unavailable = resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"),
                                     want)[1]
    return min(unavailable, want)


def new_rs_new_replicas(deploy: dict[str, Any], all_sets: list[dict[str, Any]], new_replicas: int) -> int:
    """``NewRSNewReplicas``: what the new ReplicaSet may grow to now."""
    want = _replicas(deploy)
    if _rolling(deploy) is None:
        return want
    current = sum(_replicas(rs) for rs in all_sets)
    most = want + max_surge(deploy)
    if current >= most:
        return new_replicas
    return new_replicas + min(most - current, want - new_replicas)


# ---- reading the owned ReplicaSets -------------------------------------------------------------

def owned_sets(view: View, deploy: dict[str, Any]) -> list[dict[str, Any]]:
    """ReplicaSets whose controller is ``deploy``, oldest first (``ReplicaSetsByCreationTimestamp``)."""
    uid = deploy["metadata"]["uid"]
    sets = [rs for rs in view.list("ReplicaSet", deploy["metadata"]["namespace"])
            if (controller_of(rs) or {}).get("uid") == uid]
    return sorted(sets, key=lambda rs: (rs["metadata"].get("creationTimestamp", ""),
                                        rs["metadata"]["name"]))


def canonical(value: Any, key: str = "") -> Any:
    """A template as the API server would hold it typed: quantities as strings (``1`` and
    ``"1"`` are one quantity), null fields dropped (``creationTimestamp: null``)."""
    if isinstance(value, dict):
        quantities = key in ("limits", "requests", "overhead")
        return {k: (str(v) if quantities and isinstance(v, (int, float)) and not isinstance(v, bool)
                    else canonical(v, k)) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [canonical(v, key) for v in value]
    return value


def template_without_hash(template: dict[str, Any]) -> dict[str, Any]:
    template = canonical(copy.deepcopy(template or {}))
    labels = (template.get("metadata") or {}).get("labels")
    if labels is not None:
        labels.pop(HASH_LABEL, None)
        if not labels:
            del template["metadata"]["labels"]
        if not template["metadata"]:
            del template["metadata"]
    return template


def equal_ignore_hash(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """``EqualIgnoreHash``: pod templates equal but for the pod-template-hash label."""
    return dumps(template_without_hash(a)) == dumps(template_without_hash(b))


def revision(rs: dict[str, Any]) -> int:
    text = ((rs.get("metadata") or {}).get("annotations") or {}).get(ANN_REVISION, "0")
    return int(text) if str(text).isdigit() else 0


def split_sets(view: View, deploy: dict[str, Any]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """(new ReplicaSet or None, old ones): ``FindNewReplicaSet`` takes the oldest matching."""
    template = (deploy.get("spec") or {}).get("template") or {}
    sets = owned_sets(view, deploy)
    new = next((rs for rs in sets
                if equal_ignore_hash((rs.get("spec") or {}).get("template") or {}, template)), None)
    return new, [rs for rs in sets if rs is not new]


# ---- the sync ----------------------------------------------------------------------------------

def reconcile(view: View, changes: Changes | None = None) -> None:
    """Every Deployment, or (``changes``) the changed ones and those owning a changed
    ReplicaSet or the ReplicaSet of a changed pod."""
    if changes is None or changes.resync:
        deploys = view.list("Deployment")
    else:
        keys = changes.of_kind("Deployment") | changes.owners("Deployment") | \
            changes.owners("Deployment", changes.owners("ReplicaSet"))
        deploys = [view.objects[k] for k in sorted(keys) if k in view.objects]
    for deploy in deploys:
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
    if new is None:
        new = _create_new_set(view, deploy, old)
    else:
        new = _sync_new_set(view, deploy, new, old)
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
    if new is None:
        new = _create_new_set(view, deploy, old)
    else:
        new = _sync_new_set(view, deploy, new, old)
    _scale_set(view, deploy, new, _replicas(deploy))


def _old_pods_running(view: View, old: list[dict[str, Any]]) -> bool:
    """``oldPodsRunning``: an old ReplicaSet still reports pods, or owns a non-finished pod."""
    if any(_status_int(rs, "replicas") > 0 for rs in old):
        return True
    uids = {rs["metadata"]["uid"] for rs in old}
    return any((controller_of(p) or {}).get("uid") in uids
               and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
               for p in view.list("Pod"))


def _scale(view: View, deploy: dict[str, Any], new: dict[str, Any] | None, old: list[dict[str, Any]]) -> None:
    """``sync.go`` scale: one active set takes the count; else a saturated new set empties the
    old ones; else (RollingUpdate) the difference is spread proportionally."""
    want = _replicas(deploy)
    sets = [rs for rs in ([new] if new is not None else []) + old]
    active = [rs for rs in sets if _replicas(rs) > 0]
    target = None
    if len(active) == 1:
        target = active[0]
    elif not active and sets:
        target = new if new is not None else max(old, key=_created)
    if target is not None:
        _scale_set(view, deploy, target, want)
        return
    if new is not None and _replicas(new) == want and _status_int(new, "availableReplicas") == want:
        for rs in old:
            if _replicas(rs) > 0:
                _scale_set(view, deploy, rs, 0)
        return
    if _rolling(deploy) is None or not active:
        return
    _scale_proportionally(view, deploy, active)


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
        base = int(annotated) if annotated.isdigit() else _status_int(deploy, "replicas")
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


def _create_new_set(view: View, deploy: dict[str, Any], old: list[dict[str, Any]]) -> dict[str, Any]:
    """``getNewReplicaSet`` with createIfNotExisted: name, hash label, revision, annotations."""
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
    created = view.create(rs)
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
    view.update(body)
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
        view.update(body)


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
    view.update(body)
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
        view.delete("ReplicaSet", rs["metadata"]["name"], rs["metadata"]["namespace"])


# ---- status and conditions ---------------------------------------------------------------------

def _complete(deploy: dict[str, Any], status: dict[str, Any]) -> bool:
    """``DeploymentComplete``."""
    want = _replicas(deploy)
    return (int(status.get("updatedReplicas", 0)) == want and int(status.get("replicas", 0)) == want
            and int(status.get("availableReplicas", 0)) == want
            and int(status.get("observedGeneration", 0)) >= int(deploy["metadata"].get("generation", 1)))


def _progressing(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """``DeploymentProgressing``: more updated/ready/available replicas, or fewer old ones."""
    def get(status: dict[str, Any], key: str) -> int:
        return int(status.get(key, 0))
    old_old = get(old, "replicas") - get(old, "updatedReplicas")
    new_old = get(new, "replicas") - get(new, "updatedReplicas")
    return (get(new, "updatedReplicas") > get(old, "updatedReplicas") or new_old < old_old
            or get(new, "readyReplicas") > get(old, "readyReplicas")
            or get(new, "availableReplicas") > get(old, "availableReplicas"))


def seconds_of(timestamp: str) -> float:
    when = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=EPOCH.tzinfo)
    return (when - EPOCH).total_seconds()


def _condition(status: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == type_), None)


def set_condition(status: dict[str, Any], cond: dict[str, Any]) -> None:
    """``SetDeploymentCondition``: same status and reason -> unchanged; same status keeps the
    lastTransitionTime; the condition moves to the end."""
    current = _condition(status, cond["type"])
    if current is not None and current["status"] == cond["status"] \
            and current.get("reason") == cond.get("reason"):
        return
    if current is not None and current["status"] == cond["status"]:
        cond["lastTransitionTime"] = current.get("lastTransitionTime", cond["lastTransitionTime"])
    status["conditions"] = [c for c in status.get("conditions") or []
                            if c.get("type") != cond["type"]] + [cond]


def _new_condition(view: View, type_: str, status: str, reason: str, message: str) -> dict[str, Any]:
    now = view.timestamp()
    return {"type": type_, "status": status, "lastUpdateTime": now, "lastTransitionTime": now,
            "reason": reason, "message": message}


def _set_progressing(view: View, deploy: dict[str, Any], status: str, reason: str, message: str) -> None:
    body = view.copy("Deployment", deploy["metadata"]["name"], deploy["metadata"]["namespace"])
    if body is None or _progress_deadline(body) is None:
        return
    new_status = body.setdefault("status", {})
    set_condition(new_status, _new_condition(view, "Progressing", status, reason, message))
    view.update(body)


def _progress_deadline(deploy: dict[str, Any]) -> int | None:
    value = (deploy.get("spec") or {}).get("progressDeadlineSeconds", DEFAULT_PROGRESS_DEADLINE)
    return None if value is None or int(value) >= 2**31 - 1 else int(value)


def calculate_status(deploy: dict[str, Any], new: dict[str, Any] | None, old: list[dict[str, Any]]) -> dict[str, Any]:
    """``calculateStatus``: counters over all ReplicaSets (zero counters omitted, as the API
    omits them) and the Available condition."""
    sets = ([new] if new is not None else []) + old
    total = sum(_replicas(rs) for rs in sets)
    available = sum(_status_int(rs, "availableReplicas") for rs in sets)
    counts = {"replicas": sum(_status_int(rs, "replicas") for rs in sets),
              "updatedReplicas": _status_int(new, "replicas") if new is not None else 0,
              "readyReplicas": sum(_status_int(rs, "readyReplicas") for rs in sets),
              "availableReplicas": available,
              "unavailableReplicas": max(0, total - available)}
    status: dict[str, Any] = {"observedGeneration": int(deploy["metadata"].get("generation", 1))}
    status.update({k: v for k, v in counts.items() if v})
    old_status = deploy.get("status") or {}
    status["conditions"] = copy.deepcopy(old_status.get("conditions") or [])
    if "collisionCount" in old_status:
        status["collisionCount"] = old_status["collisionCount"]
    return status


def _sync_status(view: View, deploy: dict[str, Any], new: dict[str, Any] | None, old: list[dict[str, Any]],
                 rollout: bool) -> None:
    """``syncRolloutStatus`` after a rollout step, ``syncDeploymentStatus`` after scaling."""
    status = calculate_status(deploy, new, old)
    if available_enough(deploy, status):
        cond = _new_condition(view, "Available", "True", "MinimumReplicasAvailable",
                              "Deployment has minimum availability.")
    else:
        cond = _new_condition(view, "Available", "False", "MinimumReplicasUnavailable",
                              "Deployment does not have minimum availability.")
    set_condition(status, cond)
    if _progress_deadline(deploy) is None:
        status["conditions"] = [c for c in status["conditions"] if c["type"] != "Progressing"]
    elif (deploy.get("spec") or {}).get("paused"):
        _paused_condition(view, status)
    elif rollout and new is not None:
        _progress_condition(view, deploy, new, status)
    set_status(view, view.get("Deployment", deploy["metadata"]["name"],
                              deploy["metadata"]["namespace"]) or deploy, status)


def _paused_condition(view: View, status: dict[str, Any]) -> None:
    """``checkPausedConditions`` (a timed-out rollout keeps its condition)."""
    current = _condition(status, "Progressing")
    if current is not None and current.get("reason") in ("ProgressDeadlineExceeded",
                                                         "DeploymentPaused"):
        return
    set_condition(status, _new_condition(view, "Progressing", "Unknown", "DeploymentPaused",
                                         "Deployment is paused"))


def available_enough(deploy: dict[str, Any], status: dict[str, Any]) -> bool:
    return int(status.get("availableReplicas", 0)) >= _replicas(deploy) - max_unavailable(deploy)


def _progress_condition(view: View, deploy: dict[str, Any], new: dict[str, Any], status: dict[str, Any]) -> None:
    """The Progressing part of ``syncRolloutStatus`` (a finished rollout is not re-estimated)."""
    current = _condition(deploy.get("status") or {}, "Progressing")
    if (int(status.get("replicas", 0)) == int(status.get("updatedReplicas", 0))
            and current is not None and current.get("reason") == "NewReplicaSetAvailable"):
        return
    name = new["metadata"]["name"]
    if _complete(deploy, status):
        set_condition(status, _new_condition(view, "Progressing", "True", "NewReplicaSetAvailable",
                                             f'ReplicaSet "{name}" has successfully progressed.'))
    elif _progressing(deploy.get("status") or {}, status):
        cond = _new_condition(view, "Progressing", "True", "ReplicaSetUpdated",
                              f'ReplicaSet "{name}" is progressing.')
        now_cond = _condition(status, "Progressing")
        if now_cond is not None:
            if now_cond["status"] == "True":
                cond["lastTransitionTime"] = now_cond.get("lastTransitionTime",
                                                          cond["lastTransitionTime"])
            status["conditions"] = [c for c in status["conditions"] if c["type"] != "Progressing"]
        set_condition(status, cond)
    elif _timed_out(view, deploy, status):
        set_condition(status, _new_condition(view, "Progressing", "False",
                                             "ProgressDeadlineExceeded",
                                             f'ReplicaSet "{name}" has timed out progressing.'))


def _timed_out(view: View, deploy: dict[str, Any], status: dict[str, Any]) -> bool:
    """``DeploymentTimedOut``: lastUpdateTime + progressDeadlineSeconds strictly before now."""
    cond, deadline = _condition(status, "Progressing"), _progress_deadline(deploy)
    if cond is None or deadline is None or cond.get("reason") == "NewReplicaSetAvailable":
        return False
    if cond.get("reason") == "ProgressDeadlineExceeded":
        return True
    since = cond.get("lastUpdateTime")
    return bool(since) and seconds_of(str(since)) + deadline < view.now()


def next_time(view: View) -> float | None:
    """The next progress deadline of a Deployment still rolling out (the first whole second
    strictly after lastUpdateTime + progressDeadlineSeconds)."""
    times = [t for t in (progress_due(view, d) for d in view.list("Deployment")) if t is not None]
    return min(times) if times else None


def progress_due(view: View, deploy: dict[str, Any]) -> float | None:
    """Timer (``cluster.timers``): this Deployment's progress deadline, as ``next_time``."""
    status = deploy.get("status") or {}
    cond = _condition(status, "Progressing")
    deadline = _progress_deadline(deploy)
    if (deadline is None or cond is None or cond.get("status") != "True"
            or cond.get("reason") == "NewReplicaSetAvailable" or _complete(deploy, status)
            or not cond.get("lastUpdateTime")):
        return None
    return seconds_of(cond["lastUpdateTime"]) + deadline + 1
