"""The web page's routes: ``/`` and ``/static/<file>``, and two read-only JSON endpoints.

- ``GET /`` -> ``server/static/index.html``; ``GET /static/<name>`` -> a file of that directory
  (names only, no sub-paths: nothing outside it can be read);
- ``GET /gpusched/v1/summary`` -> ``query.summary`` (aggregates per node group, filtered) plus
  ``history`` (``summary.History``, filled by ``recorder.HistoryRecorder`` whenever the cluster
  changes, and by this request);
- ``GET /gpusched/v1/summary/nodes?group=ID`` -> ``query.nodes_page`` (one page of a group's
  nodes with their GPU cells);
- ``GET /gpusched/v1/explain/<namespace>/<name>`` -> ``gpusched explain`` as JSON (``to_json``)
  plus the rendered table in ``text``.

Every route is GET only; nothing executes anything. ``WebRoutes(read, call).handle(request)``
returns a ``Response`` (a 404 Status for paths it does not serve). ``read(fn)`` runs ``fn(view)``
in a read transaction and ``call(fn)`` runs ``fn(cluster)``: the cluster worker's ``read`` and
``cluster_call``. Only the index (``index.WebIndex``: cached per resourceVersion, rebuilt for
what changed) is built on the worker; filtering and JSON happen on the request's thread.
``mount(server)`` registers the routes on an ``ApiServer``.

Neighbours: ``server.http`` (Request, Response, Status errors), ``server.web.index``,
``server.web.query``, ``server.web.summary``; mounted by the API server.
"""

from __future__ import annotations

import mimetypes
import re
from pathlib import Path
from typing import Any, Callable

from gpusched.errors import GpuschedError
from gpusched.server.http import Request, Response, error_response, json_response, status_response
from gpusched.server.web.index import Index, WebIndex
from gpusched.server.web.query import nodes_page, summary
from gpusched.server.web.summary import History

STATIC_DIR = Path(__file__).resolve().parents[1] / "static"
_STATIC_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
SUMMARY_PATH = "/gpusched/v1/summary"
NODES_PATH = "/gpusched/v1/summary/nodes"
EXPLAIN_PREFIX = "/gpusched/v1/explain/"


class WebRoutes:
    """See the module docstring."""

    def __init__(self, read: Callable[[Callable[[Any], Any]], Any],
                 call: Callable[[Callable[[Any], Any]], Any]) -> None:
        self.read, self.call = read, call
        self.index = WebIndex()
        self.history = History()
        self.recorder: Any = None          # set by mount(): records history between requests

    def serves(self, path: str) -> bool:
        return (path in ("/", "/index.html", SUMMARY_PATH, NODES_PATH) or path.startswith("/static/")
                or path.startswith(EXPLAIN_PREFIX))

    def handle(self, request: Request) -> Response:
        path = request.path
        if not self.serves(path):
            return status_response(404, "the server could not find the requested resource")
        if request.method not in ("GET", "HEAD"):
            return status_response(405, f"the server does not allow this method on the requested "
                                        f"resource ({request.method} {path})")
        try:
            if path in ("/", "/index.html"):
                return static_file("index.html")
            if path.startswith("/static/"):
                return static_file(path[len("/static/"):])
            if path == SUMMARY_PATH:
                index = self.current()
                data = summary(index, request.query)
                data["history"] = self.history.record(data)
                return json_response(data)
            if path == NODES_PATH:
                return json_response(nodes_page(self.current(), request.query))
            return self._explain(path[len(EXPLAIN_PREFIX):])
        except GpuschedError as error:
            return error_response(error)

    def current(self) -> Index:
        """The index of the current state (built on the cluster worker, cached)."""
        index: Index = self.read(self.index.index)
        return index

    def _explain(self, rest: str) -> Response:
        from gpusched.scheduler.explain import render_table, to_json
        parts = rest.split("/")
        if len(parts) != 2 or not all(parts):
            return status_response(404, f"expected {EXPLAIN_PREFIX}<namespace>/<name>")
        namespace, name = parts
        explanation = self.call(lambda cluster: cluster.explain(name, namespace))
        return json_response({**to_json(explanation), "text": render_table(explanation)})


def static_file(name: str) -> Response:
    """A file of ``server/static`` by plain name; 404 for anything else."""
    path = STATIC_DIR / name
    if not _STATIC_NAME.match(name) or not path.is_file():
        return status_response(404, f'the server could not find the requested resource "{name}"')
    content_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
    if content_type.startswith("text/") or content_type.endswith("javascript"):
        content_type += "; charset=utf-8"
    return Response(200, path.read_bytes(), content_type,
                    headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"})


def mount(server: Any) -> WebRoutes:
    """Register the page's routes on an ``ApiServer`` (``register_route``) and start recording
    the chart's history on its change feed (``recorder.HistoryRecorder``); returns the routes."""
    from gpusched.server.web.recorder import HistoryRecorder

    web = WebRoutes(server.worker.read, server.worker.cluster_call)
    web.recorder = HistoryRecorder(server.feed, web.current, web.history).start()
    for prefix in ("/", "/static", "/gpusched/v1"):
        server.register_route("GET", prefix, web.handle)
    return web
