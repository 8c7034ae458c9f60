"""The sbatch controller reaches the cluster's settle order through a slot
(``cluster.controllers.installed``), filled from above the cluster layer: by the CLI whenever it
builds its commands, so every command and ``serve`` release held sbatch Jobs."""

from __future__ import annotations

import pytest

from gpusched.cluster.controllers import installed
from gpusched.cluster.controllers.registry import CONTROLLERS, KEYED
from gpusched.slurm import controller


@pytest.mark.parametrize("command", ["squeue", "get", "serve"])
def test_cli_parser_installs_the_sbatch_controller(monkeypatch, command):
    """Every command fills the slot (not only the Slurm ones, whose module the parser of another
    command does not import); what fills it runs ``slurm.controller.reconcile``."""
    from gpusched.cli.parser import build_parser

    monkeypatch.delitem(installed._INSTALLED, "sbatch", raising=False)
    assert installed.installed("sbatch") is None
    build_parser([command])
    recorder = Recorder()
    monkeypatch.setattr(controller, "reconcile", recorder)
    installed.slot("sbatch")("view", "changes")
    assert recorder.calls == [("view", "changes")]


def test_slot_keeps_its_place_in_the_settle_order():
    names = [name for name, _ in CONTROLLERS]
    assert names.index("replicaset") < names.index("sbatch") < names.index("job")
    assert "sbatch" in KEYED


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[object, object]] = []

    def __call__(self, view, changes=None) -> None:
        self.calls.append((view, changes))


@pytest.mark.parametrize("filled", [True, False], ids=["installed-runs", "empty-does-nothing"])
def test_slot_runs_what_is_installed(monkeypatch, filled):
    recorder = Recorder()
    monkeypatch.delitem(installed._INSTALLED, "sbatch", raising=False)
    if filled:
        installed.install("sbatch", recorder)
        monkeypatch.setitem(installed._INSTALLED, "sbatch", recorder)   # undone after the test
    installed.slot("sbatch")("view", "changes")
    assert recorder.calls == ([("view", "changes")] if filled else [])


@pytest.mark.parametrize("call", [lambda: installed.install("kueue", controller.reconcile),
                                  lambda: installed.slot("kueue")],
                         ids=["install-unknown", "slot-unknown"])
def test_unknown_slot_is_refused(call):
    with pytest.raises(ValueError, match=r"no controller slot 'kueue' \(slots: sbatch\)"):
        call()
