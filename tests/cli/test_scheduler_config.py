"""``gpusched scheduler --config``: the profiles it serves resolve against the in-tree plugins
merged with the FGD study's policies (fed from above: the scheduler layer does not import
``gpusched.policies``), while plain ``parse_config`` knows only the in-tree plugins."""

from __future__ import annotations

import pytest

from gpusched.cli.scheduler_cmd import profiles_for
from gpusched.errors import UsageError
from gpusched.scheduler.profile import parse_config

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    score:
      enabled: [{name: PolicyBestFit, weight: 5}, {name: NodeOrder}]
"""


def test_served_profile_may_name_a_policy(tmp_path):
    path = tmp_path / "profile.yaml"
    path.write_text(CONFIG)
    (profile,) = profiles_for(str(path), "my-scheduler")
    assert profile.scheduler_name == "my-scheduler"
    scores = [(s.name, s.weight) for s in profile.points["score"]]
    assert ("PolicyBestFit", 5) in scores and ("NodeOrder", 1) in scores


def test_in_tree_registry_alone_does_not_know_policies():
    with pytest.raises(UsageError, match=r'^profiles\[0\]\.plugins\.score\.enabled\[0\]\.name: '
                                         r'Invalid value: "PolicyBestFit": unknown plugin; '):
        parse_config(CONFIG)
