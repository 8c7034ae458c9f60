"""sbatch / squeue / scancel / sinfo on the embedded cluster, through the console script."""

from __future__ import annotations

import pytest

from tests.cli.runner import Gpusched


@pytest.fixture
def g(tmp_path):
    cli = Gpusched(tmp_path)
    cli.cluster()
    cli.tmp = tmp_path
    cli.cwd = tmp_path        # the submit directory: slurm-%j.out files land here
    return cli


def write(g, name: str, *lines: str, body: str = "sleep 600") -> str:
    path = g.tmp / name
    path.write_text("\n".join(["#!/bin/bash", *(f"#SBATCH {l}" for l in lines), body]) + "\n")
    return str(path)


def squeue(g) -> list[list[str]]:
    return [line.split() for line in g.ok("squeue").lines[1:]]


def test_submit_queue_and_finish(g):
    path = write(g, "train.sh", "-J train", "--gres=gpu:a100_40gb:4", "-t 20")
    assert g.ok("sbatch", path).out == "Submitted batch job 1\n"
    assert g.ok("sbatch", path).out == "Submitted batch job 2\n"
    assert g.ok("sbatch", path).out == "Submitted batch job 3\n"
    rows = squeue(g)
    assert g.ok("squeue").lines[0].split() == ["JOBID", "PARTITION", "NAME", "USER", "ST",
                                               "TIME", "NODES", "NODELIST(REASON)"]
    assert [(r[0], r[4], r[7]) for r in rows] == [("1", "R", "gpu-node-1"),
                                                  ("2", "R", "gpu-node-1"),
                                                  ("3", "PD", "(Resources)")]
    path_long = write(g, "long.sh", "-J long", "--gres=gpu:a100_40gb:4", "-t 20", body="sleep 1h")
    g.ok("advance", "5m")
    assert squeue(g)[0][5] == "5:00"
    g.ok("advance", "6m")    # 1 and 2 finish at 10m (sleep 600); 3 starts
    assert [(r[0], r[4]) for r in squeue(g)] == [("3", "R")]
    g.ok("sbatch", path_long)
    g.ok("advance", "30m")   # 4 sleeps 1h but its limit is 20 minutes
    jobs = g.json("get", "pods")["items"]
    failed = [p for p in jobs if p["status"]["phase"] == "Failed"]
    assert [(p["metadata"]["labels"]["gpusched.io/slurm-job-id"], p["status"]["reason"])
            for p in failed] == [("4", "DeadlineExceeded")]
    assert squeue(g) == []


def test_dependency_holds_until_the_first_job_completes(g):
    first = write(g, "a.sh", "--gres=gpu:1", body="sleep 300")
    second = write(g, "b.sh", "--gres=gpu:1", "--dependency=afterok:1", body="sleep 60")
    g.ok("sbatch", first)
    g.ok("sbatch", second)
    # the nodes tie for a request-free job; kube-scheduler breaks ties at random (seeded here by
    # the cluster's resourceVersion), so any GPU node is right
    rows = [(r[0], r[4], r[7]) for r in squeue(g)]
    assert rows[0][:2] == ("1", "R") and rows[0][2] in ("gpu-node-1", "gpu-node-2", "gpu-node-3")
    assert rows[1] == ("2", "PD", "(Dependency)")
    g.ok("advance", "5m")
    assert [(r[0], r[4]) for r in squeue(g)] == [("2", "R")]


def test_array_qos_partition_and_cancel(g):
    path = write(g, "arr.sh", "--array=0-3%2", "-p t4", "--gpus=1", "--qos=high")
    g.ok("sbatch", path)
    assert [(r[0], r[1], r[4]) for r in squeue(g)] == [("1_0", "t4", "R"), ("1_1", "t4", "R"),
                                                       ("1_[2-3]", "t4", "PD")]
    pod = g.json("get", "pods")["items"][0]
    assert pod["spec"]["priorityClassName"] == "high"
    assert pod["spec"]["nodeName"] == "gpu-node-3"
    g.ok("scancel", "1")
    assert squeue(g) == []
    assert "Invalid job id specified" in g.fails("scancel", "1")


@pytest.mark.parametrize("lines, message", [
    (["--qos=gold"], "Invalid qos specification"),
    (["-p h100"], "Invalid partition name specified"),
    (["--gres=gpu:h900:1"], "Invalid generic resource (gres) specification"),
    (["--dependency=afterok:42"], "Job dependency problem"),
    (["--mail-user=me"], "unsupported #SBATCH option --mail-user"),
], ids=["qos", "partition", "gres-type", "dependency", "unsupported"])
def test_rejected_submissions(g, lines, message):
    assert message in g.fails("sbatch", write(g, "bad.sh", *lines))
    assert squeue(g) == []


def test_sinfo_states(g):
    g.ok("sbatch", write(g, "a.sh", "--gres=gpu:t4:2"))
    g.ok("sbatch", write(g, "b.sh", "--gres=gpu:v100_16gb:1"))
    g.ok("cordon", "cpu-node-1")
    rows = [line.split() for line in g.ok("sinfo").lines[1:]]
    states = {(r[0], r[4]): r[5] for r in rows}
    assert states[("all*", "idle")] == "gpu-node-1"
    assert states[("all*", "mix")] == "gpu-node-2"
    assert states[("all*", "alloc")] == "gpu-node-3"
    assert states[("all*", "drain")] == "cpu-node-1"
    assert states[("t4", "alloc")] == "gpu-node-3"


def test_dry_run_creates_nothing(g):
    out = g.ok("sbatch", "--dry-run", write(g, "a.sh", "--gres=gpu:2", "--mem=8G")).out
    assert "nvidia.com/gpu: 2" in out and "memory: 8192Mi" in out
    assert squeue(g) == []


def test_held_array_and_a_dependency_that_failed(g):
    # squeue shows a held array as ID_[tasks]; once the job it waits for failed (here: TIMEOUT),
    # Slurm without kill_invalid_depend keeps it pending with reason DependencyNeverSatisfied
    g.ok("sbatch", write(g, "a.sh", "--gres=gpu:1", "-t 1", body="sleep 600"))
    g.ok("sbatch", write(g, "b.sh", "--gres=gpu:1", "--array=0-1", "--dependency=afterok:1"))
    assert [(r[0], r[4], r[7]) for r in squeue(g)][1] == ("2_[0,1]", "PD", "(Dependency)")
    g.ok("advance", "2m")
    assert [(r[0], r[4], r[7]) for r in squeue(g)] == [("2_[0,1]", "PD",
                                                        "(DependencyNeverSatisfied)")]


def test_pending_reason_priority_below_the_top_waiting_pod(g):
    # squeue's (Priority): a higher-priority job waits ahead; the top one waits for (Resources)
    g.ok("sbatch", write(g, "low.sh", "--gpus=64"))
    g.ok("sbatch", write(g, "high.sh", "--gpus=64", "--qos=high"))
    assert [(r[0], r[4], r[7]) for r in squeue(g)] == [("1", "PD", "(Priority)"),
                                                       ("2", "PD", "(Resources)")]
