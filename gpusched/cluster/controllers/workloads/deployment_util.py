"""The Deployment controller's helpers, as upstream's ``pkg/controller/deployment/util/deployment_util.go``:
the annotation names, ``maxSurge`` / ``maxUnavailable`` arithmetic (``ResolveFenceposts``,
``NewRSNewReplicas``), and reading a Deployment's ReplicaSets (owned sets, revisions, the
template compared without its ``pod-template-hash``).

Neighbours: ``controllers.workloads.deployment`` (the sync), ``deployment_status``,
``controllers.workloads.daemonset`` and ``cluster.rollout`` (revisions, templates).
"""

from __future__ import annotations

from typing import Any

import copy
import math

from gpusched.cluster.controllers.common import controller_of
from gpusched.cluster.apiserver.store import dumps
from gpusched.cluster.apiserver.view import View
from gpusched.objects import limits
from gpusched.objects.digits import is_digits

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
    if not text.endswith("%") or not is_digits(text[:-1]):
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
    value = limits.small_int(text)
    return 0 if value is None else value


def split_sets(view: View, deploy: dict[str, Any]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """(new ReplicaSet or None, old ones): ``FindNewReplicaSet`` takes the oldest matching."""
    template = (deploy.get("spec") or {}).get("template") or {}
    sets = owned_sets(view, deploy)
    new = next((rs for rs in sets
                if equal_ignore_hash((rs.get("spec") or {}).get("template") or {}, template)), None)
    return new, [rs for rs in sets if rs is not new]
