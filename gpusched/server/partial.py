"""Metadata-only responses: ``as=PartialObjectMetadata`` and ``as=PartialObjectMetadataList``.

What client-go's metadata client (controller-runtime's metadata-only watches, the garbage
collector, ``kubectl``'s quota and namespace helpers) asks for with
``Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json``.
As apimachinery's ``pkg/endpoints/handlers/response.go`` (``asPartialObjectMetadata``,
``asPartialObjectMetadataList``) and ``rest.go`` (``AllowsMediaTypeTransform``):

- the first media range of the Accept header the server can produce wins; one asking for
  ``as=PartialObjectMetadata[List]`` in ``g=meta.k8s.io`` ``v=v1`` or ``v1beta1`` selects the
  metadata form (in JSON, or in protobuf: ``server.protobuf.negotiate`` hands the handler the
  winning clause); an unknown ``as`` is skipped;
- a list becomes ``PartialObjectMetadataList`` (``metadata``: resourceVersion, continue,
  remainingItemCount) of ``PartialObjectMetadata`` items (the whole ``metadata`` of each
  object), a single object ``PartialObjectMetadata``, each watch event's object too;
- a list asked as ``PartialObjectMetadata`` or an object as ``PartialObjectMetadataList`` is
  406 NotAcceptable with upstream's message;
- the response's Content-Type names the kind (``generateMediaTypeWithGVK``:
  ``application/json;g=meta.k8s.io;v=v1;as=PartialObjectMetadataList``).

Neighbours: ``server.resources`` (list, get), ``server.watch`` (events).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpusched.errors import GpuschedError
from gpusched.objects.kinds import KindInfo

GROUP = "meta.k8s.io"
VERSIONS = ("v1", "v1beta1")
OBJECT, LIST = "PartialObjectMetadata", "PartialObjectMetadataList"
PRODUCED = ("application/json", "application/*", "*/*", "application/yaml",
            "application/vnd.kubernetes.protobuf")


class NotAcceptableError(GpuschedError):
    """406 NotAcceptable (``errNotAcceptable`` in ``handlers/response.go``)."""

    code = 406
    reason = "NotAcceptable"


@dataclass(frozen=True, slots=True)
class Target:
    """What a metadata-only request asked for: ``PartialObjectMetadata[List]`` of a version."""

    kind: str
    version: str

    @property
    def api_version(self) -> str:
        return f"{GROUP}/{self.version}"

    @property
    def content_type(self) -> str:
        return f"application/json;g={GROUP};v={self.version};as={self.kind}"


def _params(media_range: str) -> tuple[str, dict[str, str]]:
    kind, *rest = (part.strip() for part in media_range.split(";"))
    params = {}
    for item in rest:
        key, _, value = item.partition("=")
        params[key.strip().lower()] = value.strip()
    return kind.lower(), params


def requested(accept: str) -> Target | None:
    """The metadata-only target when the first producible media range asks for one."""
    for media_range in accept.split(","):
        media, params = _params(media_range)
        if media not in PRODUCED:
            continue
        wanted = params.get("as")
        if wanted is None:
            return None
        if wanted in (OBJECT, LIST) and params.get("g") == GROUP and params.get("v") in VERSIONS:
            return Target(wanted, params["v"])
        if wanted.lower() == "table":
            return None
    return None


def _go_type(info: KindInfo, suffix: str) -> str:
    """The internal Go type upstream names in its 406 message (``*core.PodList``)."""
    package = info.group.split(".")[0] if info.group else "core"
    return f"*{package}.{info.kind}{suffix}"


def partial(obj: dict[str, Any], target: Target) -> dict[str, Any]:
    """``meta.AsPartialObjectMetadata``: the object's whole metadata, nothing else."""
    return {"kind": OBJECT, "apiVersion": target.api_version, "metadata": obj.get("metadata") or {}}


def partial_list(info: KindInfo, items: list[dict[str, Any]], meta: dict[str, Any],
                 target: Target) -> dict[str, Any]:
    """``asPartialObjectMetadataList``; 406 when an object was asked for."""
    if target.kind != LIST:
        raise NotAcceptableError("you requested PartialObjectMetadata, but the requested object "
                                 f"is a list ({_go_type(info, 'List')})")
    return {"kind": LIST, "apiVersion": target.api_version, "metadata": meta,
            "items": [partial(item, target) for item in items]}


def partial_object(info: KindInfo, obj: dict[str, Any], target: Target) -> dict[str, Any]:
    """``asPartialObjectMetadata``; 406 when a list was asked for."""
    if target.kind != OBJECT:
        raise NotAcceptableError("you requested PartialObjectMetadataList, but the requested "
                                 f"object is not a list ({_go_type(info, '')})")
    return partial(obj, target)
