"""``gpusched scheduler``: run gpusched's scheduler as a secondary scheduler of a cluster.

::

    gpusched scheduler [--kubeconfig ~/.kube/config] [--scheduler-name gpusched]
                       [--config profile.yaml] [--once] [--seed N]
                       [--leader-elect [--lease-namespace NS] [--lease-name NAME]
                                       [--lease-duration SECONDS]]

Pods with ``spec.schedulerName`` equal to a served profile's name are scheduled (no
``--config``: the default profile under ``--scheduler-name``, or gpusched's GPU-scoring profile
when that name is ``gpusched-binpack`` / ``gpusched-spread``; with ``--config``: the
KubeSchedulerConfiguration's profiles, a profile without ``schedulerName`` taking
``--scheduler-name``). ``--once`` schedules what is pending and exits. SIGTERM and Ctrl-C stop it
cleanly (a held lease is released). ``--leader-elect``: replicas share the Lease
``<lease-namespace>/<lease-name>`` (default ``kube-system/<scheduler-name>``); each replica's
identity is ``<hostname>_<pid>``. Without ``--kubeconfig`` it connects as the pod it runs in
(in-cluster configuration, ``KUBERNETES_SERVICE_HOST``; ``deploy/scheduler/``). The kube client
(the ``kube`` extra) is imported only when the command runs.

Neighbours: ``backends.kube`` (API, loop), ``backends.secondary`` (state); registered in
``cli.parser``.
"""

from __future__ import annotations

from typing import Any

import argparse
import dataclasses
import logging
import os
import signal
import socket
import sys
import threading
import time

DEFAULT_NAME = "gpusched"


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    help_text = "Run gpusched's scheduler as a secondary scheduler of a Kubernetes cluster"
    p = sub.add_parser("scheduler", help=help_text, description=help_text)
    p.set_defaults(handler=cmd_scheduler)
    p.add_argument("--kubeconfig", default=None, metavar="PATH",
                   help="kubeconfig of the cluster (default: the in-cluster configuration of "
                        "the pod this runs in: its ServiceAccount token and CA)")
    p.add_argument("--scheduler-name", default=DEFAULT_NAME,
                   help=f"spec.schedulerName served (default: {DEFAULT_NAME})")
    p.add_argument("--config", default=None, metavar="PATH",
                   help="KubeSchedulerConfiguration with the profiles to serve")
    p.add_argument("--once", action="store_true", help="schedule the pending pods once and exit")
    p.add_argument("--leader-elect", action="store_true",
                   help="hold a coordination.k8s.io Lease before scheduling (for replicas)")
    p.add_argument("--lease-namespace", default="kube-system", help="namespace of the Lease")
    p.add_argument("--lease-name", default=None, help="name of the Lease (default: the scheduler name)")
    p.add_argument("--lease-duration", type=int, default=15, metavar="SECONDS",
                   help="how long a standby waits after the leader's last renewal before taking "
                        "over (default 15; renewed every min(2, SECONDS/3) s)")
    p.add_argument("--seed", type=int, default=0, help="seed for breaking score ties")


def profiles_for(config_path: str | None, scheduler_name: str) -> list[Any]:
    """The profiles to serve (see the module docstring)."""
    from gpusched.scheduler.profile import (DEFAULT_SCHEDULER_NAME, GPUSCHED_PROFILES, default_profile,
                                            load_config, resolve_profile)
    if config_path is None:
        if scheduler_name in GPUSCHED_PROFILES:      # gpusched's own GPU-scoring profiles
            return [resolve_profile(GPUSCHED_PROFILES[scheduler_name], 0, 0)]
        return [default_profile(scheduler_name)]
    from gpusched import policies
    from gpusched.scheduler.plugins import default_registry, merged
    # in-tree and installed out-of-tree plugins, and the FGD study's policies (they are out of
    # the scheduler layer; a served profile may still name them)
    config = load_config(config_path, merged(default_registry(), policies.REGISTRY))
    return [dataclasses.replace(p, scheduler_name=scheduler_name)
            if p.scheduler_name == DEFAULT_SCHEDULER_NAME else p for p in config]


def cmd_scheduler(args: argparse.Namespace) -> int:
    import numpy as np

    from gpusched.extras import require
    require("kube", "gpusched scheduler")
    from gpusched.backends.kube import KubeApi, LeaderElector, connect, run
    from gpusched.backends.secondary import SchedulerState
    from gpusched.errors import UsageError

    if args.lease_duration < 1:
        raise UsageError(f"--lease-duration must be at least 1 second, not {args.lease_duration}")
    profiles = profiles_for(args.config, args.scheduler_name)
    api = KubeApi(connect(args.kubeconfig), clock=time.time)
    state = SchedulerState(profiles, np.random.default_rng(args.seed), clock=time.monotonic)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    elector = None
    if args.leader_elect:
        identity = f"{socket.gethostname()}_{os.getpid()}"
        elector = LeaderElector(api, args.lease_namespace, args.lease_name or args.scheduler_name,
                                identity, lease_seconds=args.lease_duration)
    code = run(api, state, stop, once=args.once, elector=elector)
    if threading.active_count() > 1:
        # Watch threads blocked in a socket read are daemons; letting the interpreter finalize
        # while one of them wakes up and writes to stderr aborts the process (SIGABRT,
        # "could not acquire lock for <_io.BufferedWriter name='<stderr>'>"), seen on a loaded
        # machine. The lease is released and every write is done: flush and leave now.
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code
