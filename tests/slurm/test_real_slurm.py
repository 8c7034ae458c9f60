"""gpusched against real slurmctld/slurmd: config, submission, GPUs, cancel, state mapping."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow

JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {{name: {name}}}
spec:
  activeDeadlineSeconds: {deadline}
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {{gpu-type: {gpu_type}}}
      tolerations: [{{key: dedicated, operator: Exists}}]
      containers:
      - name: main
        image: pytorch
        command: [sh, -c, '{command}']
        env: [{{name: RUN, value: "{name}"}}]
        resources: {{limits: {{nvidia.com/gpu: {gpus}}}, requests: {{cpu: "1500m", memory: 1Gi}}}}
"""


def _submit_job(slurm, name: str, gpu_type: str, gpus: int, command: str, deadline: int = 600):
    path = slurm.root / f"{name}.yaml"
    path.write_text(JOB.format(name=name, gpu_type=gpu_type, gpus=gpus, command=command,
                               deadline=deadline))
    result = slurm.gpusched("slurm", "submit", "-f", str(path), "--chdir", str(slurm.root))
    assert result.code == 0, result.err
    job_id = result.out.split()[3]
    return job_id, result.err


def _job(slurm, job_id: str) -> dict:
    result = slurm.gpusched("slurm", "jobs", "-o", "json")
    assert result.code == 0, result.err
    return next((j for j in json.loads(result.out) if j["job_id"] == job_id), {})


def _finished(slurm, job_id: str) -> dict:
    return slurm.wait(lambda: (lambda j: j if j.get("phase") in ("Succeeded", "Failed") else None)(
        _job(slurm, job_id)), f"job {job_id} to finish")


def test_generated_config_describes_the_gpus(slurm):
    nodes = slurm.client("sinfo", "-h", "-N", "-o", "%N %G %f").split("\n")
    table = {line.split()[0]: line.split()[1:] for line in nodes if line.strip()}
    assert table["sl-a100"][0].startswith("gpu:a100_40gb:4")
    assert table["sl-t4-1"][0].startswith("gpu:t4:2")
    assert "turing" in table["sl-t4-2"][1]
    partitions = slurm.client("sinfo", "-h", "-o", "%P")
    assert set(partitions.split()) == {"all*", "a100_40gb", "t4"}


def test_job_manifest_runs_with_its_gpus_and_warnings(slurm):
    job_id, warnings = _submit_job(slurm, "train", "a100", 2,
                                   "echo CVD=$CUDA_VISIBLE_DEVICES RUN=$RUN")
    assert "toleration dedicated" in warnings and "image pytorch" in warnings
    done = _finished(slurm, job_id)
    assert done["phase"] == "Succeeded" and done["node"] == "sl-a100"
    assert done["gres"] == "gres:gpu:a100_40gb:2"
    output = (slurm.root / f"slurm-{job_id}.out").read_text()
    assert output.strip() == "CVD=0,1 RUN=train"


def test_running_job_reports_gpus_and_cancel_maps_to_failed(slurm):
    job_id, _ = _submit_job(slurm, "serve", "t4", 2, "sleep 300")
    running = slurm.wait(lambda: (lambda j: j if j.get("phase") == "Running" else None)(
        _job(slurm, job_id)), "job running")
    assert running["node"].startswith("sl-t4") and running["gpus"] == "0,1"
    table = slurm.gpusched("slurm", "jobs").out
    assert f"serve-{job_id}" in table and "Running" in table
    assert slurm.gpusched("slurm", "cancel", job_id).code == 0
    done = _finished(slurm, job_id)
    assert (done["phase"], done["reason"]) == ("Failed", "Cancelled")


def test_sbatch_script_passes_through(slurm):
    script = slurm.root / "pass.sh"
    script.write_text("#!/bin/sh\n#SBATCH --gres=gpu:t4:1\n#SBATCH -J passthru\n"
                      "echo CVD=$CUDA_VISIBLE_DEVICES\n")
    result = slurm.gpusched("slurm", "submit", str(script), "--chdir", str(slurm.root))
    assert result.code == 0, result.err
    job_id = result.out.strip()
    done = _finished(slurm, job_id)
    assert done["phase"] == "Succeeded" and done["name"] == "passthru"
    assert (slurm.root / f"slurm-{job_id}.out").read_text().strip() == "CVD=0"
