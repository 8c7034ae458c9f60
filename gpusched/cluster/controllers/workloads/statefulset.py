"""StatefulSet controller, ``podManagementPolicy: OrderedReady`` (the default) for every set.

kubernetes ``pkg/controller/statefulset/stateful_set_control.go`` (``updateStatefulSet``, the
monotonic path) and ``stateful_set_utils.go``:

- the set's pods are ``<set>-0`` .. ``<set>-<replicas-1>`` (``getPodName``), labelled
  ``statefulset.kubernetes.io/pod-name`` and ``apps.kubernetes.io/pod-index``, with
  ``hostname`` the pod's name and ``subdomain`` the set's ``serviceName`` (``newStatefulSetPod``);
- one step per sync, lowest ordinal first: a Failed or Succeeded pod is deleted (and made again
  on a later sync); a missing pod is created and the sync ends; a pod that is not Running and
  Ready ends the sync (``isRunningAndReady``): pod N+1 is created only once pod N is ready;
- surplus pods (ordinal >= replicas) go highest ordinal first, one per sync, and only while
  every other pod is Running and Ready;
- events as ``stateful_pod_control.go`` ``recordPodEvent``: ``SuccessfulCreate`` "create Pod
  db-0 in StatefulSet db successful", ``SuccessfulDelete``, ``FailedCreate``;
- status: replicas, readyReplicas, currentReplicas, updatedReplicas, availableReplicas,
  observedGeneration (no ControllerRevisions: one revision, so current = updated = replicas;
  ``minReadySeconds`` is not waited for; ``Parallel`` is treated as ``OrderedReady``).

Neighbours: ``controllers.common`` (pod helpers), ``controllers.registry`` (one Descriptor).
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.apiserver.view import View
from gpusched.cluster.controllers.base import WorkQueue, controller, itself
from gpusched.cluster.controllers.common import (create_from_template, delete_pod, is_ready,
                                                 is_running, is_terminal, is_terminating,
                                                 owned_pods, set_status)

COMPONENT = "statefulset-controller"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"

# The informers (stateful_set.go NewStatefulSetController): StatefulSets, and pods enqueue
# their controlling StatefulSet.
QUEUE = WorkQueue("StatefulSet", (itself("StatefulSet"), controller("Pod", "StatefulSet")))


def reconcile(view: View, changes: Changes | None = None) -> None:
    """Every StatefulSet, or (``changes``) those its informers enqueue (``QUEUE``)."""
    for sts in QUEUE.objects(view, changes):
        reconcile_one(view, sts)


def ordinal_of(sts: dict[str, Any], pod: dict[str, Any]) -> int | None:
    """``getOrdinal``: N of ``<set>-N``; None for a pod not named so."""
    prefix = f"{sts['metadata']['name']}-"
    name = str(pod["metadata"]["name"])
    suffix = name[len(prefix):] if name.startswith(prefix) else ""
    return int(suffix) if suffix.isdigit() else None


def _replicas(sts: dict[str, Any]) -> int:
    value = (sts.get("spec") or {}).get("replicas", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def reconcile_one(view: View, sts: dict[str, Any]) -> None:
    """``updateStatefulSet`` (OrderedReady): one creation or deletion per sync, then status."""
    by_ordinal = {}
    for pod in owned_pods(view, sts):
        ordinal = ordinal_of(sts, pod)
        if ordinal is not None:
            by_ordinal[ordinal] = pod
    want = _replicas(sts)
    if _step_up(view, sts, by_ordinal, want):
        _step_down(view, sts, by_ordinal, want)
    current = view.get("StatefulSet", sts["metadata"]["name"], sts["metadata"]["namespace"]) or sts
    set_status(view, current, _status(current, owned_pods(view, current)))


def _healthy(pod: dict[str, Any]) -> bool:
    return is_running(pod) and is_ready(pod) and not is_terminating(pod)


def _step_up(view: View, sts: dict[str, Any], pods: dict[int, dict[str, Any]], want: int) -> bool:
    """Ordinals 0..want-1 in order; True when every one exists and is Running and Ready."""
    for ordinal in range(want):
        pod = pods.get(ordinal)
        if pod is not None and is_terminal(pod) and not is_terminating(pod):
            _delete(view, sts, pod)
            return False
        if pod is None:
            _create(view, sts, ordinal)
            return False
        if not _healthy(pod):
            return False
    return True


def _step_down(view: View, sts: dict[str, Any], pods: dict[int, dict[str, Any]], want: int) -> None:
    """The highest surplus ordinal goes first, once every other pod is Running and Ready."""
    surplus = sorted((o for o in pods if o >= want), reverse=True)
    if not surplus:
        return
    doomed = pods[surplus[0]]
    if is_terminating(doomed) or not all(_healthy(p) for o, p in pods.items() if o != surplus[0]):
        return
    _delete(view, sts, doomed)


def _create(view: View, sts: dict[str, Any], ordinal: int) -> None:
    spec = sts.get("spec") or {}
    set_name = sts["metadata"]["name"]
    name = f"{set_name}-{ordinal}"
    patch = {"hostname": name}
    if spec.get("serviceName"):
        patch["subdomain"] = str(spec["serviceName"])
    create_from_template(view, sts, spec.get("template") or {}, name, COMPONENT,
                         {POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal)}, patch,
                         success_text=f"create Pod {name} in StatefulSet {set_name} successful",
                         failure_prefix=f"create Pod {name} in StatefulSet {set_name} failed error: ")


def _delete(view: View, sts: dict[str, Any], pod: dict[str, Any]) -> None:
    name = pod["metadata"]["name"]
    if delete_pod(view, pod, COMPONENT):
        view.record_event(sts, "SuccessfulDelete",
                          f"delete Pod {name} in StatefulSet {sts['metadata']['name']} successful",
                          "Normal", COMPONENT)


def _status(sts: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any]:
    """``computeReplicaStatus``: pods that exist and are not terminal; zero counts but
    ``replicas`` omitted, as the API omits them."""
    live = [p for p in pods if not is_terminal(p) and ordinal_of(sts, p) is not None]
    ready = sum(1 for p in live if is_ready(p))
    counts = {"readyReplicas": ready, "currentReplicas": len(live), "updatedReplicas": len(live),
              "availableReplicas": ready}
    return {"replicas": len(live), **{k: v for k, v in counts.items() if v},
            "observedGeneration": sts["metadata"].get("generation", 1)}
