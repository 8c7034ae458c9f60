"""The fuzz suite's CLI worker: runs ``gpusched`` commands in-process, one JSON line per request.

Started by ``harness.CliWorker`` as ``python -m tests.fuzz.cli_worker`` under the memory limit.
Requests on stdin, answers on stdout (the real descriptors 0 and 1 are moved aside first, so a
command that reads stdin or writes to descriptor 1 cannot break the protocol):

- ``{"op": "cli", "argv": [...]}`` -> ``{"code": N, "out": "...", "err": "..."}``: exactly what
  ``gpusched ARGV`` would print and exit with; an exception that escapes ``main`` comes back as
  its traceback in ``err`` (the classifier counts it as a crash);
- ``{"op": "invariants", "state": PATH}`` -> ``{"violations": [...]}`` from the kubelet's invariant
  checker (``gpusched.cluster.kubelet.invariants``) over the state file's objects (``{"error":
  ...}`` when they cannot be read).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import traceback
from typing import Any

OUTPUT_CHARS = 4000


def run_cli(argv: list[str]) -> dict[str, Any]:
    from gpusched.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        except BaseException:  # noqa: BLE001 - the classifier wants the traceback, whatever it is
            err.write(traceback.format_exc())
            code = 1
    return {"code": code, "out": out.getvalue()[:OUTPUT_CHARS], "err": err.getvalue()[-OUTPUT_CHARS:]}


def run_invariants(state: str) -> dict[str, Any]:
    from gpusched.cluster.cluster import Cluster
    from gpusched.cluster.kubelet.invariants import violations

    try:
        with Cluster.open(state) as cluster:
            return {"violations": cluster.read(violations)}
    except Exception as error:  # noqa: BLE001 - reported as a poisoned read by the caller
        return {"error": f"{type(error).__name__}: {error}", "trace": traceback.format_exc()[-1500:]}


def serve_requests() -> None:
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    sys.stdin = io.TextIOWrapper(io.BytesIO())
    for line in requests:
        request = json.loads(line)
        if request["op"] == "cli":
            answer = run_cli(request["argv"])
        else:
            answer = run_invariants(request["state"])
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    serve_requests()
