"""The kubectl-like commands: apply, get, delete, label, taint, cordon, drain, scale, events, ...

Each ``cmd_*`` takes the parsed argparse namespace, opens the cluster named by ``--state``, calls
one ``Cluster`` facade method and prints what kubectl would print. Expected failures are raised as
``gpusched.errors`` types and printed by ``cli.main``.

Neighbours: ``cli.parser`` (arguments), ``cli.main`` (errors), ``cli.output`` / ``cli.columns`` (formatting),
``gpusched.cluster.cluster.Cluster`` (imported lazily: it pulls in NumPy and the scheduler).
"""

from __future__ import annotations

import argparse
import re
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

from gpusched import __version__
from gpusched.cli.output import Clock, as_list, render_table, resource_name, to_json, to_yaml
from gpusched.errors import GpuschedError, UsageError
from gpusched.objects.kinds import KindInfo, resolve_kind

if TYPE_CHECKING:
    from gpusched.cluster.cluster import Cluster
    from gpusched.objects.manifest import Manifest

DEFAULT_NAMESPACE = "default"


@contextmanager
def open_cluster(args: argparse.Namespace, dry_run: str = "none") -> Iterator[Cluster]:
    """The cluster of ``--state``; with ``dry_run`` ``client`` or ``server`` every write is
    validated and admitted, then rolled back (``Cluster.dry_run``)."""
    from gpusched.cluster.cluster import Cluster

    with Cluster.open(args.state, start=getattr(args, "start_seconds", None)) as cluster:
        cluster.dry_run = dry_run in ("client", "server")
        yield cluster


def emit(text: str) -> None:
    if text:
        print(text)


def split_kind_name(kind: str, names: list[str]) -> tuple[KindInfo, list[str]]:
    """``pod x`` and ``pod/x`` both name pod x; the kind is resolved (unknown kinds raise)."""
    if "/" in kind and not names:
        kind, _, name = kind.partition("/")
        return resolve_kind(kind), [name]
    return resolve_kind(kind), list(names)


def namespace_of(args: argparse.Namespace) -> str:
    return getattr(args, "namespace", None) or DEFAULT_NAMESPACE


# ---- apply / delete -------------------------------------------------------------------------


def load(paths: list[str]) -> list[Any]:
    from gpusched.objects.manifest import load_manifests

    stdin_text = sys.stdin.read() if "-" in paths else None
    return load_manifests(paths, stdin_text=stdin_text)


def dry_run_suffix(args: argparse.Namespace) -> str:
    """`` (dry run)`` / `` (server dry run)`` after kubectl's success lines."""
    mode = getattr(args, "dry_run", "none") or "none"
    return {"client": " (dry run)", "server": " (server dry run)"}.get(mode, "")


def validation_mode(value: str) -> str:
    """kubectl's ``--validate`` (strict|true, warn, ignore|false) -> the API's fieldValidation."""
    modes = {"strict": "Strict", "true": "Strict", "warn": "Warn", "ignore": "Ignore", "false": "Ignore"}
    mode = modes.get(value.lower())
    if mode is None:
        raise UsageError(f'invalid - validate option "{value}"; must be one of: strict (or true), warn, '
                         "ignore (or false)")
    return mode


def cmd_apply(args: argparse.Namespace) -> int:
    """kubectl apply: each object on its own (in file order, documents in order; a refused one
    is reported and the others go on), one line each, the cluster settling once after the last
    (``Cluster.apply_each``); ``--atomic`` applies all or none. ``--dry-run=server`` checks each
    object alone against the stored state, as kubectl sends each with ``dryRun``.
    ``--validate`` is the fieldValidation mode (Strict by default); Warn's findings print as
    ``Warning: ...``."""
    mode = validation_mode(getattr(args, "validate", "strict"))
    manifests = load(args.filename)
    if not manifests:               # files of comments only: kubectl's visitor finds no object
        raise UsageError("no objects passed to apply")
    with open_cluster(args, dry_run=args.dry_run) as cluster:
        if args.atomic and args.dry_run != "client":
            for manifest, outcome in zip(manifests, cluster.apply(manifests, field_validation=mode)):
                _print_applied(args, cluster, manifest, outcome)
            return 0
        if args.dry_run == "none":
            results = cluster.apply_each(manifests, field_validation=mode)
        else:
            results = [_dry_run_one(cluster, manifest, args.dry_run, mode) for manifest in manifests]
        failed = 0
        for manifest, result in zip(manifests, results):
            if isinstance(result, GpuschedError):
                failed += 1
                print(f"error: {_with_source(result.message, manifest)}", file=sys.stderr, flush=True)
            else:
                _print_applied(args, cluster, manifest, result)
    return 1 if failed else 0


def _dry_run_one(cluster: Cluster, manifest: Manifest, dry_run: str, mode: str) -> Any:
    """One object of ``--dry-run``: its outcome, or the error that refused it."""
    try:
        if dry_run == "client":
            return cluster.apply_preview(manifest, field_validation=mode)
        return cluster.apply([manifest], field_validation=mode)[0]
    except GpuschedError as error:
        return error


def _print_applied(args: argparse.Namespace, cluster: Cluster, manifest: Manifest, outcome: Any) -> None:
    for warning in getattr(outcome, "warnings", ()):
        print(f"Warning: {warning}", file=sys.stderr, flush=True)
    info = resolve_kind(outcome.kind)
    if args.output == "name":
        print(f"{resource_name(info)}/{outcome.name}", flush=True)
    elif args.output in ("json", "yaml"):
        obj = manifest.obj if args.dry_run != "none" else cluster.get(
            info.kind, names=(outcome.name,), namespace=outcome.namespace or None)[0]
        print(to_json(obj) if args.output == "json" else to_yaml(obj), flush=True)
    else:
        print(f"{resource_name(info)}/{outcome.name} {outcome.action}{dry_run_suffix(args)}", flush=True)


def _with_source(message: str, manifest: Manifest) -> str:
    """kubectl names the file of a refused object (``error when creating "x.yaml": ...``)."""
    return message if message.startswith(manifest.source) else \
        f'error when creating "{manifest.source}": {message}'


IMMEDIATE_DELETION_WARNING = ("Warning: Immediate deletion does not wait for confirmation that the "
                              "running resource has been terminated. The resource may continue to "
                              "run on the cluster indefinitely.")


def delete_grace(args: argparse.Namespace) -> int | None:
    """kubectl delete's --grace-period/--force/--now (staging/src/k8s.io/kubectl/pkg/cmd/delete/
    delete.go, Complete and Validate): None = the pod's own period; prints kubectl's warning for
    a forced immediate deletion."""
    grace = int(getattr(args, "grace_period", -1))
    force, now = bool(getattr(args, "force", False)), bool(getattr(args, "now", False))
    if now:
        if grace != -1:
            raise UsageError("--now and --grace-period cannot be specified together")
        grace = 1
    if grace == 0 and not force:
        grace = 1     # kubectl: --grace-period=0 means 1 unless --force
    if force and grace < 0:
        grace = 0
    if force and grace > 0:
        raise UsageError("--force and --grace-period greater than 0 cannot be specified together")
    if force and grace == 0:
        print(IMMEDIATE_DELETION_WARNING, file=sys.stderr)
    return None if grace < 0 else grace


def cmd_delete(args: argparse.Namespace) -> int:
    suffix = dry_run_suffix(args)
    grace = delete_grace(args)
    if args.filename:
        return _delete_files(args, grace, suffix)
    if not args.kind:
        raise UsageError("You must provide one or more resources by argument or filename.")
    info, names = split_kind_name(args.kind, args.names)
    _check_delete_names(names, args)
    with open_cluster(args, dry_run=args.dry_run) as cluster:
        targets = _delete_targets(cluster, info.kind, names, args)
        if targets is None:   # kubectl delete says it on stdout, without the namespace
            print("No resources found")
            return 0
        lines = cluster.delete_many(info.kind, targets, grace)
    for line in lines:
        print(line + suffix)
    return 0


def _delete_files(args: argparse.Namespace, grace: int | None, suffix: str) -> int:
    """``delete -f FILE``: every object the manifests name."""
    if args.kind:
        raise UsageError("there is no need to specify a resource type as a separate argument "
                         "when passing arguments in resource/name form (e.g. 'gpusched delete -f FILE')")
    manifests = load(args.filename)
    with open_cluster(args, dry_run=args.dry_run) as cluster:
        lines = cluster.delete_manifests(manifests, grace)
    for line in lines:
        print(line + suffix)
    return 0


def _check_delete_names(names: list[str], args: argparse.Namespace) -> None:
    """Names, ``--all`` and ``-l`` as kubectl delete accepts them: names, ``--all`` or ``-l``.
    kubectl's resource builder (cli-runtime resource/builder.go) takes ``--all`` for a
    select-everything selector, hence its wording for names with ``--all``, and refuses ``--all``
    with ``-l`` before delete.go's Validate would (its message ends in ". ")."""
    if names and (args.all or args.selector):
        raise UsageError("name cannot be provided when a selector is specified")
    if not names and not (args.all or args.selector):
        raise UsageError("resource(s) were provided, but no name was specified")
    if args.all and args.selector:
        raise UsageError("setting 'all' parameter but found a non empty selector. ")


def _delete_targets(cluster: Any, kind: str, names: list[str],
                    args: argparse.Namespace) -> list[tuple[str, str]] | None:
    """(name, namespace) of each object to delete; None when ``--all``/``-l`` match nothing."""
    if names:
        return [(name, namespace_of(args)) for name in names]
    objects = cluster.get(kind, namespace=namespace_of(args),
                          all_namespaces=bool(args.all_namespaces), selector=args.selector)
    if not objects:
        return None
    return [((o.get("metadata") or {}).get("name", ""),
             (o.get("metadata") or {}).get("namespace") or namespace_of(args)) for o in objects]


# ---- events -------------------------------------------------------------------------------


def cmd_events(args: argparse.Namespace) -> int:
    from gpusched.cli.columns import event_time, table_rows   # the table printers: events only
    with open_cluster(args) as cluster:
        events = cluster.events(None if args.all_namespaces else namespace_of(args))
        clock = Clock(cluster.timestamp())
    events = sorted(events, key=lambda e: event_time(e) or "")  # stable: store order breaks ties
    if args.output:
        document = as_list(events)
        print(to_json(document) if args.output == "json" else to_yaml(document))
        return 0
    if not events:
        where = "" if args.all_namespaces else f" in {namespace_of(args)} namespace"
        print(f"No events found{where}.", file=sys.stderr)
        return 0
    header, rows = table_rows("Event", events, clock, wide=False, with_namespace=args.all_namespaces)
    print(render_table(header, rows))
    return 0


# ---- label / taint / cordon / drain / scale -------------------------------------------------

_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def parse_label_changes(specs: list[str]) -> dict[str, str | None]:
    """``k=v`` sets, ``k-`` removes (None), as ``kubectl label`` reads its arguments."""
    changes: dict[str, str | None] = {}
    for spec in specs:
        if spec.endswith("-") and "=" not in spec:
            key, value = spec[:-1], None
        elif "=" in spec:
            key, _, value = spec.partition("=")
        else:
            raise UsageError(f"invalid label spec: {spec}")
        if not _LABEL_KEY.match(key):
            raise UsageError(f"invalid label spec: {spec}")
        changes[key] = value
    return changes


def target_and_specs(kind: str, args: list[str]) -> tuple[KindInfo, str, list[str]]:
    """``node NAME spec...`` or ``node/NAME spec...`` -> (kind, name, specs)."""
    if "/" in kind:
        info, names = split_kind_name(kind, [])
        return info, names[0], list(args)
    return resolve_kind(kind), args[0], list(args[1:])


def _selected(args: argparse.Namespace, verb: str) -> tuple[KindInfo, list[str], list[str]]:
    """(kind, names, specs): ``KIND NAME spec...`` or, with ``-l``, every object it selects."""
    if not getattr(args, "selector", ""):
        info, name, specs = target_and_specs(args.kind, args.args)
        return info, [name], specs
    info = resolve_kind(args.kind)
    namespace = namespace_of(args) if info.namespaced else None
    with open_cluster(args) as cluster:
        names = [o["metadata"]["name"] for o in cluster.get(info.kind, namespace=namespace,
                                                             selector=args.selector)]
    if not names:
        raise UsageError(f"no objects passed to {verb}")
    return info, names, list(args.args)


def cmd_label(args: argparse.Namespace) -> int:
    info, names, specs = _selected(args, "label")
    if not specs:
        raise UsageError("at least one label update is required")
    namespace = namespace_of(args) if info.namespaced else None
    with open_cluster(args, dry_run=args.dry_run) as cluster:
        for name in names:
            print(cluster.label(info.kind, name, parse_label_changes(specs), namespace=namespace,
                                overwrite=args.overwrite) + dry_run_suffix(args))
    return 0


def parse_taint_specs(specs: list[str]) -> tuple[list[Any], list[tuple[str, str | None]]]:
    """Split ``key=value:Effect`` (add) from ``key:Effect-`` / ``key-`` (remove, None = every effect)."""
    from gpusched.objects.node import is_taint_removal, parse_taint, parse_taint_removal

    add, remove = [], []
    for spec in specs:
        if is_taint_removal(spec):
            key, effect = parse_taint_removal(spec)
            remove.append((key, effect or None))
        else:
            add.append(parse_taint(spec))
    return add, remove


def cmd_taint(args: argparse.Namespace) -> int:
    info, names, specs = _selected(args, "taint")
    if info.kind != "Node":
        raise UsageError(f"invalid resource type {args.kind}, only node types are supported")
    if not specs:
        raise UsageError("at least one taint update is required")
    add, remove = parse_taint_specs(specs)
    with open_cluster(args, dry_run=args.dry_run) as cluster:
        for name in names:   # kubectl 1.32 taint prints no "(dry run)" suffix (its printer is not dry-run aware)
            print(cluster.taint(name, add, remove, overwrite=args.overwrite))
    return 0


def cmd_condition(args: argparse.Namespace) -> int:
    from gpusched.cluster.nodes import parse_condition
    info, name, specs = target_and_specs(args.kind, args.args)
    if info.kind != "Node":
        raise UsageError(f"invalid resource type {args.kind}, only node types are supported")
    if len(specs) != 1:
        raise UsageError("exactly one condition is required: Ready=True, Ready=False or "
                         "Ready=Unknown")
    status = parse_condition(specs[0])
    with open_cluster(args) as cluster:
        print(cluster.set_ready(name, status))
    return 0


def cmd_cordon(args: argparse.Namespace) -> int:
    with open_cluster(args) as cluster:
        print(cluster.cordon(_node_name(args.node)))
    return 0


def cmd_uncordon(args: argparse.Namespace) -> int:
    with open_cluster(args) as cluster:
        print(cluster.uncordon(_node_name(args.node)))
    return 0


def _node_name(text: str) -> str:
    """``gpu-node-1``, ``node/gpu-node-1`` and ``nodes/gpu-node-1`` all name the node."""
    if "/" in text:
        kind, _, name = text.partition("/")
        if resolve_kind(kind).kind != "Node":
            raise UsageError(f"invalid resource type {kind}, only node types are supported")
        return name
    return text


def cmd_drain(args: argparse.Namespace) -> int:
    with open_cluster(args) as cluster:
        try:
            lines = cluster.drain(_node_name(args.node), ignore_daemonsets=args.ignore_daemonsets,
                                  delete_emptydir_data=args.delete_emptydir_data, force=args.force)
        except GpuschedError as error:   # a stopped drain: what kubectl printed before the error
            for line in getattr(error, "lines", ()):
                print(line)
            raise
    for line in lines:
        print(line)
    return 0


def cmd_scale(args: argparse.Namespace) -> int:
    info, names = split_kind_name(args.kind, [args.name] if args.name else [])
    if not names:
        raise UsageError("resource(s) were provided, but no name was specified")
    if args.replicas < 0:
        raise UsageError("The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0")
    with open_cluster(args, dry_run=args.dry_run) as cluster:
        print(cluster.scale(info.kind, names[0], args.replicas, namespace=namespace_of(args))
              + dry_run_suffix(args))
    return 0


# ---- explain / clock / misc -----------------------------------------------------------------


EXPLAINABLE = ("Pod", "Deployment", "ReplicaSet", "Job", "DaemonSet")


def cmd_explain(args: argparse.Namespace) -> int:
    from gpusched.scheduler import explain

    info, names = split_kind_name(args.kind, [args.name] if args.name else [])
    if info.kind not in EXPLAINABLE:
        raise UsageError(f"explain takes a pod, deployment, replicaset, job or daemonset, not {args.kind}")
    if len(names) != 1 or not names[0]:
        raise UsageError(f"explain takes one {info.kind.lower()} name")
    with open_cluster(args) as cluster:
        explanation = cluster.explain(names[0], namespace=namespace_of(args), kind=info.kind)
    if args.output == "json":
        rendered = explain.to_json(explanation)
        print(rendered if isinstance(rendered, str) else to_json(rendered))
    else:
        print(explain.render_table(explanation))
    return 0


def cmd_advance(args: argparse.Namespace) -> int:
    from gpusched.objects.duration import format_duration, parse_duration

    seconds = parse_duration(args.duration)
    if seconds < 0:
        raise UsageError(f'invalid duration "{args.duration}": must not be negative')
    with open_cluster(args) as cluster:
        cluster.advance(seconds)
        now = cluster.timestamp()
        from gpusched.cli.job_outputs import write_job_outputs   # sbatch jobs' slurm-%j.out
        write_job_outputs(cluster)
    print(f"clock advanced by {format_duration(seconds)}, now {now}")
    return 0


def cmd_reset(args: argparse.Namespace) -> int:
    with open_cluster(args) as cluster:
        cluster.reset()
    print("cluster state reset")
    return 0


def cmd_version(args: argparse.Namespace) -> int:
    print(f"gpusched version {__version__}")
    return 0
