"""A deprecated API version served beside the stored one: Kueue's ``kueue.x-k8s.io/v1beta1``.

kube-apiserver serves every version a CRD lists: a request on a v1beta1 path is converted to the
storage version (v1beta2) on the way in and the answer converted back, so a client that writes
v1beta1 also reads v1beta1 (kubectl apply computes its patch against what it read, and refuses
a patch whose apiVersion would change). Here:

- :func:`served_info`: the kind as a v1beta1 path names it (its ``api_version`` the path's);
- :func:`served_object`: a stored object as that version presents it
  (``objects.kueue_conversion.to_v1beta1``), the base a merge or JSON patch applies to;
- :func:`served_response`: a JSON answer (an object, a List, a Table's row objects) converted;
  watch streams stay in the stored version;
- every request on the deprecated version carries the CRD's ``deprecationWarning``.

Neighbours: ``server.discovery`` (``DEPRECATED_VERSIONS``), ``server.resources`` (the hooks),
``objects.kueue_conversion``.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from gpusched.objects.kinds import KindInfo
from gpusched.objects.kueue_conversion import DEPRECATION_WARNING, V1BETA1, to_v1beta1
from gpusched.server.http import Response


def served_info(group_version: str, info: KindInfo) -> KindInfo:
    """``info`` as the path's group version names it."""
    return info if group_version == info.api_version else dataclasses.replace(info, api_version=group_version)


def deprecated(info: KindInfo) -> bool:
    return info.api_version == V1BETA1


def served_object(info: KindInfo, body: dict[str, Any]) -> dict[str, Any]:
    return to_v1beta1(body) if deprecated(info) else body


def served_response(info: KindInfo, response: Response) -> Response:
    """The answer to a request on ``info``'s version (unchanged for a current version)."""
    if not deprecated(info):
        return response
    warnings = (*response.warnings, DEPRECATION_WARNING) if DEPRECATION_WARNING not in response.warnings \
        else response.warnings
    if response.stream is not None or not response.body.startswith(b"{"):
        return dataclasses.replace(response, warnings=warnings)
    answer = json.loads(response.body)
    if isinstance(answer.get("items"), list):
        answer["items"] = [to_v1beta1(item) for item in answer["items"]]
    elif isinstance(answer.get("rows"), list):
        for row in answer["rows"]:
            if isinstance(row.get("object"), dict):
                row["object"] = to_v1beta1(row["object"])
    else:
        answer = to_v1beta1(answer)
    body = json.dumps(answer, separators=(",", ":")).encode() + b"\n"
    return dataclasses.replace(response, body=body, warnings=warnings)
