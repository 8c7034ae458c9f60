"""Load the Alibaba ``cluster-trace-gpu-v2023`` (openb) node and pod CSVs.

Two views of the same rows:

- ``TraceNode`` / ``TracePod``: frozen records straight from the CSV, in canonical units
  (cpu millicores, memory bytes, per-GPU milli). ``load_nodes`` / ``load_pods`` read them.
- ``node_info(node)`` / ``pod_info(pod)``: the scheduler's ``NodeInfo`` / ``PodInfo`` built
  directly (no manifest round trip), and ``node_manifest`` / ``pod_manifest`` for
  ``gpusched import alibaba`` so a trace can be applied to the embedded cluster.

Mapping of a pod row (section 2.2 of ``fgd-and-alibaba-trace.md``):
``num_gpu == 1 and gpu_milli < 1000`` -> a fractional share ``PodInfo.gpu_milli``;
``gpu_milli == 1000`` -> ``requests["nvidia.com/gpu"] = num_gpu``; ``gpu_spec`` (``|``-separated,
duplicates tolerated) -> ``PodInfo.gpu_models`` (sorted, unique).

Neighbours: read by ``sim.workload`` and ``sim.experiment``; writes nothing but manifests.
"""

from __future__ import annotations

from typing import Any

import csv
from dataclasses import dataclass
from pathlib import Path

from gpusched.errors import UsageError
from gpusched.objects.names import dns1123_subdomain_errors
from gpusched.objects.types import ANN_GPU_MILLI, ANN_GPU_MODEL, NodeInfo, PodInfo

MIB = 1 << 20
GPU_RESOURCE = "nvidia.com/gpu"
LABEL_GPU_MODEL = "gpusched.io/gpu-model"
TRACE_NAMESPACE = "default"
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")   # the 5-column subset


@dataclass(frozen=True, slots=True)
class TraceNode:
    name: str
    cpu_milli: int
    memory: int          # bytes
    gpus: int
    model: str           # "" for CPU-only nodes


@dataclass(frozen=True, slots=True)
class TracePod:
    name: str
    cpu_milli: int
    memory: int          # bytes
    num_gpu: int
    gpu_milli: int       # per-GPU share: 1..999 sharing, 1000 whole GPUs, 0 CPU-only
    gpu_spec: str = ""   # raw "|"-separated string as in the file ("" = any model)

    @property
    def gpu_models(self) -> tuple[str, ...]:
        """Allowed models, unique and sorted (``V100M16|V100M32|V100M32`` -> two models)."""
        return tuple(sorted({m for m in self.gpu_spec.split("|") if m}))

    @property
    def total_gpu_milli(self) -> int:
        return self.num_gpu * self.gpu_milli


MAX_ROWS = 1_000_000          # bound on the rows of one trace or job file
MAX_GPUS = 1024               # bound on a pod's GPUs (as the job file's ``gpus``)
MAX_NODE_GPUS = 64            # bound on a node's GPUs
MAX_QUANTITY = 10**12         # bound on cpu_milli and memory_mib of a row


def csv_rows(path: Path, required: tuple[str, ...]) -> list[dict[str, str]]:
    """The rows of a CSV file with the ``required`` columns; any problem is one line naming the
    file (missing columns, over :data:`MAX_ROWS` rows, unreadable, not CSV)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:   # -sig: a spreadsheet's BOM
            reader = csv.DictReader(handle)
            if reader.fieldnames:
                reader.fieldnames = [name.strip() for name in reader.fieldnames]
            missing = [c for c in required if c not in (reader.fieldnames or ())]
            if missing:
                raise UsageError(f"{path}: missing column(s) {', '.join(missing)}")
            rows = []
            for row in reader:
                rows.append(row)
                if len(rows) > MAX_ROWS:
                    raise UsageError(f"{path}: more than {MAX_ROWS:,} rows")
            return rows
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not a CSV file: {exc}") from None


def _int(path: Path, line: int, row: dict[str, str], column: str, most: int = MAX_QUANTITY) -> int:
    """The integer in ``column``, from 0 to ``most``; else one line naming file, line and column."""
    text = (row.get(column) or "").strip()
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{path}: line {line}: {column}: not an integer: {text!r}") from None
    if not 0 <= value <= most:
        raise UsageError(f"{path}: line {line}: {column}: must be 0..{most}, got {value}")
    return value


def _node_name(path: Path, line: int, row: dict[str, str], seen: set[str]) -> str:
    """The ``sn`` of a node row: a valid, unique Node name."""
    name = (row.get("sn") or "").strip()
    if not name:
        raise UsageError(f"{path}: line {line}: sn: required")
    errors = dns1123_subdomain_errors(name)
    if errors:
        raise UsageError(f'{path}: line {line}: sn: invalid Node name "{name}": {errors[0]}')
    if name in seen:
        raise UsageError(f'{path}: line {line}: sn: "{name}" appears twice')
    seen.add(name)
    return name


def load_nodes(path: str | Path, gpu_only: bool = False) -> list[TraceNode]:
    """Read a node list CSV (``sn,cpu_milli,memory_mib,gpu,model``) in file order."""
    path = Path(path)
    nodes: list[TraceNode] = []
    seen: set[str] = set()
    for line, row in enumerate(csv_rows(path, NODE_COLUMNS), start=2):
        name = _node_name(path, line, row, seen)
        gpus = _int(path, line, row, "gpu", MAX_NODE_GPUS)
        model = (row["model"] or "").strip()
        if gpus and not model:
            raise UsageError(f"{path}: line {line}: model: required for a node with {gpus} GPUs")
        if gpu_only and not gpus:
            continue
        nodes.append(TraceNode(name, _int(path, line, row, "cpu_milli"),
                               _int(path, line, row, "memory_mib") * MIB, gpus, model if gpus else ""))
    return nodes


def load_pods(path: str | Path) -> list[TracePod]:
    """Read a pod list CSV: the 11-column files and the 5-column ``multigpu`` files."""
    path = Path(path)
    pods = []
    for line, row in enumerate(csv_rows(path, POD_COLUMNS), start=2):
        num_gpu, gpu_milli = _int(path, line, row, "num_gpu", MAX_GPUS), _int(path, line, row, "gpu_milli", 1000)
        if gpu_milli < 1000 and num_gpu > 1:
            raise UsageError(f"{path}: line {line}: gpu_milli: a share below 1000 needs num_gpu 1, "
                             f"got {num_gpu}")
        if num_gpu == 0:
            gpu_milli = 0
        pods.append(TracePod(row["name"].strip(), _int(path, line, row, "cpu_milli"),
                             _int(path, line, row, "memory_mib") * MIB, num_gpu, gpu_milli,
                             (row.get("gpu_spec") or "").strip()))
    return pods


def workload_name(pods_path: str | Path) -> str:
    """The published ``workload`` column: the pod-list file name without ``.csv``."""
    return Path(pods_path).stem


# ---- scheduler views ------------------------------------------------------------------------


def node_info(node: TraceNode) -> NodeInfo:
    resources = {"cpu": node.cpu_milli, "memory": node.memory, "pods": 1 << 20}
    if node.gpus:
        resources[GPU_RESOURCE] = node.gpus
    labels = {"kubernetes.io/hostname": node.name}
    if node.model:
        labels[LABEL_GPU_MODEL] = node.model
    return NodeInfo(name=node.name, allocatable=dict(resources), capacity=dict(resources),
                    labels=labels, gpu_model=node.model, gpu_count=node.gpus)


def pod_requests(pod: TracePod) -> dict[str, int]:
    requests = {"cpu": pod.cpu_milli, "memory": pod.memory}
    if pod.gpu_milli == 1000:
        requests[GPU_RESOURCE] = pod.num_gpu
    return requests


def pod_info(pod: TracePod, seq: int, name: str | None = None) -> PodInfo:
    """The PodInfo for one submission; ``seq`` makes clones of one row distinct."""
    pod_name = name or pod.name
    return PodInfo(namespace=TRACE_NAMESPACE, name=pod_name, uid=f"{pod_name}-{seq}",
                   requests=pod_requests(pod), gpu_milli=pod.gpu_milli if 0 < pod.gpu_milli < 1000 else 0,
                   gpu_models=pod.gpu_models, creation_seq=seq)


# ---- manifests (gpusched import alibaba) ------------------------------------------------------


def node_manifest(node: TraceNode) -> dict[str, Any]:
    resources = {"cpu": f"{node.cpu_milli}m", "memory": f"{node.memory // MIB}Mi", "pods": "110"}
    if node.gpus:
        resources[GPU_RESOURCE] = str(node.gpus)
    labels = {"kubernetes.io/hostname": node.name}
    if node.model:
        labels[LABEL_GPU_MODEL] = node.model
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node.name, "labels": labels},
            "status": {"capacity": dict(resources), "allocatable": dict(resources)}}


def pod_manifest(pod: TracePod) -> dict[str, Any]:
    requests = {"cpu": f"{pod.cpu_milli}m", "memory": f"{pod.memory // MIB}Mi"}
    annotations = {}
    if pod.gpu_milli == 1000:
        requests[GPU_RESOURCE] = str(pod.num_gpu)
    elif pod.gpu_milli:
        annotations[ANN_GPU_MILLI] = str(pod.gpu_milli)
    if pod.gpu_models:
        annotations[ANN_GPU_MODEL] = "|".join(pod.gpu_models)
    limits = {GPU_RESOURCE: requests[GPU_RESOURCE]} if GPU_RESOURCE in requests else {}
    resources: dict[str, Any] = {"requests": requests}
    if limits:
        resources["limits"] = limits
    metadata: dict[str, Any] = {"name": pod.name, "namespace": TRACE_NAMESPACE}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"containers": [{"name": "main", "image": "trace", "resources": resources}]}}


def write_manifests(nodes: list[TraceNode], pods: list[TracePod], out: str | Path) -> tuple[Path, Path]:
    """Write ``OUT/nodes.yaml`` and ``OUT/pods.yaml`` (multi-document YAML, file order)."""
    import yaml

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    node_path, pod_path = out / "nodes.yaml", out / "pods.yaml"
    node_path.write_text(yaml.safe_dump_all([node_manifest(n) for n in nodes], sort_keys=False))
    pod_path.write_text(yaml.safe_dump_all([pod_manifest(p) for p in pods], sort_keys=False))
    return node_path, pod_path
