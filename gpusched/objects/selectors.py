"""Label selectors, node selector requirements and field selectors: parsing and matching.

- ``parse_selector("app=web,tier!=db,env in (a,b),!canary,gpu")`` parses kubectl's ``-l`` syntax
  (``labels.Parse``) into a ``LabelSelector``: ``=``/``==`` go to ``match_labels``; ``!=`` becomes
  ``NotIn``, ``in``/``notin`` ``In``/``NotIn``, a bare key ``Exists``, ``!key`` ``DoesNotExist``,
  ``key>N`` / ``key<N`` ``Gt`` / ``Lt``.
- ``selector_from_dict(d)`` builds one from a metav1.LabelSelector dict; ``matches(sel, labels)``.
  An empty selector matches everything; ``None`` (no selector at all) matches nothing, as
  ``metav1.LabelSelectorAsSelector(nil)`` returns ``labels.Nothing()``. (Callers for which upstream
  treats a missing selector as "everything", e.g. a PDB or a Service, must pass ``LabelSelector()``.)
- ``requirement_matches(req, labels)`` for NodeSelectorRequirements (In/NotIn/Exists/DoesNotExist/
  Gt/Lt; Gt/Lt compare integers, a non-integer label or value does not match);
  ``term_matches(term, labels, node_name)``: an empty term matches nothing, ``matchFields``
  supports only ``metadata.name`` as upstream; ``node_selector_matches(terms, ...)`` ORs terms.
- ``parse_field_selector("spec.nodeName=x,status.phase!=Running")`` -> ``[(path, op, value)]``
  with op ``=`` or ``!=``; ``field_matches(obj, selector)`` reads dotted paths of a raw dict (a
  missing field reads as ``""``, so ``spec.nodeName=`` selects unbound pods).

Neighbours: types (LabelSelector, Requirement, NodeSelectorTerm), names (key/value checks); used
by objects.validation, scheduler plugins, cluster controllers, the CLI and the API server.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, overload

from gpusched.errors import UsageError
from gpusched.objects.names import label_value_errors, qualified_name_errors
from gpusched.objects.types import LabelSelector, NodeSelectorTerm, Requirement

LABEL_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
EVERYTHING = LabelSelector()

# ----------------------------------------------------------------------------------------------
# Matching


def _as_int(text: str) -> int | None:
    try:
        return int(text, 10)
    except (TypeError, ValueError):
        return None


def requirement_matches(req: Requirement, labels: Mapping[str, str]) -> bool:
    """Upstream ``labels.Requirement.Matches`` / nodeaffinity semantics for one requirement."""
    op = req.operator
    if op == "In":
        return req.key in labels and labels[req.key] in req.values
    if op == "NotIn":
        return req.key not in labels or labels[req.key] not in req.values
    if op == "Exists":
        return req.key in labels
    if op == "DoesNotExist":
        return req.key not in labels
    if op in ("Gt", "Lt"):
        if req.key not in labels or len(req.values) != 1:
            return False
        have, want = _as_int(labels[req.key]), _as_int(req.values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want
    return False


def matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """Whether ``labels`` satisfy ``selector`` (empty selects all; None selects nothing)."""
    if selector is None:
        return False
    for key, value in selector.match_labels:
        if labels.get(key) != value:
            return False
    return all(requirement_matches(req, labels) for req in selector.match_expressions)


def map_matches(node_selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """A pod's ``spec.nodeSelector`` map: every key present with the same value."""
    return all(labels.get(key) == value for key, value in node_selector.items())


def term_matches(term: NodeSelectorTerm, labels: Mapping[str, str], node_name: str = "") -> bool:
    """One NodeSelectorTerm: expressions and fields ANDed; an empty term matches nothing.

    ``matchFields`` supports only the key ``metadata.name`` (any other key does not match).
    """
    if not term.match_expressions and not term.match_fields:
        return False
    for req in term.match_fields:
        if req.key != "metadata.name" or not requirement_matches(req, {"metadata.name": node_name}):
            return False
    return all(requirement_matches(req, labels) for req in term.match_expressions)


def node_selector_matches(terms: Iterable[NodeSelectorTerm], labels: Mapping[str, str],
                          node_name: str = "") -> bool:
    """A NodeSelector: terms ORed (no terms at all matches nothing, as upstream)."""
    return any(term_matches(term, labels, node_name) for term in terms)


# ----------------------------------------------------------------------------------------------
# Building from dicts (no validation: objects.validation reports bad selectors with field paths)


def requirement_from_dict(d: Mapping[str, Any]) -> Requirement:
    values = d.get("values") or ()
    return Requirement(str(d.get("key", "")), str(d.get("operator", "")),
                       tuple(str(v) for v in values) if isinstance(values, (list, tuple)) else ())


@overload
def selector_from_dict(d: Mapping[str, Any]) -> LabelSelector: ...
@overload
def selector_from_dict(d: None) -> None: ...
@overload
def selector_from_dict(d: Mapping[str, Any] | None) -> LabelSelector | None: ...
def selector_from_dict(d: Mapping[str, Any] | None) -> LabelSelector | None:
    """metav1.LabelSelector dict -> LabelSelector; ``None`` stays ``None`` (selects nothing)."""
    if d is None:
        return None
    labels = d.get("matchLabels") or {}
    expressions = d.get("matchExpressions") or ()
    if not isinstance(labels, dict) or not isinstance(expressions, (list, tuple)):
        return LabelSelector((("", "\0invalid"),))   # malformed (unvalidated) selector: matches nothing
    return LabelSelector(
        match_labels=tuple(sorted((str(k), str(v)) for k, v in labels.items())),
        match_expressions=tuple(requirement_from_dict(e) for e in expressions if isinstance(e, dict)),
    )


def term_from_dict(d: Mapping[str, Any]) -> NodeSelectorTerm:
    return NodeSelectorTerm(
        match_expressions=tuple(requirement_from_dict(e) for e in d.get("matchExpressions") or ()),
        match_fields=tuple(requirement_from_dict(e) for e in d.get("matchFields") or ()),
    )


def selector_to_dict(selector: LabelSelector) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if selector.match_labels:
        out["matchLabels"] = dict(selector.match_labels)
    if selector.match_expressions:
        out["matchExpressions"] = [
            {"key": r.key, "operator": r.operator, **({"values": list(r.values)} if r.values else {})}
            for r in selector.match_expressions]
    return out


def selector_to_string(selector: LabelSelector | None) -> str:
    """kubectl's rendering (``app=web,tier notin (db)``); ``<none>`` for None."""
    if selector is None:
        return "<none>"
    parts = [f"{k}={v}" for k, v in selector.match_labels]
    for r in selector.match_expressions:
        if r.operator == "In":
            parts.append(f"{r.key} in ({','.join(sorted(r.values))})")
        elif r.operator == "NotIn":
            parts.append(f"{r.key}!={r.values[0]}" if len(r.values) == 1
                         else f"{r.key} notin ({','.join(sorted(r.values))})")
        elif r.operator == "Exists":
            parts.append(r.key)
        elif r.operator == "DoesNotExist":
            parts.append(f"!{r.key}")
        elif r.operator in ("Gt", "Lt"):
            parts.append(f"{r.key}{'>' if r.operator == 'Gt' else '<'}{r.values[0] if r.values else ''}")
    return ",".join(parts)


# ----------------------------------------------------------------------------------------------
# kubectl's label selector string syntax

_TOKEN = re.compile(r"\s*(?:(?P<op>==|!=|=|\(|\)|,|!|>|<)|(?P<word>[^\s=!(),<>]+))")


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None:  # pragma: no cover - every non-space character is a token
            raise UsageError(f'unable to parse label selector "{text}"')
        out.append(match.group("op") or match.group("word"))
        pos = match.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text, self.toks, self.pos = text, _tokens(text), 0

    def fail(self, reason: str) -> UsageError:
        return UsageError(f'unable to parse label selector "{self.text}": {reason}')

    def peek(self) -> str | None:
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def take(self) -> str | None:
        tok = self.peek()
        self.pos += 1
        return tok

    def word(self, what: str) -> str:
        tok = self.peek()
        if tok is None or tok in ("==", "!=", "=", "(", ")", ",", "!", ">", "<"):
            raise self.fail(f"found '{tok or ''}', expected: {what}")
        self.pos += 1
        return tok

    def key(self) -> str:
        key = self.word("identifier")
        errors = qualified_name_errors(key)
        if errors:
            raise self.fail(f'invalid label key "{key}": {"; ".join(errors)}')
        return key

    def value(self) -> str:
        tok = self.peek()
        if tok in (None, ",", ")"):
            return ""  # `a=` selects the empty value
        value = self.word("value")
        errors = label_value_errors(value)
        if errors:
            raise self.fail(f'invalid label value: "{value}": {"; ".join(errors)}')
        return value

    def value_set(self) -> tuple[str, ...]:
        if self.take() != "(":
            raise self.fail("expected '(' after 'in' or 'notin'")
        values: list[str] = []
        while True:
            values.append(self.value())
            tok = self.take()
            if tok == ")":
                break
            if tok != ",":
                raise self.fail("expected ',' or ')' in a value set")
        if values == [""]:
            raise self.fail("for 'in', 'notin' operators, values set can't be empty")
        return tuple(dict.fromkeys(values))

    def parse(self) -> LabelSelector:
        match_labels: list[tuple[str, str]] = []
        expressions: list[Requirement] = []
        if not self.toks:
            return EVERYTHING
        while True:
            if self.peek() == "!":
                self.take()
                expressions.append(Requirement(self.key(), "DoesNotExist"))
            else:
                key = self.key()
                op = self.peek()
                if op in (None, ","):
                    expressions.append(Requirement(key, "Exists"))
                elif op in ("=", "=="):
                    self.take()
                    match_labels.append((key, self.value()))
                elif op == "!=":
                    self.take()
                    expressions.append(Requirement(key, "NotIn", (self.value(),)))
                elif op in ("in", "notin"):
                    self.take()
                    expressions.append(Requirement(key, "In" if op == "in" else "NotIn", self.value_set()))
                elif op in (">", "<"):
                    self.take()
                    value = self.value()
                    if _as_int(value) is None:
                        raise self.fail(f"for 'Gt', 'Lt' operators, the value must be an integer: \"{value}\"")
                    expressions.append(Requirement(key, "Gt" if op == ">" else "Lt", (value,)))
                else:
                    raise self.fail(f"found '{op}', expected: in, notin, =, ==, !=, gt, lt")
            tok = self.take()
            if tok is None:
                break
            if tok != ",":
                raise self.fail(f"found '{tok}', expected: ',' or 'end of string'")
            if self.peek() is None:
                raise self.fail("found '', expected: identifier after ','")
        return LabelSelector(tuple(match_labels), tuple(expressions))


def parse_selector(text: str) -> LabelSelector:
    """Parse kubectl's ``-l`` syntax; ``""`` selects everything. Bad syntax -> ``UsageError``.

    >>> parse_selector("app=web,gpu in (a100, v100),!spot")
    LabelSelector(match_labels=(('app', 'web'),), match_expressions=(Requirement(key='gpu', operator='In', values=('a100', 'v100')), Requirement(key='spot', operator='DoesNotExist', values=())))
    """
    return _Parser(text).parse()


# ----------------------------------------------------------------------------------------------
# Field selectors

FieldRequirement = tuple[str, str, str]   # (dotted path, "=" | "!=", value)


def parse_field_selector(text: str) -> list[FieldRequirement]:
    """``"spec.nodeName=x,status.phase!=Running"`` -> ``[("spec.nodeName", "=", "x"), ...]``."""
    out: list[FieldRequirement] = []
    if not text.strip():
        return out
    for part in text.split(","):
        part = part.strip()
        for op in ("!=", "==", "="):
            path, sep, value = part.partition(op)
            if sep:
                break
        if not sep or not path.strip():
            raise UsageError(f"invalid selector: '{text}'; can't understand '{part}'")
        out.append((path.strip(), "!=" if op == "!=" else "=", value.strip()))
    return out


def _field_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string a field selector compares: ``""`` for a missing field."""
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, dict) or part not in current:
            return ""
        current = current[part]
    if isinstance(current, (dict, list)):
        return ""
    return _field_text(current)


def field_matches(obj: Mapping[str, Any], selector: Iterable[FieldRequirement]) -> bool:
    for path, op, value in selector:
        equal = field_value(obj, path) == value
        if equal != (op == "="):
            return False
    return True


def selected(items: list[dict[str, Any]], label_sel: LabelSelector | None,
             field_sel: list[FieldRequirement] | None) -> list[dict[str, Any]]:
    """``items`` matching the label selector (``-l``) and then the field selector."""
    if label_sel is not None:
        items = [b for b in items if matches(label_sel, (b.get("metadata") or {}).get("labels") or {})]
    if field_sel is not None:
        items = [b for b in items if field_matches(b, field_sel)]
    return items
