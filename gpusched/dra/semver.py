"""Semantic versions as DRA reads them: ``blang/semver/v4``'s strict ``Parse`` and ``Compare``.

A ResourceSlice's ``version`` attribute and CEL's ``semver("1.2.3")`` both parse here. The
rules (semver.org 2.0.0, as blang implements them): ``MAJOR.MINOR.PATCH`` with no leading zeros,
an optional ``-prerelease`` of dot-separated identifiers (numeric ones without leading zeros)
and an optional ``+build`` that never takes part in comparisons. A version without prerelease
ranks above the same version with one: ``1.0.0-rc.1 < 1.0.0``; numeric identifiers rank below
alphanumeric ones and compare as numbers (``rc.2 < rc.10``).

``normalize`` is the apiserver's ``semver(s, true)`` (``library/semverlib.go``
``normalizeAndParse``): a leading ``v`` goes, leading zeros go, a missing minor or patch is 0.

Neighbours: ``dra.cel`` (the ``semver`` CEL library), ``dra.model`` (version attributes).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

_ALNUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")


class SemverError(ValueError):
    """A text that is no semantic version; the message is blang/semver's."""


@dataclass(frozen=True, order=False)
class Version:
    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...] = ()
    build: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(str(p) for p in self.pre)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def compare(self, other: Version) -> int:
        """blang's ``Version.Compare``: -1, 0 or 1; build metadata is ignored."""
        mine = (self.major, self.minor, self.patch)
        theirs = (other.major, other.minor, other.patch)
        if mine != theirs:
            return -1 if mine < theirs else 1
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for a, b in zip(self.pre, other.pre):
            if a != b:
                return _compare_identifiers(a, b)
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))


def _compare_identifiers(a: int | str, b: int | str) -> int:
    if isinstance(a, int) and isinstance(b, int):
        return -1 if a < b else 1
    if isinstance(a, int):
        return -1
    if isinstance(b, int):
        return 1
    return -1 if a < b else 1


def _number(text: str, part: str) -> int:
    if not text.isdigit() or not text.isascii():
        raise SemverError(f"Invalid character(s) found in {part} number {text!r}".replace("'", '"'))
    if len(text) > 1 and text[0] == "0":
        raise SemverError(f'{part.capitalize()} number must not contain leading zeroes "{text}"')
    return int(text)


def _prerelease(text: str) -> int | str:
    if not text:
        raise SemverError("Prerelease is empty")
    if not set(text) <= _ALNUM:
        raise SemverError(f'Invalid character(s) found in prerelease "{text}"')
    if text.isdigit():
        if len(text) > 1 and text[0] == "0":
            raise SemverError(f'Numeric PreRelease version must not contain leading zeroes "{text}"')
        return int(text)
    return text


@functools.lru_cache(maxsize=4096)
def parse(text: str) -> Version:
    """blang's strict ``semver.Parse``."""
    if not text:
        raise SemverError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    major, minor, rest = parts
    patch, build_text, pre_text = rest, "", ""
    if "+" in patch:
        patch, build_text = patch.split("+", 1)
    if "-" in patch:
        patch, pre_text = patch.split("-", 1)
    version = Version(_number(major, "major"), _number(minor, "minor"), _number(patch, "patch"))
    pre = tuple(_prerelease(p) for p in pre_text.split(".")) if pre_text else ()
    build: tuple[str, ...] = ()
    if build_text:
        build = tuple(build_text.split("."))
        for item in build:
            if not item or not set(item) <= _ALNUM:
                raise SemverError(f'Invalid character(s) found in build meta data "{item}"')
    return Version(version.major, version.minor, version.patch, pre, build)


def normalize(text: str) -> Version:
    """The apiserver's ``normalizeAndParse``: ``v1.02`` -> ``1.2.0``."""
    parts = text.removeprefix("v").split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            if not part or not part[0].isdigit():
                part = "0" + part
            parts[i] = part
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return parse(".".join(parts))
