"""What-if variants: a named change to one replay's inputs, parsed from readable specs.

A ``Variant`` is a name plus a list of changes, applied in order to a ``Scenario`` (the inputs
of one replay before the seed: node list, policy, scheduler profile, device-plugin config, MIG
layouts, quotas). The baseline "as is" is the variant with no change. Specs, as
``gpusched whatif`` takes them (``--variant "NAME: OPTIONS"`` or the options alone)::

    --add-nodes 8xH100                    8 nodes of 8 H100 GPUs, 128 CPUs, 1 TiB (NODE_DEFAULTS)
    --add-nodes 4xA100-40GB:gpus=4,cpu=64,memory=512Gi
    --add-nodes 2xcpu:cpu=96              CPU-only nodes
    --remove-nodes 10%:V100               10 % of the nodes whose GPU model starts with V100
    --remove-nodes 3:T4                   3 T4 nodes; the last ones in node-list order go first
    --policy fgd                          a replay policy (the names replay accepts)
    --profile sched.yaml                  a KubeSchedulerConfiguration file
    --plugin-config dp.yaml               an NVIDIA device-plugin config (time-slicing, MPS, MIG strategy)
    --mig-config all-1g.10gb:H100         the nvidia.com/mig.config layout on the matching nodes
    --quota team-a:requests.nvidia.com/gpu=64,pods=500

Model selectors match a node when its GPU model name starts with the selector, case-insensitively
(``V100`` matches the trace's ``V100M16`` and ``V100M32``); ``cpu`` matches CPU-only nodes.
Every spec is checked when parsed (unknown GPU model, bad count, unreadable file) and again when
applied (a selector that matches no node); each error is one line naming the option and the spec.
Removal counts round half up (10 % of 85 V100 nodes = 9 nodes).

Neighbours: ``devices.catalog`` (models), ``devices.plugin_config`` and ``scheduler.profile``
(file validation), ``objects.quantity``; used by ``sim.whatif`` and ``cli.whatif``.
"""

from __future__ import annotations

import argparse
import math
import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from gpusched.devices.catalog import CATALOG, lookup_model
from gpusched.errors import UsageError
from gpusched.objects.limits import small_int
from gpusched.objects.quantity import QuantityError, canonical
from gpusched.sim.alibaba import TraceNode

MAX_ADDED_NODES = 10_000
MAX_VARIANTS = 8
MAX_FILE_BYTES = 1 << 20
NODE_DEFAULTS = {"gpus": 8, "cpu": "128", "memory": "1Ti"}   # an added GPU node's shape
CPU_NODE_DEFAULTS = {"gpus": 0, "cpu": "96", "memory": "384Gi"}
ADDED_PREFIX = "whatif"
_ADD = re.compile(r"^(\d+)\s*[xX]\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?::(.*))?$")
_REMOVE = re.compile(r"^(\d+(?:\.\d+)?)(%?)\s*:\s*([A-Za-z0-9*][A-Za-z0-9._-]*)$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._%+-]{0,39}$")


@dataclass(frozen=True)
class Quota:
    namespace: str
    hard: tuple[tuple[str, str], ...]      # (resource, quantity as written)

    def manifest(self) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ResourceQuota",
                "metadata": {"name": "whatif-quota", "namespace": self.namespace},
                "spec": {"hard": dict(self.hard)}}


@dataclass(frozen=True)
class Scenario:
    """The inputs of one replay that a variant may change (the trace and seeds stay)."""

    nodes: tuple[TraceNode, ...]
    policy: str | None = None
    profile: str | None = None                      # KubeSchedulerConfiguration path
    plugin_config: str | None = None                # device-plugin config path
    mig_layouts: tuple[tuple[str, str], ...] = ()   # (node name, nvidia.com/mig.config)
    quotas: tuple[Quota, ...] = ()

    @property
    def gpus(self) -> int:
        return sum(n.gpus for n in self.nodes)


Change = Callable[[Scenario], Scenario]


@dataclass(frozen=True)
class Variant:
    name: str
    specs: tuple[str, ...] = ()                 # the options as given, for the report
    changes: tuple[Change, ...] = field(default=(), compare=False)
    where: str = ""                             # prefix of its errors: '--variant "NAME": '

    def apply(self, scenario: Scenario) -> Scenario:
        try:
            for change in self.changes:
                scenario = change(scenario)
        except UsageError as exc:
            raise UsageError(f"{self.where}{exc}") from None
        return scenario

    @property
    def description(self) -> str:
        return " ".join(self.specs) or "as is"


# ---- node changes ---------------------------------------------------------------------------


def model_matches(selector: str, model: str) -> bool:
    """``V100`` matches ``V100M16``; ``cpu`` matches CPU-only nodes (model ``""``)."""
    if selector.lower() == "cpu":
        return not model
    return bool(model) and (selector == "*" or model.lower().startswith(selector.lower()))


def _check_selector(option: str, spec: str, selector: str) -> None:
    if selector in ("*", "cpu") or selector.lower() == "cpu":
        return
    known = [name for name in CATALOG if name.lower().startswith(selector.lower())]
    if not known:
        try:
            lookup_model(selector)
        except UsageError:
            raise UsageError(f'{option} {spec}: unknown GPU model "{selector}"; known models: '
                             f'{", ".join(CATALOG)}') from None


def _shape(option: str, spec: str, cpu_only: bool, extra: str) -> dict[str, Any]:
    shape: dict[str, Any] = dict(CPU_NODE_DEFAULTS if cpu_only else NODE_DEFAULTS)
    for item in filter(None, (part.strip() for part in extra.split(","))):
        key, sep, value = item.partition("=")
        if not sep or key not in shape or (key == "gpus" and cpu_only):
            keys = "cpu, memory" if cpu_only else "gpus, cpu, memory"
            raise UsageError(f'{option} {spec}: "{item}": expected KEY=VALUE with KEY one of {keys}')
        shape[key] = value.strip()
    gpus = small_int(shape["gpus"], 3)               # "1e9", "-1", "two", 5,000 digits
    if gpus is None:
        raise UsageError(f'{option} {spec}: gpus: must be a whole number of GPUs, got "{shape["gpus"]}"')
    try:
        cpu = canonical("cpu", shape["cpu"])
        memory = canonical("memory", shape["memory"])
    except (QuantityError, ValueError) as exc:
        raise UsageError(f"{option} {spec}: {exc}") from None
    if not cpu_only and not 1 <= gpus <= 16 or cpu <= 0 or memory <= 0:
        raise UsageError(f"{option} {spec}: gpus must be 1..16, cpu and memory above 0")
    return {"gpus": gpus, "cpu": cpu, "memory": memory}


def parse_add_nodes(spec: str) -> Change:
    """``8xH100[:gpus=8,cpu=128,memory=1Ti]`` -> a change adding those nodes."""
    match = _ADD.match(spec.strip())
    if not match:
        raise UsageError(f'--add-nodes {spec}: expected COUNTxMODEL[:gpus=N,cpu=N,memory=Q], '
                         'for example 8xH100')
    count, name, extra = int(match[1]), match[2], match[3] or ""
    if not 1 <= count <= MAX_ADDED_NODES:
        raise UsageError(f"--add-nodes {spec}: count must be 1..{MAX_ADDED_NODES}")
    cpu_only = name.lower() == "cpu"
    model = ""
    if not cpu_only:
        try:
            model = lookup_model(name).name
        except UsageError as exc:
            raise UsageError(f"--add-nodes {spec}: {exc}") from None
    shape = _shape("--add-nodes", spec, cpu_only, extra)

    def add(scenario: Scenario) -> Scenario:
        taken = {n.name for n in scenario.nodes}
        prefix = f"{ADDED_PREFIX}-{(model or 'cpu').lower()}"
        first = 1 + sum(1 for n in taken if n.startswith(prefix + "-"))
        names = [f"{prefix}-{i}" for i in range(first, first + count)]
        if taken & set(names):
            raise UsageError(f"--add-nodes {spec}: node names {names[0]}.. already exist")
        added = tuple(TraceNode(n, shape["cpu"], shape["memory"], shape["gpus"], model)
                      for n in names)
        return replace(scenario, nodes=scenario.nodes + added)
    return add


def removal_count(matching: int, amount: float, percent: bool) -> int:
    """How many of ``matching`` nodes a removal takes (percent rounds half up).

    >>> removal_count(85, 10, True), removal_count(85, 100, True), removal_count(5, 3, False)
    (9, 85, 3)
    """
    return math.floor(matching * amount / 100 + 0.5) if percent else int(amount)


def parse_remove_nodes(spec: str) -> Change:
    """``10%:V100`` or ``3:T4`` -> a change removing the last matching nodes in list order."""
    match = _REMOVE.match(spec.strip())
    if not match:
        raise UsageError(f'--remove-nodes {spec}: expected PERCENT%:MODEL or COUNT:MODEL, '
                         'for example 10%:V100')
    amount, percent, selector = float(match[1]), bool(match[2]), match[3]
    if percent and not 0 < amount <= 100 or not percent and (amount != int(amount) or amount < 1):
        raise UsageError(f"--remove-nodes {spec}: a percentage must be in (0, 100], "
                         "a count a whole number >= 1")
    _check_selector("--remove-nodes", spec, selector)

    def remove(scenario: Scenario) -> Scenario:
        matching = [n.name for n in scenario.nodes if model_matches(selector, n.model)]
        if not matching:
            models = sorted({n.model or "cpu" for n in scenario.nodes})
            raise UsageError(f'--remove-nodes {spec}: no node matches "{selector}" '
                             f'(models in the cluster: {", ".join(models)})')
        count = removal_count(len(matching), amount, percent)
        if count > len(matching):
            raise UsageError(f"--remove-nodes {spec}: only {len(matching)} nodes match")
        gone = set(matching[len(matching) - count:])
        layouts = tuple(m for m in scenario.mig_layouts if m[0] not in gone)
        return replace(scenario, nodes=tuple(n for n in scenario.nodes if n.name not in gone),
                       mig_layouts=layouts)
    return remove


# ---- policy, profile, device plugin, MIG, quotas ----------------------------------------------


def _read_small(option: str, path: str) -> str:
    try:
        file = Path(path)
        if file.stat().st_size > MAX_FILE_BYTES:
            raise UsageError(f"{option} {path}: larger than {MAX_FILE_BYTES} bytes")
        return file.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{option} {path}: not UTF-8 text") from None


def parse_policy(name: str, known: Sequence[str], option: str = "--policy") -> Change:
    if name not in known:
        raise UsageError(f'{option} {name}: unknown policy (one of {", ".join(known)})')
    return lambda scenario: replace(scenario, policy=name)


def parse_profile(path: str) -> Change:
    from gpusched.scheduler.profile import parse_config

    text = _read_small("--profile", path)
    try:
        parse_config(text)
    except UsageError as exc:
        raise UsageError(f"--profile {path}: {exc}") from None
    return lambda scenario: replace(scenario, profile=path)


def parse_plugin_config(path: str) -> Change:
    from gpusched.devices.plugin_config import parse_config

    parse_config(_read_small("--plugin-config", path), where=path)
    return lambda scenario: replace(scenario, plugin_config=path)


def parse_mig_config(spec: str) -> Change:
    """``all-1g.10gb:H100``: that ``nvidia.com/mig.config`` layout on every matching node."""
    from gpusched.devices.mig import named_layouts

    layout, sep, selector = spec.strip().partition(":")
    if not sep or not layout or not selector:
        raise UsageError(f"--mig-config {spec}: expected LAYOUT:MODEL, for example all-1g.10gb:H100")
    _check_selector("--mig-config", spec, selector)

    def set_layout(scenario: Scenario) -> Scenario:
        nodes = [n for n in scenario.nodes if n.gpus and model_matches(selector, n.model)]
        if not nodes:
            raise UsageError(f'--mig-config {spec}: no GPU node matches "{selector}"')
        for model_name in sorted({n.model for n in nodes}):
            valid = named_layouts(lookup_model(model_name))
            if layout not in valid:
                raise UsageError(f'--mig-config {spec}: "{layout}" is not a MIG config of '
                                 f'{model_name} (one of {", ".join(valid)})')
        names = {n.name for n in nodes}
        kept = tuple(m for m in scenario.mig_layouts if m[0] not in names)
        return replace(scenario, mig_layouts=kept + tuple((n.name, layout) for n in nodes))
    return set_layout


def parse_quota(spec: str) -> Change:
    """``team-a:requests.nvidia.com/gpu=64,pods=500`` -> a ResourceQuota in that namespace."""
    from gpusched.objects.names import dns1123_label_errors

    namespace, sep, items = spec.strip().partition(":")
    if not sep or not namespace or dns1123_label_errors(namespace):
        raise UsageError(f"--quota {spec}: expected NAMESPACE:RESOURCE=QUANTITY[,...] with a "
                         "valid namespace name")
    hard: list[tuple[str, str]] = []
    for item in filter(None, (part.strip() for part in items.split(","))):
        resource, eq, quantity = item.partition("=")
        try:
            if not eq or not resource:
                raise QuantityError("expected RESOURCE=QUANTITY")
            if canonical(resource.removeprefix("requests.").removeprefix("limits."), quantity) < 0:
                raise QuantityError("must be greater than or equal to 0")   # ResourceQuota validation
        except QuantityError as exc:
            raise UsageError(f'--quota {spec}: "{item}": {exc}') from None
        hard.append((resource, quantity))
    if not hard:
        raise UsageError(f"--quota {spec}: no RESOURCE=QUANTITY")
    quota = Quota(namespace, tuple(hard))
    return lambda scenario: replace(
        scenario, quotas=tuple(q for q in scenario.quotas if q.namespace != namespace) + (quota,))


# ---- variants from the command line ------------------------------------------------------------


class _Raise(argparse.ArgumentParser):
    """An argparse parser that raises one-line ``UsageError`` instead of exiting."""

    def error(self, message: str) -> Any:   # argparse's signature returns NoReturn
        raise UsageError(f"{self.prog}: {message}")


def add_change_options(parser: argparse.ArgumentParser) -> None:
    """The change options, shared by ``gpusched whatif`` and each ``--variant``."""
    parser.add_argument("--add-nodes", action="append", default=[], metavar="NxMODEL[:gpus=,cpu=,memory=]",
                        help="add N nodes of a GPU model (default shape 8 GPUs, 128 CPUs, 1 TiB)")
    parser.add_argument("--remove-nodes", action="append", default=[], metavar="P%:MODEL|N:MODEL",
                        help="remove nodes whose GPU model starts with MODEL (last in list order first)")
    parser.add_argument("--policy", default=None, help="the replay's scheduling policy")
    parser.add_argument("--profile", default=None, metavar="FILE",
                        help="KubeSchedulerConfiguration YAML")
    parser.add_argument("--plugin-config", default=None, metavar="FILE",
                        help="NVIDIA device-plugin config (time-slicing, MPS, migStrategy)")
    parser.add_argument("--mig-config", action="append", default=[], metavar="LAYOUT:MODEL",
                        help="nvidia.com/mig.config layout on the matching nodes")
    parser.add_argument("--quota", action="append", default=[], metavar="NS:RES=QTY[,...]",
                        help="a ResourceQuota's spec.hard in a namespace")


def changes_from(args: argparse.Namespace, policies: Sequence[str]) -> tuple[tuple[str, ...], tuple[Change, ...]]:
    """The (spec texts, changes) of parsed change options, in a fixed order."""
    specs: list[str] = []
    changes: list[Change] = []

    def take(option: str, values: Iterable[str], parse: Callable[[str], Change]) -> None:
        for value in values:
            changes.append(parse(value))
            specs.append(f"{option} {value}")
    take("--remove-nodes", args.remove_nodes, parse_remove_nodes)
    take("--add-nodes", args.add_nodes, parse_add_nodes)
    take("--mig-config", args.mig_config, parse_mig_config)
    take("--policy", [args.policy] if args.policy else [], lambda p: parse_policy(p, policies))
    take("--profile", [args.profile] if args.profile else [], parse_profile)
    take("--plugin-config", [args.plugin_config] if args.plugin_config else [], parse_plugin_config)
    take("--quota", args.quota, parse_quota)
    return tuple(specs), tuple(changes)


def parse_variant(text: str, policies: Sequence[str]) -> Variant:
    """``"plus 8 H100: --add-nodes 8xH100"`` -> a Variant named "plus 8 H100"."""
    name, sep, options = text.partition(":")
    name = name.strip()
    if not sep or not _NAME.match(name):
        raise UsageError(f'--variant "{text}": expected "NAME: OPTIONS" with a NAME of 1-40 '
                         'letters, digits, spaces or ._%+-')
    try:
        words = shlex.split(options)
    except ValueError as exc:
        raise UsageError(f'--variant "{text}": {exc}') from None
    where = f'--variant "{name}"'
    parser = _Raise(prog=where, add_help=False, allow_abbrev=False)
    add_change_options(parser)
    parsed = parser.parse_args(words)
    try:
        specs, changes = changes_from(parsed, policies)
    except UsageError as exc:
        raise UsageError(f"{where}: {exc}") from None
    return Variant(name, specs, changes, f"{where}: ")


def build_variants(args: argparse.Namespace, policies: Sequence[str]) -> list[Variant]:
    """The variants of a ``gpusched whatif`` command: "as is" first, then the top-level change
    options as one variant (``--name``), then each ``--variant``."""
    variants = [Variant("as is")]
    specs, changes = changes_from(args, policies)
    if changes:
        variants.append(Variant(args.name or "changed", specs, changes))
    variants.extend(parse_variant(text, policies) for text in args.variant)
    names = [v.name for v in variants]
    duplicate = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if duplicate:
        raise UsageError(f'--variant: the name "{duplicate}" is used twice')
    if len(variants) < 2:
        raise UsageError("whatif: nothing to compare: give a change (--add-nodes, --remove-nodes, "
                         "--policy, ...) or one or more --variant \"NAME: OPTIONS\"")
    if len(variants) > MAX_VARIANTS:
        raise UsageError(f"whatif: at most {MAX_VARIANTS} variants, got {len(variants)}")
    return variants


def mapping_of(variants: Sequence[Variant], base: Scenario) -> Mapping[str, Scenario]:
    """Each variant's scenario (raises the first variant's error that does not apply)."""
    return {v.name: v.apply(base) for v in variants}
