"""The web page's per-node index, derived from one view and reused until the view changes.

At 1,000 nodes and 20,000 pods a full scheduler snapshot (``cluster.scheduling.build_snapshot``:
``pod_info`` per pod, the device plugin's advertisement per node) costs seconds of CPU, and the
page needs far less: each node's advertised devices and which pod holds each. :class:`WebIndex`
keeps two caches across reads, so a summary after a change costs what changed:

- per node, keyed by (name, resourceVersion, device-input fingerprint): its ``NodeDevices``
  rows as advertised (``cluster.kubelet.device_inputs.node_devices_for``, no holders), pool and
  model;
- per pod, keyed by (uid, resourceVersion): a :class:`PodEntry` read straight from the body
  (phase, node, priority, the devices and GPU indices of its assignment annotations, its
  fractional share).

Holders come from the assignment annotations the scheduler wrote at bind, read by
``objects.assignment.assignment_of`` (the parse the kubelet's reads share): a device is held by
the unfinished pod that names it, a fractional share (``gpusched.io/gpu-milli``) sits on the GPU
index it names, and a malformed record holds nothing. The result, an
:class:`Index`, is cached by (resourceVersion, clock, event counter) and holds the nodes in display
order (by group, then name with numbers compared as numbers)
with their cells, usage, namespaces, phases and a search text, grouped by
(``gpusched.io/nodepool`` label, GPU model).

Neighbours: ``cluster.scheduling`` (``node_devices_for``), ``gpusched.devices`` (rows and
annotations), ``server.web.summary`` (usage arithmetic); read by ``server.web.query``.
"""

from __future__ import annotations

import functools
import heapq
import json
import re
import threading
from operator import itemgetter
from dataclasses import dataclass
from typing import Any

from gpusched.cluster.kubelet.device_inputs import device_inputs, node_devices_for
from gpusched.devices.node import DeviceRow
from gpusched.devices.nodepool import POOL_LABEL
from gpusched.objects.assignment import assignment_of
from gpusched.objects.node import node_info
from gpusched.objects.types import RESOURCE_GPU_MILLI
from gpusched.server.web.index_dra import carved_rows, with_dra_devices
from gpusched.server.web.summary import fragmentation, gpu_usage
from gpusched.objects.digits import is_digits

NO_POOL = "(no pool)"
TERMINAL = frozenset({"Succeeded", "Failed"})
RECENT_EVENTS = 30


@dataclass(frozen=True)
class PodEntry:
    """What the page shows of one pod (see the module docstring)."""

    key: str                     # namespace/name
    uid: str
    namespace: str
    name: str
    phase: str
    node: str
    priority: int
    scheduler: str
    message: str                 # PodScheduled=False message (pending pods)
    devices: tuple[str, ...]     # assigned device IDs
    gpus: tuple[int, ...]        # assigned GPU indices
    milli: int                   # fractional share in milli-GPU, 0 for device holders
    carved: tuple[tuple[int, str, str], ...] = ()   # DRA MIG devices: (GPU, UUID, profile)

    @property
    def holds(self) -> bool:
        return bool(self.node) and self.phase not in TERMINAL


@dataclass(frozen=True)
class NodeEntry:
    """One node's static part (devices as advertised) and its cells with holders."""

    name: str
    pool: str
    model: str
    gpus: int
    unschedulable: bool
    usage: tuple[float, ...]
    cells: tuple[dict[str, Any], ...]
    namespaces: frozenset[str]
    phases: frozenset[str]
    search: str                  # lower-case text the search box matches
    counts: tuple[tuple[str, str, int], ...]   # (namespace, phase, pods) of the pods on it

    @property
    def group(self) -> str:
        return f"{self.pool}/{self.model or 'no GPU'}"


@dataclass(frozen=True)
class Index:
    """The page's data at one resourceVersion (see the module docstring)."""

    resource_version: str
    clock: float
    events_seen: int             # the view's event counter (Events change no resourceVersion)
    nodes: tuple[NodeEntry, ...]
    pods: tuple[PodEntry, ...]
    events: tuple[dict[str, Any], ...]
    groups: tuple[dict[str, Any], ...]     # per (pool, model): counts, usage, phases by namespace
    allocation: float
    fragmentation: float


def _scheduled_message(status: dict[str, Any]) -> str:
    for condition in status.get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == "PodScheduled":
            return str(condition.get("message") or "")
    return ""


def _priority(spec: dict[str, Any]) -> int:
    priority = spec.get("priority")
    return priority if isinstance(priority, int) else 0


def pod_entry(pod: dict[str, Any]) -> PodEntry:
    """A pod's :class:`PodEntry`, read from its body."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
    held = assignment_of(pod)
    return PodEntry(
        key=f"{namespace}/{name}", uid=str(meta.get("uid") or ""), namespace=namespace, name=name,
        phase=str(status.get("phase") or "Pending"), node=str(spec.get("nodeName") or ""),
        priority=_priority(spec),
        scheduler=str(spec.get("schedulerName") or ""), message=_scheduled_message(status),
        devices=held.device_ids, gpus=held.gpu_indices,
        milli=held.milli if held.resource == RESOURCE_GPU_MILLI else 0)


@dataclass(frozen=True)
class _Static:
    """A node's advertisement: (name, pool, model, unschedulable, rows without holders)."""

    name: str
    pool: str
    model: str
    unschedulable: bool
    rows: tuple[DeviceRow, ...]
    compute_slices: int = 0          # per GPU, for a DynamicMIG GPU's free slices


class WebIndex:
    """The caches of the module docstring; ``index(view)`` returns the current :class:`Index`.
    Safe to call from several threads (one lock; the server calls it on its cluster worker)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, tuple[tuple[str, Any], _Static]] = {}
        self._pods: dict[str, tuple[str, PodEntry]] = {}
        self._entries: dict[str, tuple[_Static, tuple[PodEntry, ...], NodeEntry]] = {}
        self._index: Index | None = None

    def index(self, view: Any) -> Index:
        with self._lock:
            key = (str(view.rv), float(view.now()), int(view.event_counter))
            cached = self._index
            if cached is not None and (cached.resource_version, cached.clock, cached.events_seen) == key:
                return cached
            pods = self._pod_entries(view)
            nodes = self._node_entries(self._statics(view), pods)
            usage = [u for node in nodes for u in node.usage]
            self._index = Index(key[0], key[1], key[2], nodes, pods, _recent_events(view),
                                _groups(nodes), sum(usage) / len(usage) if usage else 0.0,
                                fragmentation(usage))
            return self._index

    def _pod_entries(self, view: Any) -> tuple[PodEntry, ...]:
        """Every pod's entry; unchanged pods (same uid and resourceVersion) keep theirs."""
        cache = self._pods
        fresh: dict[str, tuple[str, PodEntry]] = {}
        for pod in view.list("Pod"):
            meta = pod["metadata"]
            uid, rv = meta.get("uid") or meta.get("name"), meta.get("resourceVersion")
            cached = cache.get(uid)
            fresh[uid] = cached if cached is not None and cached[0] == rv else \
                (rv, with_dra_devices(view, pod, pod_entry(pod)))
        self._pods = fresh
        return tuple(entry for _, entry in fresh.values())

    def _node_entries(self, statics: list[_Static], pods: tuple[PodEntry, ...]) -> tuple[NodeEntry, ...]:
        """Every node's entry in display order; a node whose advertisement and pods are the
        same objects as last time keeps its entry."""
        by_node: dict[str, list[PodEntry]] = {}
        for pod in pods:
            if pod.node:
                by_node.setdefault(pod.node, []).append(pod)
        fresh: dict[str, tuple[_Static, tuple[PodEntry, ...], NodeEntry]] = {}
        for static in statics:
            on_node = tuple(by_node.get(static.name, ()))
            cached = self._entries.get(static.name)
            if cached is None or cached[0] is not static or not _same(cached[1], on_node):
                cached = (static, on_node, _node(static, list(on_node)))
            fresh[static.name] = cached
        self._entries = fresh
        return tuple(sorted((entry for _, _, entry in fresh.values()),
                            key=lambda n: (n.group, natural(n.name))))

    def _statics(self, view: Any) -> list[_Static]:
        inputs = device_inputs(view)
        fingerprint = (inputs.policy_version,
                       tuple(((c.get("metadata") or {}).get("namespace", ""),
                              (c.get("metadata") or {}).get("name", ""),
                              (c.get("metadata") or {}).get("resourceVersion", ""))
                             for c in inputs.configmaps))
        fresh: dict[str, tuple[tuple[str, Any], _Static]] = {}
        out = []
        for node in view.list("Node"):
            meta = node.get("metadata") or {}
            name = str(meta.get("name"))
            pinned = json.dumps(inputs.pinned[name], sort_keys=True) if name in inputs.pinned else None
            key = (str(meta.get("resourceVersion")), (fingerprint, pinned))
            cached = self._nodes.get(name)
            static = cached[1] if cached is not None and cached[0] == key else _static(node, inputs)
            fresh[name] = (key, static)
            out.append(static)
        self._nodes = fresh
        return out


def _static(node: dict[str, Any], inputs: Any) -> _Static:
    info = node_info(node)
    devices = node_devices_for(node, inputs)
    rows = tuple(devices.rows()) if devices is not None else ()
    pool = str(((node.get("metadata") or {}).get("labels") or {}).get(POOL_LABEL) or NO_POOL)
    geometry = devices.model.mig if devices is not None and devices.model is not None else None
    return _Static(info.name, pool, info.gpu_model, info.unschedulable, rows,
                   geometry.compute_slices if geometry is not None else 0)


@functools.lru_cache(maxsize=65_536)
def natural(name: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders ``node-2`` before ``node-10`` (memoized: every index sorts every
    node again)."""
    return tuple((0, int(part)) if is_digits(part) else (1, part)
                 for part in re.split(r"(\d+)", name) if part)


def _same(old: tuple[PodEntry, ...], new: tuple[PodEntry, ...]) -> bool:
    return len(old) == len(new) and all(a is b for a, b in zip(old, new))


def _cell(row: Any, pod: PodEntry | None, milli: int) -> dict[str, Any]:
    cell: dict[str, Any] = {"gpu": row.gpu_index, "device": row.device_id,
                            "resource": row.resource, "profile": row.profile,
                            "replica": row.replica, "milli": milli}
    if pod is not None:
        cell.update(pod=pod.key, namespace=pod.namespace, priority=pod.priority, phase=pod.phase)
    return cell


def _holders(pods: list[PodEntry]) -> tuple[dict[str, PodEntry], dict[int, list[PodEntry]]]:
    """Device ID -> the unfinished pod holding it; GPU index -> its fractional holders."""
    holder: dict[str, PodEntry] = {}
    shares: dict[int, list[PodEntry]] = {}
    for pod in pods:
        if pod.holds and pod.milli:
            for index in pod.gpus[:1]:
                shares.setdefault(index, []).append(pod)
        elif pod.holds:
            holder.update((device, pod) for device in pod.devices)
    return holder, shares


def _add_shares(first: DeviceRow, sharers: list[PodEntry], rows: list[DeviceRow],
                cells: list[dict[str, Any]]) -> None:
    """A GPU's fractional shares, by pod uid as ``NodeDevices.rows()`` orders them."""
    for sharer in sorted(sharers, key=lambda p: p.uid):
        share = DeviceRow(first.gpu_index, first.device_id.split("::")[0], RESOURCE_GPU_MILLI, "",
                          -1, sharer.key, sharer.milli)
        rows.append(share)
        cells.append(_cell(share, sharer, sharer.milli))


def _gpu_cells(index: int, on_gpu: list[DeviceRow], holder: dict[str, PodEntry],
               rows: list[DeviceRow], cells: list[dict[str, Any]]) -> None:
    """One GPU's advertised devices with their holders (appended to ``rows`` and ``cells``)."""
    for row in on_gpu:
        pod = holder.get(row.device_id)
        milli = 1000 if pod is not None and not row.profile and row.replica < 0 else 0
        rows.append(DeviceRow(index, row.device_id, row.resource, row.profile,
                              row.replica, pod.key if pod else "", milli))
        cells.append(_cell(row, pod, milli))


def _counts(pods: list[PodEntry]) -> tuple[tuple[str, str, int], ...]:
    counts: dict[tuple[str, str], int] = {}
    for pod in pods:
        counts[pod.namespace, pod.phase] = counts.get((pod.namespace, pod.phase), 0) + 1
    return tuple((ns, phase, n) for (ns, phase), n in sorted(counts.items()))


def _node(static: _Static, pods: list[PodEntry]) -> NodeEntry:
    """Cells with holders (each GPU's devices, then its fractional shares by pod uid), in the
    order ``NodeDevices.rows()`` lists them."""
    holder, shares = _holders(pods)
    cells: list[dict[str, Any]] = []
    rows: list[DeviceRow] = []
    for index in sorted({row.gpu_index for row in static.rows}):
        on_gpu = [r for r in static.rows if r.gpu_index == index]
        carved = carved_rows(index, on_gpu, pods, static.compute_slices)
        if carved is not None:
            rows.extend(carved)
            cells.extend(_cell(row, holder.get(row.device_id), 0) for row in carved)
        else:
            _gpu_cells(index, on_gpu, holder, rows, cells)
            _add_shares(on_gpu[0], shares.get(index, []), rows, cells)
    held = [p.key for p in pods if p.holds]
    search = " ".join([static.name, static.pool, static.model, *held]).lower()
    return NodeEntry(static.name, static.pool, static.model, len({r.gpu_index for r in static.rows}),
                     static.unschedulable, tuple(gpu_usage(rows)), tuple(cells),
                     frozenset(p.namespace for p in pods), frozenset(p.phase for p in pods), search,
                     _counts(pods))


def _groups(nodes: tuple[NodeEntry, ...]) -> tuple[dict[str, Any], ...]:
    """Per group (nodes are sorted by group): nodes, GPUs, used GPUs, cordoned nodes, and the
    pods on its nodes counted by namespace and phase."""
    groups: dict[str, dict[str, Any]] = {}
    for node in nodes:
        group = groups.setdefault(node.group, {
            "id": node.group, "pool": node.pool, "model": node.model, "nodes": 0, "gpus": 0,
            "used": 0.0, "cordoned": 0, "partial": 0.0, "free": 0.0, "namespaces": {}})
        group["nodes"] += 1
        group["gpus"] += len(node.usage)
        group["used"] += sum(node.usage)
        group["free"] += sum(1.0 - u for u in node.usage)
        group["partial"] += sum(1.0 - u for u in node.usage if 0.0 < u < 1.0)
        group["cordoned"] += int(node.unschedulable)
        for namespace, phase, count in node.counts:
            phases = group["namespaces"].setdefault(namespace, {})
            phases[phase] = phases.get(phase, 0) + count
    for group in groups.values():
        free, partial = group.pop("free"), group.pop("partial")
        group["allocation"] = group["used"] / group["gpus"] if group["gpus"] else 0.0
        group["fragmentation"] = partial / free if free > 0 else 0.0
        group["used"] = round(group["used"], 3)
    return tuple(groups.values())


def _recent_events(view: Any) -> tuple[dict[str, Any], ...]:
    """The :data:`RECENT_EVENTS` most recently recorded or repeated events (the view's
    recording order, without sorting them all), oldest first as ``View.list_events`` lists them."""
    seq = view.event_seq
    newest = [key for key, _ in heapq.nlargest(RECENT_EVENTS, seq.items(), key=itemgetter(1))]
    newest.sort(key=lambda k: (view.events[k].get("lastTimestamp") or "", seq[k]))
    out = []
    for key in newest:
        e = view.events[key]
        involved = e.get("involvedObject") or {}
        out.append({"type": e.get("type", ""), "reason": e.get("reason", ""),
                    "object": f"{involved.get('kind', '')}/{involved.get('name', '')}",
                    "message": e.get("message", ""), "count": e.get("count", 1),
                    "source": (e.get("source") or {}).get("component", ""),
                    "lastTimestamp": e.get("lastTimestamp", "")})
    return tuple(out)
