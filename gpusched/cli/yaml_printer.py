"""kubectl's YAML printer (``-o yaml``): block style, keys sorted, strings quoted as Go's yaml.v2
quotes them. Its own module so that PyYAML is imported only when YAML is printed.

Neighbours: ``cli.output.to_yaml`` calls :func:`to_yaml`.
"""

from __future__ import annotations

from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    """Block-style YAML with kubectl's list indentation (``- a`` under its key), never anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _reads_as_other_type(value: str) -> bool:
    """Would Go's yaml (yaml.v2 ``resolve``) read this unquoted as something else than text?"""
    if value[:1] and value[0] in "+-.0123456789":
        try:
            float(value.replace("_", "x"))
            return True
        except ValueError:
            pass
    return False


def _str_presenter(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    """Strings as Go's yaml.v2 writes them for kubectl: multi-line text as a ``|`` block; text
    that would read back as another type (``"0"``, ``"08"``, ``"true"``, timestamps, ``""``)
    double-quoted; text that cannot be plain (``{"a":1}``, ``a: b``) single-quoted."""
    tag = "tag:yaml.org,2002:str"
    if "\n" in value:
        return dumper.represent_scalar(tag, value, style="|")
    if not value or dumper.resolve(yaml.ScalarNode, value, (True, False)) != tag \
            or _reads_as_other_type(value):
        return dumper.represent_scalar(tag, value, style='"')
    analysis = dumper.analyze_scalar(value)
    if not analysis.allow_block_plain:
        return dumper.represent_scalar(tag, value, style="'" if analysis.allow_single_quoted else '"')
    return dumper.represent_scalar(tag, value)


_Dumper.add_representer(str, _str_presenter)


def to_yaml(document: Any) -> str:
    """Block YAML with the keys sorted, as kubectl prints them."""
    return yaml.dump(document, Dumper=_Dumper, default_flow_style=False, sort_keys=True,
                     allow_unicode=True).rstrip("\n")
