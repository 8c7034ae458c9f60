"""The protobuf surface: hostile ``application/vnd.kubernetes.protobuf`` bodies POSTed to serve.

Generated manifests (``generate.manifest_cases``) are encoded as kubectl would send them
(``server.protobuf.envelope``), then damaged: cut short, bytes flipped, garbage appended, the
magic or the envelope's lengths broken, random bytes after the magic, objects nested past the
parser's limit, a repeated field of many thousand items. Every reply must be an answer (no
crash, no hang, no 5xx): the api surface's classes and checks (``surface_api.ApiSurface``:
lists, a new pod, ``describe nodes``, ``advance`` and the store's invariants after each batch).

Neighbours: ``tests/fuzz/surface_api.py`` (the server and checks), ``bench/fuzz.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusched.server.protobuf.envelope import MAGIC, encode_object
from tests.fuzz import harness
from tests.fuzz.generate import GeneratedCase, manifest_cases
from tests.fuzz.harness import Tally
from tests.fuzz.surface_api import CHECK_EVERY, ApiSurface, collection_path

PROTOBUF = "application/vnd.kubernetes.protobuf"
DAMAGES = ("none", "cut", "flip", "append", "magic", "length", "random", "nested", "repeated")


def _varint(n: int) -> bytes:
    out = b""
    while n >= 0x80:
        out, n = out + bytes([n & 0x7F | 0x80]), n >> 7
    return out + bytes([n])


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _envelope(api_version: bytes, kind: bytes, raw: bytes) -> bytes:
    return MAGIC + _field(1, _field(1, api_version) + _field(2, kind)) + _field(2, raw)


def nested_bomb(depth: int) -> bytes:
    """A CRD whose openAPIV3Schema nests ``not`` (JSONSchemaProps field 28) ``depth`` times."""
    props = b""
    for _ in range(depth):
        props = _field(28, props)
    version = _field(1, b"v1") + _field(4, _field(1, props))
    return _envelope(b"apiextensions.k8s.io/v1", b"CustomResourceDefinition",
                     _field(2, _field(1, b"g") + _field(7, version)))


def many_finalizers(count: int) -> bytes:
    """A ConfigMap whose metadata.finalizers (field 14) repeats ``count`` times."""
    return _envelope(b"v1", b"ConfigMap", _field(1, _field(1, b"many") + _field(14, b"f") * count))


def damaged(body: bytes, damage: str, position: int, noise: bytes) -> bytes:
    """``body`` with ``damage`` done at ``position`` (modulo its length)."""
    at = position % max(1, len(body))
    if damage == "cut":
        return body[:at]
    if damage == "flip":
        return body[:at] + bytes([body[at] ^ 0xFF]) + body[at + 1:] if body else noise
    if damage == "append":
        return body + noise
    if damage == "magic":
        return noise[:4] + body[4:]
    if damage == "length":                          # the envelope's raw field claims more
        return body[:4] + b"\x12\xff\xff\xff\x0f" + body[4:]
    if damage == "random":
        return MAGIC + noise
    if damage == "nested":
        return nested_bomb(50 + position % 5000)
    if damage == "repeated":
        return many_finalizers(1000 + position % 200_000)
    return body


def send_damaged(surface: ApiSurface, case: GeneratedCase, damage: str, position: int, noise: bytes) -> None:
    surface.tally.cases += 1
    doc = case.docs[0]
    try:
        encoded = encode_object(doc) if isinstance(doc, dict) else None
    except ValueError:                              # a value with no place on the wire
        encoded = None
    body = damaged(encoded or MAGIC, damage, position, noise)
    path = collection_path(doc) if isinstance(doc, dict) else "/api/v1/namespaces/default/configmaps"
    reply = surface.server.send("POST", path, body, {"Content-Type": PROTOBUF, "Accept": PROTOBUF})
    surface.outcome(f"POST {path} protobuf ({damage} at {position}, {len(body)} bytes) {case.what}", reply)
    if len(surface.unchecked) >= CHECK_EVERY:
        surface.check()


def requests() -> st.SearchStrategy[tuple[Any, ...]]:
    return st.tuples(manifest_cases(), st.sampled_from(DAMAGES), st.integers(0, 1 << 20),
                     st.binary(max_size=64))


def run(workdir: Path, generated: int, derandomize: bool = True, seed: int = 0,
        stop_at: float | None = None) -> Tally:
    tally = Tally("protobuf bodies (serve)")
    surface = ApiSurface(workdir, tally)
    try:
        @settings(max_examples=generated, derandomize=derandomize, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(requests())
        def fuzz(request: tuple[Any, ...]) -> None:
            harness.check_time(stop_at)
            send_damaged(surface, *request)

        harness.run_budget(fuzz, derandomize, seed)
        surface.check()
    finally:
        surface.close()
    return tally
