"""Label selectors, node selector requirements and field selectors."""

import pytest

from gpusched.errors import UsageError
from gpusched.objects.selectors import (
    field_matches, map_matches, matches, node_selector_matches, parse_field_selector, parse_selector,
    requirement_matches, selector_from_dict, selector_to_string, term_matches,
)
from gpusched.objects.types import LabelSelector, NodeSelectorTerm, Requirement

NODE = {"gpu": "a100", "gpus": "8", "zone": "z1", "mem": "40GB"}

REQUIREMENT_CASES = [
    ("in-hit", Requirement("gpu", "In", ("a100", "v100")), True),
    ("in-miss", Requirement("gpu", "In", ("t4",)), False),
    ("in-absent", Requirement("spot", "In", ("true",)), False),
    ("notin-hit", Requirement("gpu", "NotIn", ("t4",)), True),
    ("notin-miss", Requirement("gpu", "NotIn", ("a100",)), False),
    ("notin-absent-matches", Requirement("spot", "NotIn", ("true",)), True),
    ("exists", Requirement("zone", "Exists"), True),
    ("exists-absent", Requirement("spot", "Exists"), False),
    ("doesnotexist", Requirement("spot", "DoesNotExist"), True),
    ("doesnotexist-present", Requirement("zone", "DoesNotExist"), False),
    ("gt-true", Requirement("gpus", "Gt", ("4",)), True),
    ("gt-equal-false", Requirement("gpus", "Gt", ("8",)), False),
    ("lt-true", Requirement("gpus", "Lt", ("9",)), True),
    ("lt-false", Requirement("gpus", "Lt", ("2",)), False),
    ("gt-non-integer-label", Requirement("mem", "Gt", ("1",)), False),
    ("gt-non-integer-value", Requirement("gpus", "Gt", ("x",)), False),
    ("gt-absent", Requirement("spot", "Gt", ("1",)), False),
    ("gt-two-values", Requirement("gpus", "Gt", ("1", "2")), False),
    ("unknown-operator", Requirement("gpu", "Like", ("a100",)), False),
]


@pytest.mark.parametrize("req,expected", [c[1:] for c in REQUIREMENT_CASES], ids=[c[0] for c in REQUIREMENT_CASES])
def test_requirement_matches(req, expected):
    assert requirement_matches(req, NODE) is expected


def test_empty_term_matches_nothing():
    assert not term_matches(NodeSelectorTerm(), NODE, "n1")
    assert not node_selector_matches([], NODE, "n1")


@pytest.mark.parametrize("term,expected", [
    (NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", ("n1",)),)), True),
    (NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", ("n2",)),)), False),
    (NodeSelectorTerm(match_fields=(Requirement("metadata.name", "NotIn", ("n2",)),)), True),
    (NodeSelectorTerm(match_fields=(Requirement("metadata.uid", "In", ("n1",)),)), False),
    (NodeSelectorTerm((Requirement("gpu", "In", ("a100",)),), (Requirement("metadata.name", "In", ("n1",)),)), True),
    (NodeSelectorTerm((Requirement("gpu", "In", ("t4",)),), (Requirement("metadata.name", "In", ("n1",)),)), False),
], ids=["field-in", "field-in-miss", "field-notin", "field-unsupported-key", "expr-and-field", "expr-fails"])
def test_term_matches(term, expected):
    assert term_matches(term, NODE, "n1") is expected


def test_terms_are_ored():
    miss = NodeSelectorTerm((Requirement("gpu", "In", ("t4",)),))
    hit = NodeSelectorTerm((Requirement("zone", "Exists"),))
    assert node_selector_matches([miss, hit], NODE)
    assert not node_selector_matches([miss], NODE)


PARSE_CASES = [
    ("empty", "", LabelSelector()),
    ("equals", "app=web", LabelSelector((("app", "web"),))),
    ("double-equals", "app==web", LabelSelector((("app", "web"),))),
    ("not-equals", "app!=web", LabelSelector((), (Requirement("app", "NotIn", ("web",)),))),
    ("in", "env in (a, b)", LabelSelector((), (Requirement("env", "In", ("a", "b")),))),
    ("notin", "env notin (a)", LabelSelector((), (Requirement("env", "NotIn", ("a",)),))),
    ("exists", "gpu", LabelSelector((), (Requirement("gpu", "Exists"),))),
    ("not-exists", "!spot", LabelSelector((), (Requirement("spot", "DoesNotExist"),))),
    ("gt", "gpus>4", LabelSelector((), (Requirement("gpus", "Gt", ("4",)),))),
    ("prefixed-key", "nvidia.com/gpu.product=A100", LabelSelector((("nvidia.com/gpu.product", "A100"),))),
    ("combined", "app=web,env in (a,b),!spot,gpu", LabelSelector(
        (("app", "web"),),
        (Requirement("env", "In", ("a", "b")), Requirement("spot", "DoesNotExist"), Requirement("gpu", "Exists")))),
    ("empty-value", "app=", LabelSelector((("app", ""),))),
]


@pytest.mark.parametrize("text,expected", [c[1:] for c in PARSE_CASES], ids=[c[0] for c in PARSE_CASES])
def test_parse_selector(text, expected):
    assert parse_selector(text) == expected


@pytest.mark.parametrize("text", ["app=web,", "a b", "env in a", "env in ()", "=x", "a=b=c", "gpus>x",
                                  "bad key=x", "a/b/c=x", "app=not valid!", "env in (a b)"],
                         ids=["trailing-comma", "two-words", "in-no-paren", "in-empty", "no-key", "double-op",
                              "gt-non-integer", "space-in-key", "two-slashes", "bad-value", "set-no-comma"])
def test_parse_selector_errors_quote_input(text):
    with pytest.raises(UsageError) as err:
        parse_selector(text)
    assert f'"{text}"' in str(err.value)


@pytest.mark.parametrize("text,labels,expected", [
    ("app=web", {"app": "web"}, True),
    ("app=web", {"app": "db"}, False),
    ("app!=web", {}, True),
    ("app=web,tier=front", {"app": "web"}, False),
    ("env in (a,b)", {"env": "b"}, True),
    ("!spot", {"spot": "1"}, False),
    ("", {"x": "y"}, True),
], ids=["eq", "eq-miss", "neq-absent", "and", "in", "not-exists", "empty-all"])
def test_matches_parsed(text, labels, expected):
    assert matches(parse_selector(text), labels) is expected


def test_none_selector_matches_nothing_empty_matches_all():
    assert not matches(None, {"a": "b"})
    assert matches(LabelSelector(), {})
    assert selector_from_dict(None) is None
    assert selector_from_dict({}) == LabelSelector()


def test_selector_from_dict():
    sel = selector_from_dict({"matchLabels": {"b": "2", "a": "1"},
                              "matchExpressions": [{"key": "env", "operator": "In", "values": ["x"]}]})
    assert sel.match_labels == (("a", "1"), ("b", "2"))
    assert matches(sel, {"a": "1", "b": "2", "env": "x"})
    assert not matches(sel, {"a": "1", "b": "2", "env": "y"})
    assert selector_to_string(sel) == "a=1,b=2,env in (x)"


def test_map_matches():
    assert map_matches({"gpu": "a100"}, NODE)
    assert not map_matches({"gpu": "t4"}, NODE)
    assert map_matches({}, {})


def test_parse_field_selector():
    assert parse_field_selector("spec.nodeName=x, status.phase!=Running,a==b") == [
        ("spec.nodeName", "=", "x"), ("status.phase", "!=", "Running"), ("a", "=", "b")]
    assert parse_field_selector("") == []
    with pytest.raises(UsageError, match="invalid selector: 'foo'; can't understand 'foo'"):
        parse_field_selector("foo")


POD = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1", "unschedulable": True},
       "status": {"phase": "Running"}, "involvedObject": {"name": "p", "kind": "Pod"}}


@pytest.mark.parametrize("text,expected", [
    ("spec.nodeName=n1", True),
    ("spec.nodeName=n2", False),
    ("status.phase!=Running", False),
    ("status.phase!=Succeeded,status.phase!=Failed", True),
    ("metadata.namespace=ns,involvedObject.name=p", True),
    ("spec.missing=", True),
    ("spec.unschedulable=true", True),
    ("metadata=x", False),
], ids=["eq", "eq-miss", "neq", "two-neq", "nested", "missing-is-empty", "bool", "mapping-is-empty"])
def test_field_matches(text, expected):
    assert field_matches(POD, parse_field_selector(text)) is expected


def test_malformed_selector_dict_matches_nothing():
    assert not matches(selector_from_dict({"matchLabels": ["a"]}), {"a": "b"})
    assert not matches(selector_from_dict({"matchExpressions": "x"}), {})


@pytest.mark.parametrize("text", ["app=web", "app!=web", "env in (a,b)", "env notin (a,b)", "gpu", "!spot",
                                  "gpus>4", "app=web,!spot,gpus<3"])
def test_selector_string_round_trip(text):
    assert parse_selector(selector_to_string(parse_selector(text))) == parse_selector(text)
    assert selector_to_string(parse_selector(text)) == text
