"""``gpusched whatif`` (variant form) through the console script, on a tiny openb-style trace.

Four 1-GPU nodes (two V100M16, two T4) and eight 1-GPU jobs of 30 minutes arriving a minute
apart: four queue as is, fewer with two more nodes. Bad input is one line and exit 1; the state
file of the embedded cluster is not touched (whatif replays in memory).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.cli.runner import Gpusched

NODES = "sn,cpu_milli,memory_mib,gpu,model\n" + "".join(
    f"node-{i},32000,131072,1,{model}\n" for i, model in enumerate(["V100M16", "V100M16", "T4", "T4"]))
HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
PODS = HEADER + "".join(f"pod-{i},4000,8192,1,1000,,LS,Succeeded,{60 * i},{60 * i + 1800},{60 * i}\n"
                        for i in range(8))


@pytest.fixture()
def trace(tmp_path: Path) -> list[str]:
    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "pods.csv").write_text(PODS)
    return ["--nodes", str(tmp_path / "nodes.csv"), "--pods", str(tmp_path / "pods.csv"),
            "--seeds", "1-2", "--no-progress", "--sample-every", "300"]


def digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_variants_table_files_and_state_unchanged(tmp_path: Path, trace: list[str]):
    g = Gpusched(tmp_path)
    g.cluster()
    before = digest(g.state)
    out = tmp_path / "out"
    result = g.ok("whatif", *trace, "--out", str(out),
                  "--variant", "minus 50% V100: --remove-nodes 50%:V100",
                  "--variant", "plus 2 T4: --add-nodes 2xT4:gpus=1,cpu=32,memory=128Gi")
    assert digest(g.state) == before
    text = result.out
    # redirected output: full-width columns, nothing cut ("…") or wrapped
    assert "…" not in text
    header = next(line for line in text.splitlines() if "Δ plus 2 T4" in line)
    for column in ("metric", "as is", "minus 50% V100", "Δ minus 50% V100", "plus 2 T4"):
        assert column in header
    rows = {line.split("│")[1].strip(): line.split("│")[2:] for line in text.splitlines()
            if line.startswith("│")}
    assert rows["pods never started"][0].strip() == "0.0 ± 0.0"
    wait = {name: float(cell.split("±")[0]) for name, cell in
            zip(("as is", "minus", "d-minus", "plus"), rows["mean wait (min)"][:4]) if name != "d-minus"}
    assert wait["plus"] < wait["as is"] < wait["minus"]
    assert sorted(p.name for p in out.iterdir()) == [
        "comparison.csv", "runs.csv", "summary.png", "summary.svg", "timeseries.png", "timeseries.svg"]
    runs = (out / "runs.csv").read_text().splitlines()
    assert runs[0].startswith("variant,seed,wait_mean_min") and len(runs) == 1 + 3 * 2


BAD = [
    ("unknown-model", ["--add-nodes", "8xH1000"], 'error: --add-nodes 8xH1000: unknown GPU model "H1000"'),
    ("unknown-policy", ["--policy", "fastest"], "error: --policy fastest: unknown policy (one of default,"),
    ("unknown-base-policy", ["--base-policy", "x", "--policy", "fgd"], "error: --base-policy x: unknown policy"),
    ("variant-unknown-model", ["--variant", "a: --add-nodes 2xQ100"],
     'error: --variant "a": --add-nodes 2xQ100: unknown GPU model "Q100"'),
    ("variant-no-match", ["--variant", "b: --remove-nodes 1:A100"],
     'error: --variant "b": --remove-nodes 1:A100: no node matches "A100"'),
    ("variant-bad-option", ["--variant", "a: --add 2xT4"], 'error: --variant "a": unrecognized arguments: --add 2xT4'),
    ("no-match", ["--remove-nodes", "10%:H100"], 'error: --remove-nodes 10%:H100: no node matches "H100" '
                                                 "(models in the cluster: T4, V100M16)"),
    ("nothing", [], "error: whatif: nothing to compare"),
    ("bad-seeds", ["--policy", "fgd", "--seeds", "a-b"], 'error: invalid --seeds "a-b"'),
    ("bad-scale", ["--policy", "fgd", "--time-scale", "0"], "error: invalid --time-scale 0"),
    ("scale-too-big", ["--policy", "fgd", "--time-scale", "1e7"],
     "error: invalid --time-scale 1e+07: must be a number from 1e-06 to 1e+06"),
    ("bad-load", ["--policy", "fgd", "--load", "0"], "error: invalid --load 0: must be a fraction"),
    ("load-beyond-the-trace", ["--policy", "fgd", "--load", "9"], "error: invalid --load 9: "),
    ("bad-until", ["--policy", "fgd", "--until", "-1"], "error: invalid --until -1"),
    # before: one message for both, "invalid --first (>= 1) or --sample-every (60..1e7 seconds)"
    ("bad-first", ["--policy", "fgd", "--first", "0"], "error: invalid --first 0: must be 1 or more"),
    ("bad-sample-every", ["--policy", "fgd", "--sample-every", "nan"],
     "error: invalid --sample-every nan: must be 60 to 1e7 seconds"),
    # before: the runs, then "error: File exists: /dev/null"
    ("out-is-a-file", ["--policy", "fgd", "--out", "/dev/null"], "error: --out /dev/null: not a folder"),
]


@pytest.mark.parametrize("extra,message", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_is_one_line(tmp_path: Path, trace: list[str], extra: list[str], message: str):
    line = Gpusched(tmp_path).fails("whatif", *trace, *extra)
    assert line.startswith(message), line


def test_load_and_time_scale_exclude_each_other(tmp_path: Path, trace: list[str]):
    """Both set the arrival rate: argparse's usage error, exit 1, like every option clash."""
    result = Gpusched(tmp_path).run("whatif", *trace, "--policy", "fgd", "--load", "0.5",
                                    "--time-scale", "2")
    assert result.code == 1 and "Traceback" not in result.err
    assert "error: argument --time-scale: not allowed with argument --load" in result.err


def test_missing_time_columns_name_the_file(tmp_path: Path, trace: list[str]):
    short = tmp_path / "short.csv"
    short.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\npod-0,1000,1024,1,1000\n")
    line = Gpusched(tmp_path).fails("whatif", *trace, "--pods", str(short), "--policy", "fgd")
    assert line.startswith(f"error: {short}: missing column(s)") and "creation_time" in line
