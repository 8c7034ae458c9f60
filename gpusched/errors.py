"""The few error types gpusched raises for user-facing problems.

Every error here is an *expected* failure caused by input: it carries a one-line message that the
CLI prints to stderr (never a traceback) and, for the API server, an HTTP code and a Kubernetes
Status reason. Anything else raised inside gpusched is a bug.

Wording follows Kubernetes where Kubernetes has a message for the case, e.g.
``The Pod "train" is invalid: spec.containers[0].resources.limits[nvidia.com/gpu]: Required value: ...``
or ``pods "train" is forbidden: exceeded quota: team-a, requested: ...``.
"""

from __future__ import annotations

from dataclasses import dataclass


class GpuschedError(Exception):
    """Base class: a user-facing error with a one-line message."""

    code: int = 400
    reason: str = "BadRequest"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class FieldError:
    """One invalid field, rendered the way apimachinery's field.Error renders itself.

    >>> str(FieldError("spec.containers[0].resources.requests[nvidia.com/gpu]", "Invalid value", "2", "must be equal to nvidia.com/gpu limit of 1"))
    'spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "2": must be equal to nvidia.com/gpu limit of 1'
    """

    path: str
    type: str  # "Invalid value", "Required value", "Forbidden", "Unsupported value", "Duplicate value", "Not found"
    value: str | None = None
    detail: str = ""
    quoted: bool = True  # False for non-string values, which Go prints bare (``Invalid value: -1``)

    def __str__(self) -> str:
        parts = [self.path, self.type]
        if self.value is not None:
            bare = not self.quoted or self.value.startswith(("{", "["))
            parts.append(self.value if bare else f'"{self.value}"')
        text = ": ".join(parts)
        return f"{text}: {self.detail}" if self.detail else text


class ManifestError(GpuschedError):
    """A manifest could not be read or is malformed: names file, document index and field path.

    Rendered as ``<source>: document <index>: <path>: <message>`` (path omitted when empty).
    """

    code = 400
    reason = "BadRequest"

    def __init__(self, source: str, index: int | None, path: str, message: str) -> None:
        self.source, self.index, self.path, self.detail = source, index, path, message
        where = source if index is None else f"{source}: document {index}"
        super().__init__(f"{where}: {path}: {message}" if path else f"{where}: {message}")


class InvalidError(GpuschedError):
    """Kubernetes 422 Invalid: ``The <Kind> "<name>" is invalid: <field errors joined by ", ">``."""

    code = 422
    reason = "Invalid"

    def __init__(self, kind: str, name: str, errors: list[FieldError], where: str = "") -> None:
        self.kind, self.name, self.errors = kind, name, errors
        body = f'The {kind} "{name}" is invalid: ' + ", ".join(str(e) for e in errors)
        super().__init__(f"{where}: {body}" if where else body)


class ForbiddenError(GpuschedError):
    """Kubernetes 403 Forbidden from admission: ``<plural> "<name>" is forbidden: <detail>``."""

    code = 403
    reason = "Forbidden"

    def __init__(self, plural: str, name: str, detail: str) -> None:
        self.plural, self.name, self.detail = plural, name, detail
        super().__init__(f'{plural} "{name}" is forbidden: {detail}')


class NotFoundError(GpuschedError):
    """Kubernetes 404: ``<plural> "<name>" not found``."""

    code = 404
    reason = "NotFound"

    def __init__(self, plural: str, name: str) -> None:
        self.plural, self.name = plural, name
        super().__init__(f'{plural} "{name}" not found')


class AlreadyExistsError(GpuschedError):
    """Kubernetes 409 AlreadyExists: ``<plural> "<name>" already exists``."""

    code = 409
    reason = "AlreadyExists"

    def __init__(self, plural: str, name: str) -> None:
        self.plural, self.name = plural, name
        super().__init__(f'{plural} "{name}" already exists')


class ConflictError(GpuschedError):
    """Kubernetes 409 Conflict (stale resourceVersion)."""

    code = 409
    reason = "Conflict"


class UsageError(GpuschedError):
    """A command-line or configuration mistake (unknown kind, bad flag value, bad duration, ...)."""

    code = 400
    reason = "BadRequest"
