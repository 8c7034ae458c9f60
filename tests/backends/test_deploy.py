"""deploy/scheduler/: the manifests parse (gpusched's loader and validation where the kind is a
gpusched kind, plain YAML for RBAC), the profile loads, and RBAC covers every call the
secondary scheduler makes."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from gpusched.objects.kinds import KINDS
from gpusched.objects.manifest import load_text
from gpusched.objects.validation import validate
from gpusched.scheduler.profile import parse_config

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "scheduler"


def documents() -> list[dict]:
    return [doc for path in sorted(DEPLOY.glob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text()) if doc]


def by_kind(kind: str) -> list[dict]:
    return [d for d in documents() if d["kind"] == kind]


def test_every_document_parses_and_known_kinds_validate():
    kinds = set()
    for path in sorted(DEPLOY.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            kinds.add(doc["kind"])
            if doc["kind"] in KINDS:
                (manifest,) = load_text(yaml.safe_dump(doc), str(path))
                assert validate(manifest)["metadata"]["name"] == doc["metadata"]["name"]
    assert kinds == {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                     "ConfigMap", "Deployment"}


def test_profile_configmap_loads_and_serves_gpusched():
    (configmap,) = by_kind("ConfigMap")
    profiles = parse_config(configmap["data"]["profile.yaml"])
    assert [p.scheduler_name for p in profiles] == ["gpusched"]


def test_deployment_runs_two_elected_replicas_with_the_profile():
    (deployment,) = by_kind("Deployment")
    spec = deployment["spec"]["template"]["spec"]
    command = " ".join(spec["containers"][0]["args"])
    assert deployment["spec"]["replicas"] == 2
    assert spec["serviceAccountName"] == "gpusched"
    words = shlex.split(command.split("exec ", 1)[1].replace("\\\n", " "))
    assert words[:3] == ["gpusched", "-v", "scheduler"]
    assert "--leader-elect" in words
    assert words[words.index("--config") + 1] == "/etc/gpusched/profile.yaml"


# (resource, verb) for every API call in gpusched/backends/kube.py
CALLS = [("nodes", "list"), ("nodes", "watch"), ("pods", "list"), ("pods", "watch"),
         ("pods", "patch"), ("pods", "delete"), ("pods/binding", "create"),
         ("pods/status", "patch"), ("configmaps", "list"), ("configmaps", "watch"),
         ("events", "create"), ("leases", "get"), ("leases", "create"), ("leases", "update")]


@pytest.mark.parametrize("resource,verb", CALLS, ids=[f"{r}-{v}" for r, v in CALLS])
def test_cluster_role_allows_what_the_scheduler_calls(resource, verb):
    (role,) = by_kind("ClusterRole")
    assert any(resource in rule["resources"] and verb in rule["verbs"] for rule in role["rules"])
    (binding,) = by_kind("ClusterRoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"][0]["name"] == "gpusched"
