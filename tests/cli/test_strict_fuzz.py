"""Fuzz the strict decoder through the CLI's ``apply`` (in-process ``cli.main``) with hypothesis.

Each example mutates a valid manifest (``tests/fuzz_strict.py``: an unknown field at a random
depth, a repeated key, a scalar of the wrong JSON type), writes it to a file and runs
``gpusched apply -f FILE``: exit 1, exactly one ``error: FILE: document 0: <message>`` line
with kube-apiserver's message (apimachinery runtime.NewStrictDecodingError, apiserver
handlers/rest.go transformDecodeError, sigs.k8s.io/json UnmarshalTypeError), and the cluster
state unchanged. The same document with ``--validate=ignore`` must not fail on a finding.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json

from hypothesis import HealthCheck, given, settings

from gpusched.cli.main import main
from gpusched.cluster.cluster import Cluster
from gpusched.objects.kinds import KINDS
from tests.fuzz_strict import mutations

FUZZ_EXAMPLES = 300
RUNS: list[str] = []     # one entry per example, for the count in the report


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def digest(state: str) -> str:
    cluster = Cluster.open(state)
    try:
        everything = {kind: cluster.get(kind, all_namespaces=True) for kind in KINDS if kind != "Event"}
    finally:
        close = getattr(cluster, "close", None)
        if close:
            close()
    return hashlib.sha256(json.dumps(everything, sort_keys=True, default=str).encode()).hexdigest()


def test_strict_fuzz_through_the_cli(tmp_path):
    state = str(tmp_path / "state.db")
    assert run("--state", state, "apply", "-f", "examples/cluster.yaml", "-f", "examples/priority-classes.yaml")[0] == 0
    before = digest(state)
    manifest = tmp_path / "fuzz.json"

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(mutations())
    def check(mutation):
        manifest.write_text(mutation.text)
        code, out, err = run("--state", state, "apply", "-f", str(manifest))
        assert code == 1 and out == "", (mutation, out, err)
        assert err.count("\n") == 1 and "Traceback" not in err, err
        message = err.strip()
        prefix = f"error: {manifest}: document 0: "
        assert message.startswith(prefix + mutation.expected), (message, mutation.expected)
        if mutation.exact:
            assert message == prefix + mutation.expected
        RUNS.append(mutation.kind)

    check()
    assert digest(state) == before
    assert len(RUNS) == FUZZ_EXAMPLES
    print(f"strict fuzz through the CLI: {len(RUNS)} cases")
