"""The ``gpusched`` command line: argparse wiring, global options, and error handling.

``main(argv)`` parses the command line, runs one command from ``cli.commands`` (or ``cli.describe``,
``cli.top``, ``cli.demo``) and turns every expected failure into one line on stderr:

- ``GpuschedError`` (bad manifest, unknown kind, not found, forbidden, ...) -> ``error: <message>``, exit 1;
- usage mistakes -> the command's own usage, ``error: <what>`` and where help is, exit 1 (as kubectl);
- Ctrl-C and a closed pipe (``gpusched get pods | head``) -> a quiet exit.

Global options may stand anywhere on the line, as kubectl's do (``normalize_argv``): ``--state
PATH`` (else ``$GPUSCHED_STATE``, else the per-user default chosen by ``Cluster.open``) and
``-n NAMESPACE``; ``-v`` (repeat for debug logging) comes before the command. Every command's
help ends with an "Examples:" block (``EXAMPLES``, ``polish``). Heavy modules
(NumPy, the scheduler) are imported inside the commands that need them, so ``gpusched version``
and ``--help`` start fast.

Neighbours: ``gpusched.cluster.cluster.Cluster`` below; ``cli.output`` / ``cli.columns`` for tables.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any, Callable, NoReturn, Sequence, cast

from gpusched.cli.help_examples import EXAMPLES
from gpusched.errors import GpuschedError

OUTPUT_FORMATS = ("wide", "json", "yaml", "name", "jsonpath=...", "custom-columns=...")
USAGE_EXIT = 1   # kubectl exits 1 on usage errors too


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
                   help="After listing, print a line for every change (Ctrl-C ends)")
    p.add_argument("--watch-only", action="store_true",
                   help="Print only the changes, not the current list (Ctrl-C ends)")


_Command = Callable[..., argparse.ArgumentParser]


def _add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Every command, in the order ``--help`` lists them."""
    def command(name: str, handler: Callable[..., Any], help_text: str, **kwargs: Any) -> argparse.ArgumentParser:
        parser = sub.add_parser(name, help=help_text, description=help_text, **kwargs)
        parser.set_defaults(handler=handler)
        return parser

    _add_object_commands(command)
    _add_change_commands(command)
    _add_inspect_commands(sub, command)
    _add_session_commands(command)
    _add_module_commands(sub)


def _add_object_commands(command: _Command) -> None:
    """apply, get, create, describe, delete."""
    from gpusched.cli import commands, create, describe, get  # light: no NumPy at import

    p = command("apply", commands.cmd_apply, "Create or update objects from manifest files")
    p.add_argument("-f", "--filename", action="append", required=True, metavar="PATH",
                   help="File, directory or - for stdin (repeatable)")
    p.add_argument("--atomic", action="store_true",
                   help="All or nothing: one failing object applies none of them")
    p.add_argument("-o", "--output", choices=("json", "yaml", "name"), default=None)
    _dry_run_option(p)
    _validate_option(p)

    _get_options(command("get", get.cmd_get, "List objects of one or more kinds"))

    p = command("create", create.cmd_create, "Create one object from a file or from flags")
    create.add_commands(p, _dry_run_option)
    _validate_option(p)

    p = command("describe", describe.cmd_describe, "Show an object in detail, with its events")
    p.add_argument("kind", help="Kind, or KIND/NAME")
    p.add_argument("names", nargs="*", help="Object names (all of the kind when none)")
    p.add_argument("-l", "--selector", default="", help="Label selector")
    _namespace_options(p)

    p = command("delete", commands.cmd_delete, "Delete objects by kind and name, label, or manifests")
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


def _add_change_commands(command: _Command) -> None:
    """label, taint, cordon, uncordon, condition, drain, scale: changes to objects in place."""
    from gpusched.cli import commands

    p = command("label", commands.cmd_label, "Add (k=v) or remove (k-) labels")
    p.add_argument("kind", help="Kind, or KIND/NAME")
    p.add_argument("args", nargs="+", metavar="NAME k=v|k-")
    p.add_argument("--overwrite", action="store_true", help="Replace a label that has a value")
    p.add_argument("-l", "--selector", default="",
                   help="Label the objects matching this selector (then every argument is an update)")
    _namespace_options(p, all_namespaces=False)
    _dry_run_option(p)

    p = command("taint", commands.cmd_taint,
                "Add (key=value:Effect) or remove (key:Effect-, key-) node taints")
    p.add_argument("kind", metavar="node", help="node, or node/NAME")
    p.add_argument("args", nargs="+", metavar="NAME TAINT")
    p.add_argument("--overwrite", action="store_true", help="Replace a taint with the same key and effect")
    p.add_argument("-l", "--selector", default="",
                   help="Taint the nodes matching this selector (then every argument is a taint)")
    _dry_run_option(p)

    for name, handler, text in (("cordon", commands.cmd_cordon, "Mark a node unschedulable"),
                                ("uncordon", commands.cmd_uncordon, "Mark a node schedulable")):
        command(name, handler, text).add_argument("node", help="Node name, or node/NAME")

    p = command("condition", commands.cmd_condition,
                "Report a node's Ready condition (True, False or Unknown), as its kubelet or the "
                "node lifecycle controller would: NotReady and unreachable nodes get NoExecute "
                "taints and their pods are evicted when their tolerations run out")
    p.add_argument("kind", metavar="node", help="node, or node/NAME")
    p.add_argument("args", nargs="+", metavar="NAME Ready=STATUS")

    p = command("drain", commands.cmd_drain, "Cordon a node and evict its pods (honours PDBs)")
    p.add_argument("node", help="Node name, or node/NAME")
    p.add_argument("--ignore-daemonsets", action="store_true", help="Leave DaemonSet pods in place")
    p.add_argument("--delete-emptydir-data", action="store_true",
                   help="Evict pods with emptyDir volumes too (their data is lost)")
    p.add_argument("--force", action="store_true", help="Delete pods no controller owns too")

    p = command("scale", commands.cmd_scale,
                "Set the replicas of a Deployment or ReplicaSet, or the parallelism of a Job")
    p.add_argument("kind", help="deployment, replicaset or job, or KIND/NAME")
    p.add_argument("name", nargs="?", help="Object name")
    p.add_argument("--replicas", type=int, required=True, help="The new number of replicas")
    _namespace_options(p, all_namespaces=False)
    _dry_run_option(p)


def _add_inspect_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser], command: _Command) -> None:
    """events, whatif, replay, recommend, top, explain: what happened and what would."""
    from gpusched.cli import commands, top

    p = command("events", commands.cmd_events, "List events, oldest first")
    _namespace_options(p)
    p.add_argument("-o", "--output", choices=("json", "yaml"), default=None)

    from gpusched.cli import whatif   # whatif pod (the cluster layer is imported when run)
    whatif.add_commands(sub)

    from gpusched.cli import replay   # gpusched replay (the sim layer is imported when run)
    replay.add_command(sub)

    from gpusched.cli import recommend
    recommend.add_command(sub, _namespace_options)

    p = command("top", top.cmd_top, "Show GPU, CPU and memory allocation per node, or GPU use per pod")
    p.add_argument("what", choices=("nodes", "node", "no", "pods", "pod", "po"))
    _namespace_options(p)

    p = command("explain", commands.cmd_explain,
                "Explain why a pod is (not) scheduled: per node, per plugin, and what would fix it; "
                "for a deployment, replicaset, job or daemonset also why it cannot create its pods")
    p.add_argument("kind", help="pod, deployment, replicaset, job or daemonset, or KIND/NAME")
    p.add_argument("name", nargs="?", help="Its name")
    _namespace_options(p, all_namespaces=False)
    p.add_argument("-o", "--output", choices=("json",), default=None)


def _add_session_commands(command: _Command) -> None:
    """advance, completion, reset, demo, version."""
    from gpusched.cli import commands

    p = command("advance", commands.cmd_advance, "Move the virtual clock forward (e.g. 30m, 1h30m)")
    p.add_argument("duration", help="How far, e.g. 90s, 30m, 1h30m")

    p = command("completion", _run_completion, "Print a shell completion script")
    p.add_argument("shell", choices=("bash", "zsh", "fish"))

    command("reset", commands.cmd_reset, "Empty the cluster state")
    command("demo", _run_demo, "Walk through the GPU-scheduling examples in a temporary cluster")
    command("version", commands.cmd_version, "Print the gpusched version")


def _add_module_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The command groups that register themselves: exporter and cost, Slurm, rollout, exec/logs."""
    from gpusched.cli import monitor  # exporter, cost (light at import)
    monitor.add_commands(sub)

    from gpusched.cli.slurm_cmd import add_commands as add_slurm_commands  # sbatch, squeue, slurm ...
    add_slurm_commands(sub)
    from gpusched.cli.rollout import add_commands as add_rollout_commands   # rollout ...
    add_rollout_commands(sub)
    from gpusched.cli.container_cmd import add_commands as add_container_commands  # exec, logs
    add_container_commands(sub)


def _run_completion(args: argparse.Namespace) -> int:
    from gpusched.cli.completion import script

    print(script(args.shell, build_parser(["--help"])))
    return 0


def _run_demo(args: argparse.Namespace) -> int:
    from gpusched.cli.demo import run_demo

    return run_demo(main)


SIM_COMMANDS = ("experiment", "sweep", "import")
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


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The full parser. The sim layer's commands (``experiment``, ``import``) pull in NumPy and
    the scheduler, so they are registered only when asked for (or for ``--help``)."""
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
    sub = cast("argparse._SubParsersAction[argparse.ArgumentParser]",
               parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                     parser_class=CommandParser))
    _add_commands(sub)
    from gpusched.cli import serve   # serve, kubeconfig (the server is imported when run)
    serve.add_commands(sub)
    from gpusched.cli.scheduler_cmd import add_commands as add_scheduler_commands
    add_scheduler_commands(sub)   # gpusched scheduler (secondary scheduler of a real cluster)
    word = _command_word(argv)
    if word in SIM_COMMANDS or word is None or word == "completion":
        from gpusched.sim.commands import add_commands

        add_commands(sub)
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


def _start_seconds(args: argparse.Namespace) -> float:
    """``--start``, else ``$GPUSCHED_START``, else the wall-clock time (the CLI is the one
    place that reads it): where a new state file's clock starts."""
    import time
    from gpusched.cluster.apiserver.store import EPOCH, parse_start
    from gpusched.errors import UsageError
    text = getattr(args, "start", None) or os.environ.get("GPUSCHED_START")
    if not text:
        return time.time() - EPOCH.timestamp()
    try:
        return parse_start(text)
    except ValueError as err:
        raise UsageError(str(err)) from None


def _configure_logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse; words no option claims are reported by the command's own parser (its usage)."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        owner = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction) and args.command in action.choices:
                owner = action.choices[args.command]
        owner.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the process exit code (0 success, 1 error or usage error)."""
    argv = normalize_argv(sys.argv[1:] if argv is None else list(argv))
    parser = build_parser(argv)
    try:
        args = _parse(parser, argv)
    except SystemExit as exit_:  # argparse already printed usage and its one-line message
        return int(exit_.code or 0)
    if args.state is None and os.environ.get("GPUSCHED_STATE"):
        args.state = os.environ["GPUSCHED_STATE"]
    _configure_logging(args.verbose)
    try:
        args.start_seconds = _start_seconds(args)
        handler = getattr(args, "handler", None) or args.func   # sim commands set ``func``
        return int(handler(args) or 0)
    except GpuschedError as error:
        print(f"error: {error.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # Reader went away (| head): silence the flush at interpreter exit too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as error:  # unreadable state file, permission denied, disk full
        print(f"error: {error.strerror or error}: {error.filename or ''}".rstrip(": "), file=sys.stderr)
        return 1
    except Exception as error:  # a bug: one line unless -v asks for the traceback
        logging.getLogger("gpusched.cli").debug("unexpected failure", exc_info=True)
        print(f"error: internal error: {type(error).__name__}: {error} (rerun with -vv for the traceback)",
              file=sys.stderr)
        return 1
