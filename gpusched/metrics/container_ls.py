"""``ls`` of the NVIDIA device nodes a container holds: ``kubectl exec POD -- ls [-l] [-a] /dev/nvidia*``.

The NVIDIA container toolkit creates, for the devices the device plugin hands the runtime:
``/dev/nvidiactl`` (195, 255), ``/dev/nvidia-uvm`` and ``/dev/nvidia-uvm-tools`` (the
dynamic major of the nvidia-uvm module, minors 0 and 1), ``/dev/nvidiaN`` (195, N: the GPU's host
minor number), and for MIG instances ``/dev/nvidia-caps/nvidia-capM`` (the dynamic major of
nvidia-caps; GI/CI access minors as ``container.MIG_MINORS_PER_GPU`` numbers them). The dynamic
majors differ per host; the values below are those of a typical host (``/proc/devices``).

``ls`` is answered as coreutils ``ls`` answers it (options ``-l``, ``-a``, ``-A``, ``-1`` in any
combination; anything else is not answered): a pattern argument (``/dev/nvidia*``, the glob
left unexpanded by the local shell when the local machine has no NVIDIA devices) is expanded as
the container's shell would; missing paths first (``ls: cannot access '...': No such file or
directory``, exit code 2), then the files in C-locale order, then each directory under a
``NAME:`` header (left out for a lone directory argument), with ``total 0`` and, with ``-a``,
``.`` and ``..`` in long format. Long format: ``crw-rw-rw- 1 root root 195,   0 Nov 29 03:41
/dev/nvidia0``, columns aligned per listing as coreutils aligns them (major and minor
right-aligned in their own widths), dated at the container's start (``Mon dd HH:MM``, or
``Mon dd  YYYY`` when over six months from now).

Neighbours: ``metrics.container`` (the container's view and ``exec``) calls :func:`ls`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import fnmatch
from dataclasses import dataclass
from datetime import datetime

if TYPE_CHECKING:
    from gpusched.metrics.container import ContainerView

NVIDIA_MAJOR, CTL_MINOR = 195, 255
UVM_MAJOR, CAPS_MAJOR = 235, 236          # dynamic majors, as on a typical host
CAPS_DIR = "/dev/nvidia-caps"
MIG_MINORS_PER_GPU, MIG_MINORS_PER_GI = 135, 9      # /proc/driver/nvidia-caps/mig-minors
LS_FLAGS = frozenset("laA1")
NOT_FOUND = "ls: cannot access '{}': No such file or directory"
DIRENT_BYTES = 20                          # tmpfs counts 20 bytes per directory entry
HALF_YEAR_S = 365.2425 * 24 * 3600 / 2     # coreutils' "recent" window


@dataclass(frozen=True, slots=True)
class Entry:
    """One name ``ls`` lists: a character device (``major``/``minor``) or a directory."""

    name: str
    mode: str
    links: int = 1
    major: int | None = None
    minor: int = 0
    size: int = 0


def device_files(cv: ContainerView) -> list[Entry]:
    """The ``/dev/nvidia*`` device files of the container (empty without GPUs)."""
    if not cv.gpus:
        return []
    files = [Entry("/dev/nvidiactl", "crw-rw-rw-", major=NVIDIA_MAJOR, minor=CTL_MINOR),
             Entry("/dev/nvidia-uvm", "crw-rw-rw-", major=UVM_MAJOR, minor=0),
             Entry("/dev/nvidia-uvm-tools", "crw-rw-rw-", major=UVM_MAJOR, minor=1)]
    files += [Entry(f"/dev/nvidia{g.host_index}", "crw-rw-rw-", major=NVIDIA_MAJOR,
                    minor=g.host_index) for g in cv.gpus]
    return sorted(files, key=lambda e: e.name.encode())


def caps_files(cv: ContainerView) -> list[Entry]:
    """``/dev/nvidia-caps`` entries: a GI's access minor ``3 + 135*gpu + 9*gi`` and its CI's
    the next one (/proc/driver/nvidia-caps/mig-minors; e.g. GPU 0, GI 1: nvidia-cap12, -cap13)."""
    minors = sorted({MIG_MINORS_PER_GPU * g.host_index + MIG_MINORS_PER_GI * m.gi + 3 + extra
                     for g in cv.gpus for m in g.mig for extra in (0, 1)})
    return sorted((Entry(f"nvidia-cap{m}", "cr--r--r--", major=CAPS_MAJOR, minor=m) for m in minors),
                  key=lambda e: e.name.encode())


def dev_listing(cv: ContainerView) -> str:
    """``ls /dev/nvidia*`` (short format), or its error when the container holds no GPU."""
    return "\n".join(ls(cv, ["/dev/nvidia*"], None, None)[0])


def ls(cv: ContainerView, args: list[str], started: datetime | None,
       now: datetime | None) -> tuple[list[str], int]:
    """The lines and exit code of ``ls ARGS``; ``args`` must pass :func:`ls_arguments`."""
    parsed = ls_arguments(args)
    assert parsed is not None, args
    flags, paths = parsed
    listing = _Listing.of(cv, paths)
    long = "l" in flags
    when = _when(started, now) if long else ""
    out = [NOT_FOUND.format(p) for p in listing.missing]
    out += _batch(listing.files, long, when)
    headed = bool(listing.files) or listing.arguments > 1
    for number, path in enumerate(listing.dirs):
        if listing.files or number:
            out.append("")
        out += [f"{path}:"] if headed else []
        entries = _dot_entries(cv, listing.caps) + listing.caps if "a" in flags else listing.caps
        out += (["total 0"] if long else []) + _batch(entries, long, when)
    return out, 2 if listing.missing else 0


@dataclass(frozen=True)
class _Listing:
    """What ``ls PATHS`` finds: the missing paths, the device files and the directories
    (``/dev/nvidia-caps``) named, after pattern expansion, and how many arguments that made."""

    missing: list[str]
    files: list[Entry]
    dirs: list[str]
    caps: list[Entry]
    arguments: int

    @staticmethod
    def of(cv: ContainerView, paths: list[str]) -> "_Listing":
        files = {e.name: e for e in device_files(cv)}
        caps = caps_files(cv)
        names = [*files, *([CAPS_DIR] if caps else [])]
        expanded = [match for path in paths for match in _expand(path, names)]
        dirs = [p for p in expanded if caps and p.rstrip("/") == CAPS_DIR]
        missing = [p for p in expanded if p not in files and p not in dirs]
        shown = sorted((files[p] for p in expanded if p in files), key=lambda e: e.name.encode())
        return _Listing(missing, shown, dirs, caps, len(expanded))


def ls_arguments(args: list[str]) -> tuple[frozenset[str], list[str]] | None:
    """(short options, paths) when gpusched answers ``ls ARGS``: options among ``-l -a -A -1``
    and at least one path, every one under ``/dev/nvidia``; else None."""
    flags: set[str] = set()
    paths: list[str] = []
    for arg in args:
        if arg.startswith("-") and len(arg) > 1:
            if arg.startswith("--") or not set(arg[1:]) <= LS_FLAGS:
                return None
            flags |= set(arg[1:])
        else:
            paths.append(arg)
    if not paths or not all(p.startswith("/dev/nvidia") for p in paths):
        return None
    return frozenset(flags), paths


def _expand(path: str, names: list[str]) -> list[str]:
    """A shell pattern expanded over the names (sorted), or the path as given when it is no
    pattern or matches nothing (sh passes an unmatched pattern on unchanged)."""
    if not any(c in path for c in "*?["):
        return [path]
    matches = sorted((n for n in names if fnmatch.fnmatchcase(n, path)), key=str.encode)
    return matches or [path]


def _dot_entries(cv: ContainerView, caps: list[Entry]) -> list[Entry]:
    """``.`` (/dev/nvidia-caps) and ``..`` (the container's /dev: its usual 16 entries, the NVIDIA
    files, nvidia-caps; subdirectories pts, mqueue, shm, nvidia-caps) as tmpfs sizes them."""
    dev_entries = 16 + len(device_files(cv)) + 1
    return [Entry(".", "drwxr-xr-x", 2, size=DIRENT_BYTES * (len(caps) + 2)),
            Entry("..", "drwxr-xr-x", 6, size=DIRENT_BYTES * (dev_entries + 2))]


def _batch(entries: list[Entry], long: bool, when: str) -> list[str]:
    """One listing, short or long; long columns aligned over the listing (coreutils
    ``gobble_file`` widths: links, then ``major, minor`` or the size, right-aligned)."""
    if not long:
        return [e.name for e in entries]
    if not entries:
        return []
    devices = [e for e in entries if e.major is not None]
    major_w = max((len(str(e.major)) for e in devices), default=0)
    minor_w = max((len(str(e.minor)) for e in devices), default=0)
    sizes = [f"{e.major:>{major_w}}, {e.minor:>{minor_w}}" if e.major is not None else str(e.size)
             for e in entries]
    size_w = max(len(s) for s in sizes)
    links_w = max(len(str(e.links)) for e in entries)
    return [f"{e.mode} {e.links:>{links_w}} root root {size:>{size_w}} {when} {e.name}"
            for e, size in zip(entries, sizes)]


def _when(started: datetime | None, now: datetime | None) -> str:
    """coreutils' date column: ``Nov 29 03:41`` within six months of now, else ``Nov 29  2025``."""
    if started is None:
        return "Jan  1  1970"
    recent = now is None or abs((now - started).total_seconds()) < HALF_YEAR_S
    day = f"{started.strftime('%b')} {started.day:>2}"
    return f"{day} {started.strftime('%H:%M')}" if recent else f"{day}  {started.year}"
