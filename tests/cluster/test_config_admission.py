"""A ConfigMap gpusched reads as configuration is refused at the write when it breaks a bound
(issue 25, findings 1 and 2): one line naming the ConfigMap and key, nothing stored, and no
worker building a device per replica.

Upstream: NVIDIA k8s-device-plugin api/config/v1/replicas.go (``ReplicaResource.UnmarshalJSON``:
``replicas`` is a Go ``int`` with only a lower bound; the plugin then registers one device per
replica, so no maximum exists upstream and gpusched's is ``limits.MAX_SHARING_REPLICAS``);
mig-parted api/spec/v1/spec.go and pkg/types/mig_config.go (``MigConfig`` counts, ``Flatten``
appends one profile per count; a GPU holds at most 7 MIG devices); the depth and alias bounds are
the manifest's (``objects.limits``, go-yaml ``allowedAliasRatio``).

Each ``apply`` runs in a subprocess under a 2 GiB address-space limit, so a regression fails
the test instead of taking the machine.
"""

from __future__ import annotations

import resource
import subprocess
from pathlib import Path

import pytest

from gpusched.devices.advertise import node_device_state
from tests.conftest import gpusched_executable, run_process

MEMORY_LIMIT = 2 << 30
NODE = """apiVersion: gpusched.io/v1alpha1
kind: NodePool
metadata: {name: a100}
spec: {names: [gpu-node-1], gpu: {model: A100-40GB, count: 8}}
---
apiVersion: v1
kind: Namespace
metadata: {name: gpu-operator}
"""


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def gpusched(state: Path, *args: str) -> subprocess.CompletedProcess:
    return run_process([gpusched_executable(), "--state", str(state), *args], preexec_fn=_limited)


def configmap(name: str, key: str, text: str, namespace: str = "default") -> str:
    body = "\n".join("    " + line for line in text.splitlines())
    return (f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {namespace}}}\n"
            f"data:\n  {key}: |\n{body}\n")


def sharing(kind: str, replicas: object) -> str:
    return f"version: v1\nsharing: {{{kind}: {{resources: [{{name: nvidia.com/gpu, replicas: {replicas}}}]}}}}"


def deep(levels: int = 5000) -> str:
    return "a: " + "[" * levels + "]" * levels


def alias_bomb() -> str:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 9):
        name, prev = chr(97 + level), chr(96 + level)
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    return "\n".join(lines)


def mig_parted(count: int) -> str:
    return ("version: v1\nmig-configs:\n  huge:\n    - devices: all\n      mig-enabled: true\n"
            f"      mig-devices: {{1g.5gb: {count}}}")


REFUSED = [
    pytest.param("time-slicing-config-all", "default", "any", sharing("timeSlicing", 1000000000),
                 "device-plugin config: number of replicas must be <= 256, got 1000000000",
                 id="time-slicing-1e9-replicas"),
    pytest.param("time-slicing-config", "default", "any", sharing("timeSlicing", 2**63),
                 f"number of replicas must be <= 256, got {2**63}", id="time-slicing-2^63-replicas"),
    pytest.param("device-plugin-config", "kube-system", "any", sharing("mps", 1000000000),
                 "number of replicas must be <= 256", id="mps-1e9-replicas"),
    pytest.param("time-slicing-config-all", "default", "any", deep(),
                 "device-plugin config: unable to parse config file: yaml: exceeded max depth of 100",
                 id="device-plugin-5000-levels"),
    pytest.param("device-plugin-config", "gpu-operator", "default", alias_bomb(),
                 "yaml: document contains excessive aliasing", id="device-plugin-alias-bomb"),
    pytest.param("custom-mig-parted-config", "default", "config.yaml", mig_parted(1000000000),
                 "mig-parted config: mig-configs.huge: mig-devices: at most 7 MIG devices fit on "
                 "one GPU, got 1000000000", id="mig-parted-1e9-devices"),
    pytest.param("custom-mig-parted-config", "gpu-operator", "config.yaml", deep(),
                 "mig-parted config: unable to parse MIG config: yaml: exceeded max depth of 100",
                 id="mig-parted-5000-levels"),
    pytest.param("gpusched-gpu-models", "kube-system", "models.yaml", deep(),
                 "GPU models: models.yaml: yaml: exceeded max depth of 100", id="gpu-models-5000-levels"),
]


@pytest.fixture
def state(tmp_path: Path) -> Path:
    state = tmp_path / "cluster.db"
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(NODE)
    done = gpusched(state, "apply", "-f", str(nodes))
    assert done.returncode == 0, done.stderr
    return state


@pytest.mark.parametrize("name,namespace,key,text,message", REFUSED)
def test_a_config_over_a_bound_is_refused_in_one_line_and_stores_nothing(
        state: Path, tmp_path: Path, name: str, namespace: str, key: str, text: str, message: str):
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(configmap(name, key, text, namespace))
    done = gpusched(state, "apply", "-f", str(manifest))
    assert done.returncode == 1, (done.returncode, done.stderr[-500:])
    assert done.stderr.count("\n") == 1, done.stderr[-2000:]
    assert f'The ConfigMap "{name}" is invalid: data[{key}]: Invalid value: ' in done.stderr
    assert message in done.stderr
    listed = gpusched(state, "get", "configmaps", "-A", "-o", "name")
    assert listed.returncode == 0 and name not in listed.stdout, listed


ACCEPTED = [
    pytest.param("time-slicing-config-all", "default", "any", sharing("timeSlicing", 256),
                 id="256-replicas-the-bound"),
    pytest.param("notes", "default", "any", deep(), id="a-configmap-gpusched-does-not-read"),
    pytest.param("time-slicing-config", "team-a", "any", sharing("timeSlicing", 10**9),
                 id="a-namespace-the-plugin-does-not-search"),
    pytest.param("time-slicing-config-all", "default", "any", "version: v2",
                 id="the-plugin-own-error-is-left-to-the-node"),
]


@pytest.mark.parametrize("name,namespace,key,text", ACCEPTED)
def test_a_config_within_the_bounds_or_not_read_is_stored(state: Path, tmp_path: Path, name: str,
                                                          namespace: str, key: str, text: str):
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {namespace}}}\n---\n"
                        + configmap(name, key, text, namespace))
    done = gpusched(state, "apply", "-f", str(manifest))
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"configmap/{name} created" in done.stdout


def test_a_stored_config_over_the_bound_is_the_node_plugin_error_not_a_device_per_replica():
    """A ConfigMap admitted before a ClusterPolicy named it is parsed with the same bound
    (100,000 replicas: enough to show the bound, small enough that a regression only costs
    this process a few hundred MB)."""
    node = {"metadata": {"name": "gpu-node-1", "labels": {}, "annotations": {
        "gpusched.io/gpu-model": "A100-40GB", "gpusched.io/gpu-count": "8"}}}
    cm = {"metadata": {"name": "time-slicing-config-all", "namespace": "default"},
          "data": {"any": sharing("timeSlicing", 100_000)}}
    state = node_device_state(node, [cm])
    assert "number of replicas must be <= 256, got 100000" in state.error
    assert state.devices.devices == ()
