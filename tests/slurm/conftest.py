"""A real Slurm cluster per test module: slurmctld + one slurmd per fake GPU node, loopback only.

The config comes from ``gpusched slurm config --test-harness`` (unique free ports, ClusterName
and folders per fixture, so two xdist workers can run clusters side by side). Readiness is
polled with ``sinfo`` under ``timeout``; at the end every job is cancelled (so no slurmstepd is
left behind), then the slurmd processes are stopped by PID, then slurmctld.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli.runner import Gpusched
from tests.conftest import run_process, wait_until

CLUSTER_YAML = """\
apiVersion: gpusched.io/v1alpha1
kind: NodePool
metadata: {name: a100}
spec: {names: [sl-a100], gpu: {model: A100-40GB, count: 4}, cpu: "16", memory: 64Gi}
---
apiVersion: gpusched.io/v1alpha1
kind: NodePool
metadata: {name: t4}
spec: {names: [sl-t4-1, sl-t4-2], gpu: {model: T4, count: 2}, cpu: "8", memory: 32Gi}
"""
NODES = ("sl-a100", "sl-t4-1", "sl-t4-2")


@dataclass
class SlurmCluster:
    root: Path
    conf: str
    cli: Gpusched

    def client(self, *argv: str) -> str:
        proc = run_process(list(argv), env=dict(os.environ, SLURM_CONF=self.conf))
        assert proc.returncode == 0, f"{argv}: {proc.stderr}"
        return proc.stdout

    def gpusched(self, *args: str):
        return self.cli.run(*args[:2], "--slurm-conf", self.conf, *args[2:])

    def wait(self, predicate, what: str):
        """Poll ``predicate`` (a probe may time out: that is one more poll) up to the ceiling."""
        return wait_until(predicate, what, interval=0.2)


def _stop(proc: subprocess.Popen, grace: float = 10.0) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    missing = [b for b in ("slurmctld", "slurmd", "sbatch", "squeue", "sinfo") if not shutil.which(b)]
    if missing:
        print(f"skipping: Slurm is not installed (missing {', '.join(missing)})")
        pytest.skip(f"Slurm is not installed (missing {', '.join(missing)})")
    root = tmp_path_factory.mktemp("slurm")
    (root / "cluster.yaml").write_text(CLUSTER_YAML)
    cli = Gpusched(root)
    result = cli.run("slurm", "config", "-f", str(root / "cluster.yaml"), "--out",
                     str(root / "etc"), "--cluster-name", f"t{os.getpid()}",
                     "--test-harness", str(root))
    assert result.code == 0, result.err
    conf = str(root / "etc" / "slurm.conf")
    env = dict(os.environ, SLURM_CONF=conf)
    logs = root / "log"
    ctld = subprocess.Popen(["slurmctld", "-D", "-i"], env=env, start_new_session=True,
                            stdout=open(logs / "ctld.out", "w"), stderr=subprocess.STDOUT)
    daemons = [subprocess.Popen(["slurmd", "-D", "-N", node], env=env, start_new_session=True,
                                stdout=open(logs / f"{node}.out", "w"), stderr=subprocess.STDOUT)
               for node in NODES]
    cluster = SlurmCluster(root, conf, cli)
    try:
        def ready():
            assert ctld.poll() is None, (logs / "ctld.out").read_text()
            proc = subprocess.run(["timeout", "5", "sinfo", "-h", "-N", "-o", "%N %t"], env=env,
                                  capture_output=True, text=True, check=False)
            states = dict(line.split() for line in proc.stdout.splitlines() if line.strip())
            return all(states.get(n) == "idle" for n in NODES)
        cluster.wait(ready, "all slurmd nodes idle")
        yield cluster
    finally:
        subprocess.run(["timeout", "10", "scancel", "--full", "-u", "root"], env=env,
                       capture_output=True, check=False)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and ctld.poll() is None:
            proc = subprocess.run(["timeout", "5", "squeue", "-h"], env=env, capture_output=True,
                                  text=True, check=False)
            if proc.returncode == 0 and not proc.stdout.strip():
                break
            time.sleep(0.2)
        for daemon in daemons:          # slurmd first: it ignores SIGTERM once slurmctld is gone
            _stop(daemon)
        _stop(ctld)
