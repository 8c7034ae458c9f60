"""``Cluster``: the facade the CLI and the API server drive, one method per command.

Every mutating method is one store transaction (``BEGIN IMMEDIATE``): take the kept view (brought
up to what other processes committed: ``PRAGMA data_version``, ``apiserver.refresh``), change
it, settle (controllers, kubelet, scheduler, until nothing changes at the current virtual time),
write back, commit. Any error rolls everything back; ``apply_each`` (kubectl apply) answers a
refused document in its place and settles once after the last one. Reads (``get``, ``events``,
``explain``) never settle, nor does a cluster whose ``settles`` is False (``serve``'s API
process: its controller process settles what it commits, ``server.settler``).

``advance(s)`` steps the virtual clock through the timed events in time order, settling at each:
the one loop of ``cluster.clock.loop``, which a replay runs too. Settles run on work queues
(``cluster.clock.settle``), so a write costs what it changes; only the first settle on a view
loaded from the store is a full pass (an informer's resync). The timer heap is kept with the
view between commands (``serve`` advances every 0.25 s; a CLI command that waits follows the
wall clock, ``cluster.clock.wall``).

Neighbours: ``apiserver`` (state, the write path), ``controllers``, ``kubelet``,
``scheduling``, ``clock``; used by ``cli`` and ``server``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Sequence

import copy
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from gpusched.cluster.apiserver import refresh
from gpusched.cluster.apiserver.store import DEFAULT_EVENT_TTL, Store, default_state_path
from gpusched.cluster.apiserver.view import View, object_namespace
from gpusched.errors import GpuschedError, NotFoundError, UsageError
from gpusched.objects.kinds import KindInfo, resolve_kind
from gpusched.objects.selectors import parse_field_selector, parse_selector, selected
from gpusched.objects.types import Taint

if TYPE_CHECKING:   # the control plane (controllers, scheduler, NumPy) is imported where it is
    from gpusched.cluster.clock.timers import Timeline   # used: a read loads store and view only

@dataclass(frozen=True, slots=True)
class ApplyOutcome:
    kind: str
    name: str
    namespace: str
    action: str      # created | configured | unchanged
    warnings: tuple[str, ...] = ()   # fieldValidation=Warn findings: 'unknown field "spec.x"'


class _RolledBack(Exception):
    """Ends a dry-run write: the transaction rolls back, the caller sees success."""


def qualified_plural(info: KindInfo) -> str:
    """``pods``, ``deployments.apps``: how kubectl names a resource in messages."""
    return f"{info.plural}.{info.group}" if info.group else info.plural


def qualified_singular(info: KindInfo) -> str:
    return f"{info.singular}.{info.group}" if info.group else info.singular


def _list_namespace(info: KindInfo, namespace: str | None, all_namespaces: bool) -> str | None:
    """The namespace ``get`` lists: ``""`` for cluster-scoped kinds, None for every namespace."""
    if not info.namespaced:
        return ""
    return None if all_namespaces else (namespace or "default")


def _named(info: KindInfo, items: list[dict[str, Any]], names: Sequence[str]) -> list[dict[str, Any]]:
    """``items`` called ``names``, in that order; the first missing name is NotFound."""
    by_name = {(b.get("metadata") or {}).get("name"): b for b in items}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise NotFoundError(qualified_plural(info), missing[0])
    return [by_name[n] for n in names]


def _applied(view: View, manifest: Any, field_validation: str) -> ApplyOutcome:
    from gpusched.cluster.apiserver import write
    kind, name, ns, action, warnings = write.apply(view, manifest, field_validation)
    return ApplyOutcome(kind, name, ns, action, tuple(warnings))


class Cluster:
    """See the module docstring."""

    def __init__(self, store: Store, start: float | None = None) -> None:
        self.store = store
        self.start = start          # where a new or reset state's clock begins
        # True: the clock stands still between commands (the CLI, serve --virtual-clock), so a
        # command comes after every back-off that began before it (scheduling.host.end_backoffs);
        # serve in real time sets False: its clock runs between requests.
        self.frozen_clock = True
        self._view: View | None = None
        self._version: int | None = None
        self._resynced: View | None = None    # the view every controller has fully passed over
        self._timeline: Timeline | None = None   # the kept timer heap of ``_timeline_view``
        self._timeline_view: View | None = None
        self.dry_run = False     # True: every write runs (validation, admission, settle), then rolls back
        self.settles = True      # False: serve's API process; server.settler's process settles

    @classmethod
    def open(cls, path: str | None = None, start: float | None = None,
             event_ttl: float = DEFAULT_EVENT_TTL) -> "Cluster":
        """The cluster of a state file; ``start`` (seconds on the cluster clock, see
        ``store.parse_start``) is where a new file's clock begins (default: ``EPOCH``);
        ``event_ttl``: how long an Event is kept after its last write (``--event-ttl``)."""
        return cls(Store(default_state_path(path), start=start, event_ttl=event_ttl), start)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- transactions ------------------------------------------------------------------------

    def _load(self) -> View:
        version = self.store.data_version()
        if self._view is None or self._version != version:   # another process committed
            self._view = refresh.caught_up(self._view, self.store, self.settles)
            self._version = version
        return self._view

    @contextmanager
    def _write(self, settle: bool = True) -> Iterator[View]:
        from gpusched.cluster.scheduling import host as scheduling_host
        from gpusched.cluster.controllers.nodes import bootstrap
        settle = settle and self.settles
        try:
            with self.store.immediate():
                view = self._load()
                if self.frozen_clock and self.settles:
                    scheduling_host.end_backoffs(view)
                if settle:
                    bootstrap.reconcile(view)    # the furniture exists before the command runs
                yield view
                if settle:
                    self._settle(view, self._fired())
                    view.settled_rv = view.rv       # what serve's tests wait for (settled_rv)
                if self.dry_run:
                    raise _RolledBack()
                view.write(self.store)
                if not self.settles:
                    refresh.drop_marks(view)
        except _RolledBack:
            self._view = None
        except BaseException:
            self._view = None
            raise

    @contextmanager
    def _read(self) -> Iterator[View]:
        if not self._furnished():
            self.settle()        # a fresh state file: the system namespaces etc. exist from the start
        with self.store.reading():
            yield self._load()

    def _furnished(self) -> bool:
        with self.store.reading():
            return self._load().get("Namespace", "kube-system") is not None

    # ---- settle and time ---------------------------------------------------------------------

    def _fired(self) -> set[Any] | None:
        """What a command's settle starts from: None (every controller's full pass, an
        informer's resync) on a view just loaded from the store; then, while this process keeps
        the view, an empty set: only what changed since the last settle is reconciled
        (``cluster.clock.settle.settle_changed``), so a write costs what it changes."""
        return None if self._resynced is not self._view else set()

    def _settle(self, view: View, fired: set[Any] | None = None) -> None:
        """Run the controllers, then the scheduler, until nothing changes. ``fired`` None: every
        controller's full pass; else the keys whose timers fired now: each controller gets only
        those and what changed since its previous run (see ``cluster.clock.settle``)."""
        from gpusched.cluster.clock import settle as settling
        if fired is not None:
            settling.settle_changed(view, fired)
            return
        settling.settle_full(view)
        self._resynced = view

    def _timeline_for(self, view: View) -> Timeline:
        """The timer heap of ``view``: built once per loaded view, then kept and synced with
        what changed since (``Timeline.sync``), instead of re-derived at every advance."""
        from gpusched.cluster.controllers.registry import TIMED
        from gpusched.cluster.clock.timers import Timeline
        kept = self._timeline
        if kept is None or self._timeline_view is not view or kept.takes != view.touched_takes:
            kept = self._timeline = Timeline.build(view, TIMED)   # new view, or another taker
            self._timeline_view = view
        else:
            kept.sync(view)
        return kept

    def settle(self) -> None:
        with self._write():
            pass

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise UsageError(f"cannot advance the clock by a negative duration ({seconds}s)")
        with self._write() as view:
            self._run_clock(view, float(seconds))

    def _run_clock(self, view: View, seconds: float) -> None:
        self._settle(view, self._fired())
        from gpusched.cluster.clock import loop
        loop.run(view, self._timeline_for(view), self._settle, view.clock + seconds)

    def follow_wall(self, now: float, since: float) -> float:
        """Advance by the wall time up to ``now`` since the later of this wait's start (``since``)
        and the clock's last following (by any process); the seconds (``cluster.clock.wall``)."""
        from gpusched.cluster.apiserver import write
        from gpusched.cluster.clock.wall import WALL_KEY
        with self._write() as view:
            last = float(self.store.read_meta(WALL_KEY).get(WALL_KEY, since))
            seconds = max(0.0, now - max(last, since))
            self._run_clock(view, seconds)
            write.record_meta(self.store, {WALL_KEY: repr(max(now, last))})
        return seconds

    def now(self) -> float:
        with self._read() as view:
            return view.now()

    def timestamp(self, t: float | None = None) -> str:
        with self._read() as view:
            return view.timestamp(t)

    def reset(self) -> None:
        from gpusched.cluster.apiserver import write
        with self._write(settle=False) as view:
            write.reset(view, self.store, float(self.start or 0.0))
        self._view = None

    # ---- objects -----------------------------------------------------------------------------

    def apply(self, manifests: list[Any], field_validation: str = "Strict") -> list[ApplyOutcome]:
        """Decode, validate, admit and store every document as one transaction (all or nothing).
        ``field_validation`` is kubectl's ``--validate`` as the API's mode: Strict, Warn, Ignore."""
        with self._write() as view:
            return [_applied(view, manifest, field_validation) for manifest in manifests]

    def apply_each(self, manifests: list[Any],
                   field_validation: str = "Strict") -> list[ApplyOutcome | GpuschedError]:
        """kubectl apply: each document on its own (a refused one answered by its error in its
        place), settled once after the last, as a cluster's controllers and scheduler catch up
        after kubectl's writes; admission sees what the documents before wrote."""
        results: list[ApplyOutcome | GpuschedError] = []
        with self._write() as view:
            for manifest in manifests:
                try:
                    results.append(_applied(view, manifest, field_validation))
                except GpuschedError as error:     # refused before anything was stored
                    results.append(error)
        return results

    def apply_preview(self, manifest: Any, field_validation: str = "Strict") -> ApplyOutcome:
        """What ``apply`` would say for one manifest (``--dry-run=client``): decoded, validated,
        compared with the stored object, nothing admitted or written."""
        from gpusched.cluster.apiserver.apply import LAST_APPLIED, validated
        from gpusched.cluster.apiserver.store import dumps

        body, warnings = validated(manifest, field_validation)
        info = resolve_kind(str(body.get("kind", "")))
        name = str((body.get("metadata") or {}).get("name", ""))
        ns = object_namespace(info.kind, body)
        with self._read() as view:
            old = view.get(info.kind, name, ns)
        if old is None:
            return ApplyOutcome(info.kind, name, ns, "created", tuple(warnings))
        last = ((old.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
        return ApplyOutcome(info.kind, name, ns, "unchanged" if last == dumps(manifest.obj) else "configured",
                            tuple(warnings))

    def delete_many(self, kind: str, targets: Sequence[tuple[str, str]],
                    grace: int | None = None) -> list[str]:
        """Delete (name, namespace) pairs of one kind in one transaction; kubectl's lines
        (``force deleted`` when ``grace`` is 0, as kubectl's PrintObj)."""
        info = resolve_kind(kind)
        with self._write() as view:
            for name, namespace in targets:
                self._delete(view, info, name, namespace or "default", grace)
        verb = "force deleted" if grace == 0 else "deleted"
        return [f'{qualified_singular(info)} "{name}" {verb}' for name, _ in targets]

    def get(self, kind: str, names: Sequence[str] = (), namespace: str | None = "default",
            all_namespaces: bool = False, selector: str = "",
            field_selector: str = "") -> list[dict[str, Any]]:
        info = resolve_kind(kind)
        label_sel = parse_selector(selector) if selector else None
        field_sel = parse_field_selector(field_selector) if field_selector else None
        ns = _list_namespace(info, namespace, all_namespaces)
        with self._read() as view:
            items = view.list_events(ns) if info.kind == "Event" else view.list(info.kind, ns)
            if names:
                items = _named(info, items, names)
            return copy.deepcopy(selected(items, label_sel, field_sel))

    def delete(self, kind: str, name: str, namespace: str | None = "default",
               grace: int | None = None) -> str:
        """Delete one object; ``grace`` is DeleteOptions.gracePeriodSeconds (None: the pod's
        own). The line is kubectl's: ``pod "x" deleted``, ``force deleted`` when grace is 0."""
        info = resolve_kind(kind)
        with self._write() as view:
            self._delete(view, info, name, namespace or "default", grace)
        verb = "force deleted" if grace == 0 else "deleted"
        return f'{qualified_singular(info)} "{name}" {verb}'

    def _delete(self, view: View, info: KindInfo, name: str, namespace: str,
                grace: int | None = None) -> None:
        from gpusched.cluster.controllers.common import delete_pod
        from gpusched.cluster.controllers.nodes.node_lifecycle import collect_orphans
        from gpusched.cluster.apiserver import write
        ns = namespace if info.namespaced else ""
        body = view.get(info.kind, name, ns)
        if body is None:
            raise NotFoundError(qualified_plural(info), name)
        if info.kind == "Pod":
            write.admit_delete(view, body)
            delete_pod(view, body, grace=grace)
            return
        write.delete(view, info.kind, name, ns)
        if info.kind == "Node":
            collect_orphans(view)     # before a NodePool brings a node of that name back
        if info.kind == "Namespace":
            for (kind, obj_ns, obj_name), obj in sorted(view.objects.items()):
                if obj_ns == name:
                    if kind == "Pod":
                        delete_pod(view, obj, grace=grace)
                    else:
                        write.delete(view, kind, obj_name, obj_ns)

    def delete_manifests(self, manifests: list[Any], grace: int | None = None) -> list[str]:
        lines = []
        verb = "force deleted" if grace == 0 else "deleted"
        with self._write() as view:
            for manifest in manifests:
                obj = manifest.obj
                info = resolve_kind(str(obj.get("kind", "")))
                name = str((obj.get("metadata") or {}).get("name", ""))
                self._delete(view, info, name, object_namespace(info.kind, obj), grace)
                lines.append(f'{qualified_singular(info)} "{name}" {verb}')
        return lines

    # ---- nodes and labels --------------------------------------------------------------------

    def label(self, kind: str, name: str, changes: dict[str, str | None],
              namespace: str | None = None, overwrite: bool = False) -> str:
        from gpusched.cluster.nodes import label
        info = resolve_kind(kind)
        with self._write() as view:
            return label(view, info, name, changes, namespace or "default", overwrite)

    def taint(self, node: str, add: list[Taint], remove: list[tuple[str, str | None]],
              overwrite: bool = False) -> str:
        from gpusched.cluster.nodes import taint
        with self._write() as view:
            return taint(view, node, add, remove, overwrite)

    def cordon(self, node: str) -> str:
        from gpusched.cluster.nodes import cordon
        with self._write() as view:
            return cordon(view, node, True)

    def uncordon(self, node: str) -> str:
        from gpusched.cluster.nodes import cordon
        with self._write() as view:
            return cordon(view, node, False)

    def set_ready(self, node: str, status: str) -> str:
        """``gpusched condition node NAME Ready=STATUS`` (``cluster.nodes.set_ready``)."""
        from gpusched.cluster.nodes import set_ready
        with self._write() as view:
            return set_ready(view, node, status)

    def drain(self, node: str, ignore_daemonsets: bool = False, delete_emptydir_data: bool = False,
              force: bool = False) -> list[str]:
        """kubectl drain: cordon, then evict. A refusal raises ``DrainError`` (its ``lines`` are
        what was printed before) after the cordon and the evictions done so far are committed."""
        from gpusched.cluster.nodes import DrainError, drain
        with self._write() as view:
            lines, error = drain(view, node, ignore_daemonsets, delete_emptydir_data, force,
                                 self._settle)
        if error is not None:
            raise DrainError(str(error), lines)
        return lines

    def scale(self, kind: str, name: str, replicas: int, namespace: str | None = "default") -> str:
        """kubectl scale: ``spec.replicas`` of a Deployment/ReplicaSet, ``spec.parallelism`` of
        a Job."""
        from gpusched.cluster.apiserver import write
        from gpusched.objects.validation import validate_object
        info = resolve_kind(kind)
        if info.kind not in ("Deployment", "ReplicaSet", "Job"):
            raise UsageError(f"cannot scale a {info.kind}: only deployments, replicasets and "
                             "jobs scale")
        if replicas < 0:
            raise UsageError("The --replicas=COUNT flag is required, and COUNT must be greater "
                             "than or equal to 0")
        field = "parallelism" if info.kind == "Job" else "replicas"
        with self._write() as view:
            body = view.copy(info.kind, name, namespace or "default")
            if body is None:
                raise NotFoundError(qualified_plural(info), name)
            body.setdefault("spec", {})[field] = int(replicas)
            write.update(view, validate_object(body), subresource="scale")   # objects.limits
        return f"{qualified_singular(info)}/{name} scaled"

    # ---- reading -----------------------------------------------------------------------------

    def events(self, namespace: str | None = "default") -> list[dict[str, Any]]:
        with self._read() as view:
            return copy.deepcopy(view.list_events(namespace))

    def node_devices(self, node: str) -> Any:
        from gpusched.cluster.scheduling.cache import node_devices
        with self._read() as view:
            if view.get("Node", node) is None:
                raise NotFoundError("nodes", node)
            return node_devices(view, node)

    def explain(self, name: str, namespace: str = "default", kind: str = "Pod") -> Any:
        """``scheduler.explain.Explanation`` of a pod, or of a workload (Deployment, ReplicaSet,
        Job, DaemonSet: its ``cluster.explain_workload`` facts, then its oldest Pending pod)."""
        import dataclasses

        from gpusched.cluster import explain_workload
        from gpusched.cluster.explain_facts import explain_pod
        from gpusched.scheduler.explain import Explanation
        with self._read() as view:
            if kind == "Pod":
                pod = view.get("Pod", name, namespace)
                if pod is None:
                    raise NotFoundError("pods", name)
                return explain_pod(view, pod)
            obj = view.get(kind, name, namespace)
            if obj is None:
                raise NotFoundError(qualified_plural(resolve_kind(kind)), name)
            facts = tuple(explain_workload.workload_facts(view, obj))
            pod = explain_workload.pending_pod(view, obj)
            ref = f"{kind.lower()}/{name}"
            if pod is None:
                return Explanation("", "", (), (), facts, workload=ref)
            result = explain_pod(view, pod)
            return dataclasses.replace(result, facts=facts + result.facts, workload=ref)

    def whatif_pods(self, manifests: list[Any], namespace: str = "default") -> list[Any]:
        """``cluster.whatif_pod.answer`` for the pods of ``manifests`` on the state as it is now,
        in a write transaction that is always rolled back: nothing is stored, the
        resourceVersion and the change feed stay as they were."""
        from gpusched.cluster import whatif_pod
        from gpusched.cluster.explain_facts import explain_pod
        if not self._furnished():
            self.settle()       # a fresh state file gets its namespaces first, as explain's read does
        saved, self.dry_run = self.dry_run, True
        try:
            with self._write(settle=False) as view:
                answers = whatif_pod.answer(view, manifests, namespace, explain_pod)
        finally:
            self.dry_run = saved
        return answers

    def write(self, fn: Any, settle: bool = True) -> Any:
        """Run ``fn(view)`` as one write transaction (settled unless told otherwise); returns
        its result. The API server's writes (``apiserver.api_ops``) go through here."""
        with self._write(settle) as view:
            return fn(view)

    def read(self, fn: Any) -> Any:
        """Run ``fn(view)`` in a read transaction; ``fn`` must not change the view."""
        with self._read() as view:
            return fn(view)

    def writing(self, settle: bool = True) -> AbstractContextManager[View]:
        """``with cluster.writing() as view:`` one write transaction, as :meth:`write`."""
        return self._write(settle)

    def reading(self) -> AbstractContextManager[View]:
        """``with cluster.reading() as view:`` one read transaction, as :meth:`read`."""
        return self._read()

    def delete_in(self, view: View, info: KindInfo, name: str, namespace: str,
                  grace: int | None = None) -> None:
        """``delete`` inside a caller's transaction (see :meth:`write`)."""
        self._delete(view, info, name, namespace, grace)

    def view(self) -> View:
        """The current in-memory view (tests compare it with a reload from disk)."""
        with self._read() as view:
            return view
