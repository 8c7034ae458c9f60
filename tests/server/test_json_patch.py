"""JSON patch (RFC 6902) and JSON merge patch (RFC 7386) exactly, and their errors through serve
as kube-apiserver returns them (apiserver ``pkg/endpoints/handlers/patch.go`` ``applyJSPatch``).

The RFC cases are the RFCs' own appendix examples (ids ``rfc6902-a1`` ...).
"""

from __future__ import annotations

import json

import pytest

from gpusched.cluster.apiserver.api_ops import BadRequestError
from gpusched.server.patch import (JSON_PATCH, MERGE, EntityTooLargeError, JsonPatchError,
                                   apply_patch, json_patch, merge_patch)

CMS = "/api/v1/namespaces/default/configmaps"


def op(kind: str, path: str, **members) -> dict:
    return {"op": kind, "path": path, **({"from": members.pop("from_")} if "from_" in members else {}),
            **members}


@pytest.mark.parametrize(("doc", "ops", "expected"), [
    ({"foo": "bar"}, [op("add", "/baz", value="qux")], {"baz": "qux", "foo": "bar"}),
    ({"foo": ["bar", "baz"]}, [op("add", "/foo/1", value="qux")], {"foo": ["bar", "qux", "baz"]}),
    ({"baz": "qux", "foo": "bar"}, [op("remove", "/baz")], {"foo": "bar"}),
    ({"foo": ["bar", "qux", "baz"]}, [op("remove", "/foo/1")], {"foo": ["bar", "baz"]}),
    ({"baz": "qux", "foo": "bar"}, [op("replace", "/baz", value="boo")], {"baz": "boo", "foo": "bar"}),
    ({"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
     [op("move", "/qux/thud", from_="/foo/waldo")],
     {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}),
    ({"foo": ["all", "grass", "cows", "eat"]}, [op("move", "/foo/3", from_="/foo/1")],
     {"foo": ["all", "cows", "eat", "grass"]}),
    ({"baz": "qux", "foo": ["a", 2, "c"]}, [op("test", "/baz", value="qux"), op("test", "/foo/1", value=2)],
     {"baz": "qux", "foo": ["a", 2, "c"]}),
    ({"foo": "bar"}, [op("add", "/child", value={"grandchild": {}})],
     {"foo": "bar", "child": {"grandchild": {}}}),
    ({"foo": "bar"}, [op("add", "/baz", value="qux", xyz=123)], {"foo": "bar", "baz": "qux"}),
    ({"/": 9, "~1": 10}, [op("test", "/~01", value=10)], {"/": 9, "~1": 10}),
    ({"foo": ["bar"]}, [op("add", "/foo/-", value=["abc", "def"])], {"foo": ["bar", ["abc", "def"]]}),
    # beyond the appendix
    ({"a": 1}, [op("test", "/a", value=1.0)], {"a": 1}),                       # numbers by value
    ({"a": {"b": [1, {"c": None}]}}, [op("test", "/a", value={"b": [1, {"c": None}]})],
     {"a": {"b": [1, {"c": None}]}}),
    ({"a": [1, 2]}, [op("add", "/a/2", value=3)], {"a": [1, 2, 3]}),             # index == length
    ({"a": {"x": 1}}, [op("copy", "/b", from_="/a"), op("replace", "/b/x", value=2)],
     {"a": {"x": 1}, "b": {"x": 2}}),                                           # copy is deep
    ({"a": 1}, [op("move", "/a", from_="/a")], {"a": 1}),
    ({"a": 1}, [op("add", "/b", value=None)], {"a": 1, "b": None}),            # null is a value
    ({"a/b": 1, "m~n": 2}, [op("remove", "/a~1b"), op("replace", "/m~0n", value=3)], {"m~n": 3}),
    ({"a": 1}, [op("replace", "", value={"b": 2})], {"b": 2}),
], ids=["rfc6902-a1-add-member", "rfc6902-a2-add-element", "rfc6902-a3-remove-member",
        "rfc6902-a4-remove-element", "rfc6902-a5-replace", "rfc6902-a6-move", "rfc6902-a7-move-element",
        "rfc6902-a8-test", "rfc6902-a10-nested", "rfc6902-a11-unknown-members",
        "rfc6902-a14-escape-order", "rfc6902-a16-add-array", "test-1-equals-1.0",
        "test-deep-with-null", "add-at-length", "copy-deep", "move-onto-itself", "add-null",
        "escapes", "replace-root"])
def test_rfc6902(doc, ops, expected):
    before = json.dumps(doc)
    assert json_patch(doc, ops) == expected
    assert json.dumps(doc) == before                          # the input is untouched


@pytest.mark.parametrize(("doc", "ops"), [
    ({"baz": "qux"}, [op("test", "/baz", value="bar")]),
    ({"foo": "bar"}, [op("add", "/baz/bat", value="qux")]),
    ({"/": 9, "~1": 10}, [op("test", "/~01", value="10")]),
    ({"a": True}, [op("test", "/a", value=1)]),
    ({"a": 1}, [op("test", "/a", value=True)]),
    ({"a": 0}, [op("test", "/a", value=False)]),
    ({"a": {}}, [op("test", "/a/b", value=None)]),
    ({"a": [1, 2]}, [op("remove", "/a/01")]),
    ({"a": [1, 2]}, [op("remove", "/a/-")]),
    ({"a": [1, 2]}, [op("replace", "/a/2", value=3)]),
    ({"a": [1, 2]}, [op("add", "/a/3", value=3)]),
    ({"a": [1, 2]}, [op("add", "/a/-1", value=3)]),
    ({"a": {"b": 1}}, [op("move", "/a/b/c", from_="/a")]),
    ({"a": 1}, [op("copy", "/b", from_="/nope")]),
    ({"a": 1}, [op("replace", "/b", value=2)]),
    ({"a": 1}, [op("add", "b", value=2)]),
    ({"a": 1}, [op("add", "/a~2", value=2)]),
    ({"a": 1}, [{"op": "add", "path": "/b"}]),
    ({"a": 1}, [{"op": "move", "path": "/b"}]),
    ({"a": 1}, [{"op": "jump", "path": "/a"}]),
    ({"a": 1}, [{"path": "/a"}]),
    ({"a": 1}, [op("replace", "", value=[1])]),
], ids=["rfc6902-a9-test-fails", "rfc6902-a12-missing-parent", "rfc6902-a15-string-vs-number",
        "test-true-is-not-1", "test-1-is-not-true", "test-0-is-not-false", "test-missing-path",
        "leading-zero-index", "dash-on-remove", "replace-past-end", "add-past-length",
        "negative-index", "move-into-own-child", "copy-from-missing", "replace-missing",
        "path-without-slash", "bad-escape", "add-without-value", "move-without-from", "unknown-op",
        "no-op", "root-not-object"])
def test_rfc6902_errors_fail_the_whole_patch(doc, ops):
    before = json.dumps(doc)
    with pytest.raises(JsonPatchError):
        json_patch(doc, [op("add", "/first", value=1), *ops])       # nothing half-applied
    assert json.dumps(doc) == before


@pytest.mark.parametrize(("body", "message"), [
    ({"op": "add"}, "json: cannot unmarshal object into Go value of type jsonpatch.Patch"),
    ([1], "json: cannot unmarshal number into Go value of type jsonpatch.Operation"),
    ("x", "json: cannot unmarshal string into Go value of type jsonpatch.Patch"),
], ids=["object", "number-element", "string"])
def test_undecodable_json_patch_is_400_as_decode_patch(body, message):
    with pytest.raises(BadRequestError) as err:
        json_patch({"a": 1}, body)
    assert err.value.message == message


def test_more_than_10000_operations_is_413():
    with pytest.raises(EntityTooLargeError) as err:       # handlers/patch.go maxJSONPatchOperations
        json_patch({}, [op("test", "", value={})] * 10_001)
    assert err.value.message == ("Request entity too large: The allowed maximum operations in a "
                                 "JSON patch is 10000, got 10001")


def test_copies_may_add_at_most_3_mib():
    """A 1 KB patch of self-doubling copies would build gigabytes; json-patch's
    AccumulatedCopySizeLimit (JSONPatchMaxCopyBytes, 3 MiB) stops it: the generic 422."""
    ops = [op("add", "/a", value=["x" * 1000])] + [op("copy", "/a/-", from_="/a")] * 40
    with pytest.raises(JsonPatchError) as err:
        json_patch({}, ops)
    assert "exceeding the limit 3145728" in err.value.detail


@pytest.mark.parametrize(("target", "patch", "expected"), [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
], ids=[f"rfc7386-appendix-{n}" for n in (1, 2, 3, 4, 5, 6, 7, 8, 13, 15)])
def test_rfc7386(target, patch, expected):
    assert merge_patch(target, patch) == expected


@pytest.mark.parametrize(("patch", "message"), [
    (["c"], "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}"),
    (None, "Invalid JSON Patch"),
], ids=["array", "null"])
def test_merge_patch_bodies_that_are_not_objects_are_400(patch, message):
    with pytest.raises(BadRequestError) as err:
        apply_patch({"a": 1}, patch, MERGE)
    assert err.value.message == message


# ---- through serve ---------------------------------------------------------------------------

def configmap(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"k": "v"}, "immutable": False}


@pytest.mark.slow
def test_failed_json_patch_is_the_generic_422_and_changes_nothing(serve):
    assert serve.request("POST", CMS, configmap("cm"))[0] == 201
    before = serve.json(f"{CMS}/cm")
    status, body = serve.request("PATCH", f"{CMS}/cm", [
        {"op": "replace", "path": "/data/k", "value": "w"},
        {"op": "test", "path": "/immutable", "value": 0}],
        headers={"Content-Type": JSON_PATCH})
    assert status == 422
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "the server rejected our request due to an error in our request",
                    "reason": "Invalid", "details": {}, "code": 422}
    assert serve.json(f"{CMS}/cm") == before
    status, body = serve.request("PATCH", f"{CMS}/cm", [
        {"op": "test", "path": "/immutable", "value": False},
        {"op": "replace", "path": "/data/k", "value": "w"}], headers={"Content-Type": JSON_PATCH})
    assert status == 200 and body["data"] == {"k": "w"}


@pytest.mark.slow
def test_kubectl_json_patch_test_failure_reads_as_upstream(serve):
    assert serve.request("POST", CMS, configmap("cm"))[0] == 201
    done = serve.kubectl("patch", "configmap", "cm", "--type=json", "-p",
                         '[{"op":"test","path":"/data/k","value":"other"}]', check=False)
    assert done.returncode == 1
    assert done.stderr.strip() == ("The request is invalid: the server rejected our request due to "
                                   "an error in our request")
    done = serve.kubectl("patch", "configmap", "cm", "--type=json", "-p",
                         '[{"op":"add","path":"/metadata/annotations","value":{}},'
                         '{"op":"add","path":"/metadata/annotations/example.com~1team","value":"a"}]')
    assert "patched" in done.stdout
    assert serve.json(f"{CMS}/cm")["metadata"]["annotations"] == {"example.com/team": "a"}
    serve.kubectl("patch", "configmap", "cm", "--type=merge", "-p", '{"data":{"k":null,"n":"1"}}')
    assert serve.json(f"{CMS}/cm")["data"] == {"n": "1"}
