"""``gpusched create``: kubectl's create, from files (``-f``) or from flags.

Generators build the objects kubectl's ``create <kind>`` commands build (kubectl
pkg/cmd/create/create_{namespace,deployment,job,priorityclass,quota,configmap}.go):

- ``namespace NAME``;
- ``deployment NAME --image=I [--replicas=N] [--port=P] [-- COMMAND...]``: labels ``app=NAME``,
  one container named after the image (its last path part, tag and digest dropped);
- ``job NAME --image=I [-- COMMAND...]``: one container named NAME, ``restartPolicy: Never``;
- ``priorityclass NAME --value=N [--global-default] [--description=T] [--preemption-policy=P]``;
- ``quota NAME --hard=k=v,... [--scopes=A,B]`` (kubectl's ``create quota``, kind ResourceQuota);
- ``configmap NAME --from-literal=k=v ...``.

The object is created through the API server's create path (``apiserver.api_ops.create``:
validation, ``AlreadyExists``, admission). ``--dry-run=client`` prints without touching the
cluster (``-o yaml`` gives the manifest, as ``kubectl create ... --dry-run=client -o yaml``
does); ``--dry-run=server`` creates, admits, and rolls back.

Neighbours: ``cli.main`` registers the parser; ``cli.commands`` (open_cluster, dry-run suffix).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, Callable

from gpusched.cli.commands import dry_run_suffix, load, namespace_of, open_cluster, validation_mode
from gpusched.cli.output import resource_name, to_json, to_yaml
from gpusched.errors import GpuschedError, UsageError
from gpusched.objects.kinds import resolve_kind


def add_commands(parser: argparse.ArgumentParser, dry_run_option: Callable[..., Any]) -> None:
    parser.add_argument("-f", "--filename", action="append", metavar="PATH",
                        help="Create the objects of these manifests")
    parser.add_argument("-n", "--namespace", default=None, help="The namespace of the object")
    parser.add_argument("-o", "--output", choices=("json", "yaml", "name"), default=None)
    dry_run_option(parser)
    sub = parser.add_subparsers(dest="generator", metavar="KIND", required=False)

    def generator(name: str, aliases: tuple[str, ...], text: str, examples: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, aliases=list(aliases), help=text, description=text,
                           epilog="Examples:\n  " + examples)
        p.add_argument("name", help="Name of the new object")
        p.add_argument("-n", "--namespace", default=argparse.SUPPRESS, help="The namespace of the object")
        p.add_argument("-o", "--output", choices=("json", "yaml", "name"), default=argparse.SUPPRESS)
        p.add_argument("--dry-run", nargs="?", const="client", choices=("none", "client", "server"),
                       default=argparse.SUPPRESS, metavar="none|client|server",
                       help="client: print the object only; server: admit it, then roll back")
        return p

    generator("namespace", ("ns",), "Create a namespace", "gpusched create namespace team-a")
    p = generator("deployment", ("deploy",), "Create a deployment running one image",
                  "gpusched create deployment web --image=nginx --replicas=2")
    p.add_argument("--image", action="append", required=True, help="Image of a container (repeatable)")
    p.add_argument("--replicas", type=int, default=1, help="Number of replicas (default 1)")
    p.add_argument("--port", type=int, default=None, help="The port the container exposes")
    p.add_argument("command", nargs="*", help="After --: the container's command")
    p = generator("job", (), "Create a job running one image",
                  "gpusched create job train --image=pytorch -- python train.py")
    p.add_argument("--image", required=True, help="Image of the container")
    p.add_argument("command", nargs="*", help="After --: the container's command")
    p = generator("priorityclass", ("pc",), "Create a priority class",
                  "gpusched create priorityclass high --value=1000 --description='training'")
    p.add_argument("--value", type=int, default=0, help="The priority value")
    p.add_argument("--global-default", action="store_true", help="Use it for pods without a class")
    p.add_argument("--description", default="", help="What the class is for")
    p.add_argument("--preemption-policy", default="PreemptLowerPriority",
                   choices=("PreemptLowerPriority", "Never"), help="Whether its pods preempt others")
    p = generator("quota", ("resourcequota",), "Create a resource quota",
                  "gpusched create quota team-a --hard=requests.nvidia.com/gpu=4,pods=10 -n team-a")
    p.add_argument("--hard", default="", help="Comma-separated resource=quantity pairs")
    p.add_argument("--scopes", default="", help="Comma-separated quota scopes")
    p = generator("configmap", ("cm",), "Create a config map from literal values",
                  "gpusched create configmap settings --from-literal=mode=fast --from-literal=level=2")
    p.add_argument("--from-literal", action="append", default=[], metavar="KEY=VALUE",
                   help="A key and its value (repeatable)")


# ---- generators -------------------------------------------------------------------------------


def _container_name(image: str) -> str:
    """kubectl's name for a container made from ``image``: the last path part, tag and digest
    dropped, anything but ``[a-z0-9-]`` turned into ``-``."""
    base = image.rsplit("/", 1)[-1].split("@", 1)[0].split(":", 1)[0]
    return re.sub(r"[^a-z0-9-]", "-", base.lower()).strip("-") or "container"


def _pairs(text: str, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in filter(None, text.split(",")):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise UsageError(f"invalid {what} argument: {part} (expected key=value)")
        out[key] = value
    return out


def build(args: argparse.Namespace) -> dict[str, Any]:
    """The object ``create <generator>`` makes, as kubectl's generator fills it."""
    kind = args.generator
    builder = _BUILDERS.get(kind)
    if builder is None:
        raise UsageError(f"unknown object to create: {kind}")
    return builder(args, {"name": args.name})


def _namespace(args: argparse.Namespace, meta: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def _deployment(args: argparse.Namespace, meta: dict[str, Any]) -> dict[str, Any]:
    if args.replicas < 0:
        raise UsageError("--replicas must be greater than or equal to 0")
    containers: list[dict[str, Any]] = [{"name": _container_name(image), "image": image, "resources": {}}
                                        for image in args.image]
    if args.command:
        containers[0]["command"] = list(args.command)
    if args.port is not None:
        containers[0]["ports"] = [{"containerPort": args.port}]
    labels = {"app": args.name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {**meta, "labels": labels},
            "spec": {"replicas": args.replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": containers}}}}


def _job(args: argparse.Namespace, meta: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = {"name": args.name, "image": args.image, "resources": {}}
    if args.command:
        container["command"] = list(args.command)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": {"template": {"metadata": {},
                                  "spec": {"containers": [container], "restartPolicy": "Never"}}}}


def _priorityclass(args: argparse.Namespace, meta: dict[str, Any]) -> dict[str, Any]:
    body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": meta,
            "value": args.value, "preemptionPolicy": args.preemption_policy}
    if args.global_default:
        body["globalDefault"] = True
    if args.description:
        body["description"] = args.description
    return body


def _quota(args: argparse.Namespace, meta: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"hard": _pairs(args.hard, "--hard")}
    if args.scopes:
        spec["scopes"] = [s for s in args.scopes.split(",") if s]
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta, "spec": spec}


def _configmap(args: argparse.Namespace, meta: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, str] = {}
    for literal in args.from_literal:
        key, sep, value = literal.partition("=")
        if not sep or not key:
            raise UsageError(f"invalid literal source {literal}, expected key=value")
        if key in data:
            raise UsageError(f'cannot add key "{key}", another key by that name already exists')
        data[key] = value
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


# each generator under its name and kubectl's aliases for it
_BUILDERS: dict[str, Callable[[argparse.Namespace, dict[str, Any]], dict[str, Any]]] = {
    "namespace": _namespace, "ns": _namespace, "deployment": _deployment, "deploy": _deployment,
    "job": _job, "priorityclass": _priorityclass, "pc": _priorityclass, "quota": _quota,
    "resourcequota": _quota, "configmap": _configmap, "cm": _configmap,
}


def as_kubectl_prints(body: dict[str, Any]) -> dict[str, Any]:
    """The object as ``kubectl create ... --dry-run=client -o yaml`` prints it: Go's zero values
    of the typed object (``creationTimestamp: null``, empty ``status``/``strategy``/``spec``)."""
    import copy

    out = copy.deepcopy(body)
    out["metadata"] = {"creationTimestamp": None, **out["metadata"]}
    kind = out["kind"]
    if kind == "Deployment":
        out["spec"]["strategy"] = {}
    if kind == "Namespace":
        out["spec"] = {}
    template = (out.get("spec") or {}).get("template")
    if isinstance(template, dict):
        template["metadata"] = {"creationTimestamp": None, **(template.get("metadata") or {})}
    if kind in ("Deployment", "Job", "Namespace", "ResourceQuota"):
        out["status"] = {}
    return out


# ---- the command ------------------------------------------------------------------------------


def _print(obj: dict[str, Any], args: argparse.Namespace, action: str = "created") -> None:
    info = resolve_kind(str(obj.get("kind", "")))
    ref = f"{resource_name(info)}/{obj['metadata']['name']}"
    if args.output == "json":
        print(to_json(obj))
    elif args.output == "yaml":
        print(to_yaml(obj))
    elif args.output == "name":
        print(ref)
    else:
        print(f"{ref} {action}{dry_run_suffix(args)}")


def _create(args: argparse.Namespace, bodies: list[tuple[str, dict[str, Any]]]) -> int:
    """Create each body in its own transaction; a refusal is one ``error:`` line (exit 1).

    Each body is decoded first under ``--validate`` (objects.strict), as the API server does."""
    from gpusched.cluster.apiserver import api_ops
    from gpusched.objects.strict import decode_with_mode

    mode = validation_mode(getattr(args, "validate", "strict"))

    failed = 0
    with open_cluster(args, dry_run=args.dry_run) as cluster:
        for source, body in bodies:
            info = resolve_kind(str(body.get("kind", "")))
            namespace = (body.get("metadata") or {}).get("namespace") or namespace_of(args)
            try:
                decoded, warnings = decode_with_mode(body, mode)
                for warning in warnings:
                    print(f"Warning: {warning}", file=sys.stderr)
                created = cluster.write(lambda view, b=decoded: api_ops.create(view, info, namespace, b))
            except GpuschedError as error:
                failed += 1
                where = f'error when creating "{source}": ' if source else ""
                print(f"error: {where}{error.message}", file=sys.stderr)
                continue
            _print(created or body, args)
    return 1 if failed else 0


def cmd_create(args: argparse.Namespace) -> int:
    if getattr(args, "generator", None):
        if args.filename:
            raise UsageError("cannot use -f together with a kind to create")
        body = build(args)
        if args.dry_run == "client":
            info = resolve_kind(body["kind"])
            if info.namespaced and getattr(args, "namespace", None):
                body["metadata"]["namespace"] = args.namespace
            _print(as_kubectl_prints(body) if args.output in ("json", "yaml") else body, args)
            return 0
        return _create(args, [("", body)])
    if not args.filename:
        raise UsageError("must specify one of -f or a kind to create (namespace, deployment, job, "
                         "priorityclass, quota, configmap)")
    manifests = load(args.filename)
    if not manifests:
        raise UsageError("no objects passed to create")
    if args.dry_run == "client":
        for manifest in manifests:
            _print(manifest.obj, args)
        return 0
    return _create(args, [(m.source, m.obj) for m in manifests])
