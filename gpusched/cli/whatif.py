"""``gpusched whatif pod -f job.yaml``: would this pod run on the cluster as it is now?

Prints one line per pod (``cluster.whatif_pod.PodAnswer.text``): fits now on a node with its
devices, fits after preempting named lower-priority pods, fits once named pods finish (when, on
the virtual clock), or does not fit (explain's reasons). ``-o json`` gives the same facts as
fields. Nothing is stored (``Cluster.whatif_pods`` rolls its transaction back).

Neighbours: ``cluster.whatif_pod`` (the answers), ``cli.commands`` (open_cluster, load).
"""

from __future__ import annotations

import argparse

from gpusched.cli.output import to_json


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    text = "Ask what would happen to a workload on the cluster as it is now, changing nothing"
    parser = sub.add_parser("whatif", help=text, description=text)
    kinds = parser.add_subparsers(dest="whatif_kind", metavar="WHAT", required=True,
                                  parser_class=type(parser))
    pod_text = ("Would this pod (or each pod of a Deployment, ReplicaSet, StatefulSet, Job or "
                "DaemonSet template) fit now: where, on which devices, or what would have to be "
                "preempted or finish first, and when")
    p = kinds.add_parser("pod", help=pod_text, description=pod_text)
    p.add_argument("-f", "--filename", action="append", required=True, metavar="PATH",
                   help="Manifest file, directory or - for stdin (repeatable)")
    p.add_argument("-n", "--namespace", default=None,
                   help="The namespace for objects that name none (default: default)")
    p.add_argument("-o", "--output", choices=("json",), default=None)
    p.set_defaults(handler=cmd_whatif_pod)


def cmd_whatif_pod(args: argparse.Namespace) -> int:
    from gpusched.cli.commands import load, namespace_of, open_cluster

    manifests = load(args.filename)
    with open_cluster(args) as cluster:
        answers = cluster.whatif_pods(manifests, namespace_of(args))
    if args.output == "json":
        print(to_json({"pods": [a.to_json() for a in answers]}))
    else:
        print("\n".join(a.text for a in answers))
    return 0
