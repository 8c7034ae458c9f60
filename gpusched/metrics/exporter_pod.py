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
    address = _flag_value(_args(container), ADDRESS_FLAGS)
    if address is None:
        address = _env(container).get(ENV_LISTEN) or DEFAULT_ADDRESS
    port = address.rpartition(":")[2]
    return int(port) if is_digits(port) and len(port) <= 5 and 0 < int(port) < 65536 else None


def _flag_value(args: list[str], flags: tuple[str, ...]) -> str | None:
    """The last value given to any of ``flags`` (``-f VALUE`` or ``-f=VALUE``), else None."""
    value = None
    for i, arg in enumerate(args):
        name, equals, given = arg.partition("=")
        if name in flags and equals:
            value = given
        elif arg in flags and i + 1 < len(args):
            value = args[i + 1]
    return value


def _args(container: dict[str, Any]) -> list[str]:
    return [str(a) for a in [*(container.get("command") or ()), *(container.get("args") or ())]][:_MAX_ARGS]


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {str(e.get("name")): str(e.get("value") or "") for e in container.get("env") or () if isinstance(e, dict)}


def node_metrics(view: View, pod: dict[str, Any], node: str) -> bytes:
    """The body dcgm-exporter in ``pod`` serves on ``/metrics``: its node's GPUs."""
    container = exporter_container(pod) or {}
    source = ClusterSource(view, dcgm.mapping_from_container(_args(container), _env(container)), node=node)
    return dcgm.render(source.samples()).encode()
