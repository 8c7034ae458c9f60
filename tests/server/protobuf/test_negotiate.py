"""Accept negotiation as apiserver ``negotiation.NegotiateMediaTypeOptions`` does it (goautoneg
clause order; ``RequestScope.AllowsMediaTypeTransform``: Tables in JSON and YAML only,
PartialObjectMetadata[List] in any serializer)."""

from __future__ import annotations

import pytest

from gpusched.server.protobuf.negotiate import protobuf_clause

PB = "application/vnd.kubernetes.protobuf"
POM = "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

# (id, Accept, the kind has a message, expected)
CASES = [
    ("empty", "", True, False),
    ("json", "application/json", True, False),
    ("client-go-default", f"{PB}, */*", True, {}),
    ("kubectl-create", f"{PB},application/json", True, {}),
    ("json-first", f"application/json, {PB}", True, False),
    ("lower-q-json-first", f"{PB};q=0.5, application/json", True, False),
    ("wildcard-after-specific", f"*/*, {PB}", True, {}),
    ("table-in-protobuf-skipped", f"{PB};as=Table;v=v1;g=meta.k8s.io, application/json;as=Table", True, False),
    ("table-in-protobuf-only", f"{PB};as=Table;v=v1;g=meta.k8s.io", True, None),
    ("metadata-informer", f"{PB};{POM}, application/json;{POM}", True,
     {"as": "PartialObjectMetadataList", "g": "meta.k8s.io", "v": "v1"}),
    ("custom-resource-falls-to-json", f"{PB}, application/json", False, False),
    ("custom-resource-protobuf-only", PB, False, None),
]


@pytest.mark.parametrize("accept,has_message,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_protobuf_clause(accept, has_message, expected):
    assert protobuf_clause(accept, has_message) == expected
