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


def test_deployment_runs_two_elected_replicas_with_the_profile_in_cluster():
    """The container runs the console script directly (no shell, no written kubeconfig): without
    --kubeconfig, gpusched scheduler uses the pod's in-cluster configuration."""
    (deployment,) = by_kind("Deployment")
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    words = container["command"]
    assert deployment["spec"]["replicas"] == 2
    assert spec["serviceAccountName"] == "gpusched"
    assert words[:3] == ["gpusched", "-v", "scheduler"] and "args" not in container
    assert "--leader-elect" in words and "--kubeconfig" not in words
    assert words[words.index("--config") + 1] == "/etc/gpusched/profile.yaml"
    assert words[words.index("--lease-namespace") + 1] == deployment["metadata"]["namespace"]


def containers(doc: dict) -> list[dict]:
    pod = ((doc.get("spec") or {}).get("template") or {}).get("spec") or {}
    return list(pod.get("containers") or []) + list(pod.get("initContainers") or [])


def test_no_container_writes_a_kubeconfig_or_runs_a_shell():
    found = [(path.name, c) for path in sorted(DEPLOY.parent.rglob("*.yaml"))
             for doc in yaml.safe_load_all(path.read_text()) if isinstance(doc, dict)
             for c in containers(doc)]
    assert {name for name, _ in found} == {"30-deployment.yaml", "daemonset.yaml"}
    for name, container in found:
        words = [str(w) for w in container.get("command", []) + container.get("args", [])]
        assert words[0] == "gpusched" and not any("kubeconfig" in w for w in words), name
        assert not {"sh", "bash", "-c"} & set(words), name


# A second scheduler is bound to kube-scheduler's roles as in the Kubernetes docs, "Configure
# Multiple Schedulers" (kubernetes/website content/en/examples/admin/sched/my-scheduler.yaml).
UPSTREAM_BINDINGS = {"system:kube-scheduler", "system:volume-scheduler"}


def test_service_account_is_bound_like_upstreams_second_scheduler():
    (account,) = by_kind("ServiceAccount")
    subject = {"kind": "ServiceAccount", "name": account["metadata"]["name"],
               "namespace": account["metadata"]["namespace"]}
    bound = {b["roleRef"]["name"] for b in by_kind("ClusterRoleBinding")
             if b["roleRef"]["kind"] == "ClusterRole" and subject in b["subjects"]}
    (role,) = by_kind("ClusterRole")
    assert bound == UPSTREAM_BINDINGS | {role["metadata"]["name"]}


# (resource, verb) for every API call in gpusched/backends/kube.py
CALLS = [("nodes", "list"), ("nodes", "watch"), ("pods", "list"), ("pods", "watch"),
         ("pods", "patch"), ("pods", "delete"), ("pods/binding", "create"),
         ("pods/status", "patch"), ("configmaps", "list"), ("configmaps", "watch"),
         ("events", "create"), ("leases", "get"), ("leases", "create"), ("leases", "update")]


@pytest.mark.parametrize("resource,verb", CALLS, ids=[f"{r}-{v}" for r, v in CALLS])
def test_cluster_role_allows_what_the_scheduler_calls(resource, verb):
    (role,) = by_kind("ClusterRole")
    assert any(resource in rule["resources"] and verb in rule["verbs"] for rule in role["rules"])
    (binding,) = [b for b in by_kind("ClusterRoleBinding")
                  if b["roleRef"]["name"] == role["metadata"]["name"]]
    assert binding["subjects"][0]["name"] == "gpusched"
