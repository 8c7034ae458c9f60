"""``gpusched apply -f`` refuses what kube-apiserver refuses, one ``error:`` line per document,
and stores nothing of it (issue 25, finding 6); valid near-boundary objects still apply.

The cases are ``tests/objects/test_validation_upstream.py``'s (each names its upstream file).
All documents go in one file, as a user's multi-document manifest: kubectl (and gpusched) go on
after a refused object, so one run shows every line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.runner import Gpusched, Result
from tests.objects.test_validation_upstream import ACCEPTED, REFUSED


def manifest(objects: list[dict]) -> str:
    """YAML documents, each a JSON flow mapping (a file that starts with ``{`` is read as JSON)."""
    return "".join(f"---\n{json.dumps(obj, ensure_ascii=False)}\n" for obj in objects)


@pytest.fixture(scope="module")
def refused_run(tmp_path_factory) -> tuple[Gpusched, Result]:
    g = Gpusched(tmp_path_factory.mktemp("refused"))
    path = Path(g.state).with_name("refused.yaml")
    path.write_text(manifest([obj for _, obj, _ in REFUSED]), encoding="utf-8")
    return g, g.run("apply", "-f", str(path))


@pytest.mark.parametrize("index", range(len(REFUSED)), ids=[c[0] for c in REFUSED])
def test_each_refused_document_gets_kubectls_line(refused_run, index):
    g, result = refused_run
    path = Path(g.state).with_name("refused.yaml")
    lines = result.err.splitlines()
    assert result.code == 1 and "Traceback" not in result.err
    assert len(lines) == len(REFUSED), result.err[:2000]
    assert lines[index] == f"error: {path}: document {index}: {REFUSED[index][2]}"


def test_nothing_refused_was_stored(refused_run):
    g, result = refused_run
    assert result.out == ""
    for kind in ("pods", "deployments", "configmaps", "jobs", "services", "nodes", "limitranges", "nodepools"):
        assert g.run("get", kind, "-o", "name").out in ("", "service/kubernetes\n"), kind


def test_near_boundary_objects_apply(tmp_path):
    g = Gpusched(tmp_path)
    objects = [obj for _, obj in ACCEPTED if obj["kind"] != "Pod"]
    pods = [obj for _, obj in ACCEPTED if obj["kind"] == "Pod"]
    for i, pod in enumerate(pods):          # distinct names: one document each
        pod["metadata"]["name"] = f"p{i}"
    for i, cm in enumerate(o for o in objects if o["kind"] == "ConfigMap"):
        cm["metadata"]["name"] = f"cm{i}"
    for i, dep in enumerate(o for o in objects if o["kind"] == "Deployment"):
        dep["metadata"]["name"] = f"d{i}"
    for i, node in enumerate(o for o in objects if o["kind"] == "Node"):
        node["metadata"]["name"] = f"n{i}"
    path = tmp_path / "ok.yaml"
    path.write_text(manifest(pods + objects), encoding="utf-8")    # pods before the LimitRange
    result = g.run("apply", "-f", str(path))
    assert result.code == 0 and result.err == "", result.err[:2000]
    assert len(result.lines) == len(objects) + len(pods)


@pytest.mark.parametrize("verb", ["apply", "create"])
@pytest.mark.parametrize("text", ["# only a comment\n", "---\n# nothing\n---\n"], ids=["comment", "empty-documents"])
def test_a_file_without_objects_is_kubectls_error(tmp_path, verb, text):
    """kubectl apply.go / create.go: ``no objects passed to apply`` when the visitor found none."""
    path = tmp_path / "empty.yaml"
    path.write_text(text)
    assert Gpusched(tmp_path).fails(verb, "-f", str(path)) == f"error: no objects passed to {verb}"


def test_applying_another_uid_is_refused_and_changes_nothing(tmp_path):
    """kubectl apply's patch carries the manifest's uid; ValidateObjectMetaAccessorUpdate
    (apimachinery objectmeta.go) refuses a changed one: ``field is immutable``."""
    g = Gpusched(tmp_path)
    first = tmp_path / "cm.yaml"
    first.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: u}\ndata: {a: b}\n")
    g.ok("apply", "-f", str(first))
    forged = tmp_path / "forged.yaml"
    forged.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: u, uid: forged}\ndata: {a: c}\n")
    assert g.fails("apply", "-f", str(forged)) == (
        f'error: {forged}: document 0: The ConfigMap "u" is invalid: metadata.uid: Invalid value: "forged": '
        "field is immutable")
    assert g.json("get", "configmap", "u")["data"] == {"a": "b"}
