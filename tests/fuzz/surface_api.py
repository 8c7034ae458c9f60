"""Surface 2: API requests against a running ``gpusched serve``.

Cases: the table cases of ``cases.API_CASES`` (findings 5-7 and 6's patches and subresources);
every manifest table case POSTed as JSON (refused ones must be 4xx); then hypothesis cases,
a mix of schemathesis cases from the served ``/openapi/v3`` (every operation of the core, apps,
batch and gpusched.io groups), generated manifests sent by POST, PUT or PATCH with varied
content types and query options, and GET/DELETE of generated names. Classes: crash (5xx other
than kube-apiserver's own, a traceback or "internal error" in the answer, a dropped connection),
hang, accepted-invalid (2xx for what kube-apiserver refuses), and, after accepted writes, poisoned
reads and invariants (as on the manifest surface, through the API and the CLI on serve's state
file).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemathesis.core import NotSet

from gpusched.objects.kinds import KINDS
from tests.fuzz import cases, harness, serving
from tests.fuzz.generate import GeneratedCase, json_values, manifest_cases
from tests.fuzz.harness import CliWorker, Tally
from tests.fuzz.surface_manifests import BASE_FILES

CHECK_EVERY = 8
DOCUMENTS = ("api/v1", "apis/apps/v1", "apis/batch/v1", "apis/gpusched.io/v1alpha1")
LISTS = ("/api/v1/pods", "/api/v1/nodes", "/api/v1/configmaps", "/apis/apps/v1/deployments",
         "/apis/gpusched.io/v1alpha1/nodepools")
CONTENT_TYPES = ("application/json", "application/yaml", "application/json; charset=utf-8", "text/plain",
                 "application/merge-patch+json", "application/vnd.kubernetes.protobuf", "", "x/\u00ff")
QUERIES = ("", "fieldValidation=Strict", "fieldValidation=Warn", "fieldValidation=Ignore",
           "fieldValidation=Bogus", "dryRun=All", "pretty=true", "fieldManager=%00")


def _meta(doc: dict[str, Any]) -> dict[str, Any]:
    meta = doc.get("metadata")
    return meta if isinstance(meta, dict) else {}


def collection_path(doc: dict[str, Any]) -> str:
    info = KINDS.get(str(doc.get("kind")))
    if info is None:
        return "/api/v1/namespaces/default/configmaps"
    root = "/api/v1" if not info.group else f"/apis/{info.api_version}"
    if info.namespaced:
        namespace = _meta(doc).get("namespace") or "default"
        root += f"/namespaces/{quote(str(namespace), safe='')}"
    return f"{root}/{info.plural}"


def named_path(doc: dict[str, Any]) -> str:
    return f"{collection_path(doc)}/{quote(str(_meta(doc).get('name', 'x')), safe='')}"


class ApiSurface:
    """A serve on the lab cluster, a CLI worker on its state file, and the tally."""

    def __init__(self, workdir: Path, tally: Tally) -> None:
        self.dir, self.tally, self.worker = workdir, tally, CliWorker()
        self.base, self.state = workdir / "base.db", workdir / "serve.db"
        args = [a for f in BASE_FILES for a in ("-f", f)]
        answer, _ = self.worker.cli("--state", str(self.base), "apply", *args)
        assert answer.get("code") == 0, f"the base cluster did not apply: {answer}"
        harness.state_copy(self.base, self.state)
        self.server = serving.start(self.state, workdir)
        self.unchecked: list[str] = []
        self.probes = 0

    def close(self) -> None:
        self.server.stop()
        self.worker.close()

    def restart(self, fresh: bool = False) -> None:
        """A hang or a dead server: a new serve on the same state (the next cases go on); after a
        poisoned read or a broken invariant, on a fresh copy of the base state."""
        self.server.stop()
        if fresh:
            harness.state_copy(self.base, self.state)
        self.server = serving.start(self.state, self.dir)

    def outcome(self, what: str, reply: serving.Reply, refused: bool = False) -> bool:
        """Record the reply's failure class; True when it was an accepted write."""
        self.tally.slowest_s = max(self.tally.slowest_s, round(reply.waited.wall_s, 2))
        failure = reply.failure()
        if failure is not None:
            self.tally.record(failure[0], f"{what}: {failure[1]}")
            if failure[0] == harness.HANG or self.server.process.poll() is not None:
                self.restart()
            return False
        if reply.ok and refused:
            self.tally.record(harness.ACCEPTED_INVALID, f"{what}: {reply.status}, kube-apiserver refuses it")
        if reply.ok:
            self.unchecked.append(what)
        return reply.ok

    def check(self) -> None:
        """Lists, a new pod, ``describe nodes`` and ``advance 1m`` on serve's state, invariants."""
        if not self.unchecked:
            return
        self.tally.checks += 1
        after, self.unchecked = "; ".join(self.unchecked[-4:]), []
        self.probes += 1
        probe = cases.pod(f"probe-{self.probes}", {"cpu": "10m"})
        reads = [(f"GET {path}", self.server.send("GET", path)) for path in LISTS]
        reads.append(("create a pod", self.server.json("POST", "/api/v1/namespaces/default/pods", probe)))
        for what, reply in reads:
            failure = reply.failure()
            if failure is not None or not reply.ok:
                why = failure[1] if failure else f"{reply.status} {json.dumps(reply.body)[:300]}"
                self.tally.record(failure[0] if failure and failure[0] == harness.HANG else harness.POISONED,
                                  f"{what} after {after}: {why}")
                self.restart(fresh=True)
                return
        for argv in (("describe", "nodes"), ("advance", "1m")):
            answer, waited = self.worker.cli("--state", str(self.state), *argv)
            if waited.hang or answer.get("code") != 0:
                self.tally.record(harness.HANG if waited.hang else harness.POISONED,
                                  f"`gpusched {' '.join(argv)}` after {after}: "
                                  f"{waited.hang or answer.get('died') or answer['err'].strip()[-300:]}")
                self.restart(fresh=True)
                return
        answer, waited = self.worker.call({"op": "invariants", "state": str(self.state)})
        if "violations" not in answer:
            self.tally.record(harness.POISONED, f"invariant checker after {after}: {waited.hang or answer}")
            self.restart(fresh=True)
            return
        harness.classify_violations(self.tally, answer["violations"], after)
        if answer["violations"]:
            self.restart(fresh=True)

    def run_api_case(self, case: cases.ApiCase) -> None:
        self.tally.cases += 1
        for path, body in cases.API_SETUP:
            self.server.json("POST", path, body)
        port = str(self.server.port)
        fill = lambda text: text.replace("{port+1}", str(self.server.port + 1)).replace("{port}", port)  # noqa: E731
        if case.raw:
            reply = self.server.send_raw(fill(case.body.decode()).encode())
        else:
            reply = self.server.send(case.method, case.path, case.body,
                                     {k: fill(v) for k, v in case.headers.items()})
        self.outcome(case.id, reply, refused=case.refused)
        self.check()

    def run_manifest_case(self, case: cases.ManifestCase) -> None:
        """A manifest table case, each document of each step POSTed as JSON."""
        self.tally.cases += 1
        for i, text in enumerate(case.steps):
            docs = [d for d in yaml.safe_load_all(text) if d]
            last = i == len(case.steps) - 1
            for doc in docs:
                reply = self.server.json("POST", collection_path(doc), doc)
                if reply.status == 409:     # a later step edits what an earlier one made
                    reply = self.server.json("PUT", named_path(doc), doc)
                self.outcome(f"POST {case.id} step {i + 1}", reply, refused=case.refused and last)
            self.check()

    def send_generated(self, case: GeneratedCase, method: str, ctype: str, query: str) -> None:
        self.tally.cases += 1
        doc = case.docs[0]
        path = collection_path(doc) if method == "POST" else named_path(doc)
        body = (yaml.safe_dump(doc, allow_unicode=True) if "yaml" in ctype else json.dumps(doc)).encode()
        if method == "PATCH":
            ctype = "application/merge-patch+json"
        if method in ("GET", "DELETE"):
            body = b""
        reply = self.server.send(method, f"{path}?{query}" if query else path, body or None, {"Content-Type": ctype})
        self.outcome(f"{method} {path} ({ctype or 'no content type'}, {query or 'no query'}) {case.what}", reply,
                     refused=case.expect_refused and method in ("POST", "PUT") and ctype == "application/json"
                     and "fieldValidation=Bogus" not in query)
        if len(self.unchecked) >= CHECK_EVERY:
            self.check()

    def send_schemathesis(self, case: Any) -> None:
        self.tally.cases += 1
        params = {k: quote(str(v), safe="") for k, v in (case.path_parameters or {}).items()}
        path = case.path.format(**params)
        query = urlencode(case.query or {}, doseq=True)
        ctype = case.media_type or "application/json"
        body = None if isinstance(case.body, NotSet) else case.body
        raw = None if body is None else (json.dumps(body).encode() if "json" in ctype or not isinstance(
            body, (str, bytes)) else (body.encode() if isinstance(body, str) else body))
        reply = self.server.send(case.method.upper(), f"{path}?{query}" if query else path, raw, {"Content-Type": ctype})
        self.outcome(f"schemathesis {case.method.upper()} {path} ({ctype}) {str(body)[:200]}", reply)
        if len(self.unchecked) >= CHECK_EVERY:
            self.check()

    def send_text(self, method: str, path: str, value: Any) -> None:
        """A random JSON value (not an object of the kind) as the body."""
        self.tally.cases += 1
        reply = self.server.json(method, path, value)
        self.outcome(f"{method} {path} with body {json.dumps(value)[:200]}", reply)

    def schemathesis_operations(self) -> list[Any]:
        import schemathesis

        ops = []
        for document in DOCUMENTS:
            spec = self.server.send("GET", f"/openapi/v3/{document}").body
            for result in schemathesis.openapi.from_dict(spec).get_all_operations():
                op = result.ok()
                if op is not None:
                    ops.append(op)
        return ops


def api_requests(surface: ApiSurface) -> st.SearchStrategy[Any]:
    ops = surface.schemathesis_operations()
    generated = st.tuples(manifest_cases(), st.sampled_from(["POST", "POST", "PUT", "PATCH", "GET", "DELETE"]),
                          st.sampled_from(CONTENT_TYPES), st.sampled_from(QUERIES))
    texts = st.tuples(st.sampled_from(["POST", "PUT", "PATCH"]),
                      st.sampled_from(["/api/v1/namespaces/default/pods", "/api/v1/namespaces/default/configmaps/target",
                                       "/apis/apps/v1/namespaces/default/deployments/web/scale", "/api/v1/nodes"]),
                      json_values)
    return st.one_of(st.tuples(st.just("schemathesis"), st.one_of([op.as_strategy() for op in ops])),
                     st.tuples(st.just("generated"), generated), st.tuples(st.just("text"), texts))


def run(workdir: Path, generated: int, derandomize: bool = True, seed: int = 0, table: bool = True, stop_at: float | None = None) -> Tally:
    tally = Tally("API requests (serve)")
    surface = ApiSurface(workdir, tally)
    try:
        if table:
            for case in cases.API_CASES:
                surface.run_api_case(case)
            for manifest_case in cases.MANIFEST_CASES:
                surface.run_manifest_case(manifest_case)
        if generated:
            @settings(max_examples=generated, derandomize=derandomize, deadline=None, database=None,
                      suppress_health_check=list(HealthCheck))
            @given(api_requests(surface))
            def fuzz(request: tuple[str, Any]) -> None:
                harness.check_time(stop_at)
                kind, value = request
                if kind == "schemathesis":
                    surface.send_schemathesis(value)
                elif kind == "generated":
                    surface.send_generated(*value)
                else:
                    surface.send_text(*value)

            harness.run_budget(fuzz, derandomize, seed)
            surface.check()
    finally:
        surface.close()
    return tally
