"""kubectl's JSONPath dialect, for ``-o jsonpath=``, ``-o custom-columns=`` and ``--sort-by``.

The dialect is client-go's ``util/jsonpath`` (parser.go, jsonpath.go), written again here from its
behaviour: text outside ``{...}`` prints as is; inside an action ``.field`` (``\\.`` escapes a dot
in a key), ``[*]``, ``[i]``, ``[start:end:step]`` (negative indices count from the end),
``[a,b]`` unions, ``['key']``, ``..field`` recursive descent, ``[?(@.x=="y")]`` filters with
``== != < > <= >=`` and bare ``[?(@.x)]`` existence, quoted text ``{"\\n"}`` / ``{'\\t'}``, and
``{range EXPR}...{end}`` loops. Missing keys print nothing (kubectl's ``AllowMissingKeys(true)``).
Several results of one action are joined by one space; maps and lists print as compact JSON the
way Go's ``encoding/json`` writes them (keys sorted, ``<>&`` escaped).

``render(template, data)`` runs a template; ``values(expression, obj)`` evaluates one relaxed
expression (``.metadata.name`` or ``{.metadata.name}``) as custom columns and ``--sort-by`` do.
Bad templates raise ``JSONPathError`` with client-go's wording.

Neighbours: ``cli.jsonpath_parse`` (the parser, client-go's parser.go); ``cli.get`` (the
printers).
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from gpusched.cli.jsonpath_parse import MAX_TEMPLATE, JSONPathError, Slice, parse

__all__ = ["MAX_TEMPLATE", "JSONPathError", "go_json", "go_text", "go_value", "parse", "relaxed",
           "render", "values"]

# ---- evaluation ---------------------------------------------------------------------------


_MISSING = object()


def _eval(steps: list[tuple[Any, ...]], values: list[Any]) -> list[Any]:
    for step in steps:
        values = _step(step, values)
    return values


def _step(step: tuple[Any, ...], values: list[Any]) -> list[Any]:
    kind = step[0]
    if kind == "ident":
        raise JSONPathError(f"unrecognized identifier {step[1]}")
    evaluate = _STEPS.get(kind)
    if evaluate is None:
        raise JSONPathError(f"unexpected step {kind}")
    return evaluate(step, values)


def _field_step(step: tuple[Any, ...], values: list[Any]) -> list[Any]:
    return [v[step[1]] for v in values if isinstance(v, dict) and step[1] in v]


def _wild_step(step: tuple[Any, ...], values: list[Any]) -> list[Any]:
    return [item for v in values for item in _children(v)]


def _recursive_step(step: tuple[Any, ...], values: list[Any]) -> list[Any]:
    return _recursive(values)


def _slice_step(step: tuple[Any, ...], values: list[Any]) -> list[Any]:
    return [item for v in values if v is not None for item in _slice(v, step[1])]


def _union_step(step: tuple[Any, ...], values: list[Any]) -> list[Any]:
    return [item for branch in step[1] for item in _eval(branch, values)]


def _filter_step(step: tuple[Any, ...], values: list[Any]) -> list[Any]:
    return [item for v in values for item in _filter(v, step)]


def _literal_step(step: tuple[Any, ...], values: list[Any]) -> list[Any]:
    return [step[1] for _ in values]


_STEPS: dict[str, Callable[[tuple[Any, ...], list[Any]], list[Any]]] = {
    "field": _field_step, "wild": _wild_step, "recursive": _recursive_step,
    "slice": _slice_step, "union": _union_step, "filter": _filter_step,
    "text": _literal_step, "int": _literal_step, "float": _literal_step, "bool": _literal_step,
}


def _children(value: Any) -> list[Any]:
    """What ``*`` and ``..`` step into (client-go evalWildcard, evalRecursive): a map's values,
    a list's items, a string's bytes (Go's ``reflect.Value.Index`` on a string: numbers, which
    have no children, so ``..`` ends at a string instead of recursing into one-letter strings)."""
    if isinstance(value, dict):
        return [value[k] for k in sorted(value)]
    if isinstance(value, list):
        return list(value)
    if isinstance(value, str):
        return list(value.encode())
    return []


def _recursive(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for value in values:
        children = _children(value)
        if children:
            out.append(value)
            out.extend(_recursive(children))
    return out


def _slice(value: Any, spec: Slice) -> list[Any]:
    if not isinstance(value, list):
        raise JSONPathError(f"{_go_type(value)} is not array or slice")
    length = len(value)
    start, end = _slice_bounds(spec, length)
    if end == start:
        return []
    _check_slice(start, end, length, spec.step)
    return value[start:end:spec.step or 1]


def _slice_bounds(spec: Slice, length: int) -> tuple[int, int]:
    """The slice's start and end with negative indices counted from ``length``."""
    start = 0 if spec.start is None else spec.start
    if start < 0:
        start += length
    end = length if spec.end is None else spec.end
    if end < 0 or (end == 0 and spec.derived_end):
        end += length
    return start, end


def _check_slice(start: int, end: int, length: int, step: int | None) -> None:
    if start >= length or start < 0:
        raise JSONPathError(f"array index out of bounds: index {start}, length {length}")
    if end > length or end < 0:
        raise JSONPathError(f"array index out of bounds: index {end - 1}, length {length}")
    if start > end:
        raise JSONPathError(f"starting index {start} is greater than ending index {end}")
    if step is not None and step <= 0:
        raise JSONPathError("step must be > 0")


def _filter(value: Any, step: tuple[Any, ...]) -> list[Any]:
    _, left_steps, op, right_steps = step
    if not isinstance(value, list):
        raise JSONPathError(f"{_go_text(value)} is not array or slice and cannot be filtered")
    out = []
    for item in value:
        lefts = _eval(left_steps, [item])
        if op == "exists":
            if lefts:
                out.append(item)
            continue
        rights = _eval(right_steps, [item])
        if not lefts or not rights:
            continue
        if len(lefts) > 1 or len(rights) > 1:
            raise JSONPathError("can only compare one element at a time")
        if _compare(lefts[0], op, rights[0]):
            out.append(item)
    return out


def _basic(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    return "other"


def _compare(left: Any, op: str, right: Any) -> bool:
    if op == "=~":
        if not isinstance(left, str) or not isinstance(right, str):
            raise JSONPathError("regexp search only support string now")
        return re.search(right, left) is not None
    if op not in ("==", "!=", "<", ">", "<=", ">="):
        raise JSONPathError(f"unrecognized filter operator {op}")
    kinds = (_basic(left), _basic(right))
    if kinds[0] != kinds[1] or kinds[0] == "other":
        raise JSONPathError("incompatible types for comparison")
    if op == "==":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    if kinds[0] == "bool":
        raise JSONPathError("invalid type for comparison")
    return bool({"<": left < right, ">": left > right, "<=": left <= right, ">=": left >= right}[op])


# ---- printing -----------------------------------------------------------------------------


def go_json(value: Any) -> str:
    r"""Go's ``json.Marshal``: compact, keys sorted, ``<``, ``>`` and ``&`` escaped.

    >>> go_json({"b": [1, "x<y"], "a": True})
    '{"a":true,"b":[1,"x\\u003cy"]}'
    """
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def go_text(value: Any) -> str:
    """How ``fmt.Fprint`` prints a JSON scalar (``8``, ``0.5``, ``true``, ``<nil>``)."""
    return _go_text(value)


def _go_text(value: Any) -> str:
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value).replace("e+0", "e+").replace("e-0", "e-")
    return str(value)


def _go_type(value: Any) -> str:
    return {"dict": "map[string]interface {}", "str": "string", "int": "int64",
            "float": "float64", "bool": "bool"}.get(type(value).__name__, "interface {}")


def go_value(value: Any) -> str:
    """``fmt.Sprintf("%v", v)`` of a decoded JSON value (custom-columns cells):
    ``map[a:1 b:x]``, ``[a b]``, scalars as :func:`go_text`."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_value(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    return _go_text(value)


def _print_results(results: list[Any]) -> str:
    return " ".join(go_json(r) if isinstance(r, (dict, list)) else _go_text(r) for r in results)


def _blocks(parts: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Nest ``{range X}...{end}`` into ("range", steps, body) blocks."""
    stack: list[list[tuple[Any, ...]]] = [[]]
    heads: list[list[tuple[Any, ...]]] = []
    for part in parts:
        if part[0] == "action" and part[1] and part[1][0] == ("ident", "range"):
            heads.append(part[1][1:])
            stack.append([])
        elif part[0] == "action" and part[1] == [("ident", "end")]:
            if not heads:
                raise JSONPathError("not in range, nothing to end")
            body = stack.pop()
            stack[-1].append(("range", heads.pop(), body))
        else:
            stack[-1].append(part)
    if heads:
        raise JSONPathError("range without end")   # client-go prints nothing for an open range
    return stack[0]


def _run(blocks: list[tuple[Any, ...]], data: Any, out: list[str]) -> None:
    for block in blocks:
        if block[0] == "text":
            out.append(block[1])
        elif block[0] == "action":
            out.append(_print_results(_eval(block[1], [data])))
        else:
            for item in _eval(block[1], [data]):
                _run(block[2], item, out)


def render(template: str, data: Any) -> str:
    r"""Run a kubectl JSONPath template on ``data``.

    >>> pods = {"items": [{"metadata": {"name": "a"}, "spec": {"nodeName": "n1"}},
    ...                   {"metadata": {"name": "b"}, "spec": {}}]}
    >>> render('{range .items[*]}{.metadata.name}{"\\t"}{.spec.nodeName}{"\\n"}{end}', pods)
    'a\tn1\nb\t\n'
    >>> render('{.items[?(@.spec.nodeName=="n1")].metadata.name}', pods)
    'a'
    >>> render('{.items[*].metadata.name}', pods)
    'a b'
    """
    out: list[str] = []
    _run(_blocks(parse(template)), data, out)
    return "".join(out)


def relaxed(expression: str) -> str:
    """kubectl's ``RelaxedJSONPathExpression``: ``.a.b``, ``a.b`` and ``{.a.b}`` all mean
    ``{.a.b}``."""
    text = expression.strip()
    if not text:
        raise JSONPathError("jsonpath expression cannot be empty")
    match = re.match(r"^\{(.*)\}$", text)
    if match:
        text = match.group(1)
    if not text.startswith("."):
        text = "." + text
    return "{" + text + "}"


def values(expression: str, obj: Any) -> list[Any]:
    """The results of one relaxed expression on one object (custom columns, ``--sort-by``)."""
    parts = parse(relaxed(expression))
    results: list[Any] = []
    for part in parts:
        if part[0] == "action":
            results.extend(_eval(part[1], [obj]))
    return results
