"""The metrics APIs ``serve`` answers, from the one source the HPA controller reads
(``cluster.usage``):

- ``metrics.k8s.io/v1beta1`` (metrics-server): ``nodes``, ``nodes/<n>``, ``pods``,
  ``namespaces/<ns>/pods[/<p>]`` as NodeMetrics/PodMetrics(List), CPU in nanocores and memory
  in Ki as metrics-server encodes them, window 30 s; ``labelSelector`` filters. So
  ``kubectl top nodes|pods`` work.
- ``custom.metrics.k8s.io/v1beta1`` (as prometheus-adapter serves it):
  ``namespaces/<ns>/pods/<name|*>/<metric>`` (``*`` namespace: all namespaces) and
  ``namespaces/<ns>/<resource>/<name>/<metric>`` for Object metrics (``deployments.apps``,
  ``pods``), always a MetricValueList; metrics ``gpu_utilization``, ``gpu_memory_used``,
  ``requests_per_second``.
- ``external.metrics.k8s.io/v1beta1``: ``namespaces/<ns>/<metric>`` as
  ExternalMetricValueList (``pending_pods``, and user-set values of the ConfigMap
  ``gpusched-external-metrics``).

A metric that does not exist is a 404 Status with the adapter's message (``the server could not
find the metric X for pods``). Discovery lists the three groups (``DISCOVERY``).

Neighbours: ``cluster.usage`` (values), ``server.app`` (routes here), ``server.discovery``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from gpusched.cluster.usage import (EXTERNAL_BUILTIN, POD_METRICS, WINDOW_S, MetricNotFound,
                                    Usage, format_milli, milli)
from gpusched.errors import UsageError
from gpusched.objects.selectors import matches, parse_selector
from gpusched.objects.types import LabelSelector
from gpusched.server.http import Request, Response, json_response, status_response

METRICS = "metrics.k8s.io/v1beta1"
CUSTOM = "custom.metrics.k8s.io/v1beta1"
EXTERNAL = "external.metrics.k8s.io/v1beta1"
PREFIXES = tuple(f"/apis/{gv}" for gv in (METRICS, CUSTOM, EXTERNAL))
# Object metrics: resource path segment -> kind
OBJECT_RESOURCES = {"pods": "Pod", "deployments.apps": "Deployment", "deployments": "Deployment"}


def _resources() -> dict[str, list[dict[str, Any]]]:
    metrics = [{"name": "nodes", "singularName": "", "namespaced": False, "kind": "NodeMetrics",
                "verbs": ["get", "list"]},
               {"name": "pods", "singularName": "", "namespaced": True, "kind": "PodMetrics",
                "verbs": ["get", "list"]}]
    custom = [{"name": f"pods/{m}", "singularName": "", "namespaced": True,
               "kind": "MetricValueList", "verbs": ["get"]} for m in POD_METRICS]
    custom += [{"name": f"deployments.apps/{m}", "singularName": "", "namespaced": True,
                "kind": "MetricValueList", "verbs": ["get"]}
               for m in ("gpu_utilization", "requests_per_second")]
    external = [{"name": m, "singularName": "", "namespaced": True,
                 "kind": "ExternalMetricValueList", "verbs": ["get"]} for m in EXTERNAL_BUILTIN]
    return {METRICS: metrics, CUSTOM: custom, EXTERNAL: external}


DISCOVERY: dict[str, list[dict[str, Any]]] = _resources()


def resource_list(group_version: str) -> dict[str, Any] | None:
    resources = DISCOVERY.get(group_version)
    if resources is None:
        return None
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
            "resources": resources}


def aggregated_items() -> list[dict[str, Any]]:
    """Aggregated-discovery entries (``apidiscovery.k8s.io``) of the three groups."""
    items = []
    for gv, resources in DISCOVERY.items():
        group, version = gv.split("/")
        items.append({"metadata": {"name": group}, "versions": [{
            "version": version, "freshness": "Current",
            "resources": [{"resource": r["name"], "scope": "Namespaced" if r["namespaced"] else "Cluster",
                           "responseKind": {"group": group, "version": version, "kind": r["kind"]},
                           "verbs": r["verbs"]} for r in resources]}]})
    return items


def _stamp(view: Any) -> str:
    result: str = view.timestamp()
    return result


def handle(worker: Any, req: Request) -> Response:
    """Answer a GET under one of ``PREFIXES``."""
    if req.method != "GET":
        return status_response(405, f"the server does not allow this method on the requested "
                                    f"resource", "MethodNotAllowed")
    parts = [unquote(p) for p in req.path.strip("/").split("/")[1:]]   # drop "apis"; %2A is *
    group_version, rest = "/".join(parts[:2]), parts[2:]
    if not rest:
        return json_response(resource_list(group_version))
    selector_text = req.query.get("labelSelector", "")
    try:
        selector = parse_selector(selector_text) if selector_text else None
    except UsageError as err:
        return status_response(400, str(err), "BadRequest")
    try:
        response: Response
        if group_version == METRICS:
            response = worker.read(lambda view: _resource_metrics(view, rest, selector))
        elif group_version == CUSTOM:
            response = worker.read(lambda view: _custom(view, rest, selector, selector_text))
        else:
            response = worker.read(lambda view: _external(view, rest, selector_text))
        return response
    except MetricNotFound as err:
        return status_response(404, str(err), "NotFound")


def _not_found() -> Response:
    return status_response(404, "the server could not find the requested resource", "NotFound")


# ---- metrics.k8s.io ---------------------------------------------------------------------------

def _cpu(millicores: int) -> str:
    return f"{millicores * 1_000_000}n"


def _memory(bytes_: int) -> str:
    return f"{bytes_ // 1024}Ki"


def _meta(body: dict[str, Any], view: Any) -> dict[str, Any]:
    meta = body.get("metadata") or {}
    out = {"name": meta.get("name", ""), "creationTimestamp": _stamp(view)}
    if meta.get("namespace"):
        out["namespace"] = meta["namespace"]
    if meta.get("labels"):
        out["labels"] = dict(meta["labels"])
    return out


def _node_metrics(usage: Usage, node: dict[str, Any], view: Any) -> dict[str, Any]:
    values = usage.node_usage(node)
    return {"kind": "NodeMetrics", "apiVersion": METRICS, "metadata": _meta(node, view),
            "timestamp": _stamp(view), "window": f"{WINDOW_S}s",
            "usage": {"cpu": _cpu(values["cpu"]), "memory": _memory(values["memory"])}}


def _pod_metrics(usage: Usage, pod: dict[str, Any], view: Any) -> dict[str, Any]:
    return {"kind": "PodMetrics", "apiVersion": METRICS, "metadata": _meta(pod, view),
            "timestamp": _stamp(view), "window": f"{WINDOW_S}s",
            "containers": [{"name": name, "usage": {"cpu": _cpu(cpu), "memory": _memory(mem)}}
                           for name, cpu, mem in usage.container_usage(pod)]}


def _labels(body: dict[str, Any]) -> dict[str, Any]:
    return (body.get("metadata") or {}).get("labels") or {}


def _resource_metrics(view: Any, rest: list[str], selector: LabelSelector | None) -> Response:
    usage = Usage(view)
    if rest[0] == "nodes" and len(rest) <= 2:
        return _node_resource(view, usage, rest, selector)
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] == "pods":
        namespace, rest = rest[1], rest[2:]
    if rest[0] != "pods" or len(rest) > 2:
        return _not_found()
    return _pod_resource(view, usage, namespace, rest, selector)


def _node_resource(view: Any, usage: Usage, rest: list[str],
                   selector: LabelSelector | None) -> Response:
    """``nodes`` (NodeMetricsList, label-selected) or ``nodes/<name>``."""
    if len(rest) == 2:
        node = view.get("Node", rest[1])
        if node is None:
            return status_response(404, f'nodemetrics.metrics.k8s.io "{rest[1]}" not found')
        return json_response(_node_metrics(usage, node, view))
    nodes = [n for n in view.list("Node") if selector is None or matches(selector, _labels(n))]
    return json_response({"kind": "NodeMetricsList", "apiVersion": METRICS, "metadata": {},
                          "items": [_node_metrics(usage, n, view) for n in nodes]})


def _pod_resource(view: Any, usage: Usage, namespace: str | None, rest: list[str],
                  selector: LabelSelector | None) -> Response:
    """``pods`` (PodMetricsList of the pods with usage, label-selected) or ``pods/<name>``."""
    if len(rest) == 2:
        pod = view.get("Pod", rest[1], namespace or "default")
        if pod is None or usage.pod_usage(pod) is None:
            return status_response(404, f'podmetrics.metrics.k8s.io "{namespace}/{rest[1]}" not found')
        return json_response(_pod_metrics(usage, pod, view))
    pods = [p for p in view.list("Pod", namespace) if usage.pod_usage(p) is not None
            and (selector is None or matches(selector, _labels(p)))]
    return json_response({"kind": "PodMetricsList", "apiVersion": METRICS, "metadata": {},
                          "items": [_pod_metrics(usage, p, view) for p in pods]})


# ---- custom.metrics.k8s.io --------------------------------------------------------------------

def _value(kind: str, api_version: str, namespace: str, name: str, metric: str, value: float,
           view: Any) -> dict[str, Any]:
    return {"describedObject": {"kind": kind, "namespace": namespace, "name": name,
                                "apiVersion": api_version},
            "metricName": metric, "timestamp": _stamp(view), "value": format_milli(milli(value)),
            "selector": None}


def _custom(view: Any, rest: list[str], selector: LabelSelector | None, selector_text: str) -> Response:
    # namespaces/<ns>/<resource>/<name>/<metric>
    if len(rest) != 5 or rest[0] != "namespaces":
        return _not_found()
    namespace, resource, name, metric = rest[1], rest[2], rest[3], rest[4]
    kind = OBJECT_RESOURCES.get(resource)
    if kind is None:
        raise MetricNotFound(f"the server could not find the metric {metric} for {resource}")
    usage = Usage(view)
    if kind == "Pod" and name == "*":
        items = _all_pods_metric(view, usage, namespace, metric, selector)
    elif name == "*":
        items = _all_objects_metric(view, usage, kind, namespace, metric, selector)
        if not items and metric not in (POD_METRICS if kind == "Pod" else ("gpu_utilization",
                                                                           "requests_per_second")):
            raise MetricNotFound(f"the server could not find the metric {metric} for {resource}")
    else:
        value = usage.object_metric(kind, name, namespace, metric)
        items = [_value(kind, _api_version(kind), namespace, name, metric, value, view)]
    return json_response({"kind": "MetricValueList", "apiVersion": CUSTOM,
                          "metadata": {"selfLink": f"/apis/{CUSTOM}/{'/'.join(rest)}"},
                          "items": items})


def _api_version(kind: str) -> str:
    return "apps/v1" if kind == "Deployment" else "/v1"


def _all_pods_metric(view: Any, usage: Usage, namespace: str, metric: str,
                     selector: LabelSelector | None) -> list[dict[str, Any]]:
    """``pods/*/<metric>``: every (label-selected) pod's value; ``*`` namespace: all of them."""
    if metric not in POD_METRICS:
        raise MetricNotFound(f"the server could not find the metric {metric} for pods")
    items = []
    for pod_value in usage.pods_metric(None if namespace == "*" else namespace, metric):
        pod = view.get("Pod", pod_value.name, pod_value.namespace)
        if selector is None or matches(selector, _labels(pod or {})):
            items.append(_value("Pod", "/v1", pod_value.namespace, pod_value.name, metric,
                                pod_value.value, view))
    return items


def _all_objects_metric(view: Any, usage: Usage, kind: str, namespace: str, metric: str,
                        selector: LabelSelector | None) -> list[dict[str, Any]]:
    """``<resource>/*/<metric>``: the value of each (label-selected) object that has one."""
    items = []
    for body in view.list(kind, None if namespace == "*" else namespace):
        if selector is not None and not matches(selector, _labels(body)):
            continue
        meta = body["metadata"]
        try:
            value = usage.object_metric(kind, meta["name"], meta.get("namespace", "default"), metric)
        except MetricNotFound:
            continue
        items.append(_value(kind, _api_version(kind), meta.get("namespace", "default"),
                            meta["name"], metric, value, view))
    return items


# ---- external.metrics.k8s.io ------------------------------------------------------------------

def _external(view: Any, rest: list[str], selector_text: str) -> Response:
    if len(rest) != 3 or rest[0] != "namespaces":
        return _not_found()
    namespace, metric = rest[1], rest[2]
    selector = _selector_dict(selector_text)
    items = Usage(view).external_metric(namespace, metric, selector)
    return json_response({"kind": "ExternalMetricValueList", "apiVersion": EXTERNAL,
                          "metadata": {},
                          "items": [{"metricName": metric, "metricLabels": labels,
                                     "timestamp": _stamp(view),
                                     "value": format_milli(milli(value))}
                                    for labels, value in items]})


def _selector_dict(text: str) -> dict[str, Any] | None:
    """A LabelSelector dict from ``key=value,...`` (the forms external metric selectors use)."""
    if not text:
        return None
    parsed = parse_selector(text)
    out: dict[str, Any] = {}
    if parsed.match_labels:
        out["matchLabels"] = dict(parsed.match_labels)
    if parsed.match_expressions:
        out["matchExpressions"] = [{"key": r.key, "operator": r.operator, "values": list(r.values)}
                                   for r in parsed.match_expressions]
    return out

