"""Surrogate escapes in manifests and request bodies: read as Go reads them, never a traceback.

A lone UTF-16 surrogate escape (``"\\ud800"``) used to pass the JSON decoder as a surrogate code
point that no UTF-8 encoder takes, so ``gpusched apply`` of such a ConfigMap ended in ``internal
error: UnicodeEncodeError``. Upstream:

- JSON: Go's encoding/json ``unquote`` (decode.go; the same in sigs.k8s.io/json, which
  kube-apiserver and kubectl use) reads a lone surrogate as U+FFFD and joins a valid pair;
- YAML: go-yaml's scanner (scannerc.go ``yaml_parser_scan_flow_scalar``) refuses any surrogate
  escape in a double-quoted scalar, a valid pair too: ``found invalid Unicode character escape
  code`` (libyaml's scanner, which gpusched reads YAML with, refuses it the same way).
"""

from __future__ import annotations

import json

import pytest
import yaml

from gpusched.errors import ManifestError
from gpusched.objects import limits
from gpusched.objects.manifest import load_text, yaml_load
from gpusched.objects.strict import mapping_from_pairs


def cm_json(value: str) -> str:
    """A ConfigMap as JSON text whose data value is ``value`` written verbatim (escapes kept)."""
    return '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"' + value + '"}}'


def cm_yaml(value: str) -> str:
    return f'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: {value}\n'


JSON_CASES = [
    ("lone-high", "x\\ud800y", "x\ufffdy"),
    ("lone-low", "\\udc00", "\ufffd"),
    ("pair", "\\ud83d\\ude00", "\U0001f600"),
    ("two-highs", "\\ud83d\\ud83d", "\ufffd\ufffd"),
    ("escaped-backslash", "\\\\ud800", "\\ud800"),
    ("plain", "abc", "abc"),
]


@pytest.mark.parametrize("value,want", [c[1:] for c in JSON_CASES], ids=[c[0] for c in JSON_CASES])
def test_json_manifest_reads_surrogates_as_go_does(value, want):
    manifest = load_text(cm_json(value), "c.json")[0]
    assert manifest.obj["data"]["k"] == want
    assert limits.encoded_size(manifest.obj) > 0          # encodable: no UnicodeEncodeError


@pytest.mark.parametrize("value,want", [c[1:] for c in JSON_CASES], ids=[c[0] for c in JSON_CASES])
def test_json_bodies_read_surrogates_as_go_does(value, want):
    assert limits.json_loads(cm_json(value))["data"]["k"] == want


YAML_CASES = [
    ("lone", '"x\\ud800y"', "c.yaml: document 0: error converting YAML to JSON: yaml: line 6: "
                            "found invalid Unicode character escape code"),
    ("pair", '"\\ud83d\\ude00"', "line 6: found invalid Unicode character escape code"),
    ("long-escape", '"\\U0000dc00"', "line 6: found invalid Unicode character escape code"),
]


@pytest.mark.parametrize("value,message", [c[1:] for c in YAML_CASES], ids=[c[0] for c in YAML_CASES])
def test_yaml_manifest_refuses_surrogate_escapes_as_go_yaml(value, message):
    with pytest.raises(ManifestError) as err:
        load_text(cm_yaml(value), "c.yaml")
    assert message in str(err.value)


def test_yaml_bodies_refuse_surrogate_escapes():
    with pytest.raises(yaml.YAMLError, match="found invalid Unicode character escape code"):
        yaml_load('k: "\\ud800"\n')


@pytest.mark.parametrize("value,want", [("x\\ud800y", "x\\ud800y"), ("'\\ud800'", "\\ud800")],
                         ids=["plain-scalar", "single-quoted"])
def test_yaml_backslash_u_outside_double_quotes_is_text(value, want):
    assert load_text(cm_yaml(value), "c.yaml")[0].obj["data"]["k"] == want


def test_config_documents_refuse_surrogate_escapes():
    with pytest.raises(yaml.YAMLError, match="found invalid Unicode character escape code"):
        limits.safe_load('a: 1\nb: "\\udfff"\n')


def test_duplicate_key_marks_survive_the_replacement():
    text = '{"a": "\\ud800", "a": "y"}'
    value = limits.json_loads(text, object_pairs_hook=mapping_from_pairs)
    assert getattr(value, "duplicates", None), value
    assert json.dumps(value) == '{"a": "y"}'
