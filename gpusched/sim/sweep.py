"""Experiment sweeps: one YAML file, many runs, on a local process pool or a Ray cluster.

A sweep file names the trace folder, the node list, the workloads (pod lists), the policies, the
seeds and optional variants (overrides of a run's settings); its runs are the cross product::

    # sweep.yaml (paths are relative to this file)
    traces: ../shared/data/alibaba-gpu-v2023
    nodes: openb_node_list_gpu_node.csv
    workloads: [default, cpu050]          # openb_pod_list_<name>.csv, or a .csv file name
    policies: [fgd, bestfit]
    seeds: 42-44                          # a range, or a list [42, 45]
    variants:                             # optional: name -> overrides; default {base: {}}
      tune100: {tune: 1.0}
      tune130: {tune: 1.3}

- ``load_sweep(path) -> list[SweepRun]``: validated; every mistake is one ``UsageError`` naming
  the file and the key (``sweep.yaml: policies[1]: unknown policy "fdg" (one of ...)``).
- ``run_key(run)``: sha256 of the run's settings, the bytes of both CSV files and the gpusched
  version: a cached result is reused only when all of them are the same.
- ``run_sweep(runs, executor, jobs, address, cache, progress)``: results in the order of
  ``runs``; runs found in the cache are not run again (a killed sweep resumes where it stopped);
  each finished run is cached at once. ``executor="local"`` runs in a ``spawn`` process pool
  (``sim.progress``: the bar advances per batch of pods);
  ``executor="ray"`` ships each run with the bytes of its CSV files to a Ray cluster
  (``address``: ``auto``, ``host:port`` of a running cluster, or None for a private local one),
  so workers need gpusched installed but not the trace files. Both executors run the same
  ``sim.experiment.run``, so their results are identical, byte for byte once written.

Neighbours: ``sim.experiment`` (one run), ``sim.report`` (CSVs, plots); ``sim.commands`` wires
``gpusched sweep``. Ray is optional (``pip install 'gpusched[ray]'``) and imported only here.
"""

from __future__ import annotations

import hashlib
import json
import math
import tempfile
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable

import yaml

from gpusched import __version__
from gpusched.errors import UsageError
from gpusched.objects import limits
from gpusched.sim.experiment import POLICIES, RunResult, RunSpec, parse_seeds, run
from gpusched.sim.progress import RunProgress, run_local

MAX_RUNS = 10_000                   # a bound on the cross product of one sweep file
MAX_FILE_BYTES = 1 << 20            # sweep files are small
TOP_KEYS = {"traces", "nodes", "workloads", "policies", "seeds", "variants", "tune"}
VARIANT_KEYS = {"tune"}
EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class SweepRun:
    """One run of a sweep: the experiment's spec plus the variant it belongs to."""

    spec: RunSpec
    variant: str = "base"


# ---- the sweep file ---------------------------------------------------------------------------


def _read_yaml(path: Path) -> Any:
    """The parsed sweep file; unreadable, too large, not text or not YAML is one line."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise UsageError(f"{path}: larger than {MAX_FILE_BYTES} bytes")
        return limits.safe_load(path.read_text())
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise UsageError(f"{path}:{where} not valid YAML") from None


def load_sweep(path: str | Path) -> list[SweepRun]:
    path = Path(path)
    doc = _read_yaml(path)
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: must be a mapping with keys {', '.join(sorted(TOP_KEYS))}")
    unknown = sorted(set(map(str, doc)) - TOP_KEYS)
    if unknown:
        raise UsageError(f'{path}: unknown key "{unknown[0]}" (known: {", ".join(sorted(TOP_KEYS))})')
    traces = (path.parent / _text(doc, "traces", path, ".")).resolve()
    nodes = _existing(traces / _text(doc, "nodes", path), path, "nodes")
    pods = [_existing(traces / _workload_file(name), path, f"workloads[{i}]")
            for i, name in enumerate(_list(doc, "workloads", path))]
    policies = _list(doc, "policies", path)
    for i, policy in enumerate(policies):
        if policy not in POLICIES:
            raise UsageError(f'{path}: policies[{i}]: unknown policy "{policy}" (one of {", ".join(POLICIES)})')
    seeds = _seeds(doc.get("seeds", "42"), path)
    base_tune = _tune(doc.get("tune", 1.3), path, "tune")
    variants = _variants(doc.get("variants"), path)
    runs = [SweepRun(RunSpec(str(nodes), str(pod_list), policy, seed,
                             variant.get("tune", base_tune)), name)
            for name, variant in variants.items() for pod_list in pods
            for policy in policies for seed in seeds]
    if len(runs) > MAX_RUNS:
        raise UsageError(f"{path}: {len(runs)} runs; a sweep file may describe at most {MAX_RUNS}")
    return runs


def _text(doc: dict[str, Any], key: str, path: Path, default: str | None = None) -> str:
    value = doc.get(key, default)
    if not isinstance(value, str) or not value:
        raise UsageError(f"{path}: {key}: must be a non-empty string")
    return value


def _list(doc: dict[str, Any], key: str, path: Path) -> list[str]:
    value = doc.get(key)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise UsageError(f"{path}: {key}: must be a non-empty list of names")
    return value


def _workload_file(name: str) -> str:
    return name if name.endswith(".csv") else f"openb_pod_list_{name}.csv"


def _existing(file: Path, path: Path, key: str) -> Path:
    if not file.is_file():
        raise UsageError(f"{path}: {key}: {file}: no such file")
    return file


def _seeds(value: Any, path: Path) -> list[int]:
    if isinstance(value, bool):
        raise UsageError(f"{path}: seeds: must be a range like 42-51 or a list of integers")
    if isinstance(value, int):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return list(value)
    if isinstance(value, str):
        try:
            return parse_seeds(value)
        except UsageError as exc:
            raise UsageError(f"{path}: seeds: {exc}") from None
    raise UsageError(f"{path}: seeds: must be a range like 42-51 or a list of integers")


def _tune(value: Any, path: Path, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 10:
        raise UsageError(f"{path}: {key}: must be a number in (0, 10]")
    return float(value)


def _variants(value: Any, path: Path) -> dict[str, dict[str, float]]:
    if value is None:
        return {"base": {}}
    if not isinstance(value, dict) or not value:
        raise UsageError(f"{path}: variants: must be a mapping of names to overrides")
    out: dict[str, dict[str, float]] = {}
    for name, overrides in value.items():
        if not isinstance(name, str) or not name:
            raise UsageError(f"{path}: variants: names must be non-empty strings")
        if overrides is None:
            overrides = {}
        if not isinstance(overrides, dict):
            raise UsageError(f"{path}: variants.{name}: must be a mapping (known keys: tune)")
        unknown = sorted(set(map(str, overrides)) - VARIANT_KEYS)
        if unknown:
            raise UsageError(f'{path}: variants.{name}: unknown key "{unknown[0]}" (known: tune)')
        out[name] = {k: _tune(v, path, f"variants.{name}.{k}") for k, v in overrides.items()}
    return out


# ---- the cache --------------------------------------------------------------------------------


def _file_digest(path: str, memo: dict[str, str]) -> str:
    if path not in memo:
        memo[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return memo[path]


def run_key(spec: RunSpec, memo: dict[str, str] | None = None) -> str:
    """A key of everything a run's result depends on (settings, input bytes, gpusched version)."""
    memo = {} if memo is None else memo
    settings = {"policy": spec.policy, "seed": spec.seed, "tune": spec.tune,
                "nodes": _file_digest(spec.nodes_csv, memo), "pods": _file_digest(spec.pods_csv, memo),
                "workload": Path(spec.pods_csv).name, "version": __version__}
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()


def result_to_json(result: RunResult) -> str:
    data = asdict(result)
    for name in ("allocation", "fragmentation", "fragmentation_ratio"):
        data[name] = [None if math.isnan(v) else v for v in data[name]]
    return json.dumps(data)


def result_from_json(text: str) -> RunResult:
    data = json.loads(text)
    known = {f.name for f in fields(RunResult)}
    if set(data) != known:
        raise ValueError("not a RunResult")
    for name in ("allocation", "fragmentation", "fragmentation_ratio"):
        data[name] = tuple(float("nan") if v is None else float(v) for v in data[name])
    return RunResult(**data)


class ResultCache:
    """One JSON file per run key under ``directory``; unreadable entries count as missing."""

    def __init__(self, directory: str | Path | None) -> None:
        self.directory = Path(directory) if directory else None

    def get(self, key: str) -> RunResult | None:
        if self.directory is None:
            return None
        try:
            return result_from_json((self.directory / f"{key}.json").read_text())
        except (OSError, ValueError, TypeError):
            return None

    def put(self, key: str, result: RunResult) -> None:
        if self.directory is None:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        final = self.directory / f"{key}.json"
        with tempfile.NamedTemporaryFile("w", dir=self.directory, delete=False, suffix=".tmp") as tmp:
            tmp.write(result_to_json(result))
        Path(tmp.name).replace(final)          # atomic: a killed sweep leaves no half entry


# ---- executors --------------------------------------------------------------------------------


def run_sweep(runs: list[SweepRun], executor: str = "local", jobs: int = 1, address: str | None = None,
              cache: str | Path | None = None, progress: bool = True) -> list[RunResult]:
    """Results in the order of ``runs``; cached runs are reused, new ones cached as they finish."""
    if executor not in EXECUTORS:
        raise UsageError(f'unknown executor "{executor}" (one of {", ".join(EXECUTORS)})')
    store = ResultCache(cache)
    memo: dict[str, str] = {}
    keys = [run_key(r.spec, memo) for r in runs]
    results: list[RunResult | None] = [store.get(k) for k in keys]
    todo = [i for i, r in enumerate(results) if r is None]

    with RunProgress(len(runs), progress, done=len(runs) - len(todo)) as bar:

        def finished(i: int, result: RunResult) -> None:
            results[i] = result
            store.put(keys[i], result)

        items = [(i, runs[i].spec) for i in todo]
        if not items:
            pass
        elif executor == "ray":
            _run_on_ray(items, jobs, address, finished, bar)
        else:
            run_local(items, jobs, finished, bar)
    return [r for r in results if r is not None]


def run_with_inputs(spec: RunSpec, nodes_csv: bytes, pods_csv: bytes) -> RunResult:
    """Run ``spec`` on a machine that may not have its files: write the shipped bytes under the
    same file names (the workload name comes from the pod list's name) and run there."""
    with tempfile.TemporaryDirectory(prefix="gpusched-sweep-") as tmp:
        nodes_path = Path(tmp) / "nodes" / Path(spec.nodes_csv).name
        pods_path = Path(tmp) / "pods" / Path(spec.pods_csv).name
        for target, data in ((nodes_path, nodes_csv), (pods_path, pods_csv)):
            target.parent.mkdir()
            target.write_bytes(data)
        return run(replace(spec, nodes_csv=str(nodes_path), pods_csv=str(pods_path)))


def _run_on_ray(items: list[tuple[int, RunSpec]], jobs: int, address: str | None,
                finished: Callable[[int, RunResult], None], bar: RunProgress) -> None:
    """Each run as a Ray task; the progress bar moves per finished run here (no pod batches
    travel back from Ray workers)."""
    try:
        import ray
    except ImportError:
        raise UsageError("--executor ray needs Ray: pip install 'gpusched[ray]'") from None
    started_here = not ray.is_initialized()
    if started_here:
        try:
            options: dict[str, Any] = {"log_to_driver": False, "logging_level": "ERROR"}
            if address is None:
                options["include_dashboard"] = False
            ray.init(address=address, **options)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UsageError(f"cannot join the Ray cluster at {address}: {exc}".splitlines()[0]) from None
    try:
        remote = ray.remote(num_cpus=1, max_retries=2)(run_with_inputs)
        shipped: dict[str, Any] = {}

        def bytes_of(file: str) -> Any:
            if file not in shipped:
                shipped[file] = ray.put(Path(file).read_bytes())
            return shipped[file]

        pending = {remote.remote(spec, bytes_of(spec.nodes_csv), bytes_of(spec.pods_csv)): i
                   for i, spec in items}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                index, result = pending.pop(ref), ray.get(ref)
                finished(index, result)
                bar.finished(index, result.pods)
    finally:
        if started_here:
            ray.shutdown()
