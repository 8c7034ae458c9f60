"""The plain reader of ``objects.manifest``: a manifest without anchors, custom tags or merge keys
is read without PyYAML's Python constructor, and every text reads exactly as the general reader
(``yaml.load_all`` with the manifest loader, then the JSON conversion) reads it: the same
documents, duplicate-key marks and errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from gpusched.objects import manifest
from gpusched.objects.manifest import load_text

POD = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  labels: {{app: x}}\n"
       "spec:\n  containers:\n  - name: c\n    image: i\n"
       "    resources: {{limits: {{nvidia.com/gpu: 1, cpu: 500m}}}}\n")
CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm}}\ndata:\n  {body}\n"

CASES = {
    "pods": POD.format(name="a") + "---\n---\n" + POD.format(name="b"),
    "repeated-key": CM.format(body="a: '1'\n  a: '2'\n  b: '3'"),
    "repeated-label": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {a: b, a: c}\n",
    "number-and-text-keys": CM.format(body="1: x\n  '1': y"),
    "bool-and-int-keys": CM.format(body="true: a\n  1: b"),
    "int-forms": CM.format(body="a: 0x1F\n  b: 1_000\n  c: 190:20:30\n  d: 0o17"),
    "floats": CM.format(body="a: 1e3\n  b: -.5\n  c: 12e03"),
    "nan": CM.format(body="a: .nan"),
    "infinity-key": CM.format(body=".inf: a"),
    "date-stays-text": CM.format(body="a: 2024-01-01"),
    "explicit-core-tags": CM.format(body="a: !!str 12\n  b: !!int '7'\n  c: !!float 1"),
    "binary-tag": CM.format(body="a: !!binary aGVsbG8="),
    "custom-tag": CM.format(body="a: !custom x"),
    "anchor-and-alias": CM.format(body="a: &x '1'\n  b: *x"),
    "merge-key": CM.format(body="<<: {a: '1'}\n  b: '2'"),
    "list-key": CM.format(body="? [a]\n  : b"),
    "null-bool-words": CM.format(body="x: null\n  y: ~\n  z: Yes\n  w: on"),
    "syntax-error-after-a-bad-kind": "apiVersion: v1\nkind: Nope\nmetadata: {name: x}\n---\nbad: [\n",
    "depth-99": CM.format(body="a: " + "[" * 99 + "]" * 99),
    "depth-150": CM.format(body="a: " + "[" * 150 + "]" * 150),
    "a-scalar": "'hello'",
    "a-list": "- a\n- b\n",
}


def _read(text: str) -> tuple[Any, ...]:
    try:
        out = load_text(text, "f.yaml")
    except Exception as err:          # the error is part of what must match
        return ("error", type(err).__name__, str(err))
    return ("ok", [(m.index, json.dumps(m.obj), type(m.obj).__name__,
                    getattr(m.obj, "duplicates", ())) for m in out])


@pytest.mark.parametrize("text", CASES.values(), ids=CASES.keys())
def test_plain_reader_reads_as_the_general_reader(monkeypatch, text):
    fast = _read(text)
    monkeypatch.setattr(manifest, "_plain_documents", lambda text: None)
    assert fast == _read(text)


def test_a_plain_manifest_skips_the_python_constructor(monkeypatch):
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("PyYAML's Python constructor ran")

    monkeypatch.setattr(yaml.constructor.BaseConstructor, "construct_document", refuse)
    monkeypatch.setattr(manifest.limits, "check_yaml_text", refuse)
    docs = load_text(POD.format(name="a") + "---\n" + POD.format(name="b"), "f.yaml")
    assert [(m.name, m.obj["spec"]["containers"][0]["resources"]["limits"]) for m in docs] == [
        ("a", {"nvidia.com/gpu": 1, "cpu": "500m"}), ("b", {"nvidia.com/gpu": 1, "cpu": "500m"})]
