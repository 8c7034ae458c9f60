"""CEL device selectors with Kubernetes' DRA environment, over Google's CEL runtime.

``compile_selector(expression)`` type-checks an expression once (cached by its text) and returns
a ``CompiledSelector`` whose ``matches(device)`` evaluates it against a ``model.Device``. The
evaluator is ``cel-expr-python`` (Google's CEL C++ runtime with its type checker, from PyPI): it
reports the checker's errors as cel-go does (``undeclared reference to 'x'``), and its result
type lets us refuse ``1`` as upstream does (``must evaluate to bool or the unknown type, not
int``). ``cel-python`` (no checker) and ``common-expression-language`` (no checker, no custom
types) could do neither.

The environment (``dynamic-resource-allocation/cel/compile.go``):

- ``device.driver``, ``device.allowMultipleAllocations``, ``device.attributes[domain][name]``
  and ``device.capacity[domain][name]``; an unqualified attribute or capacity name is in the
  driver's domain. Looking up a domain the device lacks gives an empty map (upstream's
  ``mapper.Find``), so ``device.attributes["other.com"].x`` fails with ``no such key: x`` while
  ``"other.com" in device.attributes`` is false.
- Kubernetes' libraries: ``quantity``/``isQuantity`` and a quantity's ``compareTo``,
  ``isGreaterThan``, ``isLessThan``, ``add``, ``sub``, ``sign``, ``asInteger``, ``isInteger``,
  ``asApproximateFloat``; ``semver``/``isSemver`` (also with ``normalize``) and ``major``,
  ``minor``, ``patch``, ``compareTo``, ``isGreaterThan``, ``isLessThan``; cel-go's strings
  extension, ``cel.bind``, and the regex library's ``find``/``findAll``.

Quantities and versions travel through CEL as two small protobuf messages
(``kubernetes.Quantity`` / ``kubernetes.Semver``, their canonical text inside): the runtime
passes messages to our functions, which parse the text (cached).

Where the runtime differs from cel-go: its parser refuses nesting deeper than 32 levels
(``Expression recursion limit exceeded``; cel-go allows 250); its checker refuses a
comprehension over an indexed ``dyn`` value, so such an expression runs unchecked; there is no
run-time cost limit (the estimate at compile time stands in for it).

Neighbours: ``dra.cel_library`` (the functions), ``dra.cel_cost`` (the cost estimate);
``dra.allocator`` calls ``matches``; object validation calls ``compile_selector``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from cel_expr_python import cel

from gpusched.dra import cel_cost, cel_library, cel_projection
from gpusched.dra.model import Device, go_text

MAX_COST = 1_000_000           # resourceapi.CELSelectorExpressionMaxCost
_STATUS = re.compile(r"^[A-Z_]+: ")
_NO_KEY = re.compile(r'Key not found in map : "?(.*?)"?$')
_WHOLE_MAP_USE = r"(?:\bin\s+device\s*\.\s*{0}\b(?!\s*\[)|device\s*\.\s*{0}\s*\.\s*\w+\s*\(|\(\s*device\s*\.\s*{0}\s*\))"


class CelCompileError(ValueError):
    """An expression that does not compile; the text is upstream's (``compilation failed: ...``,
    ``must evaluate to bool or the unknown type, not int``, ``too complex, exceeds cost limit``)."""


class CelRuntimeError(ValueError):
    """An evaluation error, as cel-go words it (``no such key: name``)."""


@functools.lru_cache(maxsize=1)
def _environment() -> Any:
    return cel.NewEnv(descriptor_pool=cel_library.POOL,
                      variables={"device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)},
                      extensions=cel_library.extensions(), functions=cel_library.functions())


def _go_type(name: str) -> str:
    """cel-cpp's type name as cel-go's ``Type.String()`` prints it: ``LIST<INT>`` -> ``list(int)``."""
    simple = {"INT": "int", "UINT": "uint", "DOUBLE": "double", "STRING": "string", "BOOL": "bool",
              "BYTES": "bytes", "NULL": "null_type", "DYN": "dyn", "DURATION": "google.protobuf.Duration",
              "TIMESTAMP": "google.protobuf.Timestamp", "TYPE": "type"}
    text = name
    for cpp, go in simple.items():
        text = re.sub(rf"\b{cpp}\b", go, text)
    return text.replace("LIST<", "list(").replace("MAP<", "map(").replace(">", ")")


def _only_dyn_ranges(error: str) -> bool:
    found = re.findall(r"ERROR: <input>:\d+:\d+: (.*)", error)
    return bool(found) and all(e.startswith("expression of type 'dyn' cannot be the range") for e in found)


def _compile_message(error: str) -> str:
    lines = _STATUS.sub("", error).removesuffix(" [INVALID_ARGUMENT]")
    return "compilation failed: " + lines


def _runtime_message(error: str) -> str:
    text = _STATUS.sub("", error)
    found = _NO_KEY.search(text)
    return f"no such key: {found.group(1)}" if found else text


@dataclass(frozen=True, eq=False)
class CompiledSelector:
    """One compiled expression. ``pad_attributes``/``pad_capacity`` name the domains the
    expression indexes literally, which a device without them gets as empty maps (when the
    expression never reads the whole map, where an added key would show)."""
    expression: str
    program: Any
    cost: int
    pad_attributes: tuple[str, ...]
    pad_capacity: tuple[str, ...]
    reads: tuple[cel_projection.Path, ...] | None = None
    shared: dict[Any, bool | CelRuntimeError] = field(default_factory=dict, repr=False)
    plan: cel_projection.Plan = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "plan", cel_projection.plan(self.reads or ()))

    def matches(self, device: Device) -> bool:
        """Whether the device is selected; cached per device (a device is immutable) and, when
        the expression reads fixed places of it, per the values there (``dra.cel_projection``)."""
        cache = device.cel
        found = cache.get(self)
        if found is None:
            projected = None if self.reads is None else cel_projection.key(device, self.plan)
            found = None if projected is None else self.shared.get(projected)
            if found is None:
                found = self._evaluate(device)
                if projected is not None:
                    self.shared[projected] = found
            cache[self] = found
        if isinstance(found, CelRuntimeError):
            raise found
        return bool(found)

    def _evaluate(self, device: Device) -> bool | CelRuntimeError:
        try:
            data = cel_library.device_input(device)
        except cel_library.UnsupportedAttribute as error:
            return CelRuntimeError(str(error))
        if self.pad_attributes or self.pad_capacity:
            data = _padded(data, self.pad_attributes, self.pad_capacity)
        try:
            result = self.program.eval(data={"device": data})
        except (TypeError, ValueError, RuntimeError) as error:     # a value the runtime cannot take in
            return CelRuntimeError(str(error).splitlines()[0])
        kind = result.type().name()
        if kind == "ERROR":
            return CelRuntimeError(_runtime_message(str(result.value())))
        if kind != "BOOL":
            return CelRuntimeError(f"CEL result of type {_go_type(kind)} could not be converted to bool")
        return bool(result.value())


def _padded(data: dict[str, Any], attributes: tuple[str, ...], capacity: tuple[str, ...]) -> dict[str, Any]:
    out = dict(data)
    for key, domains in (("attributes", attributes), ("capacity", capacity)):
        missing = [d for d in domains if d not in data[key]]
        if missing:
            out[key] = {**data[key], **{d: {} for d in missing}}
    return out


def _pad_domains(expression: str, key: str) -> tuple[str, ...]:
    """String literals indexing ``device.<key>[...]``, unless the expression uses the whole map
    (``in device.attributes``, ``device.attributes.exists(...)``, ``size(device.attributes)``)."""
    if re.search(_WHOLE_MAP_USE.format(key), expression):
        return ()
    return tuple(sorted(set(re.findall(rf"device\s*\.\s*{key}\s*\[\s*[\"']([^\"']*)[\"']\s*\]", expression))))


@functools.lru_cache(maxsize=4096)
def _compile_cached(expression: str) -> CompiledSelector | CelCompileError:
    try:
        checked = _environment().compile(expression)
    except RuntimeError as error:
        if not _only_dyn_ranges(str(error)):
            return CelCompileError(_compile_message(str(error)))
        # cel-cpp's checker refuses a comprehension over an indexed ``dyn`` value
        # (``device.attributes["d"].exists(...)``), which cel-go accepts: such an expression
        # passed every other check, so it runs unchecked (its result type is then ``dyn``).
        checked = _environment().compile(expression, disable_check=True)
    kind = checked.return_type().name()
    if kind not in ("BOOL", "DYN"):
        return CelCompileError(f"must evaluate to bool or the unknown type, not {_go_type(kind)}")
    tree = cel_cost.decode(checked)
    cost = cel_cost.estimate(tree)
    if cost > MAX_COST:
        return CelCompileError(cel_cost.TOO_COMPLEX)
    return CompiledSelector(expression, checked, cost, _pad_domains(expression, "attributes"),
                            _pad_domains(expression, "capacity"), cel_projection.reads(tree))


def compile_selector(expression: str) -> CompiledSelector:
    """Compile (once per text) a selector expression; raises ``CelCompileError``."""
    found = _compile_cached(go_text(expression))
    if isinstance(found, CelCompileError):
        raise CelCompileError(str(found))
    return found
