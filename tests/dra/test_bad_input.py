"""Stored objects of any shape parse and allocate without a traceback: the views read a field
of the wrong type as absent (validation refused such objects when they were written, so this
only guards against what slipped in), and the allocator answers ``Allocated`` or
``Unallocatable``."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.dra.allocator import Allocated, InUse, NodeFacts, Unallocatable, allocate
from gpusched.dra.model import Claim, DeviceClass, Slice

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=12)


def _with(base: dict[str, Any], junk: Any, *path: str) -> dict[str, Any]:
    body: Any = base
    for key in path[:-1]:
        body = body.setdefault(key, {})
    body[path[-1]] = junk
    return base


SLICE_FIELDS = [("spec", "devices"), ("spec", "pool"), ("spec", "nodeName"), ("spec", "sharedCounters"),
                ("spec", "nodeSelector")]
CLAIM_FIELDS = [("spec", "devices", "requests"), ("spec", "devices", "constraints"), ("spec", "devices", "config"),
                ("status", "allocation"), ("status", "reservedFor")]


@settings(max_examples=150, deadline=None)
@given(junk=JSON, slice_field=st.sampled_from(SLICE_FIELDS), claim_field=st.sampled_from(CLAIM_FIELDS))
def test_any_shape_parses_and_allocates(junk: Any, slice_field: tuple[str, ...], claim_field: tuple[str, ...]) -> None:
    slice_body = {"metadata": {"name": "s"}, "spec": {"driver": "d", "pool": {"name": "p", "resourceSliceCount": 1},
                                                     "nodeName": "n", "devices": [{"name": "x"}]}}
    claim_body = {"metadata": {"name": "c", "namespace": "ns"},
                  "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "k"}}]}}}
    slices = [Slice.from_object(_with(slice_body, junk, *slice_field))]
    claim = Claim.from_object(_with(claim_body, junk, *claim_field))
    klass = DeviceClass.from_object({"metadata": {"name": "k"}, "spec": {"selectors": junk}})
    got = allocate([claim], NodeFacts("n", {}), slices, {"k": klass}, InUse.from_claims([claim]))
    assert isinstance(got, (Allocated, Unallocatable))


def test_odd_nested_shapes() -> None:
    """Shapes a random draw rarely reaches: a term whose expressions are a string, an
    allocation whose devices are a list."""
    selector = {"nodeSelectorTerms": [{"matchExpressions": "abc", "matchFields": [1]}, "x"]}
    slices = [Slice.from_object({"metadata": {"name": "s"}, "spec": {"driver": "d", "pool": {"name": "p"},
                                                                      "nodeSelector": selector,
                                                                      "devices": [{"name": "x"}]}})]
    claim = Claim.from_object({"metadata": {"name": "c"}, "spec": {"devices": {"requests": [
        {"name": "r", "exactly": {"deviceClassName": "k"}}]}}, "status": {"allocation": {"devices": ["x"]}}})
    klass = DeviceClass.from_object({"metadata": {"name": "k"}, "spec": {}})
    got = allocate([claim], NodeFacts("n", {"a": "b"}), slices, {"k": klass}, InUse.from_claims([claim]))
    assert isinstance(got, Unallocatable)
