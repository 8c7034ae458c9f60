"""Cluster Autoscaler settings and expanders: which node group a scale-up grows.

Settings come from the ConfigMap ``kube-system/gpusched-cluster-autoscaler`` whose ``data``
keys are cluster-autoscaler's flag names (``cluster-autoscaler/FAQ.md``, "What are the
parameters to CA?"), with CA's defaults:

| key | default | meaning |
|---|---|---|
| ``expander`` | ``least-waste`` | ``random``, ``least-waste``, ``price``, ``priority``, or several
separated by commas (each narrows the previous one's choice) | | ``scale-down-enabled`` | ``true`` |
remove unneeded nodes | | ``scale-down-utilization-threshold`` | ``0.5`` | below it a node is a
scale-down candidate | | ``scale-down-unneeded-time`` | ``10m`` | how long a node is unneeded before
removal | | ``scale-down-delay-after-add`` | ``10m`` | no scale-down this long after a scale-up | |
``max-graceful-termination-sec`` | ``600`` | cap of evicted pods' grace period |

A value that does not parse is reported once as a Warning event ``InvalidConfig`` on the
ConfigMap (what, which key, what is valid) and the default applies.

Expanders (``cluster-autoscaler/expander/*``), each narrowing the ``Option``s (a pool, how
many nodes, which pods they help) to its best ones (``BestOptions``); a chain
(``expander/factory/chain.go``) applies them in order and the ties left are broken by the
seeded generator as ``random`` does:

- ``random`` (``expander/random/random.go``): uniformly at random.
- ``least-waste`` (``expander/waste/waste.go`` ``BestOption``): the least wasted fraction of
  CPU plus the least wasted fraction of memory over the added nodes' capacity.
- ``price`` (``expander/price/price.go``): the lowest price per hour of the added nodes
  (GPU count x the model's price, ``devices.prices``). Upstream also weighs how well the node
  fits the pods ("node unfitness") and a preferred node size; gpusched compares the price only.
- ``priority`` (``expander/priority/priority.go``): the ConfigMap
  ``kube-system/cluster-autoscaler-priority-expander``, ``data.priorities`` YAML mapping an
  integer to regular expressions of node group (pool) names; the highest priority with a
  matching pool wins (Go's ``regexp.MatchString``: a match anywhere in the name); no match:
  every option.

Neighbours: ``controllers.autoscaling.autoscaler`` (uses both), ``devices.prices``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from gpusched.cluster.apiserver.view import View
from gpusched.errors import GpuschedError
from gpusched.objects import limits
from gpusched.objects.duration import parse_duration
from gpusched.objects.goregexp import GoPattern, GoRegexpError, compile_go

CONFIG_MAP = "gpusched-cluster-autoscaler"
PRIORITY_MAP = "cluster-autoscaler-priority-expander"
NAMESPACE = "kube-system"
COMPONENT = "cluster-autoscaler"
EXPANDERS = ("random", "least-waste", "price", "priority")


@dataclass(frozen=True, slots=True)
class Config:
    expander: str = "least-waste"
    scale_down_enabled: bool = True
    utilization_threshold: float = 0.5
    unneeded_time: float = 600.0
    delay_after_add: float = 600.0
    max_graceful_termination: float = 600.0
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Option:
    """One way to scale up (``expander.Option``): ``node_count`` nodes of ``pool`` for ``pods``
    (uids, queue order); ``cpu``/``memory`` are the pods' requests (millicores, bytes),
    ``node_cpu``/``node_memory`` one node's capacity, ``price`` one node's USD per hour."""

    pool: str
    node_count: int
    pods: tuple[str, ...]
    cpu: int = 0
    memory: int = 0
    node_cpu: int = 1
    node_memory: int = 1
    price: float = 0.0


def load_config(view: View) -> Config:
    body = view.get("ConfigMap", CONFIG_MAP, NAMESPACE)
    data = (body or {}).get("data") or {}
    values: dict[str, Any] = {}
    problems: list[str] = []
    parsers = {
        "expander": ("expander", _expander),
        "scale-down-enabled": ("scale_down_enabled", _boolean),
        "scale-down-utilization-threshold": ("utilization_threshold", _fraction),
        "scale-down-unneeded-time": ("unneeded_time", _duration),
        "scale-down-delay-after-add": ("delay_after_add", _duration),
        "max-graceful-termination-sec": ("max_graceful_termination", _seconds),
    }
    for key, (attr, parse) in parsers.items():
        if key not in data:
            continue
        try:
            values[attr] = parse(str(data[key]))
        except ValueError as error:
            problems.append(f"ConfigMap {NAMESPACE}/{CONFIG_MAP}: data.{key}: invalid value "
                            f'"{data[key]}": {error}')
    unknown = sorted(set(data) - set(parsers))
    for key in unknown:
        problems.append(f"ConfigMap {NAMESPACE}/{CONFIG_MAP}: data.{key}: unknown key; known: "
                        f"{', '.join(parsers)}")
    return Config(**values, problems=tuple(problems))


def _expander(text: str) -> str:
    names = [name.strip() for name in text.split(",")]
    if not names or any(name not in EXPANDERS for name in names):
        raise ValueError(f"supported values: {', '.join(EXPANDERS)} (or several, comma-separated)")
    return ",".join(names)


def _boolean(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise ValueError('give "true" or "false"')
    return text.lower() == "true"


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError("give a number between 0 and 1") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError("give a number between 0 and 1")
    return value


def _duration(text: str) -> float:
    try:
        value = parse_duration(text)
    except GpuschedError:
        raise ValueError('give a duration such as "10m"') from None
    if value > 7 * 86400:
        raise ValueError("must be at most 7d")
    return value


def _seconds(text: str) -> float:
    value = limits.small_int(text)
    if value is None or value > 86400:
        raise ValueError("give whole seconds between 0 and 86400")
    return float(value)


# ---- expanders ---------------------------------------------------------------------------------

def best_option(view: View, config: Config, options: Sequence[Option],
                rng: np.random.Generator) -> Option:
    """The option the configured expander chain picks (``options``: non-empty, pool order)."""
    chosen = list(options)
    for name in config.expander.split(","):
        if len(chosen) == 1:
            break
        if name == "least-waste":
            chosen = _least_waste(chosen)
        elif name == "price":
            cheapest = min(o.price * o.node_count for o in chosen)
            chosen = [o for o in chosen if o.price * o.node_count == cheapest]
        elif name == "priority":
            chosen = _by_priority(view, chosen)
    return chosen[0] if len(chosen) == 1 else chosen[int(rng.integers(len(chosen)))]


def _least_waste(options: Sequence[Option]) -> list[Option]:
    """waste.go: wastedCPU + wastedMemory, each (available - requested) / available over the
    option's nodes; the least wins, equal scores go to the random fallback."""
    scored = []
    for option in options:
        cpu = option.node_cpu * option.node_count
        memory = option.node_memory * option.node_count
        score = (cpu - option.cpu) / cpu + (memory - option.memory) / memory
        scored.append((score, option))
    least = min(score for score, _ in scored)
    return [option for score, option in scored if score == least]


def _by_priority(view: View, options: Sequence[Option]) -> list[Option]:
    priorities = priority_table(view)
    for _priority, patterns in priorities:
        matched = [o for o in options if any(p.search(o.pool) for p in patterns)]
        if matched:
            return matched
    return list(options)


def priority_table(view: View) -> list[tuple[int, list[GoPattern]]]:
    """``data.priorities`` of the priority expander's ConfigMap, highest priority first;
    an unreadable table is empty (every option stays, as upstream with no match)."""
    import yaml
    body = view.get("ConfigMap", PRIORITY_MAP, NAMESPACE)
    text = ((body or {}).get("data") or {}).get("priorities", "")
    try:
        table = limits.safe_load(text) if text else {}
    except (yaml.YAMLError, limits.LimitError):
        return []
    if not isinstance(table, dict):
        return []
    out = []
    for key, patterns in table.items():
        if isinstance(key, bool) or not isinstance(key, int) or not isinstance(patterns, list):
            continue
        compiled = []
        for pattern in patterns:
            try:
                compiled.append(compile_go(str(pattern)))
            except GoRegexpError:
                continue
        out.append((key, compiled))
    return sorted(out, key=lambda item: -item[0])
