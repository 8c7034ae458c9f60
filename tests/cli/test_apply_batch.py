"""``gpusched apply -f``: each document on its own, the cluster settling once after the last.

kubectl sends each object of the files in order and goes on past a refused one
(staging/src/k8s.io/kubectl/pkg/cmd/apply/apply.go, ``Run``: every object visited, errors
collected); the controllers and the scheduler catch up after the writes. Admission meanwhile
sees what the documents before wrote: the Namespace, LimitRange, PriorityClass and
ResourceQuota of the same file, quota usage charged at admission
(plugin/pkg/admission/resourcequota/controller.go ``checkRequest``: used + requested <= hard).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpusched.cli.main import main
from gpusched.cluster.cluster import Cluster


def pod(name: str, namespace: str = "default", gpus: int = 1, **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                                     "resources": {"limits": {"nvidia.com/gpu": gpus}}}], **spec}}


NODES = {"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "gpu"},
         "spec": {"count": 1, "cpu": "64", "memory": "256Gi", "gpu": {"model": "A100-40GB", "count": 8}}}
TEAM = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
    {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "defaults", "namespace": "team"},
     "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "250m"}}]}},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
     "value": 1000},
    {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpus", "namespace": "team"},
     "spec": {"hard": {"requests.nvidia.com/gpu": "1"}}},
    pod("first", "team", priorityClassName="high"),
    pod("second", "team"),
]


def write(tmp_path: Path, documents: list[dict]) -> str:
    path = tmp_path / "objects.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    return str(path)


def apply(tmp_path: Path, documents: list[dict], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    code = main(["--state", str(tmp_path / "state.db"), "apply", "-f", write(tmp_path, documents)])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def pods(tmp_path: Path, namespace: str) -> dict[str, dict]:
    with Cluster.open(str(tmp_path / "state.db")) as cluster:
        return {p["metadata"]["name"]: p for p in cluster.get("pods", namespace=namespace)}


def test_one_settle_for_the_whole_file(tmp_path, capsys, monkeypatch):
    """Before: a settle (controllers, scheduler) after each of the documents."""
    settles: list[object] = []
    original = Cluster._settle
    monkeypatch.setattr(Cluster, "_settle", lambda self, view, fired=None: (
        settles.append(fired), original(self, view, fired))[1])
    code, lines, _ = apply(tmp_path, [NODES, pod("a"), pod("b"), pod("c")], capsys)
    assert code == 0 and lines == ["nodepool.gpusched.io/gpu created", "pod/a created",
                                   "pod/b created", "pod/c created"]
    assert len(settles) == 1
    assert {name: p["spec"].get("nodeName") for name, p in pods(tmp_path, "default").items()} == \
        {"a": "gpu-1", "b": "gpu-1", "c": "gpu-1"}


def test_a_refused_document_is_reported_in_its_place_and_the_others_go_on(tmp_path, capsys):
    documents = [NODES, pod("a"), pod("elsewhere", namespace="missing"), pod("b")]
    code, lines, err = apply(tmp_path, documents, capsys)
    assert code == 1
    assert lines == ["nodepool.gpusched.io/gpu created", "pod/a created", "pod/b created"]
    assert err.splitlines() == [f'error: error when creating "{tmp_path / "objects.yaml"}": '
                                'namespaces "missing" not found']
    assert sorted(pods(tmp_path, "default")) == ["a", "b"]


def test_admission_sees_the_namespace_limits_priority_and_quota_of_the_same_file(tmp_path, capsys):
    code, lines, err = apply(tmp_path, [NODES, *TEAM], capsys)
    assert code == 1
    assert lines[-2:] == ["resourcequota/gpus created", "pod/first created"]
    assert err.strip().endswith('pods "second" is forbidden: exceeded quota: gpus, requested: '
                                "requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=1, "
                                "limited: requests.nvidia.com/gpu=1"), err
    first = pods(tmp_path, "team")["first"]
    assert first["spec"]["priority"] == 1000
    assert first["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "250m"
    assert first["spec"]["nodeName"] == "gpu-1"
