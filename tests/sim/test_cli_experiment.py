"""``gpusched experiment fgd`` end to end through the console script, on a cut-down trace.

The trace is cut to its first 40 GPU nodes and 400 pods (written to tmp_path under the published
file names, so the summary shows the published values beside ours), which runs in seconds.
"""

from __future__ import annotations

import csv
import subprocess
from pathlib import Path

import pytest

from tests.conftest import gpusched_executable, run_process

NODES, PODS = "openb_node_list_gpu_node.csv", "openb_pod_list_default.csv"


def head(source: Path, target: Path, rows: int) -> None:
    lines = source.read_text().splitlines(keepends=True)
    target.write_text("".join(lines[: rows + 1]))


@pytest.fixture()
def small_trace(trace_dir: Path, tmp_path: Path) -> tuple[Path, Path]:
    nodes, pods = tmp_path / NODES, tmp_path / PODS
    head(trace_dir / NODES, nodes, 40)
    head(trace_dir / PODS, pods, 400)
    return nodes, pods


def gpusched(*args: str) -> subprocess.CompletedProcess:
    return run_process([gpusched_executable(), *args])


def test_experiment_fgd_writes_published_layout(small_trace, published_dir: Path, tmp_path: Path):
    nodes, pods = small_trace
    out = tmp_path / "out"
    done = gpusched("experiment", "fgd", "--nodes", str(nodes), "--pods", str(pods),
                    "--policies", "fgd,bestfit", "--seeds", "42-43", "--published", str(published_dir),
                    "--out", str(out))
    assert done.returncode == 0, done.stderr
    for name in ("allocation.csv", "fragmentation.csv", "fragmentation_ratio.csv"):
        with open(out / name, newline="") as handle:
            rows = list(csv.reader(handle))
        assert rows[0] == ["workload", "sc_policy", "tune", "seed", "total_gpus"] + [str(i) for i in range(131)]
        assert [(r[0], r[1], r[3]) for r in rows[1:]] == [
            ("openb_pod_list_default", "06-FGD", "42"), ("openb_pod_list_default", "06-FGD", "43"),
            ("openb_pod_list_default", "05-BestFit", "42"), ("openb_pod_list_default", "05-BestFit", "43")]
        assert {r[4] for r in rows[1:]} == {str(sum(int(line.split(",")[3]) for line in
                                                    nodes.read_text().splitlines()[1:]))}
    with open(out / "allocation.csv", newline="") as handle:
        first = next(csv.DictReader(handle))
    assert float(first["0"]) < 5.0 < 50.0 < float(first["100"]) <= 100.0   # one pod ~ 0.5 % here
    for plot in ("allocation", "fragmentation"):
        assert (out / f"{plot}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        svg = (out / f"{plot}.svg").read_text()
        # policy names as users say them, the seed count, the zoomed panel, the published overlay
        for text in ("FGD (n=2)", "Best fit (n=2)", "zoom: arrived 85..130 %", "FGD, published",
                     "band = lowest..highest seed"):
            assert text in svg, text
    assert "06-FGD" in done.stdout and "95.23" in done.stdout      # published mean beside ours
    # redirected output: the summary table keeps every column whole (no "…" truncation)
    assert "published@130" in done.stdout and "…" not in done.stdout
    assert f"wrote {out / 'allocation.csv'}" in done.stdout


@pytest.mark.parametrize("args, message", [
    (["--policies", "fgd,best"], 'unknown policy "best"'),
    (["--seeds", "x"], 'invalid --seeds "x"'),
    (["--jobs", "0"], "invalid --jobs 0"),
    # before: the runs, then "error: File exists: /dev/null" (the flag unnamed, the work lost)
    (["--out", "/dev/null"], "--out /dev/null: not a folder"),
    # before: the list of seeds was built first (MemoryError, or the machine's memory)
    (["--seeds", "1-99999999999"], 'invalid --seeds "1-99999999999": at most 10,000 seeds'),
], ids=["unknown-policy", "bad-seeds", "bad-jobs", "out-is-a-file", "seed-range-too-long"])
def test_experiment_fgd_user_mistakes_are_one_line(small_trace, tmp_path, args, message):
    nodes, pods = small_trace
    done = gpusched("experiment", "fgd", "--nodes", str(nodes), "--pods", str(pods),
                    "--out", str(tmp_path / "out"), *args)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [f"error: {done.stderr.strip()[7:]}"]
    assert message in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("which,message", [
    ("pods", "no pods (a header only)"),      # before: "internal error: ValueError: high <= 0"
    ("nodes", "no GPU nodes"),
])
def test_experiment_fgd_header_only_files(small_trace, tmp_path, which, message):
    nodes, pods = small_trace
    empty = tmp_path / "empty.csv"
    empty.write_text((pods if which == "pods" else nodes).read_text().splitlines()[0] + "\n")
    paths = {"nodes": str(nodes), "pods": str(pods), which: str(empty)}
    done = gpusched("experiment", "fgd", "--nodes", paths["nodes"], "--pods", paths["pods"],
                    "--seeds", "1", "--no-progress", "--out", str(tmp_path / "out"))
    assert (done.returncode, done.stderr.strip()) == (1, f"error: {empty}: {message}")


def test_experiment_fgd_missing_file(tmp_path):
    done = gpusched("experiment", "fgd", "--nodes", str(tmp_path / "no.csv"), "--pods",
                    str(tmp_path / "no.csv"), "--out", str(tmp_path / "out"))
    assert done.returncode == 1
    assert done.stderr.strip() == f"error: {tmp_path / 'no.csv'}: no such file"
