"""``cli.jsonpath`` compared with real kubectl 1.32's JSONPath printer on one pod, offline.

kubectl prints a local manifest through its JSONPath printer without a server
(``kubectl label --local -f POD x=y -o jsonpath=T``), so each case renders the same template
with ``jsonpath.render`` on the same object (the label added) and compares: the output byte for
byte, or, where kubectl refuses the template, that kubectl fails and its message carries ours.
The cases pin client-go ``util/jsonpath`` (jsonpath.go evalArray, evalRecursive, evalWildcard,
evalFilter, evalIdentifier; parser.go parseAction, parseRecursive, parseNumber, parseQuote,
parseArray) where a branch has no other test. Templates whose output follows Go's random map
order (``..`` over a map of several keys) are left out.
"""

from __future__ import annotations

import json
import shutil

import pytest

from gpusched.cli import jsonpath
from tests.conftest import run_process

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl 1.32 is not installed")

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"},
                               {"name": "c", "image": "z"}]}}

CASES = {
    "evalArray-index-out-of-bounds": "{.spec.containers[5].name}",
    "evalArray-negative-index-out-of-bounds": "{.spec.containers[-5].name}",
    "evalArray-start-after-end": "{.spec.containers[2:1].name}",
    "evalArray-end-out-of-bounds": "{.spec.containers[0:9].name}",
    "evalArray-zero-step": "{.spec.containers[::0].name}",
    "evalArray-empty-range": "{.spec.containers[1:1].name}",
    "evalArray-negative-start": "{.spec.containers[-1:].name}",
    "evalArray-step": "{.spec.containers[::2].name}",
    "evalArray-not-a-list": "{.spec.containers[0].name[0]}",
    "evalRecursive-field": "{.spec..name}",
    "evalRecursive-after-wildcard": "{.spec.containers[*]..name}",
    "evalRecursive-strings-are-leaves": "{.metadata.labels..}",
    "evalWildcard-string-bytes": "{.metadata.name.*}",
    "evalFilter-equal": '{.spec.containers[?(@.name=="b")].image}',
    "evalFilter-exists": "{.spec.containers[?(@.image)].name}",
    "evalFilter-incompatible-types": "{.spec.containers[?(@.name<1)].image}",
    "evalIdentifier-unknown": "{foo}",
    "parseRecursive-twice": "{....name}",
    "parseAction-unrecognized-character": "{.metadata.name ]}",
    "parseAction-unclosed": "{.x.y",
    "parseQuote-bad-escape": '{"\\q"}',
    "parseNumber-bad": "{1.2.3}",
    "parseArray-bad-index": '{.spec.containers[0]["name"]}',
}


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    path = tmp_path_factory.mktemp("jsonpath") / "pod.json"
    path.write_text(json.dumps(POD))
    return path


@pytest.mark.parametrize("template", CASES.values(), ids=CASES.keys())
def test_render_matches_kubectl(manifest, template):
    real = run_process([KUBECTL, "label", "--local", "-f", str(manifest), "x=y", "-o",
                           f"jsonpath={template}"])
    labelled = {**POD, "metadata": {**POD["metadata"], "labels": {"x": "y"}}}
    try:
        mine = jsonpath.render(template, labelled)
    except jsonpath.JSONPathError as error:
        assert real.returncode == 1, real.stdout
        assert str(error) in real.stderr
        return
    assert real.returncode == 0, real.stderr
    assert mine == real.stdout
