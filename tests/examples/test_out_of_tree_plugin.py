"""examples/out-of-tree-plugin: a real pip install of the example distribution (into a target
directory, no build isolation, no dependencies) makes its ``gpusched.plugins`` entry point a
plugin that profiles can name; and a broken entry point is one line naming it.

Upstream's counterpart is an out-of-tree registry merged into the in-tree one
(cmd/kube-scheduler/app/server.go ``WithPlugin``; runtime.Registry.Merge)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from gpusched.errors import UsageError
from gpusched.scheduler.registry import ENTRY_POINT_GROUP, _entry_point_entry
from tests.conftest import run_process

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "out-of-tree-plugin"
CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: prefer-labeled
  plugins:
    score:
      enabled: [{name: PreferLabeledNodes, weight: 5}]
  pluginConfig:
  - name: PreferLabeledNodes
    args: {label: example.com/preferred, value: "true"}
"""
# n2 carries the label but already runs a pod, so kube-scheduler's default scoring
# (LeastAllocated) alone would never pick it.
SCRIPT = """\
import json, sys
from gpusched.cli.scheduler_cmd import profiles_for
from gpusched.scheduler.plugins import default_registry
from gpusched.scheduler.runner import Scheduler
from tests.scheduler.builders import labelled_snapshot, make_pod

profiles = profiles_for(sys.argv[1], "prefer-labeled")
entry = default_registry()["PreferLabeledNodes"]
snapshot = labelled_snapshot({"n1": {}, "n2": {"example.com/preferred": "true"}, "n3": {}},
                             placed={"n2": [make_pod("busy", cpu="8")]})
scheduler = Scheduler(snapshot, profiles)
result = scheduler.schedule_one(make_pod("new", cpu="1", scheduler_name="prefer-labeled"))
plain = Scheduler(labelled_snapshot({"n1": {}, "n2": {"example.com/preferred": "true"}, "n3": {}},
                                    placed={"n2": [make_pod("busy", cpu="8")]}))
print(json.dumps({"file": sys.modules[entry.cls.__module__].__file__, "points": entry.points,
                  "node": result.node, "without": plain.schedule_one(make_pod("new", cpu="1")).node}))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    source = tmp_path_factory.mktemp("src") / EXAMPLE.name     # setuptools builds in the source
    shutil.copytree(EXAMPLE, source)
    run_process([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", "--target", str(target), str(source)],
                check=True)
    return target


def test_installed_example_plugin_scores_through_a_profile(installed: Path, tmp_path: Path) -> None:
    (tmp_path / "profile.yaml").write_text(CONFIG)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(installed), str(ROOT)])}
    out = run_process([sys.executable, "-c", SCRIPT, str(tmp_path / "profile.yaml")], cwd=tmp_path,
                      env=env, check=True)
    got = json.loads(out.stdout)
    assert Path(got["file"]).parent == installed        # the pip-installed module, not the source
    assert got["points"] == ["score"]
    assert got["node"] == "n2" and got["without"] in ("n1", "n3")


def test_without_the_install_the_plugin_is_unknown(tmp_path: Path) -> None:
    (tmp_path / "profile.yaml").write_text(CONFIG)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = run_process([sys.executable, "-c", SCRIPT, str(tmp_path / "profile.yaml")], cwd=tmp_path,
                      env=env)
    assert out.returncode != 0
    assert ('UsageError: profiles[0].plugins.score.enabled[0].name: Invalid value: '
            '"PreferLabeledNodes": unknown plugin; registered: ') in out.stderr


HERE = "tests.examples.test_out_of_tree_plugin"


class Named:
    name = "Other"

    def score(self, state: object, pod: object, snapshot: object, nodes: object) -> object:
        return nodes


class Nothing:
    name = "Nothing"


@pytest.mark.parametrize("name,value,message", [
    ("Gone", "gpusched_no_such_module:Plugin",
     "cannot load: ModuleNotFoundError: No module named 'gpusched_no_such_module'"),
    ("dumps", "json:dumps", "not a class"),
    ("Mismatch", f"{HERE}:Named", "the class's name is 'Other', not 'Mismatch'"),
    ("Nothing", f"{HERE}:Nothing", "implements no extension point"),
], ids=["import-error", "not-a-class", "name-mismatch", "no-point"])
def test_broken_entry_point_is_one_line_naming_it(name: str, value: str, message: str) -> None:
    point = EntryPoint(name, value, ENTRY_POINT_GROUP)
    with pytest.raises(UsageError) as caught:
        _entry_point_entry(point, ENTRY_POINT_GROUP)
    text = str(caught.value)
    assert text == f"plugin entry point {name} = {value} (group gpusched.plugins): {message}"
    assert "\n" not in text
