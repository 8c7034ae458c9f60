"""Query parameters and headers written with non-ASCII digits get a 4xx, never a 500.

``"²".isdigit()`` is true in Python and ``int("²")`` raises, so a resourceVersion of ``²`` was an
internal error (500); kube-apiserver parses it with ``strconv.ParseUint`` (apiserver
``pkg/storage/etcd3/api_object_versioner.go`` ``ParseResourceVersion``) and answers 400
``invalid resource version``.
"""

from __future__ import annotations

import pytest

from tests.server.conftest import Served

CASES = {                      # id -> (path, expected status, text the message contains)
    "resource-version-superscript": ("/api/v1/pods?resourceVersion=%C2%B2", 400, "invalid resource version"),
    "resource-version-arabic-indic": ("/api/v1/pods?resourceVersion=%D9%A3", 400, "invalid resource version"),
    "limit-superscript": ("/api/v1/pods?limit=%C2%B2", 400, "invalid limit"),
}


def test_non_ascii_digits_are_bad_requests(serve: Served) -> None:
    for case, (path, code, text) in CASES.items():
        status, body = serve.request("GET", path)
        assert status == code, f"{case}: {status} {body}"
        assert isinstance(body, dict) and text in body["message"], f"{case}: {body}"


@pytest.mark.parametrize("tail", ["%C2%B2", "%D9%A3"])
def test_log_tail_lines_not_ascii_is_no_internal_error(serve: Served, tail: str) -> None:
    status, body = serve.request("GET", f"/api/v1/namespaces/default/pods/none/log?tailLines={tail}")
    assert status < 500, body
