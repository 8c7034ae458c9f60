"""Field validation of request bodies: the ``fieldValidation`` query parameter of writes.

kube-apiserver decodes every create, update and patch body strictly and then, by the request's
``fieldValidation`` (apiserver pkg/endpoints/handlers/rest.go ``fieldValidation``; the API
reference's "fieldValidation" parameter):

- ``Strict`` (kubectl's default): unknown or duplicate fields fail the request, 400 BadRequest
  ``Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "..."``;
- ``Warn`` (the server's default when the parameter is absent, as the Python client and kubectl
  1.20 send it): each finding comes back as a ``Warning: 299`` header, unknown fields are dropped;
- ``Ignore``: unknown fields are dropped silently.

Any other value is 400 (apimachinery ``ValidateFieldValidation``: ``Unsupported value``). The
decoding itself is ``objects.strict``.

Before that, :func:`read_body` takes a create or update body by its ``Content-Type`` as
kube-apiserver's serializer negotiation does (apiserver handlers/negotiation
``NegotiateInputSerializer``): JSON (also when no type is given: the first serializer) or YAML
(protobuf bodies arrive here already as JSON: ``server.protobuf.negotiate``); anything else is 415 ``the body of the request was in an unknown format - accepted media types
include: ...``, never parsed as JSON. Parsing is bounded by ``objects.limits`` (depth, YAML
aliases, no NaN/Infinity): 400 with the decoder's words. For a patch, the patched object is decoded, and findings
already present in the stored object are not blamed on the request; repeated keys of the patch
body itself are findings too.

Neighbours: server.resources (the write handlers), objects.strict.
"""

from __future__ import annotations

from typing import Any

from gpusched.cluster.apiserver.api_ops import BadRequestError
from gpusched.errors import GpuschedError
from gpusched.objects.kinds import KindInfo
from gpusched.objects.kueue_conversion import to_storage_version
from gpusched.objects.limits import LimitError
from gpusched.objects.strict import (
    IGNORE, MODES, STRICT, WARN, DuplicateKeys, StrictDecodingError, decode, duplicate_findings,
)


BODY_TYPES = ("application/json", "application/yaml")
# what a built-in kind's body may be (protobuf is decoded to JSON before the handlers:
# server.protobuf.negotiate), as the 415 message lists them
ACCEPTED_BODY_TYPES = BODY_TYPES + ("application/vnd.kubernetes.protobuf",)


class UnsupportedMediaTypeError(GpuschedError):
    """415: a body in a format the API does not read (apimachinery NewUnsupportedMediaTypeError)."""

    code = 415
    reason = "UnsupportedMediaType"

    def __init__(self, accepted: tuple[str, ...] = ACCEPTED_BODY_TYPES) -> None:
        super().__init__("the body of the request was in an unknown format - accepted media types "
                         f"include: {', '.join(accepted)}")


def read_body(raw: bytes, content_type: str) -> Any:
    """A create/update body parsed by its media type (see the module doc); repeated keys marked."""
    from gpusched.server.patch import parse_body     # patch -> decoding would be a cycle
    if content_type not in ("",) + BODY_TYPES:
        raise UnsupportedMediaTypeError()
    try:
        return parse_body(raw, content_type or BODY_TYPES[0])
    except LimitError as err:
        raise BadRequestError(f"the body of the request could not be decoded: {err}") from None


def mode_of(query: dict[str, str]) -> str:
    """The request's fieldValidation mode (Warn when absent, as kube-apiserver)."""
    value = query.get("fieldValidation", "")
    if value == "":
        return WARN
    if value not in MODES:
        raise BadRequestError(f'fieldValidation: Unsupported value: "{value}": supported values: "", '
                              '"Ignore", "Strict", "Warn"')
    return value


def _typed(info: KindInfo, body: dict[str, Any]) -> dict[str, Any]:
    """The body with apiVersion and kind (from the URL when absent), its repeated keys still marked."""
    if body.get("apiVersion") and body.get("kind"):
        return body
    out = DuplicateKeys(body)
    out.duplicates = getattr(body, "duplicates", ())
    out["apiVersion"] = body.get("apiVersion") or info.api_version
    out["kind"] = body.get("kind") or info.kind
    return out


def _outcome(info: KindInfo, body: dict[str, Any], findings: list[str], mode: str) -> tuple[Any, list[str]]:
    if not findings or mode == IGNORE:
        return body, []
    if mode == STRICT:
        api_version = str(body.get("apiVersion") or info.api_version)
        raise StrictDecodingError(info.kind, api_version, "strict decoding error: " + ", ".join(findings))
    return body, findings


def decode_body(info: KindInfo, body: Any, mode: str) -> tuple[Any, list[str]]:
    """A create or update body -> (the body to store, warnings); raises as the module doc says."""
    if not isinstance(body, dict) or body.get("kind", info.kind) != info.kind:
        return body, []          # api_ops.check_body refuses it with its own message
    typed, notices = to_storage_version(_typed(info, body))   # Kueue's v1beta1: converted
    decoded = decode(typed)
    stored, warnings = _outcome(info, decoded.obj, list(decoded.findings), mode)
    return stored, notices + warnings


def decode_patched(info: KindInfo, old: dict[str, Any], new: Any, patch_body: Any, mode: str) -> tuple[Any, list[str]]:
    """A patched object -> (the object to store, warnings): only the request's own findings count."""
    if not isinstance(new, dict):
        return new, []
    new, notices = to_storage_version(new)        # a patch on a deprecated version's object
    try:
        known = set(decode(_typed(info, old)).findings)
    except GpuschedError:       # a stored object that no longer decodes blames nothing on the request
        known = set()
    decoded = decode(_typed(info, new))
    findings = duplicate_findings(patch_body) + [f for f in decoded.findings if f not in known]
    stored, warnings = _outcome(info, decoded.obj, findings, mode)
    return stored, notices + warnings
