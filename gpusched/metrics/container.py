"""What a container would see: ``exec`` and ``logs`` answers for a pod of the embedded cluster.

gpusched runs no containers, but it knows which devices each pod holds (its assignment
annotations), what the device plugin hands the runtime for them, and what the metrics model
says they are doing. :func:`exec_output` answers the commands GPU guides run in a pod:

- ``nvidia-smi``: the pod's GPUs renumbered from 0 (only the GPUs in ``NVIDIA_VISIBLE_DEVICES``
  are visible), in the layout of driver 550's nvidia-smi (91 columns: GPU table, ``MIG devices``
  table for MIG instances, ``Processes``), utilisation, memory, power and temperature from the
  metrics model (``cluster_source``); on a time-sliced GPU the processes of the other pods
  sharing it are listed too (one ``C`` process per pod, PIDs derived from the pod UID);
- ``nvidia-smi -L``: ``GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-...)`` and for MIG
  ``  MIG 3g.40gb     Device  0: (UUID: MIG-...)``;
- ``env``: the container's literal ``env`` values, ``HOSTNAME``, ``PATH``, ``HOME`` and what the
  device plugin sets (``NVIDIA_VISIBLE_DEVICES`` = the physical GPU or MIG UUIDs, replicas
  mapped to their GPU, as the ``envvar`` device-list strategy does). The plugin does not set
  ``CUDA_VISIBLE_DEVICES``; it appears only when the pod spec sets it;
- ``ls [-l] [-a] /dev/nvidia*`` (``metrics.container_ls``): ``/dev/nvidiaN`` per visible GPU (the
  host minor number), ``nvidiactl``, ``nvidia-uvm``, ``nvidia-uvm-tools``, and for MIG
  ``/dev/nvidia-caps`` with the GI/CI access capabilities (minors as
  ``/proc/driver/nvidia-caps/mig-minors`` numbers them: ``3 + 135*gpu + 9*gi`` for a GPU
  instance, +1+ci for its compute instance; unverified beyond A100 examples);
- anything else: one line saying the embedded cluster runs no containers, exit code 126.

Every answer starts with one line marking it simulated. ``logs`` is ``metrics.container_logs``.

Neighbours: ``metrics.cluster_source`` (GPU state), ``metrics.gpu_model`` (names, physics,
driver), ``metrics.container_logs`` (``logs``); used by ``cli`` (``gpusched exec|logs``),
``server`` (``pods/exec``, ``pods/log``) and the Slurm output writer (``slurm.output``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import hashlib
import shlex
from dataclasses import dataclass, field
from datetime import datetime

from gpusched.cluster.kubelet.device_inputs import device_inputs, node_devices_for
from gpusched.cluster.kubelet.dra_prepare import prepared_devices
from gpusched.cluster.apiserver.store import EPOCH, seconds_of
from gpusched.cluster.apiserver.view import View
from gpusched.metrics import gpu_model as gm
from gpusched.metrics.cluster_source import ClusterSource
from gpusched.metrics.container_ls import ls, ls_arguments
from gpusched.metrics.dcgm import pci_bus_id
from gpusched.objects.assignment import held_by
from gpusched.objects.digits import is_digits

if TYPE_CHECKING:
    from gpusched.devices.node import NodeDevices
    from gpusched.metrics.cluster_source import GpuState

WIDTH = 91
NOT_RUN = 126
CUDA_BY_DRIVER = {"535": "12.2", "545": "12.3", "550": "12.4", "555": "12.5", "560": "12.6",
                  "565": "12.7", "570": "12.8", "575": "12.9", "580": "13.0"}
_PCI_BUSES = (0x07, 0x0F, 0x47, 0x4E, 0x87, 0x90, 0xB7, 0xBD)


@dataclass(frozen=True, slots=True)
class MigView:
    """One MIG instance the container holds."""

    gi: int                 # GPU instance id (1-based by start slice, as the DCGM labels)
    dev: int                # MIG device index inside the container's GPU
    profile: str
    uuid: str
    memory_mib: int
    used_mib: int
    sms: int
    slices: int
    engines: tuple[int, int, int, int, int]   # CE ENC DEC OFA JPG


@dataclass(frozen=True, slots=True)
class Process:
    gpu: int                # container GPU index
    gi: str
    ci: str
    pid: int
    name: str
    memory_mib: int


@dataclass(frozen=True, slots=True)
class GpuView:
    """One GPU as the container sees it (index renumbered from 0)."""

    index: int
    host_index: int
    uuid: str
    name: str
    bus_id: str
    total_mib: int
    used_mib: int
    util: int | None        # None on MIG-enabled GPUs (NVML reports N/A)
    temp_c: int
    power_w: int
    cap_w: int
    mig: tuple[MigView, ...] = ()
    mig_capable: bool = False
    data_centre: bool = True


@dataclass(frozen=True)
class ContainerView:
    pod: dict[str, Any]
    container: str
    node: str
    gpus: tuple[GpuView, ...] = ()
    processes: tuple[Process, ...] = ()
    visible: tuple[str, ...] = ()          # NVIDIA_VISIBLE_DEVICES
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ExecResult:
    stdout: str
    exit_code: int = 0


def marker(pod: dict[str, Any], container: str, what: str) -> str:
    meta = pod.get("metadata") or {}
    return (f"[gpusched: simulated {what} of container {container} in pod "
            f"{meta.get('namespace', 'default')}/{meta.get('name', '')}; the embedded cluster "
            f"runs no containers]")


def container_names(pod: dict[str, Any]) -> list[str]:
    return [str(c.get("name", "")) for c in (pod.get("spec") or {}).get("containers") or []]


def pid_of(uid: str, index: int = 0) -> int:
    """A stable, plausible PID for the process a pod's container runs."""
    digest = hashlib.sha256(f"{uid}/{index}".encode()).digest()
    return 1000 + int.from_bytes(digest[:4], "big") % 3_000_000


def _command_name(pod: dict[str, Any]) -> str:
    containers = (pod.get("spec") or {}).get("containers") or []
    for container in containers:
        words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
        if words:
            first = words[0]
            if first in ("/bin/sh", "sh", "/bin/bash", "bash") and len(words) > 2:
                first = words[2].split()[0] if words[2].split() else first
            return first
    return "python"


def _cap_w(physics: gm.Physics) -> int:
    return int(round(physics.tdp_w))


@dataclass(frozen=True, slots=True)
class _Scene:
    """What the GPU views of one container share."""

    pod: dict[str, Any]
    node_name: str
    devices: NodeDevices
    physics: gm.Physics
    nvml: str
    running: bool
    own_util: float
    states: dict[tuple[str, int], GpuState]


def build_view(view: View, pod: dict[str, Any], container: str) -> ContainerView:
    """The devices, processes and environment ``container`` of ``pod`` would see."""
    spec = pod.get("spec") or {}
    node_name = str(spec.get("nodeName") or "")
    ids = list(held_by(pod).device_ids)
    env = _base_env(pod, container)
    prepared = _prepared(view, pod, container, node_name, ids)
    if prepared:
        return _dra_view(view, pod, container, node_name, prepared, env)
    devices = _held_node_devices(view, node_name, ids)
    if devices is None:
        return ContainerView(pod, container, node_name, env=env)
    by_id = {d.device_id: d for d in devices.devices}
    held = [by_id[i] for i in ids if i in by_id]
    scene = _scene(view, pod, node_name, devices)
    gpus: list[GpuView] = []
    processes: list[Process] = []
    visible: list[str] = []
    for index, host in enumerate(sorted({d.gpu_index for d in held})):
        gpu, own = _gpu_view(scene, index, host, [d for d in held if d.gpu_index == host])
        gpus.append(gpu)
        visible.extend(m.uuid for m in gpu.mig) if gpu.mig else visible.append(gpu.uuid)
        processes.extend(own)
    env["NVIDIA_VISIBLE_DEVICES"] = ",".join(visible)
    return ContainerView(pod, container, node_name, tuple(gpus), tuple(processes),
                         tuple(visible), env)


def _prepared(view: View, pod: dict[str, Any], container: str, node_name: str,
              ids: list[str]) -> list[Any]:
    """The NVIDIA devices the container's prepared DRA claims hold, when the device plugin gave
    the pod none (a pod holds devices one way or the other)."""
    return prepared_devices(view, pod, container) if not ids and node_name else []


def _dra_process(scene: Any, gpu: int, gi: str, used_mib: int) -> Process:
    """A DRA MIG device's process row (``metrics.container_dra``)."""
    uid = (scene.pod.get("metadata") or {}).get("uid", "")
    return Process(gpu, gi, "0", pid_of(uid), _command_name(scene.pod), used_mib)


def _dra_view(view: View, pod: dict[str, Any], container: str, node_name: str,
              prepared: list[Any], env: dict[str, str]) -> ContainerView:
    """The container of a pod whose GPUs come from prepared DRA claims (``metrics.container_dra``)."""
    from gpusched.metrics.container_dra import dra_view_parts
    node = view.get("Node", node_name)
    devices = node_devices_for(node, device_inputs(view)) if node is not None else None
    if devices is None or devices.model is None:
        return ContainerView(pod, container, node_name, env=env)
    scene = _scene(view, pod, node_name, devices)
    gpus, processes, visible = dra_view_parts(scene, prepared, _gpu_view, _dra_process, MigView)
    env["NVIDIA_VISIBLE_DEVICES"] = ",".join(visible)
    return ContainerView(pod, container, node_name, tuple(gpus), tuple(processes),
                         tuple(visible), env)


def _held_node_devices(view: View, node_name: str, ids: list[str]) -> NodeDevices | None:
    """The devices of the pod's node, when it is bound there, holds devices and the node has a
    known GPU model."""
    node = view.get("Node", node_name) if node_name else None
    if node is None or not ids:
        return None
    devices: NodeDevices | None = node_devices_for(node, device_inputs(view))
    if devices is None or devices.model is None:
        return None
    return devices


def _scene(view: View, pod: dict[str, Any], node_name: str, devices: NodeDevices) -> _Scene:
    model = devices.gpu_model
    physics = gm.physics_of(model.name)
    return _Scene(pod, node_name, devices, physics,
                  physics.nvml_name if model.name in gm.PHYSICS else model.nvml_name,
                  (pod.get("status") or {}).get("phase") == "Running", gm.pod_util(pod),
                  {(s.node, s.gpu): s for s in ClusterSource(view).gpus()})


def _gpu_view(scene: _Scene, index: int, host: int, mine: list[Any]) -> tuple[GpuView, list[Process]]:
    """GPU ``host`` of the node as the container's GPU ``index``, and the processes on it."""
    devices, physics, nvml = scene.devices, scene.physics, scene.nvml
    state = scene.states.get((scene.node_name, host))
    mig = _mig_views(devices, host, mine, state, scene.pod, scene.running)
    live = state.live if state is not None else []
    util = (state.util if state is not None else 0.0) if scene.running else scene.own_util
    used = state.fb_used_mib if state is not None else 0
    gpu_uuid = devices._gpu_ids[host] if host < len(devices._gpu_ids) else ""
    temp = int(round(gm.steady_temp_c(physics, util)))
    bus = _PCI_BUSES[host] if host < len(_PCI_BUSES) else 0xC0 + host
    gpu = GpuView(index, host, gpu_uuid, nvml, pci_bus_id(0, bus),
                  devices.gpu_model.memory_mib, used, None if mig else int(round(util)),
                  temp, int(round(gm.power_w(physics, util))), _cap_w(physics),
                  tuple(mig), devices.gpu_model.mig_capable,
                  not nvml.startswith(("NVIDIA GeForce", "NVIDIA RTX")))
    return gpu, _processes(index, mig, live, scene.pod, scene.running, scene.own_util, devices, host)


def _mig_views(devices: NodeDevices, host: int, mine: list[Any], state: GpuState | None, pod: dict[str, Any], running: bool) -> list[MigView]:
    if devices.gpu_model.mig is None or not any(d.profile for d in mine):
        return []
    instances = sorted({(d.start, d.parent or d.device_id.split("::")[0], d.profile)
                        for d in devices.devices if d.gpu_index == host and d.profile})
    gi_of = {uuid: position for position, (_s, uuid, _p) in enumerate(instances, start=1)}
    out = []
    for dev, device in enumerate(sorted(mine, key=lambda d: d.start)):
        instance = device.parent or device.device_id.split("::")[0]
        _, profile = devices.mig_profile(device.profile)
        if state is not None and running:
            used = sum(h.memory_mib for h in state.live if h.instance == instance)
        else:
            used = gm.pod_memory_mib(pod, profile.memory_mib)
        out.append(MigView(gi_of.get(instance, dev + 1), dev, profile.name, instance,
                           profile.memory_mib, min(used, profile.memory_mib), profile.sms,
                           profile.memory_slices,
                           (profile.copy_engines, profile.encoders, profile.decoders, profile.ofa,
                            profile.jpeg)))
    return out


def _processes(index: int, mig: list[MigView], live: list[Any], pod: dict[str, Any], running: bool,
               own_util: float, devices: NodeDevices, host: int) -> list[Process]:
    uid = (pod.get("metadata") or {}).get("uid", "")
    name = _command_name(pod)
    if mig:
        return [Process(index, str(m.gi), "0", pid_of(uid), name, m.used_mib) for m in mig]
    out = []
    holders = live if running else []
    for holding in sorted(holders, key=lambda h: (h.pod.namespace, h.pod.pod)):
        if holding.uid == uid:
            out.append(Process(index, "N/A", "N/A", pid_of(uid), name, holding.memory_mib))
        else:   # another pod time-sliced onto the same GPU
            out.append(Process(index, "N/A", "N/A", pid_of(holding.uid), "python",
                               holding.memory_mib))
    if not running:
        out.append(Process(index, "N/A", "N/A", pid_of(uid), name,
                           gm.pod_memory_mib(pod, devices.gpu_model.memory_mib)))
    return out


def _base_env(pod: dict[str, Any], container: str) -> dict[str, str]:
    meta = pod.get("metadata") or {}
    env = {"PATH": "/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:"
                   "/usr/sbin:/usr/bin:/sbin:/bin",
           "HOSTNAME": str(meta.get("name", "")),
           "NVIDIA_DRIVER_CAPABILITIES": "compute,utility", "HOME": "/root"}
    for spec in (pod.get("spec") or {}).get("containers") or []:
        if spec.get("name") == container:
            for item in spec.get("env") or []:
                if isinstance(item, dict) and "value" in item and item.get("name"):
                    env[str(item["name"])] = str(item["value"])
    return env


# ---- rendering --------------------------------------------------------------------------------

def driver_version(view: View) -> str:
    """The driver the ClusterPolicy names (``spec.driver.version``), else the modelled one."""
    for policy in view.list("ClusterPolicy") if _has_kind("ClusterPolicy") else []:
        version = str(((policy.get("spec") or {}).get("driver") or {}).get("version") or "")
        if is_digits(version[:3]):
            return version
    return gm.DRIVER_VERSION


def _has_kind(kind: str) -> bool:
    from gpusched.objects.kinds import KINDS
    return kind in KINDS


def _row(*cells: str) -> str:
    return "|" + "|".join(cells) + "|"


def nvidia_smi(cv: ContainerView, driver: str, now: datetime) -> str:
    """The full ``nvidia-smi`` table (driver 550's 91-column layout)."""
    cuda = CUDA_BY_DRIVER.get(driver[:3], "12.4")
    dash = "+" + "-" * (WIDTH - 2) + "+"
    lines = [f"{now:%a %b} {now.day:>2} {now:%H:%M:%S %Y}       ", dash,
             f"| NVIDIA-SMI {driver:<22} Driver Version: {driver:<14} CUDA Version: {cuda:<8} |",
             "|" + "-" * 41 + "+" + "-" * 24 + "+" + "-" * 22 + "+",
             "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
             "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
             "|                                         |                        |               MIG M. |",
             "|" + "=" * 41 + "+" + "=" * 24 + "+" + "=" * 22 + "|"]
    for gpu in cv.gpus:
        lines += _gpu_rows(gpu)
    if any(g.mig for g in cv.gpus):
        lines += [""] + _mig_table(cv)
    lines += [" " * (WIDTH - 2), *_process_table(cv)]
    return "\n".join(lines)


def _gpu_rows(gpu: GpuView) -> list[str]:
    ecc = "On" if gpu.mig else "0" if gpu.data_centre else "Off"
    mig_mode = "Enabled" if gpu.mig else "Disabled" if gpu.mig_capable else "N/A"
    fan = "N/A" if gpu.data_centre else "30%"
    util = "N/A" if gpu.util is None else f"{gpu.util}%"
    perf = "P0" if gpu.util is None or gpu.util > 0 else "P8"
    first = f"|{gpu.index:>4}  {gpu.name[:31]:<31}{'On':<3} "
    second = f"| {fan:>3} {gpu.temp_c:>4}C{perf:>6}{str(gpu.power_w) + 'W':>16} / {str(gpu.cap_w) + 'W':>5} "
    return [first + f"|   {gpu.bus_id} Off " + f"|{ecc:>21} |",
            second + f"|{str(gpu.used_mib) + 'MiB':>11} / {str(gpu.total_mib) + 'MiB':>9} "
            + f"|{util:>8}{'Default':>13} |",
            "|" + " " * 41 + "|" + " " * 24 + f"|{mig_mode:>21} |",
            "+" + "-" * 41 + "+" + "-" * 24 + "+" + "-" * 22 + "+"]


def _mig_table(cv: ContainerView) -> list[str]:
    sep = "+" + "-" * 18 + "+" + "-" * 34 + "+" + "-" * 11 + "+" + "-" * 23 + "+"
    lines = ["+" + "-" * (WIDTH - 2) + "+", f"| {'MIG devices:':<{WIDTH - 3}}|", sep,
             "| GPU  GI  CI  MIG |                     Memory-Usage |        Vol|      Shared           |",
             "|      ID  ID  Dev |                       BAR1-Usage | SM     Unc| CE ENC DEC OFA JPG    |",
             "|                  |                                  |        ECC|                       |",
             "|" + "=" * 18 + "+" + "=" * 34 + "+" + "=" * 11 + "+" + "=" * 23 + "|"]
    for gpu in cv.gpus:
        for m in gpu.mig:
            ce, enc, dec, ofa, jpg = m.engines
            bar1 = _bar1_mib(gpu.total_mib) // 8 * m.slices - 1
            lines += [f"|{gpu.index:>3}{m.gi:>5}{0:>4}{m.dev:>4}  |"
                      f"{str(m.used_mib) + 'MiB':>19} / {str(m.memory_mib) + 'MiB':>8}    |"
                      f"{m.sms:>3}{0:>7} |{ce:>3}{enc:>4}{dec:>5}{ofa:>5}{jpg:>5} |",
                      f"|{'':18}|{'0MiB':>21} / {str(bar1) + 'MiB':>8}  |{'':11}|{'':23}|",
                      sep]
    return lines


def _bar1_mib(total_mib: int) -> int:
    """BAR1 aperture: the power of two at or above the framebuffer (64 GiB on A100-40GB,
    128 GiB on H100 NVL, 256 GiB on H200), an eighth of it per MIG memory slice; matches the
    ``BAR1-Usage`` totals of published transcripts (8191/16383/32767 MiB on A100)."""
    size = 1
    while size < total_mib:
        size *= 2
    return size


def _process_table(cv: ContainerView) -> list[str]:
    dash = "+" + "-" * (WIDTH - 2) + "+"
    lines = [dash, f"| {'Processes:':<{WIDTH - 3}}|",
             "|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |",
             "|        ID   ID                                                               Usage      |",
             "|" + "=" * (WIDTH - 2) + "|"]
    if not cv.processes:
        lines.append(f"|  {'No running processes found':<{WIDTH - 4}}|")
    for p in cv.processes:
        name = p.name if len(p.name) <= 40 else "..." + p.name[-37:]
        lines.append(f"|{p.gpu:>5}{p.gi:>6}{p.ci:>5}{p.pid:>10}{'C':>7}   {name:<40}"
                     f"{str(p.memory_mib) + 'MiB':>12} |")
    return lines + [dash]


def nvidia_smi_list(cv: ContainerView) -> str:
    lines = []
    for gpu in cv.gpus:
        lines.append(f"GPU {gpu.index}: {gpu.name} (UUID: {gpu.uuid})")
        lines += [f"  MIG {m.profile:<11} Device {m.dev:>2}: (UUID: {m.uuid})" for m in gpu.mig]
    return "\n".join(lines) if lines else "No devices were found"


def exec_output(view: View, pod: dict[str, Any], container: str, argv: list[str]) -> ExecResult:
    """What running ``argv`` in ``container`` of ``pod`` would print (see the module docstring)."""
    words = _unwrap_shell([str(a) for a in argv])
    command = " ".join(words)
    head = marker(pod, container, f"output of `{command}`")
    if (pod.get("status") or {}).get("phase") != "Running":
        phase = (pod.get("status") or {}).get("phase", "Pending")
        return ExecResult(f"{head}\nerror: cannot exec in a container that is not running "
                          f"(pod phase {phase})\n", 1)
    answer = known_output(view, pod, container, words)
    if answer is None:
        return ExecResult(f"{head}\ngpusched runs no containers: only nvidia-smi, nvidia-smi -L, "
                          f"env and ls /dev/nvidia* are answered (from the pod's devices)\n",
                          NOT_RUN)
    return ExecResult(f"{head}\n{answer.stdout}\n", answer.exit_code)


def _unwrap_shell(words: list[str]) -> list[str]:
    if len(words) >= 3 and words[0] in ("sh", "/bin/sh", "bash", "/bin/bash") and words[1] == "-c":
        try:
            return shlex.split(words[2])
        except ValueError:
            return words
    return words


NO_DEVICES_EXIT = 6          # nvidia-smi's exit code for "No devices were found"


def known_output(view: View, pod: dict[str, Any], container: str, words: list[str]) -> ExecResult | None:
    """The output (without a trailing newline) and exit code of a command gpusched can
    answer, or None."""
    if not words:
        return None
    cv = build_view(view, pod, container)
    if words[0] == "nvidia-smi" and words[1:] in ([], ["-L"], ["--list-gpus"]) and not cv.gpus:
        return ExecResult("No devices were found", NO_DEVICES_EXIT)
    if words == ["nvidia-smi"]:
        return ExecResult(nvidia_smi(cv, driver_version(view), _wall(view)))
    if words in (["nvidia-smi", "-L"], ["nvidia-smi", "--list-gpus"]):
        return ExecResult(nvidia_smi_list(cv))
    if words in (["env"], ["printenv"]):
        return ExecResult("\n".join(f"{k}={v}" for k, v in cv.env.items()))
    if words[0] == "ls" and ls_arguments(words[1:]) is not None:
        lines, code = ls(cv, words[1:], _started(pod), _wall(view))
        return ExecResult("\n".join(lines), code)
    return None


def _started(pod: dict[str, Any]) -> datetime | None:
    """When the pod's containers started (``status.startTime``), on the cluster's clock."""
    started = (pod.get("status") or {}).get("startTime")
    return _at(seconds_of(started)) if started else None


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(EPOCH.timestamp() + seconds, tz=EPOCH.tzinfo)


def _wall(view: View) -> datetime:
    return _at(view.now())
