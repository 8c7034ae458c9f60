"""Time limits the backfill planner reads (``cluster.scheduling.backfill.limit_end``), in precedence order."""

from __future__ import annotations

import math

import pytest

from gpusched.cluster.scheduling.backfill import limit_end
from gpusched.cluster.apiserver.store import rfc3339
from gpusched.cluster.apiserver.view import View


def pod(annotations: dict | None = None, owner: str = "", command: list | None = None,
        **spec) -> dict:
    meta: dict = {"name": "p", "namespace": "default", "annotations": annotations or {}}
    if owner:
        meta["ownerReferences"] = [{"kind": "Job", "name": owner, "controller": True}]
    container = {"name": "c", "image": "x", **({"command": command} if command else {})}
    return {"kind": "Pod", "metadata": meta, "spec": {"containers": [container], **spec}}


def view_with_job(deadline: int) -> View:
    view = View()
    view.create({"apiVersion": "batch/v1", "kind": "Job",
                 "metadata": {"name": "train", "namespace": "default"},
                 "spec": {"activeDeadlineSeconds": deadline, "template": {}},
                 "status": {"startTime": rfc3339(40.0)}})
    return view


@pytest.mark.parametrize("body,view,end", [
    (pod({"gpusched.io/time-limit": "600", "gpusched.io/duration": "1m"},
         activeDeadlineSeconds=300), View(), 400.0),
    (pod({"gpusched.io/time-limit": "600"}, owner="train"), view_with_job(500), 540.0),
    (pod({"gpusched.io/time-limit": "10m", "gpusched.io/duration": "1m"}), View(), 700.0),
    (pod({"gpusched.io/duration": "1m"}), View(), 160.0),
    (pod(command=["sh", "-c", "sleep 30"]), View(), 130.0),
    (pod({"gpusched.io/time-limit": "soon", "gpusched.io/duration": "1m"}), View(), 160.0),
    (pod(), View(), math.inf),
], ids=["pod-deadline-first", "job-deadline-from-job-start", "time-limit-annotation",
        "duration-as-limit", "sleep-as-limit", "bad-limit-ignored", "none-runs-forever"])
def test_limit_end(body, view, end):
    assert limit_end(view, body, 100.0) == end
