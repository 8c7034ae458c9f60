"""``gpusched rollout status|restart|undo|history`` (kubectl's ``rollout``), for Deployments and
DaemonSets.

Output is kubectl's: ``deployment "web" successfully rolled out``, ``deployment.apps/web
restarted``, ``deployment.apps/web rolled back``, the ``REVISION  CHANGE-CAUSE`` table. ``status``
watches as kubectl's does (``rollout_status.go``: a line per observed change of the object,
until the rollout is done, ``--timeout`` passes or the object is deleted), and while it waits
the cluster clock follows the wall clock (``cluster.clock.wall``; docs/serve.md "The clock"),
so pods start and grace periods end; ``--watch=false`` prints the current line once. A
Deployment past its progress deadline exits 1 with kubectl's error.

Neighbours: ``cluster.rollout`` (the logic); registered by ``cli.parser``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import argparse

from gpusched.cli.commands import namespace_of, open_cluster, split_kind_name
from gpusched.cli.flags import go_bool, go_duration

if TYPE_CHECKING:
    from gpusched.objects.kinds import KindInfo

EXAMPLES = {
    "status": ("gpusched rollout status deployment/web", "gpusched rollout status ds/nvidia-device-plugin-daemonset -n gpu-operator"),
    "restart": ("gpusched rollout restart deployment web",
                "gpusched rollout restart daemonset nvidia-device-plugin-daemonset -n gpu-operator"),
    "undo": ("gpusched rollout undo deployment/web", "gpusched rollout undo deployment/web --to-revision=1"),
    "history": ("gpusched rollout history deployment/web", "gpusched rollout history deployment/web --revision=2"),
}
WATCH_POLL_SECONDS = 0.2
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
            p.add_argument("-w", "--watch", nargs="?", const="true", default="true",
                           help="Watch the status of the rollout until it's done (default true; "
                                "the cluster clock follows the wall clock while it waits)")
            p.add_argument("--timeout", default="0s",
                           help="The length of time to wait before ending watch, zero means never")


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
    from gpusched.cluster.clock.wall import follow

    watching, timeout = go_bool(args.watch, "-w, --watch"), go_duration(args.timeout, "--timeout")
    info, name, ns = _target(args)
    with open_cluster(args) as cluster:
        follower = follow(cluster) if watching else None   # its wall clock starts first
        line, done = cluster.read(lambda view: rollout.status_line(
            rollout.target(view, info, name, ns)))
        print(line, flush=True)
        if follower is not None and not done:
            _watch_status(cluster, info, name, ns, timeout, follower)
    return 0


def _watch_status(cluster: Any, info: KindInfo, name: str, ns: str, timeout: float,
                  follower: Any) -> None:
    """Print the status line at each change of the object until the rollout is done, as
    kubectl's UntilWithSync handler does, the cluster clock following the wall clock."""
    import time

    from gpusched.cluster import rollout
    from gpusched.errors import GpuschedError, NotFoundError

    def version(view: Any) -> tuple[str, tuple[str, bool]]:
        body = rollout.target(view, info, name, ns)
        return body["metadata"].get("resourceVersion", ""), rollout.status_line(body)

    seen = cluster.read(version)[0]
    while True:
        follower.tick()
        try:
            rv, (line, done) = cluster.read(version)
        except NotFoundError:
            raise GpuschedError("object has been deleted") from None
        if rv != seen:
            seen = rv
            print(line, flush=True)
            if done:
                return
        if timeout and follower.waited() >= timeout:
            raise GpuschedError("timed out waiting for the condition")
        time.sleep(WATCH_POLL_SECONDS)   # polling interval of the state file, not a synchronisation


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
