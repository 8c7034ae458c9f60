"""gpusched errors as the Status bodies kube-apiserver returns (apimachinery ``pkg/api/errors``).

``details`` follows each constructor of ``errors.go``:

- ``NewNotFound`` / ``NewAlreadyExists`` / ``NewConflict`` / ``NewForbidden``: ``{name, group,
  kind}`` where ``kind`` is the *resource* (``pods``, ``deployments`` with group ``apps``);
- ``NewInvalid``: ``{name, group, kind, causes}`` with the *kind* (``Pod``), one cause per field
  error (``reason`` the ``field.ErrorType``, ``message`` its ``ErrorBody``, ``field``), message
  ``<Kind>[.<group>] "<name>" is invalid: <errors>`` (kubectl rebuilds ``The Pod "x" is
  invalid`` from ``details.kind`` and the causes);
- ``NewApplyConflict`` (server-side apply): 409 Conflict, one ``FieldManagerConflict`` cause
  per field;
- ``NewTimeoutError`` (too large resourceVersion): ``Timeout: <message>``, ``retryAfterSeconds``
  and the ``ResourceVersionTooLarge`` cause;
- ``NewResourceExpired`` (410): no details; a compacted continue token's fresh token rides in
  ``metadata.continue``;
- ``NewGenericServerResponse(422)`` (a JSON patch that does not apply, a strategic patch with a
  list of lists): the generic message "the server rejected our request due to an error in our
  request" and empty details;
- an error that is no Status (most strategic merge errors): ``ErrorToAPIStatus``'s 500 with the
  error's text and no reason;
- ``NewBadRequest`` and the rest: no details.

Neighbours: ``server.resources`` (every resource error goes through :func:`error_status`),
``server.http`` (Status bodies), ``gpusched.errors``.
"""

from __future__ import annotations

from typing import Any

import re

from gpusched.errors import (AlreadyExistsError, ConflictError, FieldError, ForbiddenError,
                             GpuschedError, InvalidError, NotFoundError)
from gpusched.server.http import Response, json_response, status_object
from gpusched.server.lists import ExpiredError, TooLargeResourceVersionError
from gpusched.server.patch import GenericInvalidError, UnknownPatchError
from gpusched.server.ssa import ApplyConflictError

# apimachinery pkg/util/validation/field/errors.go ErrorType values
CAUSE_TYPES = {"Not found": "FieldValueNotFound", "Required value": "FieldValueRequired",
               "Duplicate value": "FieldValueDuplicate", "Invalid value": "FieldValueInvalid",
               "Unsupported value": "FieldValueNotSupported", "Forbidden": "FieldValueForbidden",
               "Too long": "FieldValueTooLong", "Too many": "FieldValueTooMany",
               "Internal error": "InternalError", "Invalid type": "FieldValueTypeInvalid"}
_CONFLICT = re.compile(r'^Operation cannot be fulfilled on ([^ ]+) "([^"]*)"')


def error_status(error: GpuschedError, group: str = "") -> Response:
    """The Status response for ``error``; ``group`` is the API group of the kind an
    InvalidError names (the request's)."""
    body = status_object(error.code, error.message, error.reason)
    if isinstance(error, InvalidError):
        body["message"], body["details"] = _invalid(error, group)
    elif isinstance(error, (NotFoundError, AlreadyExistsError, ForbiddenError)):
        body["details"] = _resource_details(error.plural, error.name)
    elif isinstance(error, ConflictError):
        found = _CONFLICT.match(error.message)
        if found:
            body["details"] = _resource_details(found.group(1), found.group(2))
    elif isinstance(error, TooLargeResourceVersionError):
        body["message"] = f"Timeout: {error.message}"
        body["details"] = {"causes": [{"reason": "ResourceVersionTooLarge",
                                       "message": "Too large resource version"}],
                           "retryAfterSeconds": 1}
    elif isinstance(error, ApplyConflictError):
        body["details"] = {"causes": error.causes}
    elif isinstance(error, GenericInvalidError):
        body["details"] = {}                   # NewGenericServerResponse: empty details
    elif isinstance(error, UnknownPatchError):
        del body["reason"]                     # StatusReasonUnknown is "" (omitted)
    elif isinstance(error, ExpiredError) and error.continue_token:
        body["metadata"] = {"continue": error.continue_token}
    return json_response(body, error.code)


def _resource_details(plural: str, name: str) -> dict[str, Any]:
    """``pods`` -> kind pods; ``deployments.apps`` -> kind deployments, group apps."""
    resource, _, group = plural.partition(".")
    details = {"name": name, "group": group, "kind": resource}
    return {k: v for k, v in details.items() if v}


def _invalid(error: InvalidError, group: str) -> tuple[str, dict[str, Any]]:
    kind, _, own_group = error.kind.partition(".")
    group = own_group or group
    qualified = f"{kind}.{group}" if group else kind
    texts = [str(e) for e in error.errors]
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    message = f'{qualified} "{error.name}" is invalid: {joined}' if texts else \
        f'{qualified} "{error.name}" is invalid'
    details = {"name": error.name, "group": group, "kind": kind,
               "causes": [_cause(e) for e in error.errors]}
    return message, {k: v for k, v in details.items() if v != ""}


def _cause(error: FieldError) -> dict[str, Any]:
    return {"reason": CAUSE_TYPES.get(error.type, "FieldValueInvalid"),
            "message": str(error).partition(": ")[2], "field": error.path}
