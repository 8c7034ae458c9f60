"""What a dcgm-exporter pod serves on its metrics port, for ``kubectl port-forward``.

A pod runs dcgm-exporter when one of its containers has ``dcgm-exporter`` in its image or name
(the lab's DaemonSet, the GPU Operator's ``nvidia-dcgm-exporter`` pods: the same test
``cluster_source.exporter_mapping`` applies to DaemonSets). dcgm-exporter listens on
``--address``/``-a`` (env ``DCGM_EXPORTER_LISTEN``; a flag wins over the environment, urfave/cli),
default ``:9400`` (NVIDIA/dcgm-exporter ``pkg/cmd/app.go`` ``CLIAddress``): :func:`listen_port`.
On that port it answers ``GET /metrics`` with its node's GPUs in its text format
(:func:`node_metrics`: ``dcgm.render`` over the node's samples, pods attributed with the
container's own mapping flags).

Neighbours: ``dcgm``, ``cluster_source``; used by ``server.portforward``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpusched.metrics import dcgm
from gpusched.metrics.cluster_source import ClusterSource
from gpusched.objects.digits import is_digits

if TYPE_CHECKING:
    from gpusched.cluster.apiserver.view import View

DEFAULT_ADDRESS = ":9400"
ENV_LISTEN = "DCGM_EXPORTER_LISTEN"
ADDRESS_FLAGS = ("--address", "-a")
_MAX_ARGS = 256


def exporter_container(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The pod's first container whose image or name contains ``dcgm-exporter``, else None."""
    for container in (pod.get("spec") or {}).get("containers") or ():
        if isinstance(container, dict) and \
                "dcgm-exporter" in f'{container.get("image", "")} {container.get("name", "")}':
            return container
    return None


def listen_port(container: dict[str, Any]) -> int | None:
    """The port dcgm-exporter listens on in ``container``; None for an address it cannot bind.

    >>> listen_port({}), listen_port({"args": ["-a", ":9500"]}), listen_port({"args": ["--address=[::]:9401"]})
    (9400, 9500, 9401)
    >>> listen_port({"env": [{"name": "DCGM_EXPORTER_LISTEN", "value": "0.0.0.0:9402"}]})
    9402
    >>> listen_port({"args": ["-a", "nonsense"]}) is None
    True
    """
    args = [str(a) for a in [*(container.get("command") or ()), *(container.get("args") or ())]][:_MAX_ARGS]
    address: str | None = None
    for i, arg in enumerate(args):
        for flag in ADDRESS_FLAGS:
            if arg == flag and i + 1 < len(args):
                address = args[i + 1]
            elif arg.startswith(flag + "="):
                address = arg[len(flag) + 1:]
    if address is None:
        env = {str(e.get("name")): str(e.get("value") or "")
               for e in container.get("env") or () if isinstance(e, dict)}
        address = env.get(ENV_LISTEN) or DEFAULT_ADDRESS
    port = address.rpartition(":")[2]
    return int(port) if is_digits(port) and len(port) <= 5 and 0 < int(port) < 65536 else None


def node_metrics(view: View, pod: dict[str, Any], node: str) -> bytes:
    """The body dcgm-exporter in ``pod`` serves on ``/metrics``: its node's GPUs."""
    container = exporter_container(pod) or {}
    args = [str(a) for a in [*(container.get("command") or ()), *(container.get("args") or ())]]
    env = {str(e.get("name")): str(e.get("value") or "")
           for e in container.get("env") or () if isinstance(e, dict)}
    source = ClusterSource(view, dcgm.mapping_from_container(args, env), node=node)
    return dcgm.render(source.samples()).encode()
