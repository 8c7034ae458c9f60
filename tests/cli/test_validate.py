"""``gpusched apply --validate=strict|warn|ignore`` through the real console script.

Reproduces kubectl's ``--validate`` (kubectl pkg/cmd/util/helpers.go GetValidationDirective:
strict/true, warn, ignore/false; default strict) against kube-apiserver's field validation
(apiserver pkg/endpoints/handlers/create.go + rest.go transformDecodeError; kubectl prints the
server's ``Warning: 299`` headers as ``Warning: <text>``, client-go rest/warnings.go).
"""

from __future__ import annotations

import pytest

from tests.cli.runner import Gpusched

TYPO_POD = """apiVersion: v1
kind: Pod
metadata: {name: train}
spec:
  containers:
  - name: c
    image: i
    resource: {limits: {nvidia.com/gpu: 1}}
"""
DUPLICATE_POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: dup, name: dup2}\nspec: {containers: [{name: c, image: i}]}\n"
STRICT_ERROR = ('error: STDIN: document 0: Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
                'unknown field "spec.containers[0].resource"')


@pytest.fixture
def g(tmp_path) -> Gpusched:
    return Gpusched(tmp_path)


@pytest.mark.parametrize("flags", [(), ("--validate",), ("--validate=strict",), ("--validate=true",)],
                         ids=["default", "bare-flag", "strict", "true"])
def test_strict_rejects_the_typo_and_changes_nothing(g, flags):
    assert g.fails("apply", "-f", "-", *flags, stdin=TYPO_POD) == STRICT_ERROR
    assert g.run("get", "pods").err.strip() == "No resources found in default namespace."


def test_strict_with_atomic_is_all_or_nothing_across_documents(g):
    good = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fine}\ndata: {a: b}\n"
    line = g.fails("apply", "-f", "-", "--atomic", stdin=good + "---\n" + TYPO_POD)
    assert line == STRICT_ERROR.replace("document 0", "document 1")
    assert g.run("get", "configmaps").err.strip() == "No resources found in default namespace."


def test_create_from_file_is_strict_too(g):
    # kubectl create -f: POST with fieldValidation=Strict; kubectl names the file
    # (kubectl pkg/cmd/create/create.go: "error when creating %q").
    result = g.run("create", "-f", "-", stdin=TYPO_POD)
    assert result.code == 1 and "Traceback" not in result.err
    assert result.err.strip() == ('error: error when creating "STDIN": Pod in version "v1" cannot be handled as a '
                                  'Pod: strict decoding error: unknown field "spec.containers[0].resource"')
    warned = g.run("create", "-f", "-", "--validate=warn", stdin=TYPO_POD)
    assert warned.code == 0, warned.err
    assert warned.err.splitlines() == ['Warning: unknown field "spec.containers[0].resource"']


def test_duplicate_field_is_named(g):
    assert g.fails("apply", "-f", "-", stdin=DUPLICATE_POD) == (
        'error: STDIN: document 0: Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'duplicate field "metadata.name"')


@pytest.mark.parametrize("flag", ["--validate=warn"], ids=["warn"])
def test_warn_prints_each_finding_and_drops_the_field(g, flag):
    result = g.ok("apply", "-f", "-", flag, stdin=TYPO_POD)
    assert result.err.splitlines() == ['Warning: unknown field "spec.containers[0].resource"']
    assert result.out.strip() == "pod/train created"
    container = g.json("get", "pod", "train")["spec"]["containers"][0]
    assert "resource" not in container and container["name"] == "c"


@pytest.mark.parametrize("flag", ["--validate=ignore", "--validate=false"], ids=["ignore", "false"])
def test_ignore_is_silent_and_drops_the_field(g, flag):
    result = g.ok("apply", "-f", "-", flag, stdin=TYPO_POD)
    assert result.err == ""
    assert "resource" not in g.json("get", "pod", "train")["spec"]["containers"][0]


def test_type_error_fails_even_with_validate_false(g):
    body = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: three}\n"
    assert g.fails("apply", "-f", "-", "--validate=false", stdin=body) == (
        'error: STDIN: document 0: Deployment in version "v1" cannot be handled as a Deployment: json: cannot '
        "unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32")


def test_bad_validate_value(g):
    assert g.fails("apply", "-f", "-", "--validate=maybe", stdin=TYPO_POD) == (
        'error: invalid - validate option "maybe"; must be one of: strict (or true), warn, ignore (or false)')
