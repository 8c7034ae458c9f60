"""Sweeps (``sim.sweep``): the sweep file, the result cache, the local pool and a real Ray cluster.

The runs use a small slice of the openb default trace (the first 60 GPU nodes and 400 pods), so a
run takes well under a second and the Ray test spends its time starting Ray, not scheduling.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from gpusched.errors import UsageError
from gpusched.sim.experiment import RunSpec, run
from gpusched.sim.report import write_csvs
from gpusched.sim.sweep import (ResultCache, load_sweep, result_from_json, result_to_json,
                                run_key, run_sweep)
from tests.cli.runner import Gpusched

SWEEP = """\
traces: traces
nodes: openb_node_list_gpu_node.csv
workloads: [default]
policies: [fgd, bestfit]
seeds: 42-43
"""


@pytest.fixture
def small_trace(tmp_path: Path, trace_dir: Path) -> Path:
    """tmp/traces with a slice of the default trace under the original file names."""
    folder = tmp_path / "traces"
    folder.mkdir()
    for name, rows in (("openb_node_list_gpu_node.csv", 60), ("openb_pod_list_default.csv", 400)):
        lines = (trace_dir / name).read_text().splitlines(keepends=True)
        (folder / name).write_text("".join(lines[: rows + 1]))
    return folder


def write_sweep(tmp_path: Path, text: str = SWEEP) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    return path


def csv_bytes(results, out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in write_csvs(results, out)}


def test_cross_product_in_file_order(small_trace, tmp_path):
    runs = load_sweep(write_sweep(tmp_path, SWEEP + "variants:\n  low: {tune: 1.0}\n  high: {tune: 1.3}\n"))
    assert [(r.variant, r.spec.policy, r.spec.seed, r.spec.tune) for r in runs] == [
        ("low", "fgd", 42, 1.0), ("low", "fgd", 43, 1.0), ("low", "bestfit", 42, 1.0),
        ("low", "bestfit", 43, 1.0), ("high", "fgd", 42, 1.3), ("high", "fgd", 43, 1.3),
        ("high", "bestfit", 42, 1.3), ("high", "bestfit", 43, 1.3)]
    assert all(Path(r.spec.pods_csv).parent == small_trace for r in runs)


# (id, sweep text, expected message after "<path>: ")
BAD = [
    ("unknown-policy", SWEEP.replace("[fgd, bestfit]", "[fgd, fdg]"),
     'policies[1]: unknown policy "fdg" (one of random, dotprod'),
    ("unknown-key", SWEEP + "polices: [fgd]\n", 'unknown key "polices"'),
    ("missing-workload-file", SWEEP.replace("[default]", "[default, cpu999]"),
     "workloads[1]: "),
    ("bad-seeds", SWEEP.replace("42-43", "forty"), 'seeds: invalid --seeds "forty"'),
    ("bool-seeds", SWEEP.replace("42-43", "true"), "seeds: must be a range"),
    ("no-policies", SWEEP.replace("[fgd, bestfit]", "[]"), "policies: must be a non-empty list"),
    ("variant-unknown-key", SWEEP + "variants:\n  a: {nodes: 3}\n", 'variants.a: unknown key "nodes"'),
    ("variant-bad-tune", SWEEP + "variants:\n  a: {tune: -1}\n", "variants.a.tune: must be a number in (0, 10]"),
    ("not-a-mapping", "- fgd\n", "must be a mapping"),
    ("bad-yaml", "policies: [fgd\n", "not valid YAML"),
    # before: 1-99999999999 built the list of seeds first (MemoryError, or the machine's memory)
    ("seed-range-too-long", SWEEP.replace("42-43", "1-99999999999"),
     'seeds: invalid --seeds "1-99999999999": at most 10,000 seeds'),
]


@pytest.mark.parametrize("text,message", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_sweep_files_get_one_line(small_trace, tmp_path, text, message):
    path = write_sweep(tmp_path, text)
    with pytest.raises(UsageError) as caught:
        load_sweep(path)
    assert str(caught.value).startswith(f"{path}:") and message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_binary_file_is_one_line(tmp_path):
    """Before: "internal error: UnicodeDecodeError"."""
    path = tmp_path / "sweep.yaml"
    path.write_bytes(b"policies: [fgd]\n\xff\xfe\n")
    with pytest.raises(UsageError, match=r"sweep.yaml: not UTF-8 text \(byte 16\)$"):
        load_sweep(path)


def test_too_many_runs_is_refused(small_trace, tmp_path):
    path = write_sweep(tmp_path, SWEEP.replace("42-43", "1-6000"))
    with pytest.raises(UsageError, match="12000 runs; a sweep file may describe at most 10000"):
        load_sweep(path)


def test_result_json_round_trip_keeps_nan_and_floats(small_trace):
    spec = RunSpec(str(small_trace / "openb_node_list_gpu_node.csv"),
                   str(small_trace / "openb_pod_list_default.csv"), "fgd", 42)
    ran = run(spec)
    result = dataclasses.replace(ran, allocation=(float("nan"),) + ran.allocation[1:])  # a point no event hit
    back = result_from_json(result_to_json(result))
    assert result_to_json(back) == result_to_json(result)
    assert math.isnan(back.allocation[0]) and back.allocation[1:] == ran.allocation[1:]
    assert back.fragmentation == ran.fragmentation


def test_key_depends_on_inputs_bytes_and_settings(small_trace):
    spec = RunSpec(str(small_trace / "openb_node_list_gpu_node.csv"),
                   str(small_trace / "openb_pod_list_default.csv"), "fgd", 42)
    key = run_key(spec)
    assert run_key(dataclasses.replace(spec, seed=43)) != key
    assert run_key(dataclasses.replace(spec, tune=1.0)) != key
    with open(spec.pods_csv, "a") as handle:
        handle.write("openb-pod-extra,1000,1024,0,0,,BE,Running,0,1,0\n")
    assert run_key(spec) != key


def test_local_pool_equals_serial_and_resumes_from_cache(small_trace, tmp_path):
    runs = load_sweep(write_sweep(tmp_path))
    serial = run_sweep(runs, jobs=1, cache=None, progress=False)
    pooled = run_sweep(runs, jobs=2, cache=tmp_path / "cache", progress=False)
    assert csv_bytes(serial, tmp_path / "a") == csv_bytes(pooled, tmp_path / "b")
    assert len(list((tmp_path / "cache").glob("*.json"))) == len(runs)
    # A cached entry is used as is: doctor one and see it come back instead of a new run.
    cache = ResultCache(tmp_path / "cache")
    key = run_key(runs[0].spec)
    cache.put(key, dataclasses.replace(pooled[0], failed=12345))
    again = run_sweep(runs, jobs=1, cache=tmp_path / "cache", progress=False)
    assert again[0].failed == 12345 and again[1:] == pooled[1:]


def test_ray_cluster_gives_the_same_bytes_as_the_local_pool(small_trace, tmp_path):
    from tests.sim.ray_cluster import local_ray_cluster

    runs = load_sweep(write_sweep(tmp_path))
    local = run_sweep(runs, executor="local", jobs=2, cache=None, progress=False)
    with local_ray_cluster() as address:
        on_ray = run_sweep(runs, executor="ray", address=address, cache=tmp_path / "ray-cache",
                           progress=False)
    assert len(on_ray) == len(runs)
    assert csv_bytes(local, tmp_path / "local") == csv_bytes(on_ray, tmp_path / "ray")
    assert len(list((tmp_path / "ray-cache").glob("*.json"))) == len(runs)


def test_sweep_command_writes_outputs(small_trace, tmp_path):
    path = write_sweep(tmp_path)
    cli = Gpusched(tmp_path)
    result = cli.run("sweep", str(path), "--out", str(tmp_path / "out"), "--no-progress", state=False)
    assert result.code == 0, result.err
    assert (tmp_path / "out" / "allocation.csv").is_file() and (tmp_path / "out" / "allocation.png").is_file()
    assert "wrote" in result.out
    bad = cli.run("sweep", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "out"), state=False)
    assert bad.code == 1 and bad.err.startswith("error: ") and bad.err.count("\n") == 1, bad.err
