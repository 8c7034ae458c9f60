"""Slurm jobs end on the embedded cluster and leave ``slurm-%j.out``; sacct/squeue show how.

Slurm's behaviour reproduced: the output file opened at job start in the submit directory,
named by ``--output`` (default ``slurm-%j.out``; arrays ``slurm-%A_%a.out``; sbatch man page
"filename pattern"); a job over its ``--time`` is TIMEOUT, its batch step CANCELLED by signal
15 (sacct ``0:15``) and slurmstepd writes ``*** JOB <id> ON <node> CANCELLED AT <time> DUE TO
TIME LIMIT ***``; squeue's ``-u``, ``-p``, ``-t`` and ``--me`` filters.
"""

from __future__ import annotations

import re

import pytest

from tests.cli.runner import Gpusched

EXAMPLES = "examples/slurm"


@pytest.fixture
def g(tmp_path):
    cli = Gpusched(tmp_path)
    cli.cluster()
    cli.tmp = tmp_path
    cli.cwd = tmp_path
    return cli


def script(g, name: str, *lines: str, body: str) -> str:
    path = g.tmp / name
    path.write_text("\n".join(["#!/bin/bash", *(f"#SBATCH {l}" for l in lines), body]) + "\n")
    return str(path)


def repo_path(g, relative: str) -> str:
    from tests.conftest import REPO_ROOT
    return str(REPO_ROOT / relative)


def sacct(g) -> dict[str, list[str]]:
    lines = g.ok("sacct").lines
    assert lines[0].split() == ["JobID", "JobName", "Partition", "Account", "AllocCPUS", "State",
                                "ExitCode"]
    return {line.split()[0]: line.split() for line in lines[2:]}


def test_nvidia_smi_job_writes_its_output_and_completes(g):
    assert g.ok("sbatch", repo_path(g, f"{EXAMPLES}/nvidia-smi-job.sh")).out == "Submitted batch job 1\n"
    text = (g.tmp / "slurm-1.out").read_text()          # written at job start
    lines = text.splitlines()
    assert lines[0].startswith("[gpusched: simulated output of batch job 1 (nvidia-smi) on gpu-node-1")
    assert re.match(r"\[gpusched: allocated GPUs: 0,1 \(CUDA_VISIBLE_DEVICES=0,1, GPU-", lines[1])
    assert lines[2] == "gpu-node-1"                                     # hostname
    assert "| NVIDIA-SMI 550.54.15" in text and text.count("NVIDIA A100-SXM4-40GB          On") == 2
    assert re.search(r"^GPU 1: NVIDIA A100-SXM4-40GB \(UUID: GPU-", text, re.M)
    assert "GPUs: 0,1 on gpu-node-1 (job 1)" in lines
    assert lines[-1] == "[gpusched: `python train.py` was not run: the embedded cluster runs no programs]"
    assert sacct(g)["1"][5] == "RUNNING"
    g.ok("advance", "10s")                        # 5 command lines x 2 s, the documented default
    rows = sacct(g)
    assert rows["1"][5:] == ["COMPLETED", "0:0"] and rows["1.batch"][4:] == ["COMPLETED", "0:0"]


def test_until_killed_job_times_out(g):
    g.ok("sbatch", repo_path(g, f"{EXAMPLES}/until-killed.sh"))
    g.ok("advance", "4m")
    assert sacct(g)["1"][5] == "RUNNING"
    g.ok("advance", "2m")
    rows = sacct(g)
    assert rows["1"][5:] == ["TIMEOUT", "0:0"] and rows["1.batch"][4:] == ["CANCELLED", "0:15"]
    pod = next(iter(g.pods().values()))
    assert (pod["status"]["phase"], pod["status"]["reason"]) == ("Failed", "DeadlineExceeded")
    last = (g.tmp / "slurm-1.out").read_text().splitlines()[-1]
    assert re.fullmatch(r"slurmstepd: error: \*\*\* JOB 1 ON gpu-node-\d CANCELLED AT "
                        r"2026-01-01T00:05:00 DUE TO TIME LIMIT \*\*\*", last)


# One body, one line per shell form the output writer knows (slurm.output._run_line): what each
# line adds to slurm-1.out after the two header lines.
SHELL_LINES = [
    ("export GREETING=hi BARE", []),                          # export: into the environment
    ("echo -e $GREETING ${GREETING}", ["hi hi"]),             # echo expands $VAR and ${VAR}
    ("printenv GREETING NOPE SLURM_JOB_ID", ["hi", "1"]),     # printenv VAR...: the set ones
    ("srun --ntasks=1 echo via srun", ["via srun"]),          # srun CMD runs CMD
    ("srun", []),                                             # srun alone: nothing
    ("cd /tmp", []),                                          # silent commands
    ('echo "unclosed', ['[gpusched: `echo "unclosed` was not run: the embedded cluster runs '
                        'no programs]']),                     # unparseable line
    ("python x.py", ["[gpusched: `python x.py` was not run: the embedded cluster runs no "
                     "programs]"]),
]


def test_shell_lines_of_the_body(g):
    body = "\n".join(line for line, _ in SHELL_LINES)
    g.ok("sbatch", script(g, "shell.sh", "--gres=gpu:1", body=body))
    lines = (g.tmp / "slurm-1.out").read_text().splitlines()
    assert lines[2:] == [out for _, outs in SHELL_LINES for out in outs]


@pytest.mark.parametrize("body,seconds", [
    ("nvidia-smi", 2), ("hostname\nnvidia-smi -L\necho done", 6), ("sleep 90\nnvidia-smi", 90),
], ids=["one-command", "three-commands", "sleep-wins"])
def test_default_run_time(g, body, seconds):
    g.ok("sbatch", script(g, "j.sh", "--gres=gpu:1", body=body))
    g.ok("advance", f"{seconds - 1}s")
    assert sacct(g)["1"][5] == "RUNNING"
    g.ok("advance", "1s")
    assert sacct(g)["1"][5] == "COMPLETED"


def test_output_patterns_and_arrays(g):
    g.ok("sbatch", script(g, "named.sh", "-J probe", "-o %x-%j.log", body="hostname"))
    assert (g.tmp / "probe-1.log").read_text().splitlines()[2].startswith("gpu-node-")
    g.ok("sbatch", script(g, "array.sh", "--array=0-1", body="echo task $SLURM_ARRAY_TASK_ID"))
    assert (g.tmp / "slurm-2_0.out").read_text().splitlines()[-1] == "task 0"
    assert (g.tmp / "slurm-2_1.out").read_text().splitlines()[-1] == "task 1"
    other = g.tmp / "elsewhere"
    other.mkdir()
    g.ok("sbatch", script(g, "chdir.sh", f"--chdir={other}", body="hostname"))
    assert (other / "slurm-3.out").exists()


@pytest.mark.parametrize("args,jobs", [
    ((), ["2"]),
    (("-t", "all"), ["1", "2"]),
    (("-t", "CD"), ["1"]),
    (("-t", "completed,running"), ["1", "2"]),
    (("-u", "default"), ["2"]),
    (("--me",), ["2"]),
    (("-u", "alice"), []),
    (("-p", "all"), ["2"]),
    (("-p", "t4"), []),
], ids=lambda v: str(v))
def test_squeue_filters(g, args, jobs):
    g.ok("sbatch", script(g, "short.sh", "--gres=gpu:1", body="hostname"))
    g.ok("advance", "5s")
    g.ok("sbatch", script(g, "long.sh", "--gres=gpu:1", body="sleep 1h"))
    assert [line.split()[0] for line in g.ok("squeue", *args).lines[1:]] == jobs


@pytest.mark.parametrize("args,message", [
    (("squeue", "-t", "WAITING"), "Invalid job state specified: WAITING"),
], ids=["bad-state"])
def test_squeue_bad_input(g, args, message):
    assert message in g.fails(*args)


def test_unknown_gres_type_lists_the_valid_ones(g):
    message = g.fails("sbatch", script(g, "h100.sh", "--gres=gpu:h100:1", body="nvidia-smi"))
    assert message == ('error: Batch job submission failed: Invalid generic resource (gres) '
                       'specification (unknown GPU type "h100"; valid types: a100_40gb, t4, '
                       'v100_16gb)')
    assert not list(g.tmp.glob("slurm-*.out"))
