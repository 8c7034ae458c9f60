"""sbatch scripts: ``#SBATCH`` options parsed into a frozen ``SbatchJob``, and Slurm's names.

Parsing follows sbatch: ``#SBATCH`` lines are read from the top of the script until the first
line that is neither blank nor a comment; each carries options in the command-line forms
``--opt=value``, ``--opt value``, ``-X value`` or ``-Xvalue``. Supported options:

=====================================  =============================================================
``--gres=gpu[:type]:N`` (or ``gpu``)   GPU count N (default 1) and Slurm GRES type
``--gpus=[type:]N``, ``-G``            same, per job (one node, so per job == per node)
``--cpus-per-task=N``, ``-c``          CPUs (default 1)
``--mem=N[K|M|G|T]``                   memory, MiB by default as in sbatch
``--time=T``, ``-t``                   ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``,
                                       ``UNLIMITED``/``INFINITE`` -> no limit
``--partition``, ``-p``                partition name (see :func:`partition_names`)
``--qos``, ``-q``                      QOS name (the embedded cluster maps it to a PriorityClass)
``--job-name``, ``-J``                 job name (default: the script's file name)
``--array``, ``-a``                    ``0-3``, ``1,3,5``, ``0-7:2``, with an optional ``%N`` limit
``--dependency=afterok:ID[:ID]``, -d   held until those jobs completed successfully
``--nodes=1``/``-N 1``, ``--ntasks=1``/``-n 1``  accepted (gpusched jobs are one pod on one node)
``--output``/``-o``                    the output file pattern (default ``slurm-%j.out``,
                                       arrays ``slurm-%A_%a.out``; ``%j %x %A %a %N %u %%``)
``--error``/``-e``                     accepted (stderr goes to the output file)
``--chdir``/``-D``                     the job's working directory (where the output file goes)
=====================================  =============================================================

Anything else raises ``UsageError``: ``unsupported #SBATCH option --mail-type (job.sh line 4)``.

Run time on the virtual clock (:func:`run_seconds`): the body's ``sleep N`` lines (coreutils
suffixes s/m/h/d) add up; a body without ``sleep`` runs ``DEFAULT_COMMAND_SECONDS`` (2 s) per
command line (``nvidia-smi``, ``hostname``, ``python x.py`` ...), at least one; a body that runs
until killed (``sleep infinity``, ``while true``/``while :``, ``tail -f``) has no run time of its
own: it ends at its ``--time`` limit (Slurm's TIMEOUT) or when cancelled.

Slurm names shared with ``slurm.config`` (the config generator) and ``slurm.embedded``:
:func:`gres_type` turns a catalog GPU model name into a Slurm-safe GRES type (``A100-40GB`` ->
``a100_40gb``: lower case, ``-`` -> ``_``; MIG profiles keep Slurm's NVML spelling ``1g.5gb``),
and :func:`partition_names` gives the partitions a node belongs to.

Neighbours: ``objects.node`` (node views); used by ``slurm.embedded``, ``slurm.config``,
``slurm.translate``, ``cli.slurm_cmd``.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from gpusched.errors import UsageError
from gpusched.objects.node import node_info
from gpusched.objects.digits import is_digits

PURPOSE_LABEL = "gpusched.io/purpose"
DEFAULT_PARTITION = "all"
CPU_PARTITION = "cpu"

_SHORT = {"-G": "--gpus", "-c": "--cpus-per-task", "-t": "--time", "-p": "--partition",
          "-q": "--qos", "-J": "--job-name", "-a": "--array", "-d": "--dependency",
          "-N": "--nodes", "-n": "--ntasks", "-o": "--output", "-e": "--error", "-D": "--chdir"}
SUPPORTED = ("--gres", "--gpus", "--cpus-per-task", "--mem", "--time", "--partition", "--qos",
             "--job-name", "--array", "--dependency", "--nodes", "--ntasks", "--output", "--error",
             "--chdir")
_SLEEP = re.compile(r"^\s*(?:srun\s+)?sleep\s+(\d+(?:\.\d+)?)([smhd]?)\s*(?:[;#].*)?$")
_FOREVER = re.compile(r"^\s*(?:srun\s+)?(?:sleep\s+inf(?:inity)?\b|while\s+(?:true|:)\b|"
                      r"tail\s+-f\b)")
DEFAULT_COMMAND_SECONDS = 2.0
DEFAULT_OUTPUT = "slurm-%j.out"
DEFAULT_ARRAY_OUTPUT = "slurm-%A_%a.out"
MAX_ARRAY_SIZE = 1001        # slurm.conf MaxArraySize default: task ids 0..1000
_SLEEP_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_MEM_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


@dataclass(frozen=True, slots=True)
class SbatchJob:
    """What an sbatch script asks for, in canonical units (MiB for memory, seconds for time)."""

    name: str
    script: str
    source: str = "<stdin>"
    gpus: int = 0
    gpu_type: str = ""                    # Slurm GRES type ("a100_40gb"), "" = any
    cpus_per_task: int = 1
    mem_mib: int | None = None
    time_limit: int | None = None         # seconds; None = partition default (unlimited)
    partition: str = ""
    qos: str = ""
    array: tuple[int, ...] = ()
    array_limit: int | None = None        # the ``%N`` of --array
    dependencies: tuple[str, ...] = ()    # job ids of afterok dependencies
    run_seconds: float | None = None      # see :func:`run_seconds`; None = runs until killed
    options: tuple[tuple[str, str], ...] = field(default=())   # (option, value) as read
    output: str = ""                      # --output pattern ("" = Slurm's default)
    chdir: str = ""                       # --chdir


def gres_type(name: str) -> str:
    """Slurm GRES type for a GPU model or MIG profile name.

    >>> gres_type("A100-40GB"), gres_type("T4"), gres_type("1g.5gb"), gres_type("H100-80GB")
    ('a100_40gb', 't4', '1g.5gb', 'h100_80gb')
    """
    return re.sub(r"[^a-z0-9_.]", "_", name.strip().lower())


def partition_names(node: Mapping[str, Any], by_purpose: bool) -> tuple[str, ...]:
    """The partitions of one node: ``all``, then its purpose (label ``gpusched.io/purpose``)
    when the cluster partitions by purpose, else its GPU model's GRES type (``cpu`` for nodes
    without GPUs).

    >>> node = {"metadata": {"name": "n", "annotations": {"gpusched.io/gpu-model": "T4"}}}
    >>> partition_names(node, False)
    ('all', 't4')
    """
    info = node_info(node)
    if by_purpose:
        purpose = info.labels.get(PURPOSE_LABEL, "")
        return (DEFAULT_PARTITION, gres_type(purpose)) if purpose else (DEFAULT_PARTITION,)
    return (DEFAULT_PARTITION, gres_type(info.gpu_model) if info.gpu_model else CPU_PARTITION)


def partitions_by_purpose(nodes: Sequence[Mapping[str, Any]]) -> bool:
    """A cluster is partitioned by purpose when any node carries ``gpusched.io/purpose``."""
    return any(PURPOSE_LABEL in ((n.get("metadata") or {}).get("labels") or {}) for n in nodes)


# ---- values ------------------------------------------------------------------------------------

def parse_time(text: str) -> int | None:
    """sbatch ``--time`` in seconds (None for UNLIMITED).

    >>> [parse_time(t) for t in ("90", "5:30", "1:00:00", "2-0", "1-2:30", "1-0:0:5", "UNLIMITED")]
    [5400, 330, 3600, 172800, 95400, 86405, None]
    """
    value = text.strip()
    if value.upper() in ("UNLIMITED", "INFINITE"):
        return None
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", value)
    if not match:
        raise ValueError("expected minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS")
    days, a, b, c = match.groups()
    parts = [int(x) for x in (a, b, c) if x is not None]
    if days is not None:                       # D-H, D-H:M, D-H:M:S
        hours, minutes, seconds = (parts + [0, 0])[:3]
        return int(days) * 86400 + hours * 3600 + minutes * 60 + seconds
    if len(parts) == 1:
        return parts[0] * 60
    if len(parts) == 2:
        return parts[0] * 60 + parts[1]
    return parts[0] * 3600 + parts[1] * 60 + parts[2]


def parse_mem(text: str) -> int:
    """sbatch ``--mem`` in MiB (default unit M; K rounds up).

    >>> parse_mem("4096"), parse_mem("16G"), parse_mem("512M"), parse_mem("1T"), parse_mem("1500K")
    (4096, 16384, 512, 1048576, 2)
    """
    match = re.fullmatch(r"(\d+)([KMGT]?)[Bb]?", text.strip().upper())
    if not match or int(match.group(1)) == 0:
        raise ValueError("expected a positive size with an optional K, M, G or T suffix")
    return math.ceil(int(match.group(1)) * _MEM_UNITS[match.group(2) or "M"])


def parse_gres(text: str) -> tuple[int, str]:
    """``gpu``, ``gpu:N``, ``gpu:type:N`` -> (count, type).

    >>> parse_gres("gpu"), parse_gres("gpu:2"), parse_gres("gpu:a100_40gb:4")
    ((1, ''), (2, ''), (4, 'a100_40gb'))
    """
    parts = text.strip().split(":")
    if parts[0] != "gpu" or len(parts) > 3:
        raise ValueError("expected gpu, gpu:N or gpu:TYPE:N")
    if len(parts) == 1:
        return 1, ""
    if len(parts) == 2:
        return (_positive(parts[1]), "") if is_digits(parts[1]) else (1, parts[1])
    return _positive(parts[2]), parts[1]


def parse_gpus(text: str) -> tuple[int, str]:
    """``--gpus=[type:]N`` -> (count, type).

    >>> parse_gpus("2"), parse_gpus("t4:1")
    ((2, ''), (1, 't4'))
    """
    kind, _, count = text.strip().rpartition(":")
    return _positive(count), kind


def parse_array(text: str) -> tuple[tuple[int, ...], int | None]:
    """``0-3``, ``1,3,5``, ``0-7:2``, ``0-15%4`` -> (task ids, limit).

    >>> parse_array("0-3"), parse_array("1,3,5%2"), parse_array("0-6:3")
    (((0, 1, 2, 3), None), ((1, 3, 5), 2), ((0, 3, 6), None))
    """
    body, _, limit = text.strip().partition("%")
    ids: list[int] = []
    for part in body.split(","):
        match = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", part)
        if not match:
            raise ValueError("expected ranges like 0-3, 1,3,5 or 0-7:2, optionally with %N")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        step = int(match.group(3) or 1)
        if last < first or step < 1:
            raise ValueError("a range must go upwards with a positive step")
        if last >= MAX_ARRAY_SIZE:
            raise ValueError(f"Invalid job array specification: indices must be less than "
                             f"MaxArraySize ({MAX_ARRAY_SIZE})")
        ids.extend(range(first, last + 1, step))
    return tuple(sorted(set(ids))), (_positive(limit) if limit else None)


def parse_dependency(text: str) -> tuple[str, ...]:
    """``afterok:12[:13]`` -> job ids. Other dependency types are not supported.

    >>> parse_dependency("afterok:12:13")
    ('12', '13')
    """
    kind, _, ids = text.strip().partition(":")
    if kind != "afterok":
        raise ValueError(f'dependency type "{kind}" is not supported; only afterok:ID[:ID...]')
    jobs = tuple(i for i in ids.split(":") if i)
    if not jobs or not all(re.fullmatch(r"\d+(?:_\d+)?", j) for j in jobs):
        raise ValueError("expected afterok:ID[:ID...] with numeric job ids")
    return jobs


def _positive(text: str) -> int:
    if not is_digits(text) or int(text) < 1:
        raise ValueError("expected a positive integer")
    return int(text)


def _one(text: str) -> int:
    if _positive(text) != 1:
        raise ValueError("gpusched runs every job as one pod on one node: only 1 is supported")
    return 1


# ---- scripts -----------------------------------------------------------------------------------

def sbatch_lines(script: str) -> list[tuple[int, str]]:
    """(line number, option text) of the leading ``#SBATCH`` lines."""
    found = []
    for number, line in enumerate(script.splitlines(), start=1):
        stripped = line.strip()
        if number == 1 and stripped.startswith("#!"):
            continue
        if stripped.startswith("#SBATCH"):
            found.append((number, stripped[len("#SBATCH"):].strip()))
        elif stripped and not stripped.startswith("#"):
            break
    return found


def _split(words: list[str], where: str) -> list[tuple[str, str]]:
    """Command-line words -> (long option, value) pairs."""
    pairs = []
    while words:
        word = words.pop(0)
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            if not eq and name in SUPPORTED and words:
                value = words.pop(0)
        elif word.startswith("-") and len(word) >= 2:
            name, value = _SHORT.get(word[:2], word[:2]), word[2:]
            if not value and words:
                value = words.pop(0)
        else:
            raise UsageError(f'unexpected #SBATCH word "{word}" ({where})')
        pairs.append((name, value))
    return pairs


def command_lines(script: str) -> list[str]:
    """The body's command lines: not blank, not comments (``#SBATCH`` lines included)."""
    return [line.strip() for line in script.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def run_seconds(script: str) -> float | None:
    """The body's run time: the sum of its ``sleep N`` lines; without any, 2 s per command
    line (at least one); None when it runs until killed.

    >>> run_seconds("#!/bin/sh\\nsleep 30\\necho hi\\nsleep 2m\\n")
    150.0
    >>> run_seconds("#!/bin/bash\\n#SBATCH --gres=gpu:1\\nnvidia-smi\\nnvidia-smi -L\\n")
    4.0
    >>> run_seconds("#!/bin/sh\\npython serve.py &\\nsleep infinity\\n") is None
    True
    """
    lines = command_lines(script)
    if any(_FOREVER.match(line) for line in lines):
        return None
    total = None
    for line in lines:
        match = _SLEEP.match(line)
        if match:
            total = (total or 0.0) + float(match.group(1)) * _SLEEP_UNITS[match.group(2)]
    if total is None:
        total = DEFAULT_COMMAND_SECONDS * max(1, len(lines))
    return total


def parse_sbatch(script: str, source: str = "<stdin>") -> SbatchJob:
    """Parse an sbatch script; see the module docstring for the options."""
    base = source.rsplit("/", 1)[-1] if source != "<stdin>" else "sbatch"
    values: dict[str, Any] = {"name": base or "sbatch", "script": script, "source": source}
    options = []
    for number, text in sbatch_lines(script):
        where = f"{source} line {number}"
        try:
            words = shlex.split(text, comments=True)
        except ValueError as err:
            raise UsageError(f"cannot read #SBATCH line: {err} ({where})") from None
        for name, value in _split(words, where):
            if name not in SUPPORTED:
                raise UsageError(f"unsupported #SBATCH option {name} ({where})")
            try:
                values.update(_option(name, value))
            except ValueError as err:
                raise UsageError(f'invalid #SBATCH {name} value "{value}": {err} ({where})') from None
            options.append((name, value))
    values["options"] = tuple(options)
    values["run_seconds"] = run_seconds(script)
    return SbatchJob(**values)


def _option(name: str, value: str) -> dict[str, Any]:
    """One option's contribution to the SbatchJob fields."""
    if name == "--gres":
        gpus, kind = parse_gres(value)
        return {"gpus": gpus, "gpu_type": kind}
    if name == "--gpus":
        gpus, kind = parse_gpus(value)
        return {"gpus": gpus, "gpu_type": kind}
    if name == "--cpus-per-task":
        return {"cpus_per_task": _positive(value)}
    if name == "--mem":
        return {"mem_mib": parse_mem(value)}
    if name == "--time":
        return {"time_limit": parse_time(value)}
    if name in ("--partition", "--qos", "--job-name"):
        if not value or not re.fullmatch(r"[A-Za-z0-9_.\-]+", value):
            raise ValueError("expected a name of letters, digits, '_', '.' or '-'")
        return {{"--partition": "partition", "--qos": "qos", "--job-name": "name"}[name]: value}
    if name == "--array":
        ids, limit = parse_array(value)
        return {"array": ids, "array_limit": limit}
    if name == "--dependency":
        return {"dependencies": parse_dependency(value)}
    if name in ("--nodes", "--ntasks"):
        _one(value)
        return {}
    if not value:                               # --output / --error / --chdir
        raise ValueError("expected a file name")
    if name == "--output":
        return {"output": value}
    if name == "--chdir":
        return {"chdir": value}
    return {}


def hostlist(names: list[str]) -> str:
    """Slurm's compressed host list: names sharing a prefix with numeric suffixes become ranges.

    >>> hostlist(["gpu-node-1", "gpu-node-2", "gpu-node-3", "gpu-node-5", "cpu-node-1", "login"])
    'cpu-node-1,gpu-node-[1-3,5],login'
    """
    groups: dict[str, list[int]] = {}
    plain: list[str] = []
    for name in names:
        match = re.fullmatch(r"(.*?)(\d+)", name)
        if match and not match.group(2).startswith("0"):
            groups.setdefault(match.group(1), []).append(int(match.group(2)))
        else:
            plain.append(name)
    parts = list(plain)
    for prefix, numbers in groups.items():
        numbers = sorted(set(numbers))
        if len(numbers) == 1:
            parts.append(f"{prefix}{numbers[0]}")
            continue
        ranges: list[str] = []
        start: int | None = numbers[0]
        for prev, cur in zip(numbers, numbers[1:] + [None]):
            if cur is None or cur != prev + 1:
                ranges.append(f"{start}-{prev}" if prev != start else f"{start}")
                start = cur
        parts.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(sorted(parts))
