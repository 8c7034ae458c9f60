"""Which devices of a pool a request may take: its class's selectors, its own selectors, and,
for slices with per-device node selection, the device's node (upstream ``isSelectable``).

The answer depends on the selectors and the pool alone (a pool is gathered for one node), so it
is kept on the pool per selector texts: the positions of the matching devices in search order.
A selector that fails on a device (compile or runtime error) keeps its place in that list, so
the search reports it when it reaches that device, as upstream does, and not before.

Neighbours: ``dra.cel`` (evaluation, cached per device), ``dra.search``.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusched.dra.cel import CelCompileError, CelRuntimeError, CompiledSelector, compile_selector
from gpusched.dra.model import Device
from gpusched.dra.pools import NodeFacts, Pool, candidates_of, node_matches


@dataclass(frozen=True)
class SelectorError:
    """A selector that could not be evaluated on a device: ``in_class`` tells the class's from
    the request's; ``kind`` is ``compile`` or ``runtime``."""
    in_class: bool
    index: int
    kind: str
    text: str


@dataclass(frozen=True)
class Matching:
    positions: list[int]                       # candidate positions, in search order
    errors: dict[int, SelectorError]           # position -> the error to report there


Compiled = list[tuple[bool, int, "CompiledSelector | CelCompileError"]]


def _compiled(class_selectors: tuple[str, ...], request_selectors: tuple[str, ...]) -> Compiled:
    """Each selector, compiled once for the whole pool: (in the class?, index, selector or error)."""
    out: Compiled = []
    for selectors, in_class in ((class_selectors, True), (request_selectors, False)):
        for i, expression in enumerate(selectors):
            try:
                out.append((in_class, i, compile_selector(expression)))
            except CelCompileError as error:
                out.append((in_class, i, error))
    return out


def _selected(device: Device, per_device: bool, node: NodeFacts, compiled: Compiled) -> bool | SelectorError:
    for in_class, i, selector in compiled:
        if isinstance(selector, CelCompileError):
            return SelectorError(in_class, i, "compile", str(selector))
        try:
            if not selector.matches(device):
                return False
        except CelRuntimeError as error:
            return SelectorError(in_class, i, "runtime", str(error))
    if per_device:
        return node_matches(node, device.node_name, device.all_nodes, device.node_terms)
    return True


def matching(pool: Pool, node: NodeFacts, class_selectors: tuple[str, ...],
             request_selectors: tuple[str, ...]) -> Matching:
    """The pool's devices a request with these selectors may take (kept on the pool)."""
    cache: dict[tuple[tuple[str, ...], tuple[str, ...]], Matching] = pool.__dict__.setdefault("_matching", {})
    key = (class_selectors, request_selectors)
    found = cache.get(key)
    if found is None:
        found = Matching([], {})
        compiled = _compiled(class_selectors, request_selectors)
        for position, candidate in enumerate(candidates_of(pool)):
            selected = _selected(candidate.device, candidate.slice.per_device_node_selection, node, compiled)
            if selected is False:
                continue
            found.positions.append(position)
            if isinstance(selected, SelectorError):
                found.errors[position] = selected
        cache[key] = found
    return found
