"""The ``gpusched`` command line's grammar: every command's arguments, built for the command run.

``build_parser(argv)`` registers the commands from one table (``COMMANDS``, in the order
``--help`` lists them). A command line naming a known command builds that command alone (its
group: ``cordon``/``uncordon``, the Slurm commands ...), so ``gpusched get pods`` neither imports
nor builds the other forty; ``--help``, ``completion`` and an unknown word build them all. The
handlers of the commands defined here are named as ``"module:function"`` under ``gpusched.cli``
and imported when the command runs (``_lazy``); the modules that register their own commands
(``whatif``, ``serve``, ``slurm_cmd`` ...) are imported only to register them.

Global options may stand anywhere on the line, as kubectl's do (``normalize_argv``). Every
command's help ends with an "Examples:" block (``cli.help_examples``, attached by ``polish``).

Neighbours: ``cli.main`` parses with it and runs the handler; tests/cli/test_startup_imports.py
holds what ``get`` imports.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, Callable, NoReturn, Sequence, TypeAlias, cast

from gpusched.cli.help_examples import EXAMPLES

OUTPUT_FORMATS = ("wide", "json", "yaml", "name", "jsonpath=...", "custom-columns=...")
USAGE_EXIT = 1   # kubectl exits 1 on usage errors too

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Handler: TypeAlias = Callable[[argparse.Namespace], int]


class CommandParser(argparse.ArgumentParser):
    """Lets options and names mix as kubectl allows (``get pods -n team-a train-1``); a usage
    error prints this (sub)command's usage, the error and where to find help, then exits 1.

    argparse's intermixed parsing cannot handle parsers that have sub-commands (the sim layer's
    ``experiment fgd``); those fall back to ordinary parsing.
    """

    _intermixing = False

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]  # one form of the stub's overloads
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        if self._intermixing or self._subparsers is not None:
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(USAGE_EXIT, f"error: {message}\nSee '{self.prog} --help' for usage.\n")


def _namespace_options(parser: argparse.ArgumentParser, all_namespaces: bool = True) -> None:
    parser.add_argument("-n", "--namespace", default=None,
                        help="The namespace of the objects (default: default)")
    if all_namespaces:
        parser.add_argument("-A", "--all-namespaces", action="store_true",
                            help="List across all namespaces")


def _dry_run_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", nargs="?", const="client", default="none",
                        choices=("none", "client", "server"), metavar="none|client|server",
                        help="client: only print what would be sent; server: run validation and "
                             "admission, then roll back")


def _validate_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--validate", nargs="?", const="strict", default="strict", metavar="MODE",
                        help="strict (or true): unknown or duplicate fields fail; warn: print a warning "
                             "for each and go on; ignore (or false): drop them silently (default strict)")


def _get_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("kind", help="Kind, plural or short name (po, no, deploy, ...), KIND1,KIND2, "
                                "all, or KIND/NAME")
    p.add_argument("names", nargs="*", help="Object names")
    _namespace_options(p)
    p.add_argument("-l", "--selector", default="", help="Label selector, e.g. gpu-type=a100")
    p.add_argument("--field-selector", default="",
                   help="Field selector, e.g. spec.nodeName=gpu-node-1")
    p.add_argument("-L", "--label-columns", action="append", default=[], metavar="KEY",
                   help="Add a column with the value of this label (repeatable, or comma-separated)")
    p.add_argument("-o", "--output", default=None, metavar="FORMAT",
                   help="One of: " + ", ".join(OUTPUT_FORMATS))
    p.add_argument("--show-labels", action="store_true",
                   help="Show all labels as the last column")
    p.add_argument("--sort-by", default="", metavar="JSONPATH",
                   help="Sort the rows by this field, e.g. .metadata.name")
    p.add_argument("--no-headers", action="store_true", help="Print no header line")
    p.add_argument("-w", "--watch", action="store_true",
                   help="After listing, print a line for every change; the cluster clock follows "
                        "the wall clock while it waits (Ctrl-C ends)")
    p.add_argument("--watch-only", action="store_true",
                   help="Print only the changes, not the current list (Ctrl-C ends)")


def _lazy(target: str) -> Handler:
    """``"get:cmd_get"``: a handler that imports ``gpusched.cli.get`` when the command runs."""
    module, _, function = target.partition(":")

    def handler(args: argparse.Namespace) -> int:
        run = getattr(importlib.import_module(f"gpusched.cli.{module}"), function)
        return int(run(args) or 0)
    return handler


def _command(sub: Subparsers, name: str, target: str, help_text: str) -> argparse.ArgumentParser:
    """Register ``name``, run by ``target`` (``"module:function"``, see :func:`_lazy`)."""
    parser = sub.add_parser(name, help=help_text, description=help_text)
    parser.set_defaults(handler=_lazy(target))
    return parser


# ---- apply, get, create, describe, delete ------------------------------------------------------

def _add_apply(sub: Subparsers) -> None:
    p = _command(sub, "apply", "commands:cmd_apply", "Create or update objects from manifest files")
    p.add_argument("-f", "--filename", action="append", required=True, metavar="PATH",
                   help="File, directory or - for stdin (repeatable)")
    p.add_argument("--atomic", action="store_true",
                   help="All or nothing: one failing object applies none of them")
    p.add_argument("-o", "--output", choices=("json", "yaml", "name"), default=None)
    _dry_run_option(p)
    _validate_option(p)


def _add_get(sub: Subparsers) -> None:
    _get_options(_command(sub, "get", "get:cmd_get", "List objects of one or more kinds"))


def _add_create(sub: Subparsers) -> None:
    from gpusched.cli import create      # its sub-commands (create job, create namespace ...)

    p = _command(sub, "create", "create:cmd_create", "Create one object from a file or from flags")
    create.add_commands(p, _dry_run_option)
    _validate_option(p)


def _add_describe(sub: Subparsers) -> None:
    p = _command(sub, "describe", "describe:cmd_describe", "Show an object in detail, with its events")
    p.add_argument("kind", help="Kind, or KIND/NAME")
    p.add_argument("names", nargs="*", help="Object names (all of the kind when none)")
    p.add_argument("-l", "--selector", default="", help="Label selector")
    _namespace_options(p)


def _add_delete(sub: Subparsers) -> None:
    p = _command(sub, "delete", "commands:cmd_delete",
                 "Delete objects by kind and name, label, or manifests")
    p.add_argument("kind", nargs="?", help="Kind, or KIND/NAME")
    p.add_argument("names", nargs="*", help="Object names")
    p.add_argument("-f", "--filename", action="append", metavar="PATH",
                   help="Delete the objects of these manifests")
    p.add_argument("-l", "--selector", default="", help="Delete the objects matching this label selector")
    p.add_argument("--all", action="store_true", help="Delete every object of the kind in the namespace")
    p.add_argument("--grace-period", type=int, default=-1, metavar="SECONDS",
                   help="Seconds a pod gets to terminate (Terminating until then); negative: the "
                        "pod's terminationGracePeriodSeconds. 0 only with --force (else 1)")
    p.add_argument("--force", action="store_true",
                   help="Remove at once, bypassing graceful deletion (with --grace-period=0)")
    p.add_argument("--now", action="store_true", help="Same as --grace-period=1")
    _namespace_options(p)
    _dry_run_option(p)


# ---- label, taint, cordon, uncordon, condition, drain, scale: changes in place ------------------

def _add_label(sub: Subparsers) -> None:
    p = _command(sub, "label", "commands:cmd_label", "Add (k=v) or remove (k-) labels")
    p.add_argument("kind", help="Kind, or KIND/NAME")
    p.add_argument("args", nargs="+", metavar="NAME k=v|k-")
    p.add_argument("--overwrite", action="store_true", help="Replace a label that has a value")
    p.add_argument("-l", "--selector", default="",
                   help="Label the objects matching this selector (then every argument is an update)")
    _namespace_options(p, all_namespaces=False)
    _dry_run_option(p)


def _add_taint(sub: Subparsers) -> None:
    p = _command(sub, "taint", "commands:cmd_taint",
                 "Add (key=value:Effect) or remove (key:Effect-, key-) node taints")
    p.add_argument("kind", metavar="node", help="node, or node/NAME")
    p.add_argument("args", nargs="+", metavar="NAME TAINT")
    p.add_argument("--overwrite", action="store_true", help="Replace a taint with the same key and effect")
    p.add_argument("-l", "--selector", default="",
                   help="Taint the nodes matching this selector (then every argument is a taint)")
    _dry_run_option(p)


def _add_cordon(sub: Subparsers) -> None:
    for name, text in (("cordon", "Mark a node unschedulable"), ("uncordon", "Mark a node schedulable")):
        _command(sub, name, f"commands:cmd_{name}", text).add_argument(
            "node", help="Node name, or node/NAME")


def _add_condition(sub: Subparsers) -> None:
    p = _command(sub, "condition", "commands:cmd_condition",
                 "Report a node's Ready condition (True, False or Unknown), as its kubelet or the "
                 "node lifecycle controller would: NotReady and unreachable nodes get NoExecute "
                 "taints and their pods are evicted when their tolerations run out")
    p.add_argument("kind", metavar="node", help="node, or node/NAME")
    p.add_argument("args", nargs="+", metavar="NAME Ready=STATUS")


def _add_drain(sub: Subparsers) -> None:
    p = _command(sub, "drain", "commands:cmd_drain", "Cordon a node and evict its pods (honours PDBs)")
    p.add_argument("node", help="Node name, or node/NAME")
    p.add_argument("--ignore-daemonsets", action="store_true", help="Leave DaemonSet pods in place")
    p.add_argument("--delete-emptydir-data", action="store_true",
                   help="Evict pods with emptyDir volumes too (their data is lost)")
    p.add_argument("--force", action="store_true", help="Delete pods no controller owns too")


def _add_scale(sub: Subparsers) -> None:
    p = _command(sub, "scale", "commands:cmd_scale",
                 "Set the replicas of a Deployment or ReplicaSet, or the parallelism of a Job")
    p.add_argument("kind", help="deployment, replicaset or job, or KIND/NAME")
    p.add_argument("name", nargs="?", help="Object name")
    p.add_argument("--replicas", type=int, required=True, help="The new number of replicas")
    _namespace_options(p, all_namespaces=False)
    _dry_run_option(p)


# ---- events, top, explain (whatif, replay, recommend register themselves) ----------------------

def _add_events(sub: Subparsers) -> None:
    p = _command(sub, "events", "commands:cmd_events", "List events, oldest first")
    _namespace_options(p)
    p.add_argument("-o", "--output", choices=("json", "yaml"), default=None)


def _add_recommend(sub: Subparsers) -> None:
    from gpusched.cli import recommend

    recommend.add_command(sub, _namespace_options)


def _add_top(sub: Subparsers) -> None:
    p = _command(sub, "top", "top:cmd_top",
                 "Show GPU, CPU and memory allocation per node, or GPU use per pod")
    p.add_argument("what", choices=("nodes", "node", "no", "pods", "pod", "po"))
    _namespace_options(p)


def _add_explain(sub: Subparsers) -> None:
    p = _command(sub, "explain", "commands:cmd_explain",
                 "Explain why a pod is (not) scheduled: per node, per plugin, and what would fix it; "
                 "for a deployment, replicaset, job or daemonset also why it cannot create its pods")
    p.add_argument("kind", help="pod, deployment, replicaset, job or daemonset, or KIND/NAME")
    p.add_argument("name", nargs="?", help="Its name")
    _namespace_options(p, all_namespaces=False)
    p.add_argument("-o", "--output", choices=("json",), default=None)


# ---- advance, completion, reset, demo, version -------------------------------------------------

def _add_advance(sub: Subparsers) -> None:
    p = _command(sub, "advance", "commands:cmd_advance", "Move the virtual clock forward (e.g. 30m, 1h30m)")
    p.add_argument("duration", help="How far, e.g. 90s, 30m, 1h30m")


def _add_completion(sub: Subparsers) -> None:
    p = _command(sub, "completion", "parser:run_completion", "Print a shell completion script")
    p.add_argument("shell", choices=("bash", "zsh", "fish"))


def run_completion(args: argparse.Namespace) -> int:
    from gpusched.cli.completion import script

    print(script(args.shell, build_parser(["--help"])))
    return 0


def _registered_by(target: str) -> Callable[[Subparsers], None]:
    """The commands a module registers itself: ``"whatif:add_commands"`` under ``gpusched``."""
    module, _, function = target.partition(":")

    def register(sub: Subparsers) -> None:
        getattr(importlib.import_module(f"gpusched.{module}"), function)(sub)
    return register


def _simple(name: str, target: str, help_text: str) -> Callable[[Subparsers], None]:
    """A command with no arguments of its own."""
    def register(sub: Subparsers) -> None:
        _command(sub, name, target, help_text)
    return register


# (the command words, what registers them), in the order ``--help`` lists them. ``SIM`` (the sim
# layer's commands) joins only for ``--help`` (and ``completion``'s own parser) or when named.
COMMANDS: tuple[tuple[tuple[str, ...], Callable[[Subparsers], None]], ...] = (
    (("apply",), _add_apply), (("get",), _add_get), (("create",), _add_create),
    (("describe",), _add_describe), (("delete",), _add_delete),
    (("label",), _add_label), (("taint",), _add_taint), (("cordon", "uncordon"), _add_cordon),
    (("condition",), _add_condition), (("drain",), _add_drain), (("scale",), _add_scale),
    (("events",), _add_events),
    (("whatif",), _registered_by("cli.whatif:add_commands")),      # the cluster layer when run
    (("replay",), _registered_by("cli.replay:add_command")),       # the sim layer when run
    (("recommend",), _add_recommend), (("top",), _add_top), (("explain",), _add_explain),
    (("advance",), _add_advance), (("completion",), _add_completion),
    (("reset",), _simple("reset", "commands:cmd_reset", "Empty the cluster state")),
    (("demo",), _simple("demo", "main:run_demo",
                        "Walk through the GPU-scheduling examples in a temporary cluster")),
    (("version",), _simple("version", "commands:cmd_version", "Print the gpusched version")),
    (("exporter", "cost"), _registered_by("cli.monitor:add_commands")),
    (("sbatch", "squeue", "sacct", "scancel", "sinfo", "slurm"),
     _registered_by("cli.slurm_cmd:add_commands")),
    (("rollout",), _registered_by("cli.rollout:add_commands")),
    (("exec", "logs"), _registered_by("cli.container_cmd:add_commands")),
    (("wait",), _registered_by("cli.wait:add_commands")),
    (("serve", "kubeconfig"), _registered_by("cli.serve:add_commands")),   # the server when run
    (("scheduler",), _registered_by("cli.scheduler_cmd:add_commands")),   # of a real cluster
)
SIM: tuple[tuple[str, ...], Callable[[Subparsers], None]] = (
    ("experiment", "sweep", "import"), _registered_by("sim.commands:add_commands"))
GLOBAL_WITH_VALUE = ("--state",)
NAMESPACE_FLAGS = ("-n", "--namespace")


def _command_word(argv: Sequence[str]) -> str | None:
    """The command in ``argv`` (skipping the global options), None when there is none."""
    words = list(argv)
    while words:
        word = words.pop(0)
        if word in GLOBAL_WITH_VALUE:
            words = words[1:]
        elif not word.startswith("-"):
            return word
    return None


def _take_flag(words: list[str], i: int, names: Sequence[str]) -> tuple[list[str], int] | None:
    """If ``words[i]`` is one of ``names`` (``--x V``, ``--x=V``, or ``-nV`` for a short name),
    return the tokens it spans and how many; else None."""
    word = words[i]
    for name in names:
        if word == name:
            return words[i:i + 2], 2
        if word.startswith(name + "=") or (len(name) == 2 and word.startswith(name) and len(word) > 2
                                           and not word.startswith("--")):
            return [word], 1
    return None


def normalize_argv(argv: Sequence[str]) -> list[str]:
    """Accept kubectl's global flags anywhere on the line.

    ``--state PATH`` moves to the front wherever it stands; ``-n/--namespace NS`` written before
    the command moves just after it. Nothing after a ``--`` is touched (``exec ... -- cmd``).

    >>> normalize_argv(["get", "pods", "--state", "s.db"])
    ['--state', 's.db', 'get', 'pods']
    >>> normalize_argv(["-n", "team-a", "--state=s.db", "get", "pods", "--", "-n", "x"])
    ['--state=s.db', 'get', '-n', 'team-a', 'pods', '--', '-n', 'x']
    """
    words, front, moved, rest = list(argv), [], [], []
    i, seen_command = 0, False
    while i < len(words):
        if words[i] == "--":
            rest.extend(words[i:])
            break
        state = _take_flag(words, i, GLOBAL_WITH_VALUE)
        if state:
            front.extend(state[0])
            i += state[1]
            continue
        namespace = None if seen_command else _take_flag(words, i, NAMESPACE_FLAGS)
        if namespace:
            moved.extend(namespace[0])
            i += namespace[1]
            continue
        if not seen_command and not words[i].startswith("-"):
            seen_command = True
            rest.extend([words[i], *moved])
            moved = []
        else:
            rest.append(words[i])
        i += 1
    return front + rest + moved


def _fill_controller_slots() -> None:
    """A state may hold sbatch Jobs whichever command runs next: fill the cluster's ``sbatch``
    slot (``cluster.controllers.installed``) for every command, with a stand-in that imports
    the sbatch controller (``slurm.controller``) when a settle first runs it."""
    from gpusched.cluster.controllers import installed

    installed.install("sbatch", _sbatch_controller)


def _sbatch_controller(view: Any, changes: Any = None) -> None:
    from gpusched.slurm import controller

    controller.reconcile(view, changes)


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser for ``argv``: its command alone when it names one (see the module docstring),
    else every command (the sim layer's too for ``--help``)."""
    parser = CommandParser(
        prog="gpusched",
        description="A GPU scheduler with Kubernetes semantics, driven like kubectl.",
        epilog=EXAMPLES["gpusched"], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state", default=None, metavar="PATH",
                        help="Cluster state file (default: $GPUSCHED_STATE, else a per-user file)")
    parser.add_argument("--start", default=None, metavar="TIME",
                        help="Where a new state file's clock starts (RFC 3339, e.g. "
                             "2026-01-01T00:00:00Z; default: $GPUSCHED_START, else now)")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="Log to stderr (-v info, -vv debug)")
    # the command modules take ArgumentParser subparsers; CommandParser is one (a cast, not a lie)
    sub = cast(Subparsers, parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                                 parser_class=CommandParser))
    _fill_controller_slots()
    word = _command_word(argv)
    named = [register for words, register in (*COMMANDS, SIM) if word in words]
    for register in named or [register for _, register in COMMANDS]:
        register(sub)
    if word is None:
        SIM[1](sub)
    polish(parser)
    return parser


def polish(parser: argparse.ArgumentParser, name: str = "gpusched") -> None:
    """One style for every command's help, whichever module registered it: each help text starts
    with a capital letter, and each command shows an "Examples:" block."""
    for action in parser._actions:
        if action.help and action.help is not argparse.SUPPRESS:
            action.help = action.help[:1].upper() + action.help[1:]
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if choice.help:
                    choice.help = choice.help[:1].upper() + choice.help[1:]
            for sub_name, sub_parser in action.choices.items():
                full = f"{name} {sub_name}"
                summary = next((c.help for c in action._choices_actions if c.dest == sub_name), None)
                text = sub_parser.description or summary or ""
                sub_parser.description = text[:1].upper() + text[1:] or None
                if not sub_parser.epilog:
                    sub_parser.epilog = EXAMPLES.get(full) or f"Examples:\n  {full} --help"
                sub_parser.formatter_class = argparse.RawDescriptionHelpFormatter
                polish(sub_parser, full)


