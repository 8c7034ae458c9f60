"""Generate ``docs/reference/``: one page per ``gpusched`` command, from the argument parser itself.

Each page has the command's summary, its usage line, its arguments and options (name, default,
help) as ``--help`` prints them, its sub-commands (``rollout status``, ``slurm config`` ...) with
theirs, and its "Examples:" block; ``docs/reference/index.md`` lists the commands and the global
options. Nothing here is written by hand, so the reference follows the parser: change a flag's
help in ``gpusched/cli`` and regenerate.

    python scripts/gen_cli_reference.py            # rewrite docs/reference/
    python scripts/gen_cli_reference.py --check    # exit 1 when a committed page is stale

``tests/docs/test_cli_reference.py`` regenerates and compares, so the pages cannot drift from the
parser. The output does not depend on the terminal: usage lines are wrapped at a fixed width.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "docs" / "reference"
WIDTH = "100"          # argparse wraps usage lines at $COLUMNS


def _parser() -> argparse.ArgumentParser:
    os.environ["COLUMNS"] = WIDTH
    sys.path.insert(0, str(REPO))
    from gpusched.cli.parser import build_parser
    return build_parser(["--help"])


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, summary, parser) of each sub-command of ``parser``, in ``--help``'s order."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            summaries = {choice.dest: choice.help or "" for choice in action._choices_actions}
            out.extend((name, summaries.get(name, ""), sub) for name, sub in action.choices.items())
    return out


def _portable(text: str) -> str:
    """``text`` without this machine's paths: the trace-data folder beside the checkout (the
    commands' defaults resolve it) reads ``SHARED``, as the index page explains."""
    for shared in (str(REPO.parent / "shared"), "../shared"):
        text = text.replace(shared, "SHARED")
    return text.replace(str(REPO), ".")


def _cell(text: str) -> str:
    return _portable(text).replace("|", "\\|").replace("\n", " ")


def _flag_names(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    names = ", ".join(f"`{name}`" for name in action.option_strings)
    if action.nargs == 0:
        return names
    metavar = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
    return f"{names} `{metavar}`"


def _default(action: argparse.Action) -> str:
    value = action.default
    if action.nargs == 0 or value in (None, argparse.SUPPRESS, [], ""):
        return ""
    return f"`{value}`"


def _arguments(parser: argparse.ArgumentParser, level: str) -> list[str]:
    shown = [a for a in parser._actions
             if a.help is not argparse.SUPPRESS and not isinstance(a, argparse._SubParsersAction)
             and "-h" not in a.option_strings]
    if not shown:
        return []
    lines = [f"{level} Arguments and options", "", "| argument | default | meaning |", "|---|---|---|"]
    lines += [f"| {_cell(_flag_names(a))} | {_cell(_default(a))} | {_cell(a.help or '')} |" for a in shown]
    return lines + [""]


def _examples(parser: argparse.ArgumentParser, level: str) -> list[str]:
    epilog = parser.epilog or ""
    if not epilog.startswith("Examples:"):
        return []
    body = [_portable(line[2:] if line.startswith("  ") else line) for line in epilog.splitlines()[1:]]
    return [f"{level} Examples", "", "```sh", *body, "```", ""]


def _usage(parser: argparse.ArgumentParser) -> list[str]:
    usage = _portable(parser.format_usage().removeprefix("usage: ").rstrip())
    return ["```text", usage, "```", ""]


def _section(full: str, parser: argparse.ArgumentParser, level: str) -> list[str]:
    lines = [*_usage(parser), *_arguments(parser, level), *_examples(parser, level)]
    subs = _subcommands(parser)
    if subs:
        lines += [f"{level} Sub-commands", ""]
        lines += [f"- [`{full} {name}`](#{_anchor(full + ' ' + name)}): {summary}" for name, summary, _ in subs]
        lines.append("")
        for name, summary, sub in subs:
            lines += [f"{level} `{full} {name}`", "", (sub.description or summary), ""]
            lines += _section(f"{full} {name}", sub, level + "#")
    return lines


def _anchor(title: str) -> str:
    """MkDocs' (Python-Markdown toc) slug of a heading that is one code span."""
    return "-".join(title.lower().split())


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", ")")) else text + "."


def command_page(name: str, summary: str, parser: argparse.ArgumentParser) -> str:
    full = f"gpusched {name}"
    description = parser.description or summary
    lines = [f"# {full}", "", f"For anyone running `{full}`: {_sentence(description)}", "",
             "Generated from the argument parser by `scripts/gen_cli_reference.py`; "
             "[all commands](index.md).", ""]
    lines += _section(full, parser, "##")
    return "\n".join(lines).rstrip() + "\n"


def index_page(parser: argparse.ArgumentParser) -> str:
    lines = ["# Command reference", "",
             "For anyone looking up a `gpusched` command: one page per command, generated from the "
             "argument parser (`scripts/gen_cli_reference.py`), so each page says what "
             "`gpusched COMMAND --help` says. [Commands at a glance](../commands.md) describes what "
             "each one does in more words.", "",
             "Global options may stand anywhere on the line, as kubectl's do (`gpusched -n team-a "
             "get pods`); `-v` goes before the command. `SHARED` in a default or an example is the "
             "trace-data folder, `shared` beside the checkout ([Installing and testing](../install.md)).", "", *_usage(parser), *_arguments(parser, "##"),
             "## Commands", "", "| command | what it does |", "|---|---|"]
    lines += [f"| [`gpusched {name}`]({name}.md) | {_cell(summary)} |" for name, summary, _ in _subcommands(parser)]
    return "\n".join(lines).rstrip() + "\n"


def render_all() -> dict[str, str]:
    """Every page of the reference: path under docs/reference/ -> text."""
    parser = _parser()
    pages = {"index.md": index_page(parser)}
    for name, summary, sub in _subcommands(parser):
        pages[f"{name}.md"] = command_page(name, summary, sub)
    return pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a committed page is stale")
    args = parser.parse_args(argv)
    pages = render_all()
    stale = sorted(name for name, text in pages.items()
                   if not (OUT / name).exists() or (OUT / name).read_text(encoding="utf-8") != text)
    extra = sorted(p.name for p in OUT.glob("*.md") if p.name not in pages) if OUT.exists() else []
    if args.check:
        for name in stale + extra:
            print(f"docs/reference/{name} is stale: run python scripts/gen_cli_reference.py", file=sys.stderr)
        return 1 if stale or extra else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for name in extra:
        (OUT / name).unlink()
    for name in stale:
        (OUT / name).write_text(pages[name], encoding="utf-8")
    print(f"docs/reference: {len(pages)} pages, {len(stale)} written, {len(extra)} removed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
