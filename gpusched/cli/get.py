"""``gpusched get``: kubectl's get, with its multi-kind, printer and watch habits.

- What to list (``requested``): ``KIND [NAME...]``, ``KIND1,KIND2 [NAME...]``, ``all`` (kubectl's
  "all" category: the workload kinds this cluster stores), or ``KIND/NAME ...`` pairs. As kubectl
  (get.go ``multipleGVKsRequested``), NAME cells read ``kind/name`` (``deployment.apps/web``) once
  more than one kind is asked for, and each kind gets its own table, tables separated by a blank
  line (none with ``--no-headers``).
- Printers (``-o``): table (default), ``wide``, ``json``, ``yaml``, ``name``,
  ``jsonpath=TEMPLATE`` (``cli.jsonpath``), ``custom-columns=HEADER:EXPR,...`` (one table for all
  kinds; ``<none>`` when an expression finds nothing; several results joined by ``,``; maps and
  lists as Go's ``%v`` prints them).
- ``--show-labels`` (a LABELS column), ``-L`` (one column per key), ``--sort-by=EXPR`` (within
  each kind: numbers by value, text in natural order, missing values first),
  ``--no-headers``.
- ``-w/--watch``, ``--watch-only``: after the list, follow the state file's change feed and
  print one row per change of a listed kind, column widths remembered across rows as
  cli-runtime's tabwriter ``RememberWidths`` does; Ctrl-C ends it. While it waits the cluster
  clock follows the wall clock (``cluster.clock.wall``, docs/serve.md "The clock"), so grace
  periods end and pods finish as on a real cluster.
- Nothing found: ``No resources found in NS namespace.`` (or ``No resources found`` when a
  cluster-scoped kind or ``-A`` is involved) on stderr, exit 0, as kubectl.

Neighbours: ``cli.columns`` (rows per kind), ``cli.output`` (tables, json/yaml), ``cli.jsonpath``;
data from the ``Cluster`` facade.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

from gpusched.cli import jsonpath
from gpusched.cli.columns import event_time, table_rows
from gpusched.cli.commands import namespace_of, open_cluster
from gpusched.cli.output import Clock, as_list, object_ref, render_table, resource_name, to_json, to_yaml
from gpusched.errors import UsageError
from gpusched.objects.kinds import KINDS, KindInfo, resolve_kind
from gpusched.objects.digits import is_digits

# kubectl's "all" category (the kinds whose discovery entry lists "all"), in discovery order:
# core, apps, autoscaling, batch.
ALL_CATEGORY = ("Pod", "ReplicationController", "Service", "DaemonSet", "Deployment", "ReplicaSet",
                "StatefulSet", "HorizontalPodAutoscaler", "CronJob", "Job")
PRINTER_FORMATS = ("custom-columns", "custom-columns-file", "go-template", "go-template-file",
                   "json", "jsonpath", "jsonpath-as-json", "jsonpath-file", "name", "template",
                   "templatefile", "wide", "yaml")
SUPPORTED = ("custom-columns", "json", "jsonpath", "name", "wide", "yaml")
WATCH_POLL_SECONDS = 0.2
MAX_COLUMNS = 64


@dataclass(frozen=True)
class Request:
    """One kind to list and the names asked for (none = every object)."""

    info: KindInfo
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Printer:
    format: str            # table | wide | json | yaml | name | jsonpath | custom-columns
    argument: str = ""


def requested(kind: str, names: list[str]) -> tuple[list[Request], bool]:
    """The kinds and names of ``get KIND...`` and whether NAME cells carry the kind."""
    if "/" in kind:
        return _requested_pairs([kind, *names])
    words = [w for w in kind.split(",") if w]
    if not words:
        raise UsageError("Required resource not specified.")
    infos: list[KindInfo] = []
    for word in words:
        expanded = ([KINDS[k] for k in ALL_CATEGORY if k in KINDS] if word.lower() == "all"
                    else [resolve_kind(word)])
        infos.extend(i for i in expanded if i not in infos)
    return [Request(info, tuple(names)) for info in infos], len(words) > 1 or "all" in \
        [w.lower() for w in words]


def _requested_pairs(pairs: list[str]) -> tuple[list[Request], bool]:
    """``get KIND/NAME ...``: consecutive names of one kind share a request."""
    if any("/" not in word for word in pairs):
        raise UsageError("there is no need to specify a resource type as a separate argument "
                         "when passing arguments in resource/name form (e.g. 'gpusched get "
                         "resource/<resource_name>' instead of 'gpusched get resource "
                         "resource/<resource_name>'")
    out: list[Request] = []
    for word in pairs:
        kind_word, _, name = word.partition("/")
        info = resolve_kind(kind_word)
        if out and out[-1].info.kind == info.kind:
            out[-1] = Request(info, out[-1].names + (name,))
        else:
            out.append(Request(info, (name,)))
    return out, len({r.info.kind for r in out}) > 1


def printer(output: str | None) -> Printer:
    """``-o`` as kubectl reads it; unknown formats get kubectl's message."""
    if not output:
        return Printer("table")
    name, sep, argument = output.partition("=")
    if name in SUPPORTED and (bool(sep) == (name in ("jsonpath", "custom-columns"))):
        if sep and not argument:
            raise UsageError(f"{name} format specified but no {name} template given")
        return Printer(name, argument)
    raise UsageError(f'unable to match a printer suitable for the output format "{output}", '
                     f"allowed formats are: {','.join(PRINTER_FORMATS)}")


# ---- sorting and extra columns ------------------------------------------------------------


def _natural_key(text: str) -> list[Any]:
    return [(0, int(part), "") if is_digits(part) else (1, 0, part)
            for part in re.findall(r"\d+|\D+", text)]


def sort_objects(objects: list[dict[str, Any]], expression: str) -> list[dict[str, Any]]:
    """``--sort-by``: by the expression's first value; numbers numerically, text naturally."""
    def key(obj: dict[str, Any]) -> tuple[Any, ...]:
        found = jsonpath.values(expression, obj)
        if not found or found[0] is None:
            return (0, 0, [])
        value = found[0]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return (1, value, [])
        return (2, 0, _natural_key(jsonpath.go_value(value)))
    jsonpath.values(expression, {})      # a malformed expression fails even with no objects
    return sorted(objects, key=key)


def labels_cell(obj: dict[str, Any]) -> str:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>"


def custom_columns(spec: str) -> list[tuple[str, str]]:
    """``HEADER:EXPR,...`` -> [(header, expression)] (kubectl's ``NewCustomColumnsPrinterFromSpec``)."""
    columns = []
    for part in spec.split(","):
        header, sep, expression = part.partition(":")
        if not sep or not header:
            raise UsageError(f'unexpected custom-columns spec: {part}, expected <header>:<json-path-expr>')
        columns.append((header, expression))
    if len(columns) > MAX_COLUMNS:
        raise UsageError(f"custom-columns: at most {MAX_COLUMNS} columns")
    for _, expression in columns:
        jsonpath.values(expression, {})
    return columns


def custom_cells(obj: dict[str, Any], columns: list[tuple[str, str]]) -> list[str]:
    cells = []
    for _, expression in columns:
        found = jsonpath.values(expression, obj)
        cells.append(",".join(jsonpath.go_value(v) for v in found) if found else "<none>")
    return cells


# ---- reading ------------------------------------------------------------------------------


def list_objects(view: Any, request: Request, args: argparse.Namespace) -> list[dict[str, Any]]:
    info = request.info
    items = _named(_listed(view, info, args), request)
    return [dict(item, kind=info.kind, apiVersion=item.get("apiVersion") or info.api_version)
            for item in _selected(items, args)]


def _listed(view: Any, info: KindInfo, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every object of the kind in the namespace asked for (events oldest first)."""
    if info.kind == "Event":
        namespace = None if args.all_namespaces else namespace_of(args)
        return sorted(view.list_events(namespace), key=lambda e: event_time(e) or "")
    namespace = "" if not info.namespaced else (None if args.all_namespaces else namespace_of(args))
    items: list[dict[str, Any]] = view.list(info.kind, namespace)
    return items


def _named(items: list[dict[str, Any]], request: Request) -> list[dict[str, Any]]:
    """The objects named in the request, in its order (all when it names none); NotFound for a
    missing one."""
    from gpusched.errors import NotFoundError

    if not request.names:
        return items
    info = request.info
    by_name = {(b.get("metadata") or {}).get("name"): b for b in items}
    for name in request.names:
        if name not in by_name:
            plural = f"{info.plural}.{info.group}" if info.group else info.plural
            raise NotFoundError(plural, name)
    return [by_name[n] for n in request.names]


def _selected(items: list[dict[str, Any]], args: argparse.Namespace) -> list[dict[str, Any]]:
    """The objects matching ``-l`` and ``--field-selector``."""
    from gpusched.objects.selectors import field_matches, matches, parse_field_selector, parse_selector

    if args.selector:
        selector = parse_selector(args.selector)
        items = [b for b in items if matches(selector, (b.get("metadata") or {}).get("labels") or {})]
    if args.field_selector:
        fields = parse_field_selector(args.field_selector)
        items = [b for b in items if field_matches(b, fields)]
    return items


# ---- printing -----------------------------------------------------------------------------


def _label_keys(args: argparse.Namespace) -> tuple[str, ...]:
    return tuple(k for spec in args.label_columns for k in spec.split(",") if k)


def kind_table(info: KindInfo, objects: list[dict[str, Any]], clock: Clock, args: argparse.Namespace,
               out: Printer, with_kind: bool) -> tuple[list[str], list[list[str]]]:
    """Header and rows of one kind's table: -o wide, -A, kind/name, -L, --show-labels."""
    with_namespace = bool(args.all_namespaces) and info.namespaced
    header, rows = table_rows(info.kind, objects, clock, out.format == "wide", with_namespace)
    if with_kind:
        column = 1 if with_namespace else 0
        for obj, row in zip(objects, rows):
            row[column] = f"{resource_name(info)}/{row[column]}"
    for key in _label_keys(args):   # kubectl -L: header is the key's last path segment, upper-cased
        header.append(key.rsplit("/", 1)[-1].upper())
        for obj, row in zip(objects, rows):
            row.append(str(((obj.get("metadata") or {}).get("labels") or {}).get(key, "")))
    if args.show_labels:
        header.append("LABELS")
        for obj, row in zip(objects, rows):
            row.append(labels_cell(obj))
    return header, rows


def omit_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without ``metadata.managedFields`` (kubectl's OmitManagedFieldsPrinter)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


def print_groups(groups: list[tuple[KindInfo, list[dict[str, Any]]]], clock: Clock, args: argparse.Namespace,
                 out: Printer, with_kind: bool, single: bool) -> None:
    objects = [obj for _, items in groups for obj in items]
    if out.format in ("json", "yaml", "jsonpath"):
        _print_document(objects, out, single)
        return
    if not objects:
        return
    if out.format == "name":
        for obj in objects:
            print(object_ref(obj))
        return
    if out.format == "custom-columns":
        columns = custom_columns(out.argument)
        rows = [custom_cells(obj, columns) for obj in objects]
        print(render_table([h for h, _ in columns], rows, headers=not args.no_headers))
        return
    tables = []
    for info, items in groups:
        if items:
            header, rows = kind_table(info, items, clock, args, out, with_kind)
            tables.append(render_table(header, rows, headers=not args.no_headers))
    print(("\n" if args.no_headers else "\n\n").join(tables))


def _print_document(objects: list[dict[str, Any]], out: Printer, single: bool) -> None:
    """``-o json|yaml|jsonpath``: the one object asked for by name, else a List."""
    if out.format in ("json", "yaml"):      # kubectl's default --show-managed-fields=false
        objects = [omit_managed_fields(obj) for obj in objects]
    document = objects[0] if single and len(objects) == 1 else as_list(objects)
    if out.format == "json":
        print(to_json(document))
    elif out.format == "yaml":
        print(to_yaml(document))
    else:
        sys.stdout.write(jsonpath.render(out.argument, document))
        sys.stdout.flush()


def no_resources(requests: list[Request], args: argparse.Namespace) -> None:
    namespaced = not args.all_namespaces and all(r.info.namespaced for r in requests)
    where = f" in {namespace_of(args)} namespace." if namespaced else ""
    print(f"No resources found{where}", file=sys.stderr)


def cmd_get(args: argparse.Namespace) -> int:
    requests, with_kind = requested(args.kind, list(args.names))
    out = printer(args.output)
    watching = _check_get(args, requests)
    from gpusched.cluster.clock.wall import follow

    with open_cluster(args) as cluster:
        follower = follow(cluster) if watching else None   # its wall clock starts before the list
        with cluster.reading() as view:
            groups = [(r.info, list_objects(view, r, args)) for r in requests]
            clock = Clock(view.timestamp())
            rv = view.rv
        if args.sort_by:
            groups = [(info, sort_objects(items, args.sort_by)) for info, items in groups]
        single = len(requests) == 1 and len(requests[0].names) == 1 and not with_kind
        if not args.watch_only:
            if not any(items for _, items in groups) and out.format not in ("json", "yaml", "jsonpath"):
                if not watching:
                    no_resources(requests, args)
            else:
                print_groups(groups, clock, args, out, with_kind, single)
        if follower is not None:
            watch(cluster, requests[0], groups[0][1], rv, args, out, clock, follower)
    return 0


def _check_get(args: argparse.Namespace, requests: list[Request]) -> bool:
    """kubectl's refusals before anything is read; whether ``-w``/``--watch-only`` is on."""
    if args.all_namespaces and any(r.names for r in requests if r.info.namespaced):
        raise UsageError("a resource cannot be retrieved by name across all namespaces")
    watching = bool(args.watch or args.watch_only)
    if watching and len(requests) > 1:
        raise UsageError("you may only specify a single resource type")
    if args.sort_by:
        jsonpath.values(args.sort_by, {})
    return watching


# ---- watch --------------------------------------------------------------------------------


class WatchTable:
    """Rows printed one change at a time with column widths remembered (cli-runtime's
    tabwriter ``RememberWidths``): a row never narrows a column an earlier row widened."""

    def __init__(self) -> None:
        self.widths: list[int] = []

    def lines(self, table: list[list[str]]) -> list[str]:
        for row in table:
            for i, cell in enumerate(row):
                if i >= len(self.widths):
                    self.widths.append(0)
                self.widths[i] = max(self.widths[i], len(cell))
        return [_aligned(row, self.widths) for row in table]


def _aligned(row: list[str], widths: list[int]) -> str:
    from gpusched.cli.output import cell_width

    cells = [cell.ljust(cell_width(widths[i])) for i, cell in enumerate(row[:-1])]
    return "".join(cells) + row[-1]


def _changes(cluster: Any, rv: int, request: Request, args: argparse.Namespace
             ) -> tuple[int, list[tuple[str, str, str, dict[str, Any] | None]], str]:
    """Changes of the watched kind after ``rv``: (new rv, [(type, namespace, name, body or
    None when deleted)], the virtual clock's timestamp), read in one transaction."""
    import json

    from gpusched.cluster.apiserver.store import rfc3339
    from gpusched.cluster.apiserver.store_errors import TooOldResourceVersionError

    info = request.info
    namespace = None if (args.all_namespaces or not info.namespaced) else namespace_of(args)
    store = cluster.store
    out = []
    with store.reading():
        floor = store.compacted_rv()
        if rv < floor:     # the changes after rv were compacted away: kube-apiserver's 410
            raise TooOldResourceVersionError(rv, floor)
        rows = store.changes_with_bodies_since(rv)
        clock = float(store.read_meta("clock").get("clock", 0.0))
        for change_rv, kind, ns, name, typ, text in rows:
            if kind != info.kind or (namespace is not None and ns != namespace):
                continue
            if request.names and name not in request.names:
                continue
            if text is None and typ != "DELETED":   # logged before the log kept bodies
                found = store.object_version(kind, ns, name)
                text = found[1] if found else None
            out.append((typ, ns, name, json.loads(text) if text is not None else None))
    return (rows[-1][0] if rows else rv), out, rfc3339(clock)


def watch(cluster: Any, request: Request, listed: list[dict[str, Any]], rv: int, args: argparse.Namespace,
          out: Printer, clock: Clock, follower: Any) -> None:
    """Follow the change feed from ``rv`` and print one line per change (Ctrl-C ends), the
    cluster clock following the wall clock (``follower``)."""
    # Ctrl-C ends the watch at once, as kubectl's does (Go's signal.Notify), even while a read
    # waits on the state file's lock (SQLite's busy wait defers Python's KeyboardInterrupt);
    # every line is flushed when printed, so nothing is lost.
    signal.signal(signal.SIGINT, lambda *_: os._exit(130))
    info = request.info
    wanted = _watch_filter(args)
    last = {((o.get("metadata") or {}).get("namespace", ""), (o.get("metadata") or {}).get("name")): o
            for o in listed}
    table = WatchTable()
    header_due = bool(args.watch_only) and not args.no_headers
    if not args.watch_only and listed and out.format in ("table", "wide"):
        header, rows = kind_table(info, listed, clock, args, out, False)
        table.lines(([] if args.no_headers else [header]) + rows)
    while True:
        follower.tick()
        rv, changes, now_stamp = _changes(cluster, rv, request, args)
        now = Clock(now_stamp)
        for _typ, ns, name, body in changes:
            body = _remembered(last, (ns, name), body, info.kind)
            if body is not None and wanted(body):
                header_due = _print_change(info, body, now, args, out, table, header_due)
        time.sleep(WATCH_POLL_SECONDS)   # polling interval of the change feed, not a synchronisation


def _watch_filter(args: argparse.Namespace) -> Callable[[dict[str, Any]], bool]:
    """Whether a changed object matches ``-l`` and ``--field-selector`` (parsed once)."""
    from gpusched.objects.selectors import field_matches, matches, parse_field_selector, parse_selector

    label_sel = parse_selector(args.selector) if args.selector else None
    field_sel = parse_field_selector(args.field_selector) if args.field_selector else None

    def wanted(body: dict[str, Any]) -> bool:
        if label_sel is not None and not matches(label_sel, (body.get("metadata") or {}).get("labels") or {}):
            return False
        return field_sel is None or field_matches(body, field_sel)
    return wanted


def _remembered(last: dict[tuple[Any, Any], dict[str, Any]], key: tuple[Any, Any],
                body: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    """The object a change is about: a deleted one as last seen (None if never seen), which
    ``last`` then forgets; a created or modified one, which ``last`` remembers."""
    if body is None:
        return last.pop(key, None)
    body = dict(body, kind=kind)
    last[key] = body
    return body


def _print_change(info: KindInfo, body: dict[str, Any], now: Clock, args: argparse.Namespace, out: Printer,
                  table: WatchTable, header_due: bool) -> bool:
    """One watched change as a row (the header first when due) or as the ``-o`` printer
    writes it; whether the header is still due."""
    if out.format not in ("table", "wide"):
        print_groups([(info, [body])], now, args, out, False, True)
        sys.stdout.flush()
        return header_due
    header, rows = kind_table(info, [body], now, args, out, False)
    print("\n".join(table.lines(([header] if header_due else []) + rows)), flush=True)
    return False
