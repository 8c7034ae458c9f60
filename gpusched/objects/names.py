"""Name and label validators with apimachinery's exact messages (``util/validation``).

Each ``*_errors(value)`` function returns a list of message strings, empty when the value is
valid, as apimachinery's ``IsDNS1123Subdomain`` / ``IsQualifiedName`` ... do. Callers wrap them
into ``FieldError``s (``objects.validation``) or one-line ``UsageError``s (``objects.selectors``,
``objects.node`` for the CLI's taint and label arguments).

Neighbours: used by objects.validation, objects.selectors, objects.node; imports nothing.
"""

from __future__ import annotations

import re

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*"
_QUALIFIED_NAME_PART = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = rf"({_QUALIFIED_NAME_PART})?"

_DNS1123_LABEL_RE = re.compile(rf"^{_DNS1123_LABEL}$")
_DNS1123_SUBDOMAIN_RE = re.compile(rf"^{_DNS1123_SUBDOMAIN}$")
_QUALIFIED_NAME_PART_RE = re.compile(rf"^{_QUALIFIED_NAME_PART}$")
_LABEL_VALUE_RE = re.compile(rf"^{_LABEL_VALUE}$")
_CONFIG_MAP_KEY_RE = re.compile(r"^[-._a-zA-Z0-9]+$")

DNS1123_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                     "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
                     f"regex used for validation is '{_DNS1123_LABEL}')")
DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
                         "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
                         f"regex used for validation is '{_DNS1123_SUBDOMAIN}')")
_QUALIFIED_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                       "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                       f"validation is '{_QUALIFIED_NAME_PART}')")
LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                   "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
                   f"'12345', regex used for validation is '{_LABEL_VALUE}')")
CONFIG_MAP_KEY_MSG = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
                      "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")


def dns1123_label_errors(value: str) -> list[str]:
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _DNS1123_LABEL_RE.fullmatch(value):
        errors.append(DNS1123_LABEL_MSG)
    return errors


def dns1123_subdomain_errors(value: str) -> list[str]:
    errors = []
    if len(value) > 253:
        errors.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errors.append(DNS1123_SUBDOMAIN_MSG)
    return errors


def qualified_name_errors(value: str) -> list[str]:
    """``IsQualifiedName``: label keys, taint keys, annotation keys (``prefix/name``)."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
        errors: list[str] = []
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors = ["prefix part must be non-empty"]
        else:
            errors = ["prefix part " + e for e in dns1123_subdomain_errors(prefix)]
    else:
        return ["a qualified name " + _QUALIFIED_NAME_MSG
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if name and not _QUALIFIED_NAME_PART_RE.fullmatch(name):
        errors.append("name part " + _QUALIFIED_NAME_MSG)
    return errors


def label_value_errors(value: str) -> list[str]:
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _LABEL_VALUE_RE.fullmatch(value):
        errors.append(LABEL_VALUE_MSG)
    return errors


def config_map_key_errors(value: str) -> list[str]:
    errors = []
    if len(value) > 253:
        errors.append("must be no more than 253 characters")
    if not _CONFIG_MAP_KEY_RE.fullmatch(value):
        errors.append(CONFIG_MAP_KEY_MSG)
    elif value in (".", ".."):
        errors.append(f"must not be '{value}'")
    elif value.startswith(".."):
        errors.append("must not start with '..'")
    return errors


_DNS1035_LABEL = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_RE = re.compile(_DNS1035_LABEL)
DNS1035_LABEL_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                     "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
                     f"regex used for validation is '{_DNS1035_LABEL}')")
PERCENT_MSG = ("a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
               "regex used for validation is '[0-9]+%')")
_PERCENT_RE = re.compile(r"[0-9]+%")
_PORT_NAME_CHARSET_RE = re.compile(r"[-a-z0-9]+")
_RELAXED_ENV_NAME_MSG = "a valid environment variable name must consist only of printable ASCII characters other than '='"


def dns1035_label_errors(value: str) -> list[str]:
    """``IsDNS1035Label``: Service names (``ValidateServiceName``)."""
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errors.append(DNS1035_LABEL_MSG)
    return errors


def is_percent(value: str) -> bool:
    """``IsValidPercent``: ``[0-9]+%`` (ASCII digits, nothing after the ``%``)."""
    return _PERCENT_RE.fullmatch(value) is not None


def port_name_errors(value: str) -> list[str]:
    """``IsValidPortName``: an IANA_SVC_NAME (at most 15 characters, a-z, 0-9 and single hyphens)."""
    errors = []
    if len(value) > 15:
        errors.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARSET_RE.fullmatch(value):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", value):
        errors.append("must contain at least one letter (a-z)")
    if "--" in value:
        errors.append("must not contain consecutive hyphens")
    if value.startswith("-") or value.endswith("-"):
        errors.append("must not begin or end with a hyphen")
    return errors


def port_number_errors(value: int) -> list[str]:
    """``IsValidPortNum``: 1..65535."""
    return [] if 1 <= value <= 65535 else ["must be between 1 and 65535, inclusive"]


def env_var_name_errors(value: str) -> list[str]:
    """``IsRelaxedEnvVarName`` (RelaxedEnvironmentVariableValidation, GA in 1.34): printable ASCII
    other than ``=``; the empty name is the caller's ``Required value``."""
    if any(not " " <= ch <= "~" or ch == "=" for ch in value):
        return [_RELAXED_ENV_NAME_MSG]
    return []
