"""Lists through ``gpusched serve``: limit/continue pages of one snapshot, remainingItemCount,
resourceVersionMatch, and the Status of a bad or expired token (``server.lists``).

Upstream references: apiserver ``pkg/storage/continue.go`` (DecodeContinue, EncodeContinue and
its continue_test.go cases), ``pkg/storage/etcd3/store.go`` GetList (pages, remainingItemCount),
``pkg/storage/etcd3/errors.go`` (410 messages), apimachinery
``pkg/apis/meta/internalversion/validation`` ValidateListOptions.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess

import pytest

from gpusched.cluster.apiserver.api_ops import BadRequestError
from gpusched.errors import InvalidError
from gpusched.server import lists
from tests.conftest import CEILING_S, gpusched_executable
from tests.server.conftest import start_serve, stops_cleanly
from tests.server.test_kubectl import _kubectl_binaries

BINARIES = [pytest.param(p.values[0], id=p.id, marks=p.marks) for p in _kubectl_binaries()]

CMS = "/api/v1/namespaces/default/configmaps"


def token(v: object = "meta.k8s.io/v1", rv: object = 5, start: object = "default/a\x00") -> str:
    raw = json.dumps({"v": v, "rv": rv, "start": start}).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def configmap(name: str, **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}}


# ---- tokens (continue.go, continue_test.go TestDecodeContinue) -------------------------------

@pytest.mark.parametrize(("sent", "reason"), [
    (token(v=""), "continue key is not valid: server does not recognize this encoded version "),
    (token(v="v1"), "continue key is not valid: server does not recognize this encoded version v1"),
    (token(rv=0), "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"),
    (token(start=""), "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"),
    (token(start="../key"), "continue key is not valid: ../key"),
    (token(start="/../key"), "continue key is not valid: /../key"),
    (token(start="ns/"), "continue key is not valid: ns/"),
    (token(rv="5"), "continue key is not valid: json: cannot unmarshal string into Go struct field "
                    "continueToken.rv of type int64"),
    ("abc", "continue key is not valid: invalid character 'i' looking for beginning of value"),
    ("ab$c", "continue key is not valid: illegal base64 data at input byte 2"),
    ("eyJ2Ijoi==", "continue key is not valid: illegal base64 data at input byte 8"),
], ids=["empty-version", "invalid-version", "invalid-rv", "no-start-key", "path-traversal-parent",
        "path-traversal-rooted", "trailing-slash", "rv-as-string", "not-json", "not-base64", "padded"])
def test_bad_tokens_are_400_with_decode_continue_reason(sent, reason):
    with pytest.raises(BadRequestError) as err:
        lists.decode_continue(sent)
    assert err.value.message == f"invalid continue token: {reason}"


@pytest.mark.parametrize(("start", "rv", "expected"), [
    ("default/a\x00", 5, ("default/a\x00", 5)),
    ("/", 1, ("", 1)),                        # continue_test.go "root path"
    ("key", -1, ("key", -1)),                 # handleCompactedErrorForPaging's "latest" token
], ids=["valid", "root-path", "latest"])
def test_tokens_round_trip(start, rv, expected):
    assert lists.decode_continue(lists.encode_continue(start, rv)) == expected


def test_token_is_unpadded_base64url_json_as_encode_continue_writes_it():
    sent = lists.encode_continue("default/p\x00", 7)
    assert "=" not in sent
    assert json.loads(base64.urlsafe_b64decode(sent + "==")) == {
        "v": "meta.k8s.io/v1", "rv": 7, "start": "default/p\x00"}


# ---- options (ValidateListOptions, etcd3 GetList) --------------------------------------------

@pytest.mark.parametrize(("query", "message"), [
    ({"resourceVersionMatch": "Exact"}, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: '
     "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"),
    ({"resourceVersionMatch": "Exact", "resourceVersion": "0"}, 'resourceVersionMatch: Forbidden: '
     'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'),
    ({"resourceVersionMatch": "Newest", "resourceVersion": "3"}, 'resourceVersionMatch: Unsupported '
     'value: "Newest": supported values: "Exact", "NotOlderThan", ""'),
    ({"resourceVersionMatch": "NotOlderThan", "resourceVersion": "3", "continue": token()},
     "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided"),
    ({"sendInitialEvents": "true"}, "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"),
], ids=["match-without-rv", "exact-rv-0", "unknown-match", "match-with-continue", "send-initial-events"])
def test_list_options_are_validated_as_validate_list_options(query, message):
    with pytest.raises(InvalidError) as err:
        lists.parse_options(query)
    assert message in err.value.message


@pytest.mark.parametrize(("query", "message"), [
    ({"continue": token(), "resourceVersion": "4"},
     "specifying resource version is not allowed when using continue"),
    ({"resourceVersion": "x1"}, 'invalid resource version: resourceVersion: Invalid value: "x1": '
     'strconv.ParseUint: parsing "x1": invalid syntax'),
], ids=["continue-with-rv", "unparsable-rv"])
def test_bad_list_options_are_400(query, message):
    with pytest.raises(BadRequestError) as err:
        lists.parse_options(query)
    assert err.value.message == message


def test_pages_follow_storage_keys_and_count_what_remains():
    items = [(name, {"n": name}) for name in ("c", "a", "d", "b", "e")]
    first = lists.cut_page(items, lists.ReadPlan(None), 2, 9, lambda body: True, False)
    assert [i["n"] for i in first.items] == ["a", "b"] and first.remaining == 3
    assert lists.decode_continue(first.continue_token) == ("b\x00", 9)
    second = lists.cut_page(items, lists.ReadPlan(9, "b\x00"), 2, 9, lambda body: True, False)
    assert [i["n"] for i in second.items] == ["c", "d"] and second.remaining == 1
    last = lists.cut_page(items, lists.ReadPlan(9, "d\x00"), 2, 9, lambda body: True, False)
    assert [i["n"] for i in last.items] == ["e"] and not last.continue_token and last.remaining is None


def test_filtered_pages_have_no_remaining_count():
    items = [(name, {"n": name}) for name in "abcdef"]
    page = lists.cut_page(items, lists.ReadPlan(None), 2, 3, lambda body: body["n"] in "bdf", True)
    assert [i["n"] for i in page.items] == ["b", "d"]
    assert page.remaining is None and lists.decode_continue(page.continue_token)[0] == "d\x00"


# ---- through serve ---------------------------------------------------------------------------

def names(body: dict) -> list[str]:
    return [item["metadata"]["name"] for item in body["items"]]


@pytest.mark.slow
def test_pages_show_one_snapshot_while_objects_change(serve):
    for name in ("c0", "c1", "c2", "c3", "c4"):
        assert serve.request("POST", CMS, configmap(name))[0] == 201
    first = serve.json(f"{CMS}?limit=2")
    assert names(first) == ["c0", "c1"]
    assert first["metadata"]["remainingItemCount"] == 3
    assert serve.request("DELETE", f"{CMS}/c3")[0] == 200
    assert serve.request("POST", CMS, configmap("c2a"))[0] == 201
    second = serve.json(f"{CMS}?limit=2&continue={first['metadata']['continue']}")
    assert names(second) == ["c2", "c3"]                          # c3 still in the snapshot
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    third = serve.json(f"{CMS}?limit=2&continue={second['metadata']['continue']}")
    assert names(third) == ["c4"] and "continue" not in third["metadata"]
    assert names(serve.json(CMS)) == ["c0", "c1", "c2", "c2a", "c4"]


@pytest.mark.slow
def test_exact_resource_version_reads_the_past_and_too_new_is_a_timeout(serve):
    serve.request("POST", CMS, configmap("a"))
    before = serve.json(CMS)["metadata"]["resourceVersion"]
    serve.request("POST", CMS, configmap("b"))
    then = serve.json(f"{CMS}?resourceVersion={before}&resourceVersionMatch=Exact")
    assert names(then) == ["a"] and then["metadata"]["resourceVersion"] == before
    assert names(serve.json(f"{CMS}?resourceVersion={before}&resourceVersionMatch=NotOlderThan")) == ["a", "b"]
    status, body = serve.request("GET", f"{CMS}?resourceVersion=999999&resourceVersionMatch=Exact")
    assert (status, body["reason"]) == (504, "Timeout")
    assert re.fullmatch(r"Timeout: Too large resource version: 999999, current: \d+", body["message"])
    assert body["details"]["causes"] == [{"reason": "ResourceVersionTooLarge",
                                          "message": "Too large resource version"}]


@pytest.fixture
def served_after_history(tmp_path):
    """serve on a state file that already has changes: its history starts at the current rv."""
    manifest = tmp_path / "a.json"
    manifest.write_text(json.dumps(configmap("a")))
    subprocess.run([gpusched_executable(), "--state", str(tmp_path / "cluster.db"), "apply",
                    "-f", str(manifest)], check=True, capture_output=True, timeout=CEILING_S)
    served = start_serve(tmp_path, "--virtual-clock")
    yield served
    stops_cleanly(served.process)


@pytest.mark.slow
def test_bad_and_expired_tokens_get_upstream_statuses(served_after_history):
    serve = served_after_history
    status, body = serve.request("GET", f"{CMS}?limit=1&continue=abc")
    assert (status, body["reason"]) == (400, "BadRequest")
    assert body["message"] == ("invalid continue token: continue key is not valid: invalid character "
                               "'i' looking for beginning of value")
    # rv 1 is older than the server's history (its floor: the rv it started at), as a token
    # whose revision etcd compacted: 410 and a fresh token continuing at the latest state.
    status, body = serve.request("GET", f"{CMS}?limit=1&continue={token(rv=1, start='a')}")
    assert (status, body["reason"], body["code"]) == (410, "Expired", 410)
    assert body["message"].startswith("The provided continue parameter is too old to display a "
                                      "consistent list result. You can start a new list without "
                                      "the continue parameter, or use the continue token")
    assert lists.decode_continue(body["metadata"]["continue"]) == ("a", -1)
    latest = serve.json(f"{CMS}?limit=1&continue={body['metadata']['continue']}")
    assert names(latest) == ["a"]
    status, body = serve.request("GET", f"{CMS}?resourceVersion=1&resourceVersionMatch=Exact")
    assert (status, body["message"]) == (410, "The resourceVersion for the provided list is too old.")


@pytest.mark.slow
def test_selector_pages_carry_no_remaining_count(serve):
    for index in range(6):
        serve.request("POST", CMS, configmap(f"c{index}", parity="even" if index % 2 == 0 else "odd"))
    page = serve.json(f"{CMS}?limit=2&labelSelector=parity%3Deven")
    assert names(page) == ["c0", "c2"] and "remainingItemCount" not in page["metadata"]
    rest = serve.json(f"{CMS}?limit=2&labelSelector=parity%3Deven&continue={page['metadata']['continue']}")
    assert names(rest) == ["c4"]


@pytest.mark.slow
@pytest.mark.parametrize("binary", BINARIES)
def test_kubectl_chunk_size_pages_through_every_pod(serve, binary):
    for index in range(5):
        serve.create_pod(f"p{index}", gpus=0)
    done = serve.kubectl("get", "pods", "--chunk-size=2", "-o", "name", "-v=6", binary=binary)
    assert done.stdout.split() == [f"pod/p{index}" for index in range(5)]
    requests = re.findall(r"GET \S+/api/v1/namespaces/default/pods\?(\S+) 200", done.stderr)
    assert len(requests) == 3 and all("limit=2" in query for query in requests)
    assert all("continue=" in query for query in requests[1:])
    table = serve.kubectl("get", "pods", "--chunk-size=2", binary=binary).stdout.splitlines()
    assert [line.split()[0] for line in table] == ["NAME"] + [f"p{index}" for index in range(5)]


@pytest.mark.slow
def test_kubernetes_client_follows_continue_tokens(serve):
    pytest.importorskip("kubernetes")
    from kubernetes import client, config

    api = client.CoreV1Api(config.new_client_from_config(config_file=str(serve.kubeconfig)))
    for index in range(3):
        api.create_namespaced_config_map("default", configmap(f"m{index}"))
    first = api.list_namespaced_config_map("default", limit=2)
    assert [i.metadata.name for i in first.items] == ["m0", "m1"]
    assert first.metadata.remaining_item_count == 1
    rest = api.list_namespaced_config_map("default", limit=2, _continue=first.metadata._continue)
    assert [i.metadata.name for i in rest.items] == ["m2"] and rest.metadata._continue is None
