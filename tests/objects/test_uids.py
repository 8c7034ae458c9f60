"""objects.uids: version-5 UUIDs as text, the same as the standard library's ``uuid.uuid5``
(RFC 4122 section 4.3), so stored uids and device UUIDs do not change."""

from __future__ import annotations

import uuid

import pytest

from gpusched.objects.uids import namespace_bytes, uuid5

NAMESPACES = {"view-uids": "6f1f3a62-5a0e-4d0e-9a53-677075736368",
              "device-uuids": "6f1c3a52-2d0e-4c8b-9a57-4b0a1c9e7d10",
              "rfc-dns": str(uuid.NAMESPACE_DNS)}
NAMES = {"pod": "Pod/default/train-1/17", "gpu": "gpu-node-1/gpu/7",
         "mig": "a100-0/gpu/0/mig/4/1g.5gb", "empty": "", "non-ascii": "Pod/équipe/日本/1"}


@pytest.mark.parametrize("namespace", NAMESPACES.values(), ids=NAMESPACES.keys())
@pytest.mark.parametrize("name", NAMES.values(), ids=NAMES.keys())
def test_uuid5_is_the_standard_librarys(namespace: str, name: str) -> None:
    assert uuid5(namespace_bytes(namespace), name) == str(uuid.uuid5(uuid.UUID(namespace), name))


@pytest.mark.parametrize("text", ["6f1f3a62", "not-hex-at-all-zzzz", ""], ids=["short", "not-hex", "empty"])
def test_a_namespace_that_is_no_uuid_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        namespace_bytes(text)
