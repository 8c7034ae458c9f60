"""``View.update``: what counts as a change (a new resourceVersion, a MODIFIED in the change
log) is the body's canonical JSON without its resourceVersion; a spec change also bumps
``metadata.generation`` (apiserver: generation moves with the spec only)."""

from __future__ import annotations

from typing import Any

import pytest

from gpusched.cluster.apiserver.view import View, copy_tree
from gpusched.cluster.apiserver.sameness import same_but_version, same_json, without_version
from gpusched.objects.tree import copy_sharing


def stored(view: View) -> dict[str, Any]:
    return view.create({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "c", "namespace": "default"},
                        "data": {"k": "v"}, "spec": {"n": 1, "flag": False}})


def _same(body: dict[str, Any]) -> None:
    pass


def _data(body: dict[str, Any]) -> None:
    body["data"]["k"] = "w"


def _int_to_float(body: dict[str, Any]) -> None:
    body["spec"]["n"] = 1.0          # == in Python, another JSON text


def _false_to_zero(body: dict[str, Any]) -> None:
    body["spec"]["flag"] = 0         # == in Python, another JSON text


def _stale_version(body: dict[str, Any]) -> None:
    body["metadata"]["resourceVersion"] = "1"   # the version alone is no change


@pytest.mark.parametrize("edit, changed, generation", [
    (_same, False, 1),
    (_stale_version, False, 1),
    (_data, True, 1),
    (_int_to_float, True, 2),
    (_false_to_zero, True, 2),
], ids=["identical", "only-the-resourceVersion", "data", "spec-1-to-1.0", "spec-false-to-0"])
def test_update_counts_a_change_of_the_json_text(edit, changed, generation):
    view = View()
    old = stored(view)
    new = copy_tree(old)
    edit(new)
    assert view.update(new) is changed
    current = view.get("ConfigMap", "c", "default")
    assert (current["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"]) is changed
    assert current["metadata"]["generation"] == generation


def _shared_spec_data(old: dict[str, Any]) -> dict[str, Any]:
    new = copy_sharing(old, "spec")       # a status write shares the stored spec
    new["data"]["k"] = "w"
    return new


def _shared_spec_same(old: dict[str, Any]) -> dict[str, Any]:
    return copy_sharing(old, "spec")


@pytest.mark.parametrize("build, changed", [
    (_shared_spec_data, True),
    (_shared_spec_same, False),
], ids=["shared-spec-data-changed", "shared-spec-nothing-changed"])
def test_update_of_a_body_sharing_the_stored_spec(build, changed):
    """``objects.tree.copy_sharing``: the spec is the stored object itself, so the spec is the
    same JSON (no generation bump), and the stored body before the write is left as it was."""
    view = View()
    old = stored(view)
    before = copy_tree(old)
    assert view.update(build(old)) is changed
    current = view.get("ConfigMap", "c", "default")
    assert current["metadata"]["generation"] == 1
    assert current["spec"] is old["spec"]
    assert old == before


_BASE = {"kind": "Pod", "metadata": {"name": "p", "resourceVersion": "3"}, "spec": {"n": 1}}


@pytest.mark.parametrize("other", [
    {"kind": "Pod", "metadata": {"name": "p", "resourceVersion": "9"}, "spec": {"n": 1}},
    {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"n": 1}},
    {"kind": "Pod", "metadata": {"name": "q", "resourceVersion": "3"}, "spec": {"n": 1}},
    {"kind": "Pod", "metadata": {"name": "p", "resourceVersion": "3", "uid": "u"}, "spec": {"n": 1}},
    {"kind": "Pod", "metadata": {"name": "p", "resourceVersion": "3"}, "spec": {"n": 1.0}},
    {"kind": "Pod", "metadata": {"name": "p", "resourceVersion": "3"}, "spec": {"n": True}},
    {"kind": "Pod", "metadata": {"name": "p", "resourceVersion": "3"}},
    {"kind": "Pod", "spec": {"n": 1}},
    {"kind": "Pod", "metadata": None, "spec": {"n": 1}},
], ids=["other-version", "no-version", "other-name", "extra-uid", "1-vs-1.0", "1-vs-true",
        "no-spec", "no-metadata", "null-metadata"])
def test_same_but_version_decides_as_the_copies_compared_as_text(other):
    """``same_but_version`` answers what ``same_json`` of the two bodies without their
    resourceVersions answers, both ways round."""
    for a, b in ((_BASE, other), (other, _BASE)):
        assert same_but_version(a, b) is same_json(without_version(a), without_version(b))
