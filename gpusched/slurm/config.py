"""``slurm.conf`` and ``gres.conf`` from the Nodes the embedded cluster uses.

One inventory describes both: the NodePools / Nodes of ``examples/cluster.yaml`` (expanded with
``devices.nodepool``) or the Nodes of a cluster state become Slurm node lines:

- ``CPUs`` = cpu rounded up to whole CPUs, ``RealMemory`` = memory in MiB;
- ``Gres=gpu:<type>:<n>`` with the GRES type from ``slurm.sbatch.gres_type``
  (``A100-40GB`` -> ``a100_40gb``); MIG-partitioned GPUs (label ``nvidia.com/mig.config`` with
  a ``mixed``/``single`` strategy) become one GRES type per MIG profile (``gpu:1g.5gb:7``), the
  names Slurm's ``AutoDetect=nvml`` gives MIG instances; whole GPUs of the node stay
  ``gpu:<model>``;
- ``Features`` = GPU type, family, memory (``a100_40gb,ampere,gpumem_40gb``) plus the purpose;
- partitions (``slurm.sbatch.partition_names``): ``all`` (Default=YES), then one per GPU
  model (``cpu`` for nodes without GPUs), or one per ``gpusched.io/purpose`` label when any
  node has that label;
- PriorityClasses: Slurm QOS objects live in slurmdbd (``sacctmgr add qos``), which this file
  cannot create. The config uses ``PriorityType=priority/multifactor`` and lists each class as
  a comment (the ``sacctmgr`` line to run where slurmdbd exists); ``slurm submit`` passes the
  class value as ``--priority`` (allowed for SlurmUser/operators), which works without slurmdbd.

``--test-harness DIR`` (:class:`Harness`) adds what a single-machine test cluster needs:
``auth/none``, loopback-only ports (``NodeHostname=localhost NodeAddr=127.0.0.1 Port=<p>``),
state/spool/log/pid paths under DIR, ``config_overrides`` and fake GPU device files
(``DIR/dev/<node>/nvidia<i>`` symlinks to /dev/null, so Slurm sets ``CUDA_VISIBLE_DEVICES``).

Neighbours: ``slurm.sbatch`` (names), ``objects.node``, ``devices.mig``/``devices.catalog``;
used by ``cli.slurm_cmd`` and ``tests/slurm``.
"""

from __future__ import annotations

import math
import os
import socket
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from gpusched.devices.catalog import GpuModel, lookup_model
from gpusched.devices.mig import MIG_CONFIG_LABEL, layout_for
from gpusched.errors import GpuschedError
from gpusched.objects.node import node_info
from gpusched.slurm.sbatch import (DEFAULT_PARTITION, PURPOSE_LABEL, gres_type, hostlist,
                                     partition_names, partitions_by_purpose)

MIG_STRATEGY_ANNOTATION = "gpusched.io/mig-strategy"


@dataclass(frozen=True, slots=True)
class Harness:
    """Local test settings: every path under ``root``, every port on 127.0.0.1."""

    root: str
    ctld_port: int
    slurmd_port: int
    node_ports: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GresEntry:
    type: str           # "a100_40gb" or a MIG profile "1g.5gb"
    count: int
    mig: bool = False


@dataclass(frozen=True, slots=True)
class SlurmNode:
    name: str
    cpus: int
    memory_mib: int
    gres: tuple[GresEntry, ...]
    features: tuple[str, ...]
    partitions: tuple[str, ...]
    drained: bool = False


@dataclass(frozen=True, slots=True)
class SlurmConfig:
    slurm_conf: str
    gres_conf: str
    device_files: tuple[str, ...] = ()     # fake device paths the harness must create


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1 (bound to port 0, then released)."""
    sockets, ports = [], []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
            ports.append(sock.getsockname()[1])
    finally:
        for sock in sockets:
            sock.close()
    return ports


def slurm_node(node: Mapping[str, Any], by_purpose: bool) -> SlurmNode:
    """The Slurm view of one Node dict."""
    info = node_info(node)
    cpus = max(1, math.ceil(info.allocatable.get("cpu", 1000) / 1000))
    memory = max(1, info.allocatable.get("memory", 0) // 2**20)
    gres: list[GresEntry] = []
    features: list[str] = []
    if info.gpu_model and info.gpu_count:
        try:
            model = lookup_model(info.gpu_model)
        except GpuschedError:
            model = None
        name = gres_type(model.name if model else info.gpu_model)
        gres = _gres_entries(node, model, name, info.gpu_count)
        features = [name]
        if model is not None:
            if model.family != "undefined":
                features.append(gres_type(model.family))
            features.append(f"gpumem_{round(model.memory_mib / 1024)}gb")
    purpose = info.labels.get(PURPOSE_LABEL)
    if purpose:
        features.append(gres_type(purpose))
    return SlurmNode(info.name, cpus, memory, tuple(gres), tuple(features),
                     partition_names(node, by_purpose), info.unschedulable)


def _gres_entries(node: Mapping[str, Any], model: GpuModel | None, name: str, count: int) -> list[GresEntry]:
    meta = node.get("metadata") or {}
    mig_config = (meta.get("labels") or {}).get(MIG_CONFIG_LABEL, "")
    strategy = (meta.get("annotations") or {}).get(MIG_STRATEGY_ANNOTATION, "none")
    if model is None or not mig_config or strategy == "none":
        return [GresEntry(name, count)]
    try:
        layout = layout_for(model, mig_config, count)
    except GpuschedError:
        return [GresEntry(name, count)]
    whole = sum(1 for gpu in layout if gpu is None)
    profiles: dict[str, int] = {}
    for gpu in layout:
        for profile in gpu or []:
            profiles[profile] = profiles.get(profile, 0) + 1
    entries = [GresEntry(name, whole)] if whole else []
    entries += [GresEntry(gres_type(p), n, mig=True) for p, n in sorted(profiles.items())]
    return entries


# ---- rendering ---------------------------------------------------------------------------------

_COMMON = """\
SlurmUser={user}
SlurmdUser=root
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1024
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1,bf_interval=1
PriorityType=priority/multifactor
PriorityWeightQOS=1000
GresTypes=gpu
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
"""

_HARNESS = """\
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/none
CredType=cred/none
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmdPidFile={root}/run/slurmd-%n.pid
SlurmdLogFile={root}/log/slurmd-%n.log
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmctldLogFile={root}/log/slurmctld.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobCompType=jobcomp/filetxt
JobCompLoc={root}/log/jobcomp.txt
SlurmdParameters=config_overrides
SlurmdTimeout=30
"""

_PRODUCTION = """\
SlurmctldHost={controller}
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
ProctrackType=proctrack/cgroup
TaskPlugin=task/affinity,task/cgroup
"""


def generate(nodes: Sequence[Mapping[str, Any]], priority_classes: Sequence[Mapping[str, Any]] = (),
             cluster_name: str = "gpusched", harness: Harness | None = None,
             controller: str = "slurmctld") -> SlurmConfig:
    """slurm.conf and gres.conf text for ``nodes`` (sorted by name); see the module docstring."""
    ordered = sorted(nodes, key=lambda n: str((n.get("metadata") or {}).get("name", "")))
    by_purpose = partitions_by_purpose(ordered)
    slurm_nodes = [slurm_node(n, by_purpose) for n in ordered]
    lines = ["# Generated by gpusched slurm config from the cluster's Nodes/NodePools.",
             f"ClusterName={cluster_name}"]
    if harness is not None:
        lines += _HARNESS.format(root=harness.root, ctld_port=harness.ctld_port,
                                 slurmd_port=harness.slurmd_port).splitlines()
    else:
        lines += _PRODUCTION.format(controller=controller).splitlines()
    lines += _COMMON.format(user="root" if harness is not None else "slurm").splitlines()
    lines += _priority_lines(priority_classes)
    lines.append("")
    for node in slurm_nodes:
        lines.append(_node_line(node, harness))
    lines.append("")
    lines += _partition_lines(slurm_nodes)
    gres_lines, devices = _gres_conf(slurm_nodes, harness)
    return SlurmConfig("\n".join(lines) + "\n", "\n".join(gres_lines) + "\n", tuple(devices))


def _priority_lines(priority_classes: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = ["# PriorityClasses -> Slurm. QOS needs slurmdbd; without it `gpusched slurm submit`",
             "# passes the class value as --priority. With slurmdbd, create the QOS with:"]
    ordered = sorted(priority_classes, key=lambda pc: (-int(pc.get("value", 0)),
                                                      pc["metadata"]["name"]))
    for pc in ordered:
        name, value = pc["metadata"]["name"], int(pc.get("value", 0))
        lines.append(f"#   sacctmgr -i add qos {gres_type(name)} Priority={value}"
                     f"{'   (globalDefault)' if pc.get('globalDefault') else ''}")
    return lines


def _node_line(node: SlurmNode, harness: Harness | None) -> str:
    parts = [f"NodeName={node.name}"]
    if harness is not None:
        port = harness.node_ports.get(node.name, harness.slurmd_port)
        parts += ["NodeHostname=localhost", "NodeAddr=127.0.0.1", f"Port={port}"]
    parts += [f"CPUs={node.cpus}", f"RealMemory={node.memory_mib}"]
    if node.gres:
        parts.append("Gres=" + ",".join(f"gpu:{g.type}:{g.count}" for g in node.gres))
    if node.features:
        parts.append("Features=" + ",".join(node.features))
    parts.append("State=UNKNOWN")
    comment = "   # cordoned in the cluster: `scontrol update nodename=... state=drain`" \
        if node.drained else ""
    return " ".join(parts) + comment


def _partition_lines(nodes: list[SlurmNode]) -> list[str]:
    members: dict[str, list[str]] = {}
    for node in nodes:
        for partition in node.partitions:
            members.setdefault(partition, []).append(node.name)
    lines = []
    names = sorted(members, key=lambda p: (p != DEFAULT_PARTITION, p))
    for partition in names:
        default = "YES" if partition == DEFAULT_PARTITION else "NO"
        lines.append(f"PartitionName={partition} Nodes={hostlist(members[partition])} "
                     f"Default={default} MaxTime=INFINITE State=UP")
    return lines


def _gres_conf(nodes: list[SlurmNode], harness: Harness | None) -> tuple[list[str], list[str]]:
    lines = ["# Generated by gpusched slurm config. File= lists one device per GPU (or MIG",
             "# instance); on real MIG hosts prefer AutoDetect=nvml, which names MIG instances",
             "# by profile (gpu:1g.5gb) as below."]
    devices: list[str] = []
    for node in nodes:
        index = 0
        for entry in node.gres:
            if harness is not None:
                base = os.path.join(harness.root, "dev", node.name, "nvidia")
            else:
                base = "/dev/nvidia"
            files = [f"{base}{i}" for i in range(index, index + entry.count)]
            devices += files if harness is not None else []
            span = f"{index}" if entry.count == 1 else f"[{index}-{index + entry.count - 1}]"
            mig = "   # MIG instances" if entry.mig else ""
            lines.append(f"NodeName={node.name} Name=gpu Type={entry.type} File={base}{span}{mig}")
            index += entry.count
    return lines, devices


def write(config: SlurmConfig, out_dir: str, harness: Harness | None = None) -> list[str]:
    """Write slurm.conf and gres.conf into ``out_dir``; for a harness also create its folders
    and the fake device files (symlinks to /dev/null). Returns the written config paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for name, text in (("slurm.conf", config.slurm_conf), ("gres.conf", config.gres_conf)):
        path = os.path.join(out_dir, name)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        paths.append(path)
    if harness is not None:
        for sub in ("state", "spool", "log", "run"):
            os.makedirs(os.path.join(harness.root, sub), exist_ok=True)
        for device in config.device_files:
            os.makedirs(os.path.dirname(device), exist_ok=True)
            if not os.path.lexists(device):
                os.symlink("/dev/null", device)
    return paths


def inventory(objects: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(Node dicts, PriorityClass dicts) from manifest objects: NodePools are expanded the way
    the embedded cluster's NodePool controller expands them; other kinds are ignored."""
    from gpusched.devices.nodepool import expand_nodepool
    nodes: list[dict[str, Any]] = []
    classes: list[dict[str, Any]] = []
    for obj in objects:
        kind = obj.get("kind")
        if kind == "NodePool":
            nodes += expand_nodepool(dict(obj))
        elif kind == "Node":
            nodes.append(dict(obj))
        elif kind == "PriorityClass":
            classes.append(dict(obj))
    return nodes, classes
