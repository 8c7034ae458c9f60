"""The ``gpusched`` command line: argparse wiring, global options, and error handling.

``main(argv)`` parses the command line, runs one command from ``cli.commands`` (or ``cli.describe``,
``cli.top``, ``cli.demo``) and turns every expected failure into one line on stderr:

- ``GpuschedError`` (bad manifest, unknown kind, not found, forbidden, ...) -> ``error: <message>``, exit 1;
- usage mistakes -> argparse's message, exit 2;
- Ctrl-C and a closed pipe (``gpusched get pods | head``) -> a quiet exit.

Global options come before the command: ``--state PATH`` (else ``$GPUSCHED_STATE``, else the
per-user default chosen by ``Cluster.open``) and ``-v`` (repeat for debug logging). Heavy modules
(NumPy, the scheduler) are imported inside the commands that need them, so ``gpusched version``
and ``--help`` start fast.

Neighbours: ``gpusched.cluster.cluster.Cluster`` below; ``cli.output`` / ``cli.columns`` for tables.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Callable, Sequence

from gpusched.errors import GpuschedError

OUTPUT_FORMATS = ("wide", "json", "yaml", "name")


class CommandParser(argparse.ArgumentParser):
    """Lets options and names mix as kubectl allows (``get pods -n team-a train-1``).

    argparse's intermixed parsing cannot handle parsers that have sub-commands (the sim layer's
    ``experiment fgd``); those fall back to ordinary parsing.
    """

    _intermixing = False

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        if self._intermixing or self._subparsers is not None:
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


def _namespace_options(parser: argparse.ArgumentParser, all_namespaces: bool = True) -> None:
    parser.add_argument("-n", "--namespace", default=None, help="namespace (default: default)")
    if all_namespaces:
        parser.add_argument("-A", "--all-namespaces", action="store_true",
                            help="list across all namespaces")


def _add_commands(sub: argparse._SubParsersAction) -> None:
    from gpusched.cli import commands, describe, top  # light modules: no NumPy at import

    def command(name: str, handler: Callable, help_text: str, **kwargs) -> argparse.ArgumentParser:
        parser = sub.add_parser(name, help=help_text, description=help_text, **kwargs)
        parser.set_defaults(handler=handler)
        return parser

    p = command("apply", commands.cmd_apply, "Create or update objects from manifest files")
    p.add_argument("-f", "--filename", action="append", required=True, metavar="PATH",
                   help="file, directory or - for stdin (repeatable)")

    p = command("get", commands.cmd_get, "List objects of one kind")
    p.add_argument("kind", help="kind, plural or short name (po, no, deploy, ...), or KIND/NAME")
    p.add_argument("names", nargs="*", help="object names")
    _namespace_options(p)
    p.add_argument("-l", "--selector", default="", help="label selector, e.g. gpu-type=a100")
    p.add_argument("--field-selector", default="", help="field selector, e.g. spec.nodeName=gpu-node-1")
    p.add_argument("-L", "--label-columns", action="append", default=[], metavar="KEY",
                   help="add a column with the value of this label (repeatable, or comma-separated)")
    p.add_argument("-o", "--output", choices=OUTPUT_FORMATS, default=None)

    p = command("describe", describe.cmd_describe, "Show an object in detail, with its events")
    p.add_argument("kind")
    p.add_argument("names", nargs="*")
    _namespace_options(p, all_namespaces=False)

    p = command("delete", commands.cmd_delete, "Delete objects by kind and name, or from manifests")
    p.add_argument("kind", nargs="?")
    p.add_argument("names", nargs="*")
    p.add_argument("-f", "--filename", action="append", metavar="PATH")
    _namespace_options(p, all_namespaces=False)

    p = command("label", commands.cmd_label, "Add (k=v) or remove (k-) labels")
    p.add_argument("kind")
    p.add_argument("args", nargs="+", metavar="NAME k=v|k-")
    p.add_argument("--overwrite", action="store_true")
    _namespace_options(p, all_namespaces=False)

    p = command("taint", commands.cmd_taint, "Add (key=value:Effect) or remove (key:Effect-, key-) node taints")
    p.add_argument("kind", metavar="node")
    p.add_argument("args", nargs="+", metavar="NAME TAINT")
    p.add_argument("--overwrite", action="store_true")

    for name, handler, text in (("cordon", commands.cmd_cordon, "Mark a node unschedulable"),
                                ("uncordon", commands.cmd_uncordon, "Mark a node schedulable")):
        command(name, handler, text).add_argument("node")

    p = command("drain", commands.cmd_drain, "Cordon a node and evict its pods (honours PDBs)")
    p.add_argument("node")
    p.add_argument("--ignore-daemonsets", action="store_true")
    p.add_argument("--delete-emptydir-data", action="store_true")
    p.add_argument("--force", action="store_true")

    p = command("scale", commands.cmd_scale, "Set the replicas of a Deployment (or ReplicaSet)")
    p.add_argument("kind", help="deployment, or deployment/NAME")
    p.add_argument("name", nargs="?")
    p.add_argument("--replicas", type=int, required=True)
    _namespace_options(p, all_namespaces=False)

    p = command("events", commands.cmd_events, "List events, oldest first")
    _namespace_options(p)
    p.add_argument("-o", "--output", choices=("json", "yaml"), default=None)

    p = command("top", top.cmd_top, "Show GPU, CPU and memory allocation per node, or GPU use per pod")
    p.add_argument("what", choices=("nodes", "node", "no", "pods", "pod", "po"))
    _namespace_options(p)

    p = command("explain", commands.cmd_explain,
                "Explain why a pod is (not) scheduled: per node, per plugin, and what would fix it")
    p.add_argument("kind", choices=("pod", "pods", "po"))
    p.add_argument("name")
    _namespace_options(p, all_namespaces=False)
    p.add_argument("-o", "--output", choices=("json",), default=None)

    p = command("advance", commands.cmd_advance, "Move the virtual clock forward (e.g. 30m, 1h30m)")
    p.add_argument("duration")

    command("reset", commands.cmd_reset, "Empty the cluster state")
    command("demo", _run_demo, "Walk through the GPU-scheduling examples in a temporary cluster")
    command("version", commands.cmd_version, "Print the gpusched version")
    from gpusched.cli import monitor  # exporter, cost (light at import)
    monitor.add_commands(sub)

    from gpusched.cli.slurm_cmd import add_commands as add_slurm_commands  # sbatch, squeue, slurm ...
    add_slurm_commands(sub)


def _run_demo(args: argparse.Namespace) -> int:
    from gpusched.cli.demo import run_demo

    return run_demo()


SIM_COMMANDS = ("experiment", "import")


def _command_word(argv: Sequence[str]) -> str | None:
    """The command in ``argv`` (skipping the global options), None when there is none."""
    words = list(argv)
    while words:
        word = words.pop(0)
        if word == "--state":
            words = words[1:]
        elif not word.startswith("-"):
            return word
    return None


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The full parser. The sim layer's commands (``experiment``, ``import``) pull in NumPy and
    the scheduler, so they are registered only when asked for (or for ``--help``)."""
    parser = argparse.ArgumentParser(
        prog="gpusched",
        description="A GPU scheduler with Kubernetes semantics, driven like kubectl.")
    parser.add_argument("--state", default=None, metavar="PATH",
                        help="cluster state file (default: $GPUSCHED_STATE, else a per-user file)")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="log to stderr (-v info, -vv debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                parser_class=CommandParser)
    _add_commands(sub)
    from gpusched.cli import serve   # serve, kubeconfig (the server is imported when run)
    serve.add_commands(sub)
    from gpusched.cli.scheduler_cmd import add_commands as add_scheduler_commands
    add_scheduler_commands(sub)   # gpusched scheduler (secondary scheduler of a real cluster)
    word = _command_word(argv)
    if word in SIM_COMMANDS or word is None:
        from gpusched.sim.commands import add_commands

        add_commands(sub)
    return parser


def _configure_logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the process exit code (0 success, 1 error, 2 usage)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse already printed usage and its one-line message
        return int(exit_.code or 0)
    if args.state is None and os.environ.get("GPUSCHED_STATE"):
        args.state = os.environ["GPUSCHED_STATE"]
    _configure_logging(args.verbose)
    try:
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
