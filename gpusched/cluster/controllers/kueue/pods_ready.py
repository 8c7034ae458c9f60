"""Kueue's ``waitForPodsReady`` on the embedded cluster (``pkg/controller/core/
workload_controller.go`` ``reconcileNotReadyTimeout``, ``jobframework/reconciler.go``'s
PodsReady condition), on the virtual clock; the rules are ``gpusched.kueue.pods_ready``.

For every admitted Workload whose Job or JobSet runs (unsuspended):

1. its ``PodsReady`` condition from the Job's counts (WaitForStart, Started, WaitForRecovery,
   Recovered);
2. when its pods are not ready by the deadline (``timeout`` after Admitted, ``recoveryTimeout``
   after a failure), it is evicted: Evicted True ``PodsReadyTimeout``, QuotaReserved False
   ``Pending``, Admitted False ``NoReservation``, Requeued False ``PodsReadyTimeout`` (each with
   ``Exceeded the PodsReady timeout <ns>/<name>``), its admission cleared, ``requeueState``
   counted with ``requeueAt`` = now + the back-off; the Job integration then suspends the Job
   (its pods go, the quota is free). Past ``backoffLimitCount`` it is deactivated instead
   (``spec.active: false``, Evicted ``DeactivatedDueToRequeuingLimitExceeded``);
3. at ``requeueAt``: Requeued True ``BackoffFinished`` (``The workload backoff was finished``)
   and the Workload queues again (Kueue's scheduler skips it until then).

The configuration is Kueue's own: ``waitForPodsReady`` of the Configuration in the ConfigMap
``kueue-system/kueue-manager-config`` (key ``controller_manager_config.yaml``), Kueue's defaults
when there is none; a Configuration that does not parse is logged and the defaults are used.

:func:`due` is the Workload timer (``controllers.registry.TIMED``): the eviction deadline or
``requeueAt``. Neighbours: ``scheduler`` (admits; skips backing-off Workloads), ``jobs``.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import yaml

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.view import View
from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.apiserver.store import seconds_of
from gpusched.cluster.apiserver.view import Key
from gpusched.cluster.controllers.base import Informer, WorkQueue, itself
from gpusched.cluster.controllers.kueue.configuration import CONFIG_KEY, CONFIG_NAME, CONFIG_NAMESPACE
from gpusched.cluster.controllers.kueue.status import set_status
from gpusched.cluster.controllers.kueue.snapshot import condition, is_true
from gpusched.errors import GpuschedError
from gpusched.kueue import conditions as cond
from gpusched.kueue import pods_ready as rules
from gpusched.kueue.jobframework import Integration
from gpusched.kueue.jobs import JOB
from gpusched.kueue.jobsets import JOBSET

log = logging.getLogger(__name__)
COMPONENT = "kueue-workload-controller"
INTEGRATIONS: dict[str, Integration] = {integration.kind: integration for integration in (JOB, JOBSET)}


def _owned_workloads(kind: str) -> Informer:
    """A Job or JobSet change enqueues the Workload it owns (its readiness changed)."""
    def handler(changes: Changes, keys: list[Key]) -> list[Key]:
        out: list[Key] = []
        for key in keys:
            uid = ((changes.body(key) or {}).get("metadata") or {}).get("uid")
            if uid:
                out.extend(k for k in changes.view.dependents(str(uid)) if k[0] == "Workload")
        return out
    return Informer(kind, handler)


# A Workload (its own change or its timer), the Job or JobSet that owns it; Kueue's ConfigMap
# re-checks every Workload.
QUEUE = WorkQueue("Workload", (itself("Workload"), *(_owned_workloads(kind) for kind in INTEGRATIONS)),
                  frozenset({"ConfigMap"}), pod_creator=False)


def config(view: View) -> rules.PodsReadyConfig:
    """``waitForPodsReady`` of Kueue's ConfigMap (its defaults without one)."""
    body = view.get("ConfigMap", CONFIG_NAME, CONFIG_NAMESPACE)
    text = ((body or {}).get("data") or {}).get(CONFIG_KEY)
    return _parsed(str(text)) if text else rules.PodsReadyConfig()


@functools.lru_cache(maxsize=16)
def _parsed(text: str) -> rules.PodsReadyConfig:
    """The Configuration text's waitForPodsReady, parsed once per text (every Workload's timer
    asks for it)."""
    try:
        loaded = yaml.safe_load(text)
        return rules.config_from(loaded if isinstance(loaded, dict) else None)
    except (yaml.YAMLError, GpuschedError, TypeError, ValueError, AttributeError) as err:
        log.warning("ConfigMap %s/%s: %s: %s; waitForPodsReady keeps Kueue's defaults",
                    CONFIG_NAMESPACE, CONFIG_NAME, CONFIG_KEY, err)
        return rules.PodsReadyConfig()


def _owner_ready(view: View, wl: dict[str, Any]) -> bool | None:
    """Whether the Workload's Job or JobSet has its pods ready (None: no running owner)."""
    meta = wl.get("metadata") or {}
    owner = next((r for r in meta.get("ownerReferences") or () if r.get("kind") in INTEGRATIONS), None)
    if owner is None:
        return None
    body = view.get(str(owner["kind"]), str(owner.get("name", "")), str(meta.get("namespace", "default")))
    if body is None or (body.get("spec") or {}).get("suspend"):
        return None
    return INTEGRATIONS[str(owner["kind"])].pods_ready(body)


def _admitted(wl: dict[str, Any]) -> bool:
    return bool((wl.get("status") or {}).get("admission")) and is_true(wl, "Admitted") \
        and not is_true(wl, "Finished")


def seconds(stamp: str) -> float:
    """A condition's or requeueAt's time on the cluster clock (0 when absent or unreadable)."""
    try:
        return seconds_of(stamp) if stamp else 0.0
    except (GpuschedError, ValueError):
        return 0.0


def _deadline(cfg: rules.PodsReadyConfig, wl: dict[str, Any]) -> float | None:
    admitted = condition(wl, "Admitted") or {}
    ready = condition(wl, "PodsReady")
    return rules.not_ready_deadline(cfg, seconds(str(admitted.get("lastTransitionTime", ""))), ready,
                                    seconds(str((ready or {}).get("lastTransitionTime", ""))))


def _requeue_at(wl: dict[str, Any]) -> float | None:
    at = ((wl.get("status") or {}).get("requeueState") or {}).get("requeueAt")
    return seconds(str(at)) if at else None


def due(view: View, wl: dict[str, Any]) -> float | None:
    """The Workload's next waitForPodsReady time: its requeueAt, or its eviction deadline."""
    cfg = config(view)
    if not cfg.enabled:
        return None
    at = _requeue_at(wl)
    if at is not None:
        return at
    return _deadline(cfg, wl) if _admitted(wl) else None




def _evict(view: View, cfg: rules.PodsReadyConfig, wl: dict[str, Any]) -> None:
    meta = wl["metadata"]
    message = rules.timeout_message(str(meta.get("namespace", "default")), str(meta["name"]))
    state = dict((wl.get("status") or {}).get("requeueState") or {})
    count = int(state.get("count") or 0) + 1
    no_reservation = cond.Condition("Admitted", "False", "NoReservation", "The workload has no reservation")
    if cfg.backoff_limit is not None and count > cfg.backoff_limit:
        body = {**wl, "spec": {**(wl.get("spec") or {}), "active": False}}
        write.update(view, body)
        wl = view.get("Workload", str(meta["name"]), str(meta.get("namespace", "default"))) or body
        set_status(view, wl, cond.evicted("DeactivatedDueToRequeuingLimitExceeded", rules.DEACTIVATED_MESSAGE),
             cond.pending("Pending", rules.DEACTIVATED_MESSAGE), no_reservation, admission=None)
        view.record_event(wl, "EvictedDueToDeactivatedDueToRequeuingLimitExceeded",
                          rules.DEACTIVATED_MESSAGE, "Normal", COMPONENT)
        return
    wait = rules.backoff_seconds(count, cfg.backoff_base, cfg.backoff_max)
    requeue = {"count": count, "requeueAt": view.timestamp(view.now() + wait)}
    set_status(view, wl, cond.evicted("PodsReadyTimeout", message), cond.pending("Pending", message),
         no_reservation, cond.Condition("Requeued", "False", "PodsReadyTimeout", message),
         admission=None, requeueState=requeue)
    view.record_event(wl, "EvictedDueToPodsReadyTimeout", message, "Normal", COMPONENT)


def _sync(view: View, cfg: rules.PodsReadyConfig, wl: dict[str, Any]) -> None:
    at = _requeue_at(wl)
    if at is not None and view.now() >= at:
        state = {k: v for k, v in ((wl.get("status") or {}).get("requeueState") or {}).items()
                 if k != "requeueAt"}
        set_status(view, wl, cond.requeued("BackoffFinished", rules.BACKOFF_FINISHED), requeueState=state)
        return
    if not _admitted(wl):
        return
    ready = _owner_ready(view, wl)
    if ready is None:
        return
    wanted = rules.pods_ready_condition(ready, condition(wl, "PodsReady"))
    current = condition(wl, "PodsReady") or {}
    if (current.get("status"), current.get("reason")) != (wanted.status, wanted.reason):
        set_status(view, wl, wanted)
        wl = view.get("Workload", wl["metadata"]["name"], wl["metadata"].get("namespace", "default")) or wl
    deadline = _deadline(cfg, wl)
    if deadline is not None and view.now() >= deadline:
        _evict(view, cfg, wl)


def backing_off(view: View, wl: dict[str, Any]) -> bool:
    """Whether Kueue's scheduler leaves ``wl`` alone for now (its requeueAt is ahead)."""
    at = _requeue_at(wl)
    return at is not None and view.now() < at


def reconcile(view: View, changes: Changes | None = None) -> None:
    """The Workloads ``QUEUE`` enqueues (every one without ``changes``)."""
    workloads = QUEUE.objects(view, changes)
    if not workloads:
        return
    cfg = config(view)
    if not cfg.enabled:
        return
    for wl in workloads:
        _sync(view, cfg, wl)
