"""``gpusched exec POD -- CMD`` and ``gpusched logs POD``: what a container would show.

The embedded cluster runs no containers; both commands print what ``metrics.container``
derives from the pod's devices and life, marked as simulated in their first line (the same
answers ``kubectl exec`` / ``kubectl logs`` get from ``gpusched serve``). ``exec`` exits with
the simulated command's exit code (126 for a command it cannot answer). ``logs -f`` prints each
line the log gains until the pod's container ends, the cluster clock following the wall clock
meanwhile (``cluster.clock.wall``).

Neighbours: ``metrics.container`` (the answers), ``cli.commands`` (``open_cluster``); registered
by ``cli.main``.
"""

from __future__ import annotations

from typing import Any

import argparse
import sys

from gpusched.errors import NotFoundError, UsageError

FOLLOW_POLL_SECONDS = 0.2


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
    p.add_argument("-f", "--follow", action="store_true",
                   help="Follow the log until the pod's container ends (the cluster clock follows "
                        "the wall clock meanwhile)")
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
    if args.follow and args.selector:
        raise UsageError("gpusched logs -f follows one pod: give POD, not -l SELECTOR")
    with open_cluster(args) as cluster:
        if args.follow:
            return _follow_log(cluster, _pod_name(args.pod), ns, args.container)
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


def _follow_log(cluster: Any, name: str, ns: str, container: str | None) -> int:
    """``logs -f``: the log, then each line it gains, until the pod's containers end or the pod
    is gone (kubectl's stream closes then), the cluster clock following the wall clock."""
    import time
    from collections import Counter

    from gpusched.cluster.clock.wall import follow
    from gpusched.metrics.container_logs import pod_log

    follower = follow(cluster)
    printed: Counter[str] = Counter()
    while True:
        with cluster.reading() as view:
            pod = view.get("Pod", name, ns)
            if pod is None and not printed:
                raise NotFoundError("pods", name)
            lines = [] if pod is None else pod_log(view, pod, _container(pod, container)).splitlines(True)
        for line in lines:      # lines already printed are not printed again (the log may grow inside)
            if printed[line]:
                printed[line] -= 1
            else:
                sys.stdout.write(line)
        sys.stdout.flush()
        printed = Counter(lines)
        if pod is None or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return 0
        time.sleep(FOLLOW_POLL_SECONDS)   # polling interval of the state file, not a synchronisation
        follower.tick()
