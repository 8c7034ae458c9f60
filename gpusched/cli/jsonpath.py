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

Neighbours: ``cli.get`` (the printers); nothing else.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from gpusched.errors import UsageError

MAX_TEMPLATE = 4096


class JSONPathError(UsageError):
    """A template client-go would refuse to parse or execute."""


@dataclass(frozen=True)
class Slice:
    start: int | None
    end: int | None
    step: int | None
    derived_end: bool = False   # ``[i]``: end is i+1


# An action is a list of steps: ("field", name) ("wild",) ("recursive",) ("slice", Slice)
# ("union", [steps...]) ("filter", left, op, right) ("text", s) ("int", n) ("float", x)
# ("bool", b) ("ident", name). A template is a list of ("text", s) and ("action", steps).

_FILTER = re.compile(r"^([^!<>=]+)([!<>=~]+)(.+?)$")
_SLICE = re.compile(r"^(-?\d*)(:-?\d*)?(:-?\d*)?$")
_DICT_KEY = re.compile(r"^'([^']*)'$")
_TERMINATORS = set(" \t\r\n.,[]$@{}")


def parse(template: str) -> list[tuple[Any, ...]]:
    """The template's text and action parts (client-go's ``Parser.Parse``)."""
    if len(template) > MAX_TEMPLATE:
        raise JSONPathError(f"jsonpath template longer than {MAX_TEMPLATE} characters")
    parts: list[tuple[Any, ...]] = []
    pos = 0
    while pos < len(template):
        start = template.find("{", pos)
        if start < 0:
            parts.append(("text", template[pos:]))
            break
        if start > pos:
            parts.append(("text", template[pos:start]))
        steps, pos = _parse_action(template, start + 1)
        parts.append(("action", steps))
    return parts


def _parse_action(text: str, pos: int, closing: str = "}") -> tuple[list[tuple[Any, ...]], int]:
    steps: list[tuple[Any, ...]] = []
    while True:
        if pos >= len(text):
            if closing == "":
                return steps, pos
            raise JSONPathError("unclosed action")
        if text.startswith(closing, pos) and closing:
            return steps, pos + len(closing)
        if text.startswith("[?(", pos):
            step, pos = _parse_filter(text, pos + 3)
            steps.append(step)
            continue
        if text.startswith("..", pos):
            if steps and steps[-1] == ("recursive",):
                raise JSONPathError("invalid multiple recursive descent")
            steps.append(("recursive",))
            pos += 2
            if pos < len(text) and (text[pos].isalnum() or text[pos] == "_"):
                name, pos = _field_name(text, pos)
                steps.append(("field", name))
            continue
        char = text[pos]
        if char in "\r\n":
            raise JSONPathError("unclosed action")
        if char in " @$":
            pos += 1
        elif char == "[":
            end = text.find("]", pos)
            if end < 0 or "\n" in text[pos:end]:
                raise JSONPathError("unterminated array")
            steps.extend(_parse_array(text[pos + 1:end]))
            pos = end + 1
        elif char in "\"'":
            value, pos = _parse_quote(text, pos, char)
            steps.append(("text", value))
        elif char == ".":
            name, pos = _field_name(text, pos + 1)
            steps.append(("wild",) if name == "*" else ("field", name))
        elif char in "+-" or char.isdigit():
            match = re.match(r"[+-]?[\d.]*", text[pos:])
            assert match is not None        # the pattern matches the empty string too
            number = match.group(0)
            pos += len(number)
            steps.append(_number(number))
        elif char.isalnum() or char == "_":
            end = pos
            while end < len(text) and text[end] not in _TERMINATORS:
                end += 1
            word = text[pos:end]
            steps.append(("bool", word == "true") if word in ("true", "false") else ("ident", word))
            pos = end
        else:
            raise JSONPathError(f"unrecognized character in action: U+{ord(char):04X} '{char}'")


def _number(text: str) -> tuple[Any, ...]:
    try:
        return ("int", int(text))
    except ValueError:
        try:
            return ("float", float(text))
        except ValueError:
            raise JSONPathError(f"cannot parse number {text}") from None


def _field_name(text: str, pos: int) -> tuple[str, int]:
    start = pos
    while pos < len(text):
        if text[pos] == "\\":
            pos += 2
            continue
        if text[pos] in _TERMINATORS:
            break
        pos += 1
    return text[start:pos].replace("\\", ""), pos


def _parse_array(inner: str) -> list[tuple[Any, ...]]:
    if inner == "*":
        inner = ":"
    pieces = inner.split(",")
    if len(pieces) > 1:
        return [("union", [_parse_array(p.strip()) for p in pieces])]
    key = _DICT_KEY.match(inner)
    if key:
        return [("field", key.group(1))]
    match = _SLICE.match(inner)
    if not match:
        raise JSONPathError(f"invalid array index {inner}")
    start, end, step = match.groups()
    try:
        first = int(start) if start else None
        if end is None:
            return [("slice", Slice(first, (first or 0) + 1, None, derived_end=True))]
        last = int(end[1:]) if end[1:] else None
        stride = int(step[1:]) if step and step[1:] else None
    except ValueError:
        raise JSONPathError(f"array index {inner} is not a number") from None
    return [("slice", Slice(first, last, stride))]


def _parse_filter(text: str, pos: int) -> tuple[tuple[Any, ...], int]:
    start, quote, closed = pos, "", False
    while True:
        if pos >= len(text) or text[pos] == "\n":
            raise JSONPathError("unterminated filter")
        char = text[pos]
        pos += 1
        if char in "\"'":
            if not quote:
                quote = char
            elif char == quote and text[pos - 2] != "\\":
                closed = True
        elif char == ")" and bool(quote) == closed:
            break
    if pos >= len(text) or text[pos] != "]":
        raise JSONPathError("unclosed array expect ]")
    body = text[start:pos - 1]
    match = _FILTER.match(body)
    if not match:
        return ("filter", _parse_action(body, 0, "")[0], "exists", []), pos + 1
    left = _parse_action(match.group(1), 0, "")[0]
    right = _parse_action(match.group(3), 0, "")[0]
    return ("filter", left, match.group(2), right), pos + 1


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "a": "\a", "b": "\b", "f": "\f",
            "v": "\v", '"': '"', "'": "'"}


def _parse_quote(text: str, pos: int, quote: str) -> tuple[str, int]:
    end = pos + 1
    while True:
        if end >= len(text) or text[end] == "\n":
            raise JSONPathError("unterminated quoted string")
        if text[end] == quote and text[end - 1] != "\\":
            break
        end += 1
    return _unescape(text[pos + 1:end], text[pos:end + 1]), end + 1


def _unescape(body: str, quoted: str) -> str:
    out, i = [], 0
    while i < len(body):
        char = body[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        code = body[i + 1:i + 2]
        widths = {"x": 2, "u": 4, "U": 8}
        if code in _ESCAPES:
            out.append(_ESCAPES[code])
            i += 2
        elif code in widths:
            digits = body[i + 2:i + 2 + widths[code]]
            try:
                out.append(chr(int(digits, 16)))
            except ValueError:
                raise JSONPathError(f"unquote string {quoted} error invalid syntax") from None
            i += 2 + widths[code]
        else:
            raise JSONPathError(f"unquote string {quoted} error invalid syntax")
    return "".join(out)


# ---- evaluation ---------------------------------------------------------------------------


_MISSING = object()


def _eval(steps: list[tuple[Any, ...]], values: list[Any]) -> list[Any]:
    for step in steps:
        values = _step(step, values)
    return values


def _step(step: tuple[Any, ...], values: list[Any]) -> list[Any]:
    kind = step[0]
    if kind == "field":
        return [v[step[1]] for v in values if isinstance(v, dict) and step[1] in v]
    if kind == "wild":
        return [item for v in values for item in _children(v)]
    if kind == "recursive":
        return _recursive(values)
    if kind == "slice":
        return [item for v in values if v is not None for item in _slice(v, step[1])]
    if kind == "union":
        return [item for branch in step[1] for item in _eval(branch, values)]
    if kind == "filter":
        return [item for v in values for item in _filter(v, step)]
    if kind in ("text", "int", "float", "bool"):
        return [step[1] for _ in values]
    if kind == "ident":
        raise JSONPathError(f"unrecognized identifier {step[1]}")
    raise JSONPathError(f"unexpected step {kind}")


def _children(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [value[k] for k in sorted(value)]
    if isinstance(value, (list, str)):
        return list(value)
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
    start = 0 if spec.start is None else spec.start
    if start < 0:
        start += length
    end = length if spec.end is None else spec.end
    if end < 0 or (end == 0 and spec.derived_end):
        end += length
    if end == start:
        return []
    if start >= length or start < 0:
        raise JSONPathError(f"array index out of bounds: index {start}, length {length}")
    if end > length or end < 0:
        raise JSONPathError(f"array index out of bounds: index {end - 1}, length {length}")
    if start > end:
        raise JSONPathError(f"starting index {start} is greater than ending index {end}")
    if spec.step is not None and spec.step <= 0:
        raise JSONPathError("step must be > 0")
    return value[start:end:spec.step or 1]


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
