"""Manifest loading: files, directories, stdin, multi-document YAML, JSON, List, errors."""

import json

import pytest

from gpusched.errors import ManifestError
from gpusched.objects.manifest import Manifest, load_manifests, load_text

POD = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers: [{{name: c, image: i}}]\n"


def pod_yaml(name):
    return POD.format(name=name)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_multi_document_keeps_index_of_empty_documents(tmp_path):
    path = write(tmp_path, "m.yaml", pod_yaml("a") + "---\n---\n# only a comment\n---\n" + pod_yaml("b"))
    manifests = load_manifests([path])
    assert [(m.name, m.index, m.source) for m in manifests] == [("a", 0, path), ("b", 3, path)]
    assert manifests[1].where == f"{path}: document 3"


def test_directory_sorted_non_recursive(tmp_path):
    write(tmp_path, "b.yml", pod_yaml("b"))
    write(tmp_path, "a.yaml", pod_yaml("a"))
    write(tmp_path, "c.json", json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c"}}))
    write(tmp_path, "notes.txt", "not a manifest")
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", "d.yaml", pod_yaml("d"))
    assert [m.name for m in load_manifests([str(tmp_path)])] == ["a", "b", "c"]


def test_stdin_and_order(tmp_path):
    path = write(tmp_path, "a.yaml", pod_yaml("a"))
    manifests = load_manifests([path, "-"], stdin_text=pod_yaml("s"))
    assert [(m.name, m.source) for m in manifests] == [("a", path), ("s", "STDIN")]


def test_json_stream():
    docs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in ("x", "y")]
    manifests = load_text(json.dumps(docs[0]) + "\n" + json.dumps(docs[1]), "ns.json", json_hint=True)
    assert [(m.name, m.index) for m in manifests] == [("x", 0), ("y", 1)]


def test_list_expanded():
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "y"}}]})
    manifests = load_text(text, "l.json")
    assert manifests == [
        Manifest("l.json[items]", 0, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}),
        Manifest("l.json[items]", 1, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "y"}})]


def test_generate_name_for_pods():
    text = "apiVersion: v1\nkind: Pod\nmetadata: {generateName: w-}\nspec: {containers: [{name: c, image: i}]}\n"
    assert load_text(text, "g.yaml")[0].name == "w-"


def test_dates_stay_strings_and_keys_become_strings():
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  day: 2024-01-01\n  1: one\n"
    assert load_text(text, "c.yaml")[0].obj["data"] == {"day": "2024-01-01", "1": "one"}


def test_missing_path():
    with pytest.raises(ManifestError) as err:
        load_manifests(["nope.yaml"])
    assert str(err.value) == 'the path "nope.yaml" does not exist'


ERROR_CASES = [
    ("yaml-syntax", pod_yaml("a") + "---\nkind: Pod\n  bad: [\n",
     "f.yaml: document 1: error converting YAML to JSON: yaml: line 9: "),
    ("not-a-mapping", "- a\n- b\n", "f.yaml: document 0: expected an object with apiVersion and kind, got a list"),
    ("scalar", "hello\n", "f.yaml: document 0: expected an object with apiVersion and kind, got a string"),
    ("no-kind", "apiVersion: v1\nmetadata: {name: x}\n", "f.yaml: document 0: error validating data: kind not set"),
    ("no-both", "metadata: {name: x}\n",
     "f.yaml: document 0: error validating data: [apiVersion not set, kind not set]"),
    ("unknown-kind", "apiVersion: v1\nkind: Ingress\nmetadata: {name: x}\n",
     'f.yaml: document 0: no matches for kind "Ingress" in version "v1"'),
    ("wrong-version", "apiVersion: v1\nkind: Deployment\nmetadata: {name: x}\n",
     'f.yaml: document 0: no matches for kind "Deployment" in version "v1"'),
    ("no-name", "apiVersion: v1\nkind: Namespace\nmetadata: {}\n",
     "f.yaml: document 0: metadata.name: Required value: name is required"),
    ("no-name-pod", "apiVersion: v1\nkind: Pod\n",
     "f.yaml: document 0: metadata.name: Required value: name or generateName is required"),
    ("generate-name-node", "apiVersion: v1\nkind: Node\nmetadata: {generateName: n-}\n",
     "f.yaml: document 0: metadata.name: Required value: name is required"),
    ("metadata-list", "apiVersion: v1\nkind: Node\nmetadata: [1]\n", "f.yaml: document 0: metadata: must be an object"),
    ("binary", "apiVersion: v1\nkind: Node\nmetadata: {name: !!binary aGk=}\n",
     "f.yaml: document 0: error converting YAML to JSON: unsupported value of type bytes"),
    ("list-item-bad", "apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: Node, metadata: {name: a}}, 3]\n",
     "f.yaml[items]: document 1: expected an object with apiVersion and kind, got a number"),
    ("json-bad", '{"apiVersion": "v1",\n "kind": }', "f.yaml: document 0: error parsing JSON: Expecting value (line 2"),
    ("tab", "apiVersion: v1\n\tkind: Pod\n", "f.yaml: document 0: error converting YAML to JSON: yaml: line 2: "),
]


@pytest.mark.parametrize("text,message", [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_load_errors(text, message):
    with pytest.raises(ManifestError) as err:
        load_text(text, "f.yaml")
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_empty_file_gives_nothing(tmp_path):
    assert load_manifests([write(tmp_path, "e.yaml", "# nothing\n---\n")]) == []
