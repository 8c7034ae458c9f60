"""An unknown field whose name holds a control character is stored with no Warning header, as
kube-apiserver does: apimachinery ``pkg/util/net/http.go`` ``NewWarningHeader`` refuses a text
with control characters and the apiserver's warning recorder drops it. Before, the newline went
into the header and the connection was dropped with no answer (found by tests/fuzz)."""

from __future__ import annotations

from tests.server.conftest import Served

FIELDS = {"newline": "a\nb", "carriage-return": "a\rb", "nul": "a\x00b", "delete": "a\x7fb"}


def test_unknown_field_with_control_character_is_stored_without_warning(serve: Served) -> None:
    for case, field in FIELDS.items():         # one serve for the table: a start costs seconds
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{case}"}, field: 1}
        status, answer = serve.request("POST", "/api/v1/namespaces/default/configmaps", body)
        assert status == 201, f"{case}: {status} {answer}"
        status, answer = serve.request("GET", f"/api/v1/namespaces/default/configmaps/cm-{case}")
        assert status == 200 and isinstance(answer, dict), f"{case}: {status} {answer}"
