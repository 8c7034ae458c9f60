"""Kueue's one reconciler for its job integrations (``pkg/controller/jobframework/reconciler.go``),
over a :class:`~gpusched.kueue.jobframework.Integration`: a queued owner (``kueue.x-k8s.io/
queue-name``; suspended at create by its webhook) gets its Workload (event ``CreatedWorkload``);
once the Workload is admitted the owner runs with its PodSets' info - the flavors' nodeLabels
and tolerations, the PodSet label, Workload annotation and topology gate - and is unsuspended
(event ``Started``: ``Admitted by clusterQueue <cq>``); when the Workload loses its admission
(evicted, preempted) a running owner is suspended again with its original templates (event
``Stopped``); a finished owner finishes its Workload (event ``FinishedWorkload``). A template
whose nodeSelector conflicts with a flavor's labels finishes the Workload with
``FailedToStart``.

Neighbours: ``jobs`` and ``jobsets`` (one :class:`JobReconciler` each), ``gpusched.kueue.
jobframework`` (the pure half), ``scheduler`` (admits).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.apiserver.view import View
from gpusched.cluster.controllers.base import WorkQueue
from gpusched.cluster.controllers.kueue.snapshot import condition, is_true
from gpusched.kueue import conditions as cond
from gpusched.kueue.jobframework import (PRIORITY_CLASS_LABEL, QUEUE_LABEL, Integration, finished, podset_infos,
                                         workload_for)


@dataclass(frozen=True)
class JobReconciler:
    """The reconciler of one integration: its kind's adapter, the work queue that enqueues its
    objects, and the component its events name."""

    integration: Integration
    queue: WorkQueue
    component: str

    def reconcile(self, view: View, changes: Changes | None = None) -> None:
        """The queued objects that ``queue`` enqueues (every one without ``changes``)."""
        for owner in self.queue.objects(view, changes):
            if ((owner.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL):
                self._sync(view, owner)

    def _sync(self, view: View, owner: dict[str, Any]) -> None:
        namespace = str((owner.get("metadata") or {}).get("namespace", "default"))
        wl = view.get("Workload", self.integration.workload_name(owner), namespace)
        done = finished(self.integration, owner)
        if wl is None:
            if done is None:
                self._create_workload(view, owner)
            return
        if is_true(wl, "Finished"):
            return
        if done is not None:
            self._finish(view, owner, wl, done)
            return
        admitted = bool((wl.get("status") or {}).get("admission")) and is_true(wl, "Admitted")
        suspended = bool((owner.get("spec") or {}).get("suspend"))
        if admitted and suspended:
            self._start(view, owner, wl)
        elif not admitted and not suspended:
            self._stop(view, owner, wl)

    def _priority(self, view: View, owner: dict[str, Any]) -> tuple[int, str | None]:
        """The Workload's priority: the WorkloadPriorityClass of ``kueue.x-k8s.io/priority-class``,
        else the integration's PriorityClass, else 0."""
        name = ((owner.get("metadata") or {}).get("labels") or {}).get(PRIORITY_CLASS_LABEL)
        if name:
            wpc = view.get("WorkloadPriorityClass", name)
            if wpc is not None:
                return int(wpc.get("value") or 0), name
        pc_name = self.integration.priority_class(owner)
        pc = view.get("PriorityClass", pc_name) if pc_name else None
        return (int(pc.get("value") or 0) if pc else 0), None

    def _create_workload(self, view: View, owner: dict[str, Any]) -> None:
        priority, wpc = self._priority(view, owner)
        body = workload_for(self.integration, owner, priority, wpc)
        write.create(view, body, owned=True)
        meta = body["metadata"]
        view.record_event(owner, "CreatedWorkload", f"Created Workload: {meta['namespace']}/{meta['name']}",
                          "Normal", self.component)

    def _start(self, view: View, owner: dict[str, Any], wl: dict[str, Any]) -> None:
        admission = (wl.get("status") or {}).get("admission") or {}
        infos = podset_infos(wl, lambda name: (view.get("ResourceFlavor", name) or {}).get("spec") or {})
        body, error = self.integration.run_with_podsets_info(owner, infos)
        if error:
            _set_finished(view, wl, cond.Condition("Finished", "True", "FailedToStart", error))
            return
        write.update(view, body)
        view.record_event(owner, "Started", f"Admitted by clusterQueue {admission.get('clusterQueue', '')}",
                          "Normal", self.component)

    def _stop(self, view: View, owner: dict[str, Any], wl: dict[str, Any]) -> None:
        evicted = condition(wl, "Evicted") or {}
        write.update(view, self.integration.restore_podsets_info(owner, (wl.get("spec") or {}).get("podSets") or []))
        view.record_event(owner, "Stopped", str(evicted.get("message") or "Not admitted by cluster queue"),
                          "Normal", self.component)

    def _finish(self, view: View, owner: dict[str, Any], wl: dict[str, Any], done: tuple[str, bool]) -> None:
        message, success = done
        _set_finished(view, wl, cond.finished(success, message))
        meta = wl["metadata"]
        view.record_event(owner, "FinishedWorkload",
                          f"Workload '{meta['namespace']}/{meta['name']}' is declared finished", "Normal",
                          self.component)


def _set_finished(view: View, wl: dict[str, Any], finished: cond.Condition) -> None:
    body = {**wl, "status": dict(wl.get("status") or {})}
    body["status"]["conditions"] = cond.set_condition(body["status"].get("conditions") or [], finished,
                                                      view.timestamp())
    write.update_status(view, body)
