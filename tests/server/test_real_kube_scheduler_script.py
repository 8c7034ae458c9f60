"""``scripts/real-kube-scheduler.sh``: the configuration it hands a kube-scheduler, and its refusals.

A stub stands in for kube-scheduler (the suite never needs a real one): it copies the
``--config`` file and the kubeconfig that file names, and records its arguments. The
configuration is kube-scheduler's default as ``KubeSchedulerConfiguration`` v1 spells it
(kubernetes ``pkg/scheduler/apis/config/v1``: ``clientConnection.kubeconfig`` /
``contentType``, ``leaderElection.leaderElect``, ``profiles[].schedulerName``), nothing more.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO_ROOT, gpusched_executable, run_process

SCRIPT = str(REPO_ROOT / "scripts" / "real-kube-scheduler.sh")
STUB = """#!/bin/sh
if [ "$1" = --version ]; then echo "Kubernetes v1.35.4-stub"; exit 0; fi
printf '%s\\n' "$@" > "$STUB_OUT/args"
config="$2"
cp "$config" "$STUB_OUT/config.yaml"
kubeconfig=$(sed -n 's/^  kubeconfig: "\\(.*\\)"$/\\1/p' "$config")
cp "$kubeconfig" "$STUB_OUT/kubeconfig"
echo "$config" > "$STUB_OUT/config-path"
"""


@pytest.fixture
def stub(tmp_path) -> Path:
    path = tmp_path / "bin" / "kube-scheduler"
    path.parent.mkdir()
    path.write_text(STUB)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "out").mkdir()
    return path


def _run(tmp_path, *args: str, **env: str):
    path = os.pathsep.join([str(Path(gpusched_executable()).parent), "/usr/bin", "/bin"])
    return run_process(["bash", SCRIPT, *args],
                       env={"PATH": path, "STUB_OUT": str(tmp_path / "out"), **env})


def test_default_configuration_and_flags(tmp_path, stub):
    kubeconfig = tmp_path / "serve-kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    result = _run(tmp_path, "--kubeconfig", str(kubeconfig), "--scheduler-name", "real-big",
                  "--", "--v=4", KUBE_SCHEDULER=str(stub))
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    assert yaml.safe_load((out / "config.yaml").read_text()) == {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": "real-big"}]}
    args = (out / "args").read_text().splitlines()
    assert args[0] == "--config" and args[2:] == ["--secure-port=0", "--v=4"]
    assert not Path((out / "config-path").read_text().strip()).exists()   # removed at exit
    assert result.stderr.startswith("real-kube-scheduler: Kubernetes v1.35.4-stub, profile real-big")


def test_loopback_kubeconfig_from_gpusched_and_json(tmp_path, stub):
    result = _run(tmp_path, "--port", "8123", "--content-type", "json", KUBE_SCHEDULER=str(stub))
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    config = yaml.safe_load((out / "config.yaml").read_text())
    assert config["clientConnection"]["contentType"] == "application/json"
    assert config["profiles"] == [{"schedulerName": "real-scheduler"}]
    server = yaml.safe_load((out / "kubeconfig").read_text())["clusters"][0]["cluster"]["server"]
    assert server == "http://127.0.0.1:8123"


@pytest.mark.parametrize("args,env,message", [
    ((), {}, "no kube-scheduler on PATH: set KUBE_SCHEDULER=/path/to/kube-scheduler"),
    ((), {"KUBE_SCHEDULER": "/nonexistent/kube-scheduler"},
     "KUBE_SCHEDULER=/nonexistent/kube-scheduler: not an executable file"),
    (("--kubeconfig", "/nonexistent/kubeconfig"), {"KUBE_SCHEDULER": "STUB"},
     "--kubeconfig /nonexistent/kubeconfig: no such readable file"),
    (("--port", "99999"), {"KUBE_SCHEDULER": "STUB"}, '--port "99999": want a port number (1-65535)'),
    (("--scheduler-name", "Big_One"), {"KUBE_SCHEDULER": "STUB"},
     "--scheduler-name \"Big_One\": want a DNS subdomain (lower case letters, digits, '-', '.')"),
    (("--content-type", "protobuf"), {"KUBE_SCHEDULER": "STUB"},
     "--content-type: only json is an option (protobuf is the default)"),
    (("--v=4",), {"KUBE_SCHEDULER": "STUB"},
     'unknown argument "--v=4" (kube-scheduler\'s own flags go after --)'),
], ids=["none-on-path", "not-executable", "no-kubeconfig", "bad-port", "bad-name",
        "protobuf-is-default", "flag-before-dashes"])
def test_bad_input_is_one_line(tmp_path, stub, args, env, message):
    env = {k: (str(stub) if v == "STUB" else v) for k, v in env.items()}
    result = _run(tmp_path, *args, **env)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", f"real-kube-scheduler: {message}\n")
    assert not (tmp_path / "out" / "args").exists()
