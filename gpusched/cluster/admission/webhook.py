"""An admission webhook's refusal, as kube-apiserver relays it (not a plugin: the plugins'
shared shape, like ``plugin.py``).

Kueue validates its objects in webhooks (``pkg/webhooks/*_webhook.go``, served by
controller-runtime). A webhook that returns a ``field.ErrorList`` denies the request with its
aggregate's text (``utilerrors.NewAggregate``: the one error's text, several as ``[a, b]``) and
code 403 (controller-runtime ``admission.Denied``), and the API server prefixes it with the
webhook's name (apiserver ``pkg/admission/plugin/webhook/errors`` ``ToStatusErr``)::

    admission webhook "vclusterqueue.kb.io" denied the request: spec.resourceGroups[0]...

gpusched runs each Kueue webhook as an admission plugin at ValidatingAdmissionWebhook's place in
``admission.registry`` (its ``Plugin.name`` is the webhook's name).

Neighbours: ``admission.kueue_*`` (the webhooks), ``admission.kueue_rules`` (their shared rules).
"""

from __future__ import annotations

from gpusched.errors import FieldError, GpuschedError


class WebhookDeniedError(GpuschedError):
    """403 Forbidden: ``admission webhook "<name>" denied the request: <errors>``."""

    code = 403
    reason = "Forbidden"

    def __init__(self, webhook: str, errors: list[FieldError]) -> None:
        self.webhook, self.errors = webhook, errors
        text = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(map(str, errors)) + "]"
        super().__init__(f'admission webhook "{webhook}" denied the request: {text}')


def deny(webhook: str, errors: list[FieldError]) -> None:
    """Refuse the request when the webhook found errors (``ToAggregate()`` of a non-empty list)."""
    if errors:
        raise WebhookDeniedError(webhook, errors)
