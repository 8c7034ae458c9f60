"""``gpusched describe``: kubectl's describe layout for pods, nodes and every other kind.

kubectl writes describe output through a tabwriter (padding 2): consecutive ``Key:<tab>value``
lines share one value column, and each table (Events, Non-terminated Pods, Allocated resources)
is aligned on its own. ``Sheet`` reproduces that for pods and nodes; the kinds of
``TABBED_PAGES`` are built as kubectl's describers build them (tabbed lines, see
``cli.describe_kinds``, ``cli.describe_workloads``, ``cli.describe_storage``) and aligned by
``cli.output.tabwrite``.

Pods: kubectl's describePod (``cli.describe_pod``), gpusched's bookkeeping annotations hidden
and shown instead in a final ``GPU Assignment (gpusched):`` block. Nodes: kubectl's describeNode (Roles, Lease,
Conditions, Addresses, System Info, Non-terminated Pods, Allocated resources with the extended
resources unpercented, plus gpusched's ``gpusched.io/gpu-milli`` shares row), Events, then
gpusched's own per-GPU assignment table (``GPU Devices:``, from ``NodeDevices.rows()``). Kinds without
a kubectl describer here: metadata, then spec and status as nested keys.

Neighbours: ``cli.main`` calls ``cmd_describe``; data comes from the ``Cluster`` facade.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Iterable, Sequence

from gpusched.cli.commands import namespace_of, open_cluster, split_kind_name
from gpusched.cli.describe_base import (HIDDEN_ANNOTATIONS, NONE, Related, annotation_lines, event_row,
                                        events_for, kube_date, meta)
from gpusched.cli.describe_kinds import KIND_PAGES
from gpusched.cli.describe_storage import describe_pv, describe_pvc, describe_storageclass
from gpusched.cli.describe_workloads import (describe_daemonset, describe_deployment, describe_job,
                                             describe_replicaset)
from gpusched.cli.describe_hpa import describe_hpa
from gpusched.cli.describe_crd import describe_custom_resource
from gpusched.objects.kinds import CRD_KINDS

DRA_KINDS = ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice")
from gpusched.cli.describe_pod import describe_pod
from gpusched.cli.output import Clock, tabwrite
from gpusched.objects.quantity import QuantityError, canonical, format_quantity
from gpusched.objects.pod import requested_gpu_share
from gpusched.objects.types import RESOURCE_GPU_MILLI

PAD = 2
STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage", "storage", "pods")   # IsStandardContainerResourceName + pods


class Sheet:
    """Lines of a describe page; ``render()`` aligns them as kubectl's tabwriter does."""

    def __init__(self, tabbed: bool = False) -> None:
        self._parts: list[tuple[str, Any]] = []
        self._tabbed = tabbed   # render through Go's tabwriter rules (one page-wide block), as describe.go does

    def lines(self, tabbed_lines: Iterable[str]) -> None:
        """Tabbed lines from ``cli.describe_base`` (``key:\tvalue``) as kv parts."""
        for line in tabbed_lines:
            key, _, value = line.partition("\t")
            self._parts.append(("kv", (key, value)) if _ else ("text", line))

    def kv(self, key: str, value: Any, indent: int = 0) -> None:
        self._parts.append(("kv", (" " * indent + (f"{key}:" if key else ""), str(value))))

    def mapping(self, key: str, values: dict[str, Any] | None, indent: int = 0, sep: str = "=") -> None:
        """``Labels:  a=b`` then one continuation line per further entry, sorted by key."""
        items = [f"{k}{sep}{v}" for k, v in sorted((values or {}).items())]
        self.kv(key, items[0] if items else NONE, indent)
        for item in items[1:]:
            self.kv("", item, indent)

    def text(self, line: str, indent: int = 0) -> None:
        self._parts.append(("text", " " * indent + line))

    def table(self, header: Sequence[str], rows: Iterable[Sequence[Any]], indent: int = 2) -> None:
        rows = [list(map(str, r)) for r in rows]
        self._parts.append(("table", (indent, list(header), ["-" * len(h) for h in header], rows)))

    def _tab_lines(self) -> list[str]:
        """The parts as tabbed lines for ``cli.output.tabwrite`` (tables: tab-separated cells)."""
        lines: list[str] = []
        for kind, part in self._parts:
            if kind == "kv":
                lines.append(f"{part[0]}\t{part[1]}")
            elif kind == "text":
                lines.append(part)
            else:
                indent, header, dashes, rows = part
                lines += [" " * indent + "\t".join(row) for row in (header, dashes, *rows)]
        return lines

    def render(self) -> str:
        if self._tabbed:
            return tabwrite(self._tab_lines())
        out: list[str] = []
        run: list[tuple[str, str]] = []

        def flush() -> None:
            width = max((len(k) for k, _ in run), default=0) + PAD
            out.extend((k.ljust(width) + v).rstrip() for k, v in run)
            run.clear()

        for kind, part in self._parts:
            if kind == "kv":
                run.append(part)
                continue
            flush()
            if kind == "text":
                out.append(part)
            else:
                indent, header, dashes, rows = part
                table = [header, dashes, *rows]
                widths = [max(len(r[i]) for r in table) for i in range(len(header))]
                for row in table:
                    cells = [c.ljust(widths[i] + PAD) for i, c in enumerate(row[:-1])]
                    out.append((" " * indent + "".join(cells) + row[-1]).rstrip())
        flush()
        return "\n".join(out)


# ---- shared pieces --------------------------------------------------------------------------


_meta = meta


def add_events(sheet: Sheet, events: list[dict[str, Any]], clock: Clock) -> None:
    if not events:
        sheet.kv("Events", NONE)
        return
    sheet.text("Events:")
    sheet.table(["Type", "Reason", "Age", "From", "Message"], [event_row(e, clock) for e in events])


def _quantity(resource: str, value: Any) -> int:
    try:
        return canonical(resource, value)
    except (QuantityError, TypeError, ValueError):
        return 0


def _container_values(container: dict[str, Any], field: str) -> dict[str, Any]:
    """A container's requests or limits; a resource given only as a limit requests that limit
    (Kubernetes' defaulting)."""
    resources = container.get("resources") or {}
    values = dict(resources.get(field) or {})
    if field == "requests":
        for res, value in (resources.get("limits") or {}).items():
            values.setdefault(res, value)
    return values


def pod_resources(pod: dict[str, Any], field: str) -> dict[str, int]:
    """Effective pod requests or limits: max(sum(containers), each init container) + overhead."""
    spec = pod.get("spec") or {}
    total: dict[str, int] = {}
    for container in spec.get("containers") or []:
        for res, value in _container_values(container, field).items():
            total[res] = total.get(res, 0) + _quantity(res, value)
    for container in spec.get("initContainers") or []:
        for res, value in _container_values(container, field).items():
            total[res] = max(total.get(res, 0), _quantity(res, value))
    for res, value in (spec.get("overhead") or {}).items():
        total[res] = total.get(res, 0) + _quantity(res, value)
    milli = requested_gpu_share(pod)
    if milli:   # a fractional pod holds a share of one GPU, not a whole one (as the scheduler counts it)
        total.pop("nvidia.com/gpu", None)
        total[RESOURCE_GPU_MILLI] = milli
    return total


def _percent(used: int, total: int) -> str:
    return f"{used * 100 // total}%" if total else "0%"


def _with_percent(resource: str, used: int, total: int) -> str:
    return f"{format_quantity(resource, used)} ({_percent(used, total)})"


# ---- nodes ----------------------------------------------------------------------------------


def describe_node(node: dict[str, Any], pods: list[dict[str, Any]], device_rows: list[Any], events: list[dict[str, Any]],
                  clock: Clock, lease: dict[str, Any] | None = None,
                  dra_lines: list[str] | None = None) -> str:
    """Node page: metadata, taints, capacity, non-terminated pods, Allocated resources (shares
    counted), the per-GPU device table (``dra_lines``: the DRA devices block instead), events."""
    sheet = Sheet(tabbed=True)
    _node_header(sheet, node, lease)
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    alloc = {res: _quantity(res, v) for res, v in allocatable.items()}
    if alloc.get("nvidia.com/gpu"):   # shares are cut from the whole GPUs: 1000m each
        alloc.setdefault(RESOURCE_GPU_MILLI, alloc["nvidia.com/gpu"] * 1000)
    running = [p for p in pods if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    req_total, lim_total = _node_pods(sheet, running, alloc, clock)
    cut = {r.gpu_index for r in device_rows if r.holder and r.milli and r.milli < 1000}
    if cut:   # a GPU cut into shares is taken for whole-GPU pods: count it, never show it free
        for totals in (req_total, lim_total):
            totals["nvidia.com/gpu"] = totals.get("nvidia.com/gpu", 0) + len(cut)
    sheet.text("Allocated resources:")
    sheet.text("(Total limits may be over 100 percent, i.e., overcommitted.)", 2)
    sheet.table(["Resource", "Requests", "Limits"], _allocated_rows(allocatable, alloc, req_total, lim_total))
    add_events(sheet, events, clock)
    return sheet.render() + "\n" + _device_block(device_rows, pods, dra_lines)


def _device_block(device_rows: list[Any], pods: list[dict[str, Any]],
                  dra_lines: list[str] | None) -> str:
    """gpusched's own block, after kubectl's page and aligned on its own: the device plugin's
    per-GPU table, or a DRA node's devices."""
    if dra_lines is not None:
        return "\n".join(dra_lines) + "\n"
    gpus = Sheet()
    add_gpu_table(gpus, device_rows, {_meta(p).get("uid", ""): f"{_meta(p).get('namespace', '')}/"
                                      f"{_meta(p).get('name', '')}" for p in pods})
    return gpus.render()


def _allocated_rows(allocatable: dict[str, Any], alloc: dict[str, int], req_total: dict[str, int],
                    lim_total: dict[str, int]) -> list[list[Any]]:
    """describe.go describeNodeResource: cpu, memory, ephemeral-storage with percentages, then the
    node's extended resources (allocatable, sorted) without; gpusched adds the milli-GPU shares
    (gpusched.io/gpu-milli, its own resource) with a percentage of the GPUs' 1000m each."""
    rows: list[list[Any]] = [
        [r, _with_percent(r, req_total.get(r, 0), alloc.get(r, 0)),
         _with_percent(r, lim_total.get(r, 0), alloc.get(r, 0))] for r in ("cpu", "memory", "ephemeral-storage")]
    extended = sorted(r for r in allocatable if r not in STANDARD_RESOURCES and not r.startswith("hugepages-"))
    rows += [[r, format_quantity(r, req_total.get(r, 0)), format_quantity(r, lim_total.get(r, 0))] for r in extended]
    if req_total.get(RESOURCE_GPU_MILLI):
        rows.append([RESOURCE_GPU_MILLI, _with_percent(RESOURCE_GPU_MILLI, req_total[RESOURCE_GPU_MILLI],
                                                       alloc.get(RESOURCE_GPU_MILLI, 0)),
                     _with_percent(RESOURCE_GPU_MILLI, lim_total.get(RESOURCE_GPU_MILLI, 0),
                                   alloc.get(RESOURCE_GPU_MILLI, 0))])
    return rows


def _node_header(sheet: Sheet, node: dict[str, Any], lease: dict[str, Any] | None) -> None:
    """describe.go describeNode up to the pods: Name, Roles, Labels, Annotations,
    CreationTimestamp, Taints, Unschedulable, Lease, Conditions, Addresses, Capacity,
    Allocatable, System Info, PodCIDR(s), ProviderID."""
    meta, spec, status = _meta(node), node.get("spec") or {}, node.get("status") or {}
    sheet.kv("Name", meta.get("name", ""))
    sheet.kv("Roles", ",".join(node_roles(node)) or NONE)
    sheet.mapping("Labels", meta.get("labels"))
    sheet.lines(annotation_lines("Annotations", meta.get("annotations")))
    sheet.kv("CreationTimestamp", kube_date(meta.get("creationTimestamp")))
    _node_taints(sheet, spec)
    sheet.kv("Unschedulable", str(bool(spec.get("unschedulable", False))).lower())
    _node_lease(sheet, meta.get("name", ""), lease)
    _node_conditions(sheet, status)
    _node_status(sheet, status)
    for title, value in (("PodCIDR", spec.get("podCIDR")), ("PodCIDRs", ",".join(spec.get("podCIDRs") or [])),
                         ("ProviderID", spec.get("providerID"))):
        if value:
            sheet.kv(title, value)


def _node_taints(sheet: Sheet, spec: dict[str, Any]) -> None:
    taints = [f"{t.get('key', '')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect', '')}"
              for t in spec.get("taints") or []]
    sheet.kv("Taints", taints[0] if taints else NONE)
    for text in taints[1:]:
        sheet.kv("", text)


def _node_conditions(sheet: Sheet, status: dict[str, Any]) -> None:
    if not status.get("conditions"):
        return
    sheet.text("Conditions:")
    sheet.table(["Type", "Status", "LastHeartbeatTime", "LastTransitionTime", "Reason", "Message"],
                [[f"{c.get('type', '')} ", f"{c.get('status', '')} ", f"{kube_date(c.get('lastHeartbeatTime'))} ",
                  f"{kube_date(c.get('lastTransitionTime'))} ", f"{c.get('reason', '')} ", c.get("message", "")]
                 for c in status["conditions"]])


def _node_status(sheet: Sheet, status: dict[str, Any]) -> None:
    """Addresses, Capacity, Allocatable and System Info."""
    sheet.text("Addresses:")
    for address in status.get("addresses") or []:
        sheet.kv(address.get("type", ""), address.get("address", ""), 2)
    for title, field in (("Capacity", "capacity"), ("Allocatable", "allocatable")):
        sheet.text(f"{title}:")
        for res, value in sorted((status.get(field) or {}).items()):
            sheet.kv(res, value, 2)
    sheet.text("System Info:")
    info = status.get("nodeInfo") or {}
    for title, field in NODE_INFO:
        sheet.kv(title, info.get(field, ""), 2)


NODE_INFO = (("Machine ID", "machineID"), ("System UUID", "systemUUID"), ("Boot ID", "bootID"),
             ("Kernel Version", "kernelVersion"), ("OS Image", "osImage"), ("Operating System", "operatingSystem"),
             ("Architecture", "architecture"), ("Container Runtime Version", "containerRuntimeVersion"),
             ("Kubelet Version", "kubeletVersion"), ("Kube-Proxy Version", "kubeProxyVersion"))


def node_roles(node: dict[str, Any]) -> list[str]:
    """describe.go findNodeRoles: ``node-role.kubernetes.io/ROLE`` labels and ``kubernetes.io/role``."""
    roles = set()
    for key, value in (_meta(node).get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/") and key[len("node-role.kubernetes.io/"):]:
            roles.add(key[len("node-role.kubernetes.io/"):])
        elif key == "kubernetes.io/role" and value:
            roles.add(str(value))
    return sorted(roles)


def _node_lease(sheet: Sheet, name: str, lease: dict[str, Any] | None) -> None:
    """describe.go describeNodeLease, or its ``Failed to get lease`` line when there is none."""
    if lease is None:
        sheet.kv("Lease", f'Failed to get lease: leases.coordination.k8s.io "{name}" not found')
        return
    spec = lease.get("spec") or {}
    sheet.text("Lease:")
    sheet.kv("HolderIdentity", spec.get("holderIdentity") or "<unset>", 2)
    for title, field in (("AcquireTime", "acquireTime"), ("RenewTime", "renewTime")):
        sheet.kv(title, kube_date(spec[field]) if spec.get(field) else "<unset>", 2)


def _node_pods(sheet: Sheet, running: list[dict[str, Any]], alloc: dict[str, int],
               clock: Clock) -> tuple[dict[str, int], dict[str, int]]:
    """The Non-terminated Pods table; returns the summed requests and limits."""
    sheet.kv("Non-terminated Pods", f"({len(running)} in total)")
    rows: list[list[Any]] = []
    req_total: dict[str, int] = {}
    lim_total: dict[str, int] = {}
    for pod in sorted(running, key=lambda p: (_meta(p).get("namespace", ""), _meta(p).get("name", ""))):
        req, lim = pod_resources(pod, "requests"), pod_resources(pod, "limits")
        for totals, values in ((req_total, req), (lim_total, lim)):
            for res, value in values.items():
                totals[res] = totals.get(res, 0) + value
        rows.append([_meta(pod).get("namespace", ""), _meta(pod).get("name", ""), "",
                     *(_with_percent(res, values.get(res, 0), alloc.get(res, 0))
                       for res in ("cpu", "memory") for values in (req, lim)),
                     clock.age(_meta(pod).get("creationTimestamp"))])
    # describe.go describeNodeResource: the header is printed even with no pods; Name is followed
    # by an empty column (``Name\t\tCPU Requests``)
    sheet._parts.append(("table", (2, ["Namespace", "Name", "", "CPU Requests", "CPU Limits", "Memory Requests",
                                       "Memory Limits", "Age"],
                                   ["---------", "----", "", "------------", "----------", "---------------",
                                    "-------------", "---"], rows)))
    return req_total, lim_total


def add_gpu_table(sheet: Sheet, device_rows: list[Any], pods_by_uid: dict[str, str]) -> None:
    """The per-GPU assignment table from ``NodeDevices.rows()``: GPU index, device, resource,
    slot (MIG profile, time-slice replica or milli-GPU share) and the holding pod."""
    if not device_rows:
        sheet.kv("GPU Devices", NONE)
        return
    sheet.text("GPU Devices:")
    rows = []
    shared = {row.gpu_index for row in device_rows if row.holder and row.milli and row.milli < 1000}
    for row in device_rows:
        if row.gpu_index in shared and not row.holder:
            continue   # a GPU holding shares is never shown as free
        if row.profile:
            slot = row.profile
        elif row.replica >= 0:
            slot = f"replica {row.replica}"
        elif row.milli and row.milli < 1000:
            slot = f"{row.milli}m"
        else:
            slot = "whole"
        holder = pods_by_uid.get(row.holder, row.holder) if row.holder else "-"
        rows.append([row.gpu_index, row.device_id, row.resource, slot, holder])
    sheet.table(["GPU", "Device", "Resource", "Slot", "Pod"], rows)


# ---- any other kind -------------------------------------------------------------------------


def describe_generic(obj: dict[str, Any], events: list[dict[str, Any]], clock: Clock) -> str:
    meta = _meta(obj)
    sheet = Sheet()
    sheet.kv("Name", meta.get("name", ""))
    if meta.get("namespace"):
        sheet.kv("Namespace", meta["namespace"])
    sheet.kv("CreationTimestamp", kube_date(meta.get("creationTimestamp")))
    sheet.mapping("Labels", meta.get("labels"))
    sheet.mapping("Annotations", meta.get("annotations"), sep=": ")
    for key, value in obj.items():
        if key not in ("apiVersion", "kind", "metadata"):
            _nested(sheet, key, value, 0)
    add_events(sheet, events, clock)
    return sheet.render()


def _nested(sheet: Sheet, key: str, value: Any, indent: int) -> None:
    title = key[:1].upper() + key[1:] if indent == 0 else key
    children = _nested_children(value)
    if children is not None:
        sheet.text(f"{title}:", indent)
        for sub, item in children:
            _nested(sheet, sub, item, indent + 2)
    elif isinstance(value, str) and "\n" in value:
        sheet.text(f"{title}:", indent)
        for line in value.rstrip("\n").split("\n"):
            sheet.text(line, indent + 2)
    else:
        sheet.kv(title, _nested_scalar(value), indent)


def _nested_children(value: Any) -> list[tuple[str, Any]] | None:
    """The entries of a non-empty mapping, or of a list holding mappings or lists; else None."""
    if isinstance(value, dict) and value:
        return [(str(sub), item) for sub, item in value.items()]
    if isinstance(value, list) and value and any(isinstance(v, (dict, list)) for v in value):
        return [(f"[{number}]", item) for number, item in enumerate(value)]
    return None


def _nested_scalar(value: Any) -> Any:
    """A leaf's value cell: a flat list comma-joined, a bool lower-case, nothing as ``<none>``."""
    if isinstance(value, list):
        return ", ".join(map(str, value)) or NONE
    if isinstance(value, bool):
        return str(value).lower()
    return NONE if value in (None, {}, "") else value


# ---- the command ----------------------------------------------------------------------------


TABBED_PAGES = {**KIND_PAGES, "Deployment": describe_deployment, "ReplicaSet": describe_replicaset,
                "Job": describe_job, "DaemonSet": describe_daemonset, "PersistentVolumeClaim": describe_pvc,
                "PersistentVolume": describe_pv, "StorageClass": describe_storageclass,
                "HorizontalPodAutoscaler": describe_hpa,
                **{kind: describe_custom_resource for kind in CRD_KINDS},
                # kubectl has no describer for resource.k8s.io (describe.go describerMap): the
                # generic one prints them
                **{kind: describe_custom_resource for kind in DRA_KINDS}}


def describe_page(cluster: Any, kind: str, obj: dict[str, Any], related: Related) -> str:
    """One object's page: pods and nodes through ``Sheet``, the kinds of ``TABBED_PAGES`` as
    kubectl's describers through the tabwriter, any other kind as nested keys."""
    name = _meta(obj).get("name", "")
    if kind == "Pod":
        return describe_pod(obj, related)
    if kind == "Node":
        # the device model (NumPy) only for a node: `describe pod` stays light (test_startup_imports)
        from gpusched.cli.describe_dra import dra_table
        from gpusched.cluster.kubelet.dra_prepare import node_device_uses
        from gpusched.devices.dra_classes import dra_managed

        pods = cluster.get("Pod", all_namespaces=True, field_selector=f"spec.nodeName={name}")
        lease = next((item for item in related.lookup("Lease", "kube-node-lease")
                      if _meta(item).get("name") == name), None)
        if dra_managed(_meta(obj).get("labels")):
            uses = node_device_uses(cluster.get("ResourceSlice"),
                                    cluster.get("ResourceClaim", all_namespaces=True), name)
            return describe_node(obj, pods, [], related.events, related.clock, lease,
                                 dra_table(uses))
        return describe_node(obj, pods, list(cluster.node_devices(name).rows()), related.events,
                             related.clock, lease)
    if kind in TABBED_PAGES:
        return tabwrite(TABBED_PAGES[kind](obj, related))
    return describe_generic(obj, related.events, related.clock)


def cmd_describe(args: argparse.Namespace) -> int:
    info, names = split_kind_name(args.kind, args.names)
    namespace = namespace_of(args)
    pages = []
    with open_cluster(args) as cluster:
        objects = cluster.get(info.kind, names=tuple(names), namespace=namespace,
                              all_namespaces=bool(getattr(args, "all_namespaces", False)),
                              selector=getattr(args, "selector", "") or "")
        if not objects:   # kubectl's describe.go Run: a note on stderr, exit 0, cluster-scoped kinds too
            every = bool(getattr(args, "all_namespaces", False))
            print("No resources found" if every else f"No resources found in {namespace} namespace.",
                  file=sys.stderr)
            return 0
        clock = Clock(cluster.timestamp())
        all_events = cluster.events(None)

        def lookup(kind: str, in_namespace: str | None) -> list[dict[str, Any]]:
            result: list[dict[str, Any]] = cluster.get(kind, namespace=in_namespace or "default")
            return result

        for obj in objects:
            own_namespace = _meta(obj).get("namespace") if info.namespaced else None
            events = events_for(all_events, info.kind, _meta(obj).get("name", ""), own_namespace)
            pages.append(describe_page(cluster, info.kind, obj, Related(events, clock, lookup)))
    print("\n\n\n".join(pages))
    return 0
