"""``gpusched exec POD -- CMD`` and ``gpusched logs POD``: what a container would show.

The embedded cluster runs no containers; both commands print what ``metrics.container``
derives from the pod's devices and life, marked as simulated in their first line (the same
answers ``kubectl exec`` / ``kubectl logs`` get from ``gpusched serve``). ``exec`` exits with
the simulated command's exit code (126 for a command it cannot answer).

Neighbours: ``metrics.container`` (the answers), ``cli.commands`` (``open_cluster``); registered
by ``cli.main``.
"""

from __future__ import annotations

from typing import Any

import argparse
import sys

from gpusched.errors import NotFoundError, UsageError


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("exec", help="Run a command in a pod's container (simulated: nvidia-smi, "
                                    "nvidia-smi -L, env, ls /dev/nvidia*)")
    p.add_argument("pod", help="pod name (or pod/NAME)")
    p.add_argument("argv", nargs="*", metavar="-- COMMAND", help="the command after --")
    p.add_argument("-c", "--container", default=None)
    p.add_argument("-n", "--namespace", default=None)
    p.add_argument("-i", "--stdin", action="store_true", help="accepted (nothing to read)")
    p.add_argument("-t", "--tty", action="store_true", help="accepted")
    p.set_defaults(handler=cmd_exec)
    p = sub.add_parser("logs", help="The kubelet-side log of a pod's life (simulated)")
    p.add_argument("pod", nargs="?", help="pod name (or pod/NAME)")
    p.add_argument("-c", "--container", default=None)
    p.add_argument("-n", "--namespace", default=None)
    p.add_argument("-l", "--selector", default="", help="label selector: logs of every match")
    p.set_defaults(handler=cmd_logs)


def _pod_name(text: str) -> str:
    kind, slash, name = text.partition("/")
    if slash and kind.lower() not in ("pod", "pods", "po"):
        raise UsageError(f'cannot exec into a {kind}: give a pod name')
    return name if slash else text


def _container(pod: dict[str, Any], wanted: str | None) -> str:
    from gpusched.metrics.container import container_names
    names = container_names(pod)
    if wanted is None:
        return names[0] if names else ""
    if wanted not in names:
        raise UsageError(f'container {wanted} is not valid for pod {pod["metadata"]["name"]}')
    return wanted


def cmd_exec(args: argparse.Namespace) -> int:
    from gpusched.cli.commands import open_cluster
    from gpusched.metrics.container import exec_output

    if not args.argv:
        raise UsageError("you must specify at least one command for the container "
                         "(gpusched exec POD -- COMMAND)")
    ns = args.namespace or "default"
    name = _pod_name(args.pod)
    with open_cluster(args) as cluster:
        with cluster.reading() as view:
            pod = view.get("Pod", name, ns)
            if pod is None:
                raise NotFoundError("pods", name)
            result = exec_output(view, pod, _container(pod, args.container), list(args.argv))
    sys.stdout.write(result.stdout)
    return result.exit_code


def cmd_logs(args: argparse.Namespace) -> int:
    from gpusched.cli.commands import open_cluster
    from gpusched.metrics.container_logs import pod_log
    from gpusched.objects.selectors import matches, parse_selector

    ns = args.namespace or "default"
    if not args.pod and not args.selector:
        raise UsageError("expected POD or -l SELECTOR")
    with open_cluster(args) as cluster:
        with cluster.reading() as view:
            if args.selector:
                selector = parse_selector(args.selector)
                pods = [p for p in view.list("Pod", ns)
                        if matches(selector, (p.get("metadata") or {}).get("labels") or {})]
                if not pods:
                    print(f"No resources found in {ns} namespace.", file=sys.stderr)
            else:
                name = _pod_name(args.pod)
                pod = view.get("Pod", name, ns)
                if pod is None:
                    raise NotFoundError("pods", name)
                pods = [pod]
            text = "".join(pod_log(view, p, _container(p, args.container)) for p in pods)
    sys.stdout.write(text)
    return 0
