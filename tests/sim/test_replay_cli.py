"""``gpusched replay`` end to end through the console script: the three input formats, the
output files, and bad input (one line naming file, row or key and what is wrong; exit 1)."""

from __future__ import annotations

import csv
import subprocess
from pathlib import Path

import pytest

from gpusched.objects.names import DNS1123_LABEL_MSG, DNS1123_SUBDOMAIN_MSG
from tests.conftest import gpusched_executable, run_process

NODES_CSV = "sn,cpu_milli,memory_mib,gpu,model\nn1,32000,131072,2,T4\nn2,32000,131072,4,V100M16\n"
JOBS_CSV = ("name,arrival,duration,gpus,cpu_milli,memory_mib,gpu_model,qos,namespace\n"
            "a,0,3600,1,4000,8192,,BE,team-a\n"
            "b,60,1800,0.5,2000,4096,T4,LS,team-b\n"
            "c,120,,4,8000,16384,V100M16,,team-a\n"
            "d,180,600,4,8000,16384,,Guaranteed,team-b\n")
MANIFESTS = """apiVersion: batch/v1
kind: Job
metadata:
  name: train
  annotations: {gpusched.io/arrival: 2m}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations: {gpusched.io/duration: 10m}
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: trainer
        resources: {limits: {nvidia.com/gpu: 2}}
---
apiVersion: v1
kind: Pod
metadata:
  name: notebook
  annotations: {gpusched.io/duration: 1h, gpusched.io/gpu-milli: "250"}
spec:
  containers:
  - name: main
    image: jupyter
"""
POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time"


def gpusched(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_process([gpusched_executable(), "replay", "--no-progress", *args], cwd=cwd)


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture()
def files(tmp_path: Path) -> Path:
    (tmp_path / "nodes.csv").write_text(NODES_CSV)
    (tmp_path / "jobs.csv").write_text(JOBS_CSV)
    (tmp_path / "jobs.yaml").write_text(MANIFESTS)
    return tmp_path


def test_job_file_outputs(files: Path):
    done = gpusched("--nodes", "nodes.csv", "--jobs", "jobs.csv", "--sample-every", "30m",
                    "--out", "out", cwd=files)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("replay: 4 pods (4 started, 3 finished, 0 never started, "
                                  "0 refused), 1 preemptions")
    pods = {r["name"]: r for r in rows(files / "out" / "pods.csv")}
    assert (pods["c"]["outcome"], pods["d"]["wait_s"], pods["d"]["node"]) == ("Preempted", "30.0", "n2")
    series = rows(files / "out" / "timeseries.csv")
    assert [(r["time_s"], r["gpu_allocated"], r["running_team-a"]) for r in series] == [
        ("0.0", "1.0", "1"), ("1800.0", "1.5", "1"), ("3600.0", "0.0", "0")]
    assert [r["size"] for r in rows(files / "out" / "summary.csv")] == ["<1", "1", "4"]


def test_manifests_with_arrival_annotation(files: Path):
    done = gpusched("--nodes", "nodes.csv", "-f", "jobs.yaml", "--out", "out", cwd=files)
    assert done.returncode == 0, done.stderr
    pods = {r["job"]: r for r in rows(files / "out" / "pods.csv")}
    assert (pods["train"]["arrival_s"], pods["train"]["end_s"], pods["train"]["gpus"]) == ("120.0", "720.0", "2.0")
    assert (pods["notebook"]["gpus"], pods["notebook"]["run_s"]) == ("0.25", "3600.0")


def test_alibaba_slice(files: Path, trace_dir: Path):
    lines = (trace_dir / "openb_pod_list_default.csv").read_text().splitlines(keepends=True)
    (files / "pods.csv").write_text("".join(lines[:201]))
    nodes = (trace_dir / "openb_node_list_gpu_node.csv").read_text().splitlines(keepends=True)
    (files / "gpu-nodes.csv").write_text("".join(nodes[:101]))
    done = gpusched("--nodes", "gpu-nodes.csv", "--pods", "pods.csv", "--policy", "fgd",
                    "--seed", "42", "--out", "out", cwd=files)
    assert done.returncode == 0, done.stderr
    records = rows(files / "out" / "pods.csv")
    assert len(records) == 200
    assert all(float(r["start_s"]) >= float(r["arrival_s"]) for r in records if r["start_s"])


BAD = [
    ("missing-column", "jobs.csv", "name,arrival\na,0\n", [],
     "error: jobs.csv: missing column(s) gpus"),
    ("negative-time", "jobs.csv", "name,arrival,gpus\na,-5,1\n", [],
     "error: jobs.csv: line 2: arrival: must be a time >= 0 seconds, got -5"),
    ("unknown-model", "jobs.csv", "name,arrival,gpus,gpu_model\na,0,1,H900\n", [],
     'error: jobs.csv: line 2: gpu_model: unknown GPU model "H900"'),
    ("unknown-qos", "jobs.csv", "name,arrival,gpus,qos\na,0,1,Gold\n", [],
     'error: jobs.csv: line 2: qos: unknown QoS class "Gold" (one of Guaranteed, LS, Burstable, BE, or empty)'),
    ("duplicate-name", "jobs.csv", "name,arrival,gpus\na,0,1\na,5,1\n", [],
     'error: jobs.csv: line 3: name: "a" appears twice'),
    ("bad-gpus", "jobs.csv", "name,arrival,gpus\na,0,1.5\n", [],
     "error: jobs.csv: line 2: gpus: a share below 1 or a whole number of GPUs (at most 1024), got 1.5"),
    ("no-time-columns", "pods.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,1024,1,1000\n",
     [], "error: pods.csv: missing column(s) creation_time, deletion_time"),
    ("deleted-before-created", "pods.csv",
     "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\np,1000,1024,1,1000,50,10\n",
     [], "error: pods.csv: line 2: deletion_time: 10 is before creation_time 50"),
    ("unknown-policy", "jobs.csv", JOBS_CSV, ["--policy", "fgdx"],
     'error: --policy: unknown policy "fgdx" (one of default, random, dotprod, clustering, packing, '
     'bestfit, fgd'),
    ("no-file", "other.csv", "", ["--jobs", "missing.csv"],
     "error: missing.csv: cannot read: No such file or directory"),
    ("bad-time-scale", "jobs.csv", JOBS_CSV, ["--time-scale", "-3"],
     "error: invalid --time-scale -3: must be a number from 1e-06 to 1e+06 (arrival times are divided by it)"),
    ("load-beyond-the-trace", "jobs.csv", JOBS_CSV, ["--load", "2"],
     "error: invalid --load 2: jobs.csv can offer at most 1.583 of the cluster's 6 GPUs "
     "(its pods ask for 9.5 GPUs in all)"),
    ("bad-loops", "jobs.csv", JOBS_CSV, ["--loops", "0"], "error: invalid --loops 0: must be 1 to 100"),
    # the rows' names become Pod and Namespace names (apimachinery IsDNS1123Subdomain / Label)
    ("header-only", "jobs.csv", "name,arrival,gpus\n", [], "error: jobs.csv: no rows to replay (a header only)"),
    ("invalid-pod-name", "jobs.csv", "name,arrival,gpus\nA_B,0,1\n", [],
     'error: jobs.csv: line 2: name: invalid value "A_B": ' + DNS1123_SUBDOMAIN_MSG),
    ("invalid-namespace", "jobs.csv", "name,arrival,gpus,namespace\na,0,1,Team_A\n", [],
     'error: jobs.csv: line 2: namespace: invalid value "Team_A": ' + DNS1123_LABEL_MSG),
    ("gpus-not-a-time", "jobs.csv", "name,arrival,gpus\na,0,nan\n", [],
     "error: jobs.csv: line 2: gpus: must be a number of GPUs >= 0, got nan"),
    ("fractional-cpu", "jobs.csv", "name,arrival,gpus,cpu_milli\na,0,1,0.5\n", [],
     "error: jobs.csv: line 2: cpu_milli: must be a whole number from 0 to 1000000000000, got 0.5"),
    ("negative-memory", "jobs.csv", "name,arrival,gpus,memory_mib\na,0,1,-5\n", [],
     "error: jobs.csv: line 2: memory_mib: must be a whole number from 0 to 1000000000000, got -5"),
    ("pods-header-only", "pods.csv", POD_HEADER + "\n", [], "error: pods.csv: no rows to replay (a header only)"),
    ("scheduled-before-created", "pods.csv", POD_HEADER + "\np,1000,1024,1,1000,100,200,50\n", [],
     "error: pods.csv: line 2: scheduled_time: 50 is before creation_time 100"),
    ("negative-num-gpu", "pods.csv", POD_HEADER + "\np,1000,1024,-2,1000,0,10,\n", [],
     "error: pods.csv: line 2: num_gpu: must be 0..1024, got -2"),
    ("negative-cpu", "pods.csv", POD_HEADER + "\np,-1000,1024,1,1000,0,10,\n", [],
     "error: pods.csv: line 2: cpu_milli: must be 0..1000000000000, got -1000"),
    ("duplicate-pod", "pods.csv", POD_HEADER + "\np,1000,1024,1,1000,0,10,\np,1000,1024,1,1000,0,10,\n", [],
     'error: pods.csv: line 3: name: "p" appears twice'),
    ("until-past-ten-years", "jobs.csv", JOBS_CSV, ["--until", "99999d"],
     "error: --until: more than 10 years, got 99999d"),
    # before: ignored, so every job ran until the replay ended
    ("misspelt-column", "jobs.csv", "name,arrival,gpus,duraton\na,0,1,60\n", [],
     "error: jobs.csv: unknown column(s) duraton (known: name, arrival, gpus, duration, cpu_milli, "
     "memory_mib, gpu_model, qos, namespace)"),
    ("more-cells-than-columns", "jobs.csv", "name,arrival,gpus\na,0,1,60\n", [],
     "error: jobs.csv: line 2: more cells than the header has columns"),
    ("negative-seed", "jobs.csv", JOBS_CSV, ["--seed", "-1"], "error: invalid --seed -1: must be 0 to 4294967295"),
]


@pytest.mark.parametrize("case_id,name,text,extra,message", BAD, ids=[b[0] for b in BAD])
def test_bad_input_one_line(files: Path, case_id, name, text, extra, message):
    (files / name).write_text(text)
    source = ["--pods" if name == "pods.csv" else "--jobs", name] if "--jobs" not in extra else []
    done = gpusched("--nodes", "nodes.csv", *source, *extra, "--out", "out", cwd=files)
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert done.stderr.strip() == message or (case_id == "unknown-policy"
                                              and done.stderr.startswith(message))
    assert "Traceback" not in done.stderr and not (files / "out").exists()


def test_time_scale_one_is_the_replay_as_it_was(files: Path):
    """``--time-scale 1`` writes the same files, byte for byte; ``--time-scale 60`` the same
    pods a minute apart per hour of the job file."""
    runs = {}
    for name, extra in (("plain", []), ("one", ["--time-scale", "1"]), ("sixty", ["--time-scale", "60"])):
        done = gpusched("--nodes", "nodes.csv", "--jobs", "jobs.csv", *extra, "--out", name, cwd=files)
        assert done.returncode == 0, done.stderr
        runs[name] = {p.name: p.read_bytes() for p in (files / name).iterdir()}
    assert runs["one"] == runs["plain"]
    pods = {r["name"]: r for r in rows(files / "sixty" / "pods.csv")}
    assert [pods[n]["arrival_s"] for n in "abcd"] == ["0.0", "1.0", "2.0", "3.0"]


def test_unknown_node_model(files: Path):
    (files / "nodes.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn1,1000,1000,2,Z80\n")
    done = gpusched("--nodes", "nodes.csv", "--jobs", "jobs.csv", cwd=files)
    assert (done.returncode, done.stderr.strip()) == (1, 'error: nodes.csv: node n1: model: unknown GPU model "Z80"')


BAD_NODES = [
    ("negative-gpus", "n1,32000,131072,-2,T4", "error: nodes.csv: line 2: gpu: must be 0..64, got -2"),
    ("too-many-gpus", "n1,32000,131072,100000,T4", "error: nodes.csv: line 2: gpu: must be 0..64, got 100000"),
    ("negative-cpu", "n1,-32000,131072,2,T4",
     "error: nodes.csv: line 2: cpu_milli: must be 0..1000000000000, got -32000"),
    ("no-name", ",32000,131072,2,T4", "error: nodes.csv: line 2: sn: required"),
    ("invalid-name", "N_1,32000,131072,2,T4",
     'error: nodes.csv: line 2: sn: invalid Node name "N_1": ' + DNS1123_SUBDOMAIN_MSG),
    ("duplicate", "n1,32000,131072,2,T4\nn1,32000,131072,2,T4", 'error: nodes.csv: line 3: sn: "n1" appears twice'),
]


@pytest.mark.parametrize("row,message", [b[1:] for b in BAD_NODES], ids=[b[0] for b in BAD_NODES])
def test_bad_node_list_names_its_line(files: Path, row: str, message: str):
    """Before, these reached the API server and came back as "jobs.csv: document 4: The Node ..."."""
    (files / "nodes.csv").write_text(f"sn,cpu_milli,memory_mib,gpu,model\n{row}\n")
    done = gpusched("--nodes", "nodes.csv", "--jobs", "jobs.csv", "--out", "out", cwd=files)
    assert (done.returncode, done.stderr.strip()) == (1, message)
    assert not (files / "out").exists()


def test_out_is_a_file_is_refused_before_the_run(files: Path):
    (files / "taken").write_text("x")
    done = gpusched("--nodes", "nodes.csv", "--jobs", "jobs.csv", "--out", "taken", cwd=files)
    assert (done.returncode, done.stderr.strip()) == (1, "error: --out taken: not a folder")


@pytest.mark.parametrize("header", ["\ufeffname,arrival,gpus", "name, arrival, gpus"], ids=["bom", "spaces"])
def test_spreadsheet_headers_are_read(files: Path, header: str):
    """A CSV saved by a spreadsheet (UTF-8 BOM, blanks after commas in the header) replays."""
    (files / "jobs.csv").write_text(f"{header}\na,0,1\n", encoding="utf-8")
    done = gpusched("--nodes", "nodes.csv", "--jobs", "jobs.csv", "--out", "out", cwd=files)
    assert done.returncode == 0, done.stderr
    assert [r["name"] for r in rows(files / "out" / "pods.csv")] == ["a"]


POD_DOC = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  annotations: {{{ann}}}\n"
           "spec:\n  containers: [{{name: main, image: x}}]\n")
BAD_MANIFESTS = [
    # before: recorded as Refused, exit 0, no reason given (podspec.validate_pod_annotations)
    ("invalid-duration", POD_DOC.format(name="p", ann="gpusched.io/duration: banana"),
     'error: m.yaml: document 0: The Pod "p" is invalid: metadata.annotations[gpusched.io/duration]: '
     'Invalid value: "banana": must be a duration such as 30m, 1h30m or 2d'),
    # before: the second document silently updated the first
    ("same-pod-twice", POD_DOC.format(name="p", ann="") + "---\n" + POD_DOC.format(name="p", ann=""),
     'error: m.yaml: document 1: metadata.name: Pod "p" in namespace "default" appears twice '
     "(first in m.yaml: document 0)"),
    # before: "sample_every: 3600 s gives more than 1,000,000 samples ..."
    ("arrival-past-ten-years", POD_DOC.format(name="p", ann="gpusched.io/arrival: 99999999h"),
     'error: m.yaml: document 0: metadata.annotations[gpusched.io/arrival]: more than 10 years ("99999999h")'),
]


@pytest.mark.parametrize("text,message", [b[1:] for b in BAD_MANIFESTS], ids=[b[0] for b in BAD_MANIFESTS])
def test_bad_manifests_are_refused_before_the_run(files: Path, text: str, message: str):
    (files / "m.yaml").write_text(text)
    done = gpusched("--nodes", "nodes.csv", "-f", "m.yaml", "--out", "out", cwd=files)
    assert (done.returncode, done.stderr.strip()) == (1, message)
    assert not (files / "out").exists()
