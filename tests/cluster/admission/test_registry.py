"""The admission registry names each plugin's module and kinds, so that a write imports only the
plugins of its kind (``cluster.admission.registry``): each line must say what its plugin says."""

from __future__ import annotations

import json
import sys

import pytest

from gpusched.cluster.admission import registry
from gpusched.cluster.admission.plugin import CREATE, DELETE, UPDATE
from tests.conftest import REPO_ROOT, run_process


@pytest.mark.parametrize("entry", registry.ORDERED, ids=lambda entry: entry.module)
def test_an_entry_names_the_kinds_its_plugin_handles(entry: registry.Entry) -> None:
    assert entry.kinds == entry.plugin().kinds


# The kinds a request names and the plugins whose modules it may import (every request: the two
# plugins of every kind).
EVERY_KIND = {"namespace_lifecycle", "resource_quota"}
IMPORTED = {
    "pod": ("Pod", EVERY_KIND | {"limit_ranger", "priority", "default_toleration_seconds",
                                 "runtime_class", "device_holdings"}),
    "job": ("Job", EVERY_KIND | {"kueue_job", "kueue_vjob"}),
    "node": ("Node", EVERY_KIND),
}
PROBE = ("import json, sys\n"
         "from gpusched.cluster.admission import registry\n"
         "for operation in ('CREATE', 'UPDATE', 'DELETE'):\n"
         "    registry.mutating(sys.argv[1], operation)\n"
         "    registry.validating(sys.argv[1], operation)\n"
         "prefix = 'gpusched.cluster.admission.'\n"
         "modules = {m[len(prefix):] for m in sys.modules if m.startswith(prefix)}\n"
         "print(json.dumps(sorted(modules & set(sys.argv[2:]))))\n")


@pytest.mark.parametrize("kind,expected", IMPORTED.values(), ids=IMPORTED.keys())
def test_a_request_imports_the_plugins_of_its_kind_alone(kind: str, expected: set[str]) -> None:
    plugin_modules = [entry.module for entry in registry.ORDERED]
    proc = run_process([sys.executable, "-c", PROBE, kind, *plugin_modules], cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads(proc.stdout)) == expected


def test_the_hooks_of_a_kind_are_its_plugins_in_order() -> None:
    """What the deferred entries answer is what the plugins themselves say, in the same order."""
    every = registry.plugins()
    for kind in ("Pod", "Job", "JobSet", "ConfigMap", "Workload", "Node", "Namespace"):
        for operation in (CREATE, UPDATE, DELETE):
            for subresource in ("", "status"):
                wanted = [p for p in every if p.handles(kind, operation, subresource)]
                assert registry.mutating(kind, operation, subresource) == tuple(
                    p.mutate for p in wanted if p.mutate is not None)
                assert registry.validating(kind, operation, subresource) == tuple(
                    p.validate for p in wanted if p.validate is not None)
