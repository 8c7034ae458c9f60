"""Name-based UUIDs (RFC 4122 version 5) as text: the deterministic uids of stored objects and
the GPU/MIG device UUIDs.

``str(uuid.uuid5(namespace, name))`` without the ``uuid`` module, which imports ``platform``
when it is imported (about 3 ms of CPU at the start of every command that reads the store).
Version 5 is the SHA-1 of the namespace's 16 bytes and the name's UTF-8 bytes, cut to 16 bytes,
with the version (5) in the high nibble of byte 6 and the RFC 4122 variant (binary 10) in the top
bits of byte 8. Neighbours: ``cluster.apiserver.view`` (uids), ``devices.node`` (device UUIDs).
"""

from __future__ import annotations

import hashlib


def namespace_bytes(text: str) -> bytes:
    """A namespace UUID written as text (``6f1f3a62-5a0e-...``), as its 16 bytes."""
    raw = bytes.fromhex(text.replace("-", ""))
    if len(raw) != 16:
        raise ValueError(f"not a UUID: {text!r}")
    return raw


def uuid5(namespace: bytes, name: str) -> str:
    """``str(uuid.uuid5(UUID(bytes=namespace), name))``.

    >>> uuid5(namespace_bytes("6ba7b810-9dad-11d1-80b4-00c04fd430c8"), "python.org")
    '886313e1-3b8a-5372-9b90-0c9aee199e5d'
    """
    digest = bytearray(hashlib.sha1(namespace + name.encode("utf-8")).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50
    digest[8] = (digest[8] & 0x3F) | 0x80
    text = digest.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
