"""objects.schema: a built-in kind's schema is found, and its ``$ref``s followed, from the
official spec alone, without parsing the own kinds' YAML; the own kinds are added beside it,
sharing no kind and no definition name, so either way of looking a schema up gives the same."""

from __future__ import annotations

import sys

import pytest

from gpusched.objects import schema
from tests.conftest import REPO_ROOT, run_process

PROBE = ("import sys\n"
         "from gpusched.objects import schema\n"
         "found = schema.schema_for(sys.argv[1], sys.argv[2])\n"
         "schema.resolve(schema.load().definitions[found.name] if found.custom else\n"
         "               {'$ref': '#/definitions/' + found.name})\n"
         "print(found.custom, schema.load.cache_info().currsize)\n")
LOOKUPS = {"pod": ("v1", "Pod", "False 0"),
           "deployment": ("apps/v1", "Deployment", "False 0"),
           "older-version": ("policy/v1beta1", "PodDisruptionBudget", "False 0"),
           "nodepool": ("gpusched.io/v1alpha1", "NodePool", "True 1"),
           "clusterpolicy": ("nvidia.com/v1", "ClusterPolicy", "True 1")}


@pytest.mark.parametrize("api_version,kind,expected", LOOKUPS.values(), ids=LOOKUPS.keys())
def test_own_kinds_are_read_only_for_an_own_kind(api_version: str, kind: str,
                                                 expected: str) -> None:
    proc = run_process([sys.executable, "-c", PROBE, api_version, kind], cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == expected


def test_own_kinds_share_nothing_with_the_official_spec() -> None:
    official, every = schema._official(), schema.load()
    own_kinds = set(every.kinds) - set(official.kinds)
    assert own_kinds and len(every.kinds) == len(official.kinds) + len(own_kinds)
    assert len(every.definitions) == len(official.definitions) + len(own_kinds)
    assert all(every.definitions[name] is node for name, node in official.definitions.items())


@pytest.mark.parametrize("key", sorted(schema.load().kinds), ids=str)
def test_schema_for_gives_what_load_holds(key: str) -> None:
    api_version, kind = key.split(" ")
    assert schema.schema_for(api_version, kind) == schema.load().kinds[key]
