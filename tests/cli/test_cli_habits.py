"""Command-line habits kubectl users bring: global flags anywhere, usage errors that show the
command's own usage and exit 1, an "Examples:" block in every command's help with one
capitalisation style, completion scripts, ``apply -f DIR`` object by object vs ``--atomic``."""

from __future__ import annotations

import argparse
import re

import pytest

from gpusched.cli.parser import build_parser
from tests.cli.runner import Gpusched
from tests.conftest import REPO_ROOT, run_process


def commands() -> dict:
    parser = build_parser(["--help"])
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return dict(sub.choices)


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_command_help_has_examples_and_capitalised_texts(name):
    parser = commands()[name]
    text = parser.format_help()
    assert "\nExamples:\n  " in text, name
    for action in parser._actions:
        if action.help and action.help != "==SUPPRESS==":
            assert action.help[0] == action.help[0].upper(), (name, action.help)
    if parser.description:
        assert not parser.description[0].isalpha() or parser.description[0].isupper(), name


def every_parser(parser=None, name: str = "gpusched") -> dict:
    """Every command and subcommand parser by its full command line (aliases once)."""
    found: dict = {}
    for action in (parser or build_parser(["--help"]))._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                if all(sub is not seen for seen in found.values()):
                    found[f"{name} {sub_name}"] = sub
                    found.update(every_parser(sub, f"{name} {sub_name}"))
    return found


@pytest.mark.parametrize("name", sorted(every_parser()))
def test_every_subcommand_shows_real_examples_and_a_description(name):
    """kubectl's help habit, for subcommands too (rollout status, create job, slurm config...):
    a capitalised description and an Examples block whose lines run the command itself, not
    a pointer back to --help."""
    parser = every_parser()[name]
    text = parser.format_help()
    assert "\nExamples:\n  " in text, name
    examples = [line.strip() for line in text.split("\nExamples:\n", 1)[1].splitlines() if line.strip()]
    runs = [line for line in examples if name in line and not line.startswith("#")]
    assert runs and not all(line.endswith("--help") for line in runs), (name, examples)
    assert parser.description and parser.description[0].isupper(), (name, parser.description)


def test_global_flags_anywhere_and_usage_errors(tmp_path):
    g = Gpusched(tmp_path)
    g.cluster()
    g.ok("create", "namespace", "team-a")
    g.ok("create", "configmap", "c", "--from-literal=a=1", "-n", "team-a")
    everywhere = [g.run(*args, state=False) for args in (
        ("-n", "team-a", "--state", g.state, "get", "cm"),
        ("get", "cm", "--state", g.state, "-n", "team-a"),
        (f"--state={g.state}", "get", "-n", "team-a", "cm"))]
    assert {r.code for r in everywhere} == {0}
    assert len({r.out for r in everywhere}) == 1 and everywhere[0].lines[1].startswith("c ")
    bad = g.run("get", "pods", "--frob")
    assert bad.code == 1 and bad.err.startswith("usage: gpusched get ")
    assert "error: unrecognized arguments: --frob" in bad.err and "Traceback" not in bad.err
    assert g.run("describe").err.startswith("usage: gpusched describe ")


@pytest.mark.parametrize("shell,marker", [("bash", "complete -F _gpusched gpusched"),
                                          ("zsh", "#compdef gpusched"),
                                          ("fish", "complete -c gpusched -n '__fish_use_subcommand' -a get")])
def test_completion_scripts(tmp_path, shell, marker):
    out = Gpusched(tmp_path).ok("completion", shell).out
    assert marker in out
    if shell == "bash":
        done = run_process(["bash", "-n"], input=out)
        assert done.returncode == 0, done.stderr


def test_apply_folder_object_by_object_and_atomic(tmp_path):
    g = Gpusched(tmp_path)
    g.cluster()
    atomic = g.run("apply", "--atomic", "-f", "examples/team-quota/")
    assert atomic.code == 1 and atomic.out == "" and "exceeded quota" in atomic.err
    assert g.run("get", "ns", "team-a").code == 1          # all or nothing
    each = g.run("apply", "-f", "examples/team-quota/")
    assert each.code == 1
    assert each.lines == ["namespace/team-a created", "resourcequota/team-a-quota created",
                          "limitrange/team-a-limits created", "pod/train-1 created", "pod/train-2 created"]
    assert [re.sub(r'": .*', '"', line) for line in each.err.splitlines()] == [
        'error: error when creating "examples/team-quota/3-over-quota.yaml"',
        'error: error when creating "examples/team-quota/4-over-limit.yaml"']


def test_client_dry_run_of_an_existing_object_compares_with_last_applied(tmp_path):
    """kubectl apply --dry-run=client: `unchanged (dry run)` for the same manifest, `configured
    (dry run)` for a changed one (apply.go's printer); nothing is written either way."""
    g = Gpusched(tmp_path)
    g.ok("apply", "-f", "examples/priority-classes.yaml")
    same = g.ok("apply", "-f", "examples/priority-classes.yaml", "--dry-run=client").out
    assert "priorityclass.scheduling.k8s.io/high unchanged (dry run)" in same
    changed = (REPO_ROOT / "examples/priority-classes.yaml").read_text().replace("value: 1000000", "value: 999999")
    out = g.ok("apply", "-f", "-", "--dry-run=client", stdin=changed).out
    assert "configured (dry run)" in out
