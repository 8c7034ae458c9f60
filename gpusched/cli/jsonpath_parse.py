"""The parser of kubectl's JSONPath dialect (client-go's ``util/jsonpath/parser.go``).

``parse(template)`` turns a template into its text and action parts; an action is a list of
steps (the table below). Bad templates raise ``JSONPathError`` with client-go's wording.

Neighbours: ``cli.jsonpath`` (evaluation and printing, the only user); nothing else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from gpusched.errors import UsageError
from gpusched.objects.digits import is_digits

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
        pos = _parse_step(text, pos, steps)


def _parse_step(text: str, pos: int, steps: list[tuple[Any, ...]]) -> int:
    """Append the steps the action text at ``pos`` stands for; the position after them."""
    if text.startswith("[?(", pos):
        step, pos = _parse_filter(text, pos + 3)
        steps.append(step)
        return pos
    if text.startswith("..", pos):
        return _parse_recursive(text, pos + 2, steps)
    char = text[pos]
    if char in "\r\n":
        raise JSONPathError("unclosed action")
    if char in " @$":
        return pos + 1
    parser = _step_parser(char)
    if parser is None:
        raise JSONPathError(f"unrecognized character in action: U+{ord(char):04X} '{char}'")
    found, pos = parser(text, pos)
    steps.extend(found)
    return pos


_StepParser = Callable[[str, int], tuple[list[tuple[Any, ...]], int]]


def _step_parser(char: str) -> _StepParser | None:
    """Which parser reads a step starting with ``char`` (checked in client-go's order)."""
    if char == "[":
        return _parse_bracket
    if char in "\"'":
        return _parse_text
    if char == ".":
        return _parse_dot
    if char in "+-" or is_digits(char):
        return _parse_number
    if char.isalnum() or char == "_":
        return _parse_word
    return None


def _parse_recursive(text: str, pos: int, steps: list[tuple[Any, ...]]) -> int:
    if steps and steps[-1] == ("recursive",):
        raise JSONPathError("invalid multiple recursive descent")
    steps.append(("recursive",))
    if pos < len(text) and (text[pos].isalnum() or text[pos] == "_"):
        name, pos = _field_name(text, pos)
        steps.append(("field", name))
    return pos


def _parse_bracket(text: str, pos: int) -> tuple[list[tuple[Any, ...]], int]:
    end = text.find("]", pos)
    if end < 0 or "\n" in text[pos:end]:
        raise JSONPathError("unterminated array")
    return _parse_array(text[pos + 1:end]), end + 1


def _parse_text(text: str, pos: int) -> tuple[list[tuple[Any, ...]], int]:
    value, pos = _parse_quote(text, pos, text[pos])
    return [("text", value)], pos


def _parse_dot(text: str, pos: int) -> tuple[list[tuple[Any, ...]], int]:
    name, pos = _field_name(text, pos + 1)
    return [("wild",) if name == "*" else ("field", name)], pos


def _parse_number(text: str, pos: int) -> tuple[list[tuple[Any, ...]], int]:
    match = re.match(r"[+-]?[\d.]*", text[pos:])
    assert match is not None        # the pattern matches the empty string too
    number = match.group(0)
    return [_number(number)], pos + len(number)


def _parse_word(text: str, pos: int) -> tuple[list[tuple[Any, ...]], int]:
    end = pos
    while end < len(text) and text[end] not in _TERMINATORS:
        end += 1
    word = text[pos:end]
    return [("bool", word == "true") if word in ("true", "false") else ("ident", word)], end


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
