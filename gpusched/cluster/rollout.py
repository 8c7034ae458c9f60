"""``rollout status|restart|undo|history`` for Deployments and DaemonSets, as kubectl does them.

Everything here reads and writes the same objects kubectl would through ``gpusched serve``, so
the embedded CLI and real kubectl agree (kubectl 1.32 staging/src/k8s.io/kubectl/pkg/polymorphichelpers):

- status (``rollout_status.go``): one line from the object's status (``cli.rollout`` prints it
  at each change while it watches, the cluster clock following the wall clock);
- restart (``objectrestarter.go``): the template annotation ``kubectl.kubernetes.io/restartedAt``
  set to now, which makes the controller roll every pod;
- undo (``rollback.go``): a Deployment gets the template (and annotations) of the ReplicaSet of
  the previous or the given revision, a DaemonSet the ``data`` of its ControllerRevision;
- history (``history.go``): revisions with their ``kubernetes.io/change-cause``.

Neighbours: ``cluster.controllers.workloads.deployment`` / ``daemonset`` keep the revisions;
``cli.rollout`` prints; the server serves the ReplicaSets/ControllerRevisions kubectl reads itself.
"""

from __future__ import annotations

from typing import Any

import copy

from gpusched.cluster.apiserver import write
from gpusched.cluster.controllers.workloads import daemonset as ds_controller
from gpusched.cluster.controllers.workloads import deployment_util
from gpusched.cluster.apiserver.view import View
from gpusched.errors import GpuschedError, NotFoundError, UsageError
from gpusched.objects.kinds import KindInfo

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
CHANGE_CAUSE = "kubernetes.io/change-cause"
ROLLOUT_KINDS = ("Deployment", "DaemonSet")


class RolloutError(GpuschedError):
    """A rollout that cannot be done or has failed (kubectl's ``error: ...`` line)."""


def target(view: View, info: KindInfo, name: str, namespace: str) -> dict[str, Any]:
    """The Deployment or DaemonSet to roll; other kinds are refused as kubectl refuses them."""
    if info.kind not in ROLLOUT_KINDS:
        raise UsageError(f"no rollout has been implemented for {{{info.group} {info.kind}}} "
                         "in gpusched (deployments and daemonsets)")
    body = view.get(info.kind, name, namespace)
    if body is None:
        plural = f"{info.plural}.{info.group}" if info.group else info.plural
        raise NotFoundError(plural, name)
    return body


# ---- status (rollout_status.go) ----------------------------------------------------------------

def status_line(body: dict[str, Any]) -> tuple[str, bool]:
    """(kubectl's message, done). Raises RolloutError for a Deployment past its deadline."""
    if body["kind"] == "Deployment":
        return _deployment_status(body)
    return _daemonset_status(body)


def _deployment_status(body: dict[str, Any]) -> tuple[str, bool]:
    name, spec, status = body["metadata"]["name"], body.get("spec") or {}, body.get("status") or {}
    if int(body["metadata"].get("generation", 1)) > int(status.get("observedGeneration", 0)):
        return "Waiting for deployment spec update to be observed...", False
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Progressing" and cond.get("reason") == "ProgressDeadlineExceeded":
            raise RolloutError(f'deployment "{name}" exceeded its progress deadline')
    want = int(spec.get("replicas", 1))
    updated = int(status.get("updatedReplicas", 0))
    replicas = int(status.get("replicas", 0))
    available = int(status.get("availableReplicas", 0))
    prefix = f'Waiting for deployment "{name}" rollout to finish: '
    if updated < want:
        return f"{prefix}{updated} out of {want} new replicas have been updated...", False
    if replicas > updated:
        return f"{prefix}{replicas - updated} old replicas are pending termination...", False
    if available < updated:
        return f"{prefix}{available} of {updated} updated replicas are available...", False
    return f'deployment "{name}" successfully rolled out', True


def _daemonset_status(body: dict[str, Any]) -> tuple[str, bool]:
    name, spec, status = body["metadata"]["name"], body.get("spec") or {}, body.get("status") or {}
    if ((spec.get("updateStrategy") or {}).get("type", "RollingUpdate")) != "RollingUpdate":
        raise RolloutError("rollout status is only available for RollingUpdate strategy type")
    if int(body["metadata"].get("generation", 1)) > int(status.get("observedGeneration", 0)):
        return "Waiting for daemon set spec update to be observed...", False
    desired = int(status.get("desiredNumberScheduled", 0))
    updated = int(status.get("updatedNumberScheduled", 0))
    available = int(status.get("numberAvailable", 0))
    prefix = f'Waiting for daemon set "{name}" rollout to finish: '
    if updated < desired:
        return f"{prefix}{updated} out of {desired} new pods have been updated...", False
    if available < desired:
        return f"{prefix}{available} of {desired} updated pods are available...", False
    return f'daemon set "{name}" successfully rolled out', True


# ---- restart (objectrestarter.go) --------------------------------------------------------------

def restart(view: View, body: dict[str, Any]) -> None:
    if body["kind"] == "Deployment" and (body.get("spec") or {}).get("paused"):
        raise RolloutError("can't restart paused deployment (run rollout resume first)")
    new = copy.deepcopy(body)
    template = new.setdefault("spec", {}).setdefault("template", {})
    template.setdefault("metadata", {}).setdefault("annotations", {})[RESTARTED_AT] = \
        view.timestamp()
    write.update(view, new)


# ---- history (history.go) ----------------------------------------------------------------------

def history(view: View, body: dict[str, Any]) -> list[tuple[int, str, dict[str, Any]]]:
    """(revision, change-cause or ``<none>``, pod template) by revision."""
    rows = []
    if body["kind"] == "Deployment":
        for rs in deployment_util.owned_sets(view, body):
            number = deployment_util.revision(rs)
            if number > 0:
                rows.append((number, _cause(rs), (rs.get("spec") or {}).get("template") or {}))
    else:
        for rev in ds_controller.revisions(view, body):
            template = copy.deepcopy(((rev.get("data") or {}).get("spec") or {}).get("template")
                                     or {})
            template.pop("$patch", None)
            rows.append((int(rev.get("revision", 0)), _cause(rev), template))
    return sorted(rows, key=lambda row: row[0])


def _cause(body: dict[str, Any]) -> str:
    return ((body.get("metadata") or {}).get("annotations") or {}).get(CHANGE_CAUSE) or "<none>"


# ---- undo (rollback.go) ------------------------------------------------------------------------

def undo(view: View, body: dict[str, Any], to_revision: int = 0) -> str:
    """Roll back; returns kubectl's verb phrase (``rolled back`` or ``skipped rollback (...)``)."""
    if body["kind"] == "Deployment":
        return _undo_deployment(view, body, to_revision)
    return _undo_daemonset(view, body, to_revision)


def _undo_deployment(view: View, body: dict[str, Any], to_revision: int) -> str:
    if (body.get("spec") or {}).get("paused"):
        raise RolloutError("you cannot rollback a paused deployment; resume it first with "
                           "'kubectl rollout resume' and try again")
    chosen = _deployment_revision(view, body, to_revision)
    template = copy.deepcopy((chosen.get("spec") or {}).get("template") or {})
    if deployment_util.equal_ignore_hash(template, (body.get("spec") or {}).get("template") or {}):
        return f"skipped rollback (current template already matches revision {to_revision})"
    template = deployment_util.template_without_hash(template)
    new = copy.deepcopy(body)
    skip = deployment_util._SKIP_ANNOTATIONS
    annotations = {k: v for k, v in (body["metadata"].get("annotations") or {}).items()
                   if k in skip}
    annotations.update({k: v for k, v in (chosen["metadata"].get("annotations") or {}).items()
                        if k not in skip})
    new["metadata"]["annotations"] = annotations
    new["spec"]["template"] = template
    write.update(view, new)
    return "rolled back"


def _deployment_revision(view: View, body: dict[str, Any], to_revision: int) -> dict[str, Any]:
    """``deploymentRevision``: the given revision, else the one before the latest."""
    latest: tuple[int, dict[str, Any] | None] = (-1, None)
    previous: tuple[int, dict[str, Any] | None] = (-1, None)
    for rs in deployment_util.owned_sets(view, body):
        number = deployment_util.revision(rs)
        if to_revision and number == to_revision:
            return rs
        if not to_revision:
            if latest[0] < number:
                previous, latest = latest, (number, rs)
            elif previous[0] < number:
                previous = (number, rs)
    if to_revision:
        raise RolloutError(f"unable to find specified revision {to_revision} in history")
    if previous[1] is None:
        raise RolloutError(f'no rollout history found for deployment "{body["metadata"]["name"]}"')
    return previous[1]


def _undo_daemonset(view: View, body: dict[str, Any], to_revision: int) -> str:
    revisions = ds_controller.revisions(view, body)
    if to_revision:
        chosen = next((r for r in revisions if int(r.get("revision", 0)) == to_revision), None)
    else:
        chosen = revisions[-2] if len(revisions) > 1 else None
    if chosen is None:
        raise RolloutError(f"unable to find specified revision {to_revision} in history")
    if deployment_util.canonical(ds_controller.revision_data(body)) == \
            deployment_util.canonical(chosen.get("data")):
        return f"skipped rollback (current template already matches revision {to_revision})"
    template = copy.deepcopy(chosen["data"]["spec"]["template"])
    template.pop("$patch", None)
    new = copy.deepcopy(body)
    new["spec"]["template"] = template
    write.update(view, new)
    return "rolled back"
