"""``gpusched rollout status|restart|undo|history`` (kubectl's ``rollout``), for Deployments and
DaemonSets.

Output is kubectl's: ``deployment "web" successfully rolled out``, ``deployment.apps/web
restarted``, ``deployment.apps/web rolled back``, the ``REVISION  CHANGE-CAUSE`` table. ``status``
prints the current line once and exits (kubectl's ``--watch=false``: it does not wait, so the
clock does not run for it; docs/serve.md "The clock"); a Deployment past its progress deadline exits 1 with kubectl's error.

Neighbours: ``cluster.rollout`` (the logic); registered by ``cli.parser``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import argparse

from gpusched.cli.commands import namespace_of, open_cluster, split_kind_name

if TYPE_CHECKING:
    from gpusched.objects.kinds import KindInfo

EXAMPLES = {
    "status": ("gpusched rollout status deployment/web", "gpusched rollout status ds/nvidia-device-plugin-daemonset -n gpu-operator"),
    "restart": ("gpusched rollout restart deployment web",
                "gpusched rollout restart daemonset nvidia-device-plugin-daemonset -n gpu-operator"),
    "undo": ("gpusched rollout undo deployment/web", "gpusched rollout undo deployment/web --to-revision=1"),
    "history": ("gpusched rollout history deployment/web", "gpusched rollout history deployment/web --revision=2"),
}
HELP = {
    "status": "Show the status of the rollout",
    "restart": "Restart a resource (re-create all its pods)",
    "undo": "Undo a previous rollout",
    "history": "View rollout history",
}


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("rollout", help="Manage the rollout of a Deployment or DaemonSet",
                            description="Manage the rollout of a Deployment or DaemonSet",
                            epilog="Examples:\n  " + "\n  ".join(
                                example for examples in EXAMPLES.values() for example in examples),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for action, handler in (("status", cmd_status), ("restart", cmd_restart), ("undo", cmd_undo),
                            ("history", cmd_history)):
        p = actions.add_parser(action, help=HELP[action], description=HELP[action],
                               epilog="Examples:\n  " + "\n  ".join(EXAMPLES[action]),
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        p.set_defaults(handler=handler)
        p.add_argument("kind", help="deployment or daemonset, or KIND/NAME")
        p.add_argument("name", nargs="?", help="Object name")
        p.add_argument("-n", "--namespace", default=None, help="namespace (default: default)")
        if action == "undo":
            p.add_argument("--to-revision", type=int, default=0,
                           help="The revision to roll back to (default: the previous one)")
        if action == "history":
            p.add_argument("--revision", type=int, default=0,
                           help="Show the pod template of this revision")
        if action == "status":
            p.add_argument("-w", "--watch", default="false",
                           help="Accepted for kubectl compatibility; the line is printed once")


def _target(args: argparse.Namespace) -> tuple[KindInfo, str, str]:
    from gpusched.errors import UsageError

    info, names = split_kind_name(args.kind, [args.name] if args.name else [])
    if len(names) != 1:
        raise UsageError("required resource not specified")
    return info, names[0], namespace_of(args)


def _qualified(info: KindInfo) -> str:
    return f"{info.singular}.{info.group}" if info.group else info.singular


def cmd_status(args: argparse.Namespace) -> int:
    from gpusched.cluster import rollout

    info, name, ns = _target(args)
    with open_cluster(args) as cluster:
        line, _done = cluster.read(lambda view: rollout.status_line(
            rollout.target(view, info, name, ns)))
    print(line)
    return 0


def cmd_restart(args: argparse.Namespace) -> int:
    from gpusched.cluster import rollout

    info, name, ns = _target(args)
    with open_cluster(args) as cluster:
        cluster.write(lambda view: rollout.restart(view, rollout.target(view, info, name, ns)))
    print(f"{_qualified(info)}/{name} restarted")
    return 0


def cmd_undo(args: argparse.Namespace) -> int:
    from gpusched.cluster import rollout

    info, name, ns = _target(args)
    with open_cluster(args) as cluster:
        phrase = cluster.write(lambda view: rollout.undo(
            view, rollout.target(view, info, name, ns), args.to_revision))
    print(f"{_qualified(info)}/{name} {phrase}")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    import yaml

    from gpusched.cluster import rollout
    from gpusched.errors import NotFoundError

    info, name, ns = _target(args)
    with open_cluster(args) as cluster:
        rows = cluster.read(lambda view: rollout.history(view, rollout.target(view, info, name, ns)))
    if args.revision:
        template = next((t for number, _cause, t in rows if number == args.revision), None)
        if template is None:
            raise NotFoundError("revision", str(args.revision))
        print(f"{_qualified(info)}/{name} with revision #{args.revision}")
        print("Pod Template:")
        print("\n".join("  " + line for line in yaml.safe_dump(template, sort_keys=True).splitlines()))
        return 0
    print(f"{_qualified(info)}/{name} ")
    width = max([len("REVISION")] + [len(str(n)) for n, _c, _t in rows]) + 2
    print(f"{'REVISION'.ljust(width)}CHANGE-CAUSE")
    for number, cause, _template in rows:
        print(f"{str(number).ljust(width)}{cause}")
    print()
    return 0
