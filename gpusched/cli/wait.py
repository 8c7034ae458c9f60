"""``gpusched wait``: kubectl's ``wait`` for the embedded cluster, its clock running meanwhile.

``gpusched wait --for=delete pod/low-batch``, ``--for=condition=Ready``, ``--for=condition=
Available=false``, ``--for=jsonpath='{.status.phase}'=Running``: each named object is waited
on in turn, within one ``--timeout`` (default 30s; 0 checks once; negative means a week), and
``KIND/NAME condition met`` is printed for each, as kubectl's ``cmd/wait`` does (``wait.go``
IsDeleted, ``condition.go`` ConditionalWait, ``json.go`` JSONPathWait). While it waits, the
cluster clock follows the wall clock (``cluster.clock.wall``; docs/serve.md "The clock"), so a
grace period ends or a pod starts as on a real cluster. Errors are kubectl's lines: ``timed out
waiting for the condition on pods/x``, ``condition not met for pods/x``, ``unrecognized
condition: "x"``, ``pods "x" not found``.

Neighbours: ``cluster.clock.wall`` (the clock), ``cli.jsonpath``; registered by ``cli.main``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import argparse

from gpusched.cli.commands import namespace_of, open_cluster, split_kind_name
from gpusched.cli.flags import go_duration
from gpusched.errors import GpuschedError, NotFoundError, UsageError

if TYPE_CHECKING:
    from gpusched.objects.kinds import KindInfo

WATCH_POLL_SECONDS = 0.2
A_WEEK_S = 168 * 3600.0
# A check of one object: True (met), False (not yet); None is "gone" (what --for=delete waits for).
Check = Callable[[dict[str, Any] | None], bool]


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    text = "Wait for a specific condition on one or many objects"
    p = sub.add_parser("wait", help=text, description=text, epilog="Examples:\n  " + "\n  ".join((
        "gpusched wait --for=delete pod/low-batch --timeout=60s",
        "gpusched wait --for=condition=Ready pod/urgent-training",
        "gpusched wait --for=jsonpath='{.status.phase}'=Running pod/urgent-training")),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", help="KIND, or KIND/NAME")
    p.add_argument("names", nargs="*", help="object names")
    p.add_argument("--for", dest="condition", default="",
                   help="delete | condition=NAME[=VALUE] | jsonpath='{EXPR}'[=VALUE]")
    p.add_argument("--timeout", default="30s",
                   help="how long to wait (wall time) before giving up; 0 checks once, "
                        "negative means a week")
    p.add_argument("-n", "--namespace", default=None, help="namespace (default: default)")
    p.set_defaults(handler=cmd_wait)


def cmd_wait(args: argparse.Namespace) -> int:
    check, deleting = condition_for(args.condition)
    timeout = _timeout(args.timeout)
    targets = _targets(args)
    with open_cluster(args) as cluster:
        waiter = _Waiter(cluster, timeout)
        for info, name in targets:
            if waiter.until(info, name, namespace_of(args), check, deleting):
                print(f"{_ref(info)}/{name} condition met", flush=True)
    return 0


def _timeout(text: str) -> float:
    """``--timeout``: seconds; negative means a week (wait.go ToOptions)."""
    negative = text.strip().startswith("-")
    seconds = go_duration(text.strip().lstrip("-"), "--timeout")
    return A_WEEK_S if negative and seconds else seconds


def _targets(args: argparse.Namespace) -> list[tuple[KindInfo, str]]:
    """(kind, name) pairs: ``KIND NAME...``, or ``KIND/NAME`` words."""
    if "/" in args.kind:
        pairs = [(info, names[0]) for info, names in
                 (split_kind_name(word, []) for word in [args.kind, *args.names])]
    else:
        info, names = split_kind_name(args.kind, list(args.names))
        pairs = [(info, name) for name in names]
    if not pairs:
        raise UsageError("resource name must be provided")
    return pairs


def _ref(info: KindInfo) -> str:
    return f"{info.singular}.{info.group}" if info.group else info.singular


def condition_for(text: str) -> tuple[Check, bool]:
    """The check ``--for`` names (wait.go conditionFuncFor); whether it is ``delete``."""
    if text.lower() == "delete":
        return (lambda body: body is None), True
    if text.startswith("condition="):
        name, _, value = text[len("condition="):].partition("=")
        return (lambda body: body is not None and _condition_met(body, name, value or "true")), False
    if text.startswith("jsonpath="):
        return _jsonpath_check(text[len("jsonpath="):]), False
    raise UsageError(f'unrecognized condition: "{text}"')


def _condition_met(body: dict[str, Any], name: str, value: str) -> bool:
    """condition.go checkCondition: the first condition of that type (case-folded) has that
    status, unless it (or the status) observed an older generation than the object's."""
    status = body.get("status") or {}
    for condition in status.get("conditions") or []:
        if not isinstance(condition, dict) or str(condition.get("type", "")).casefold() != name.casefold():
            continue
        if "status" not in condition:
            continue
        generation = (body.get("metadata") or {}).get("generation")
        observed = condition.get("observedGeneration", status.get("observedGeneration"))
        if generation is not None and observed is not None and int(observed) < int(generation):
            return False
        return str(condition["status"]).casefold() == value.casefold()
    return False


def _jsonpath_check(text: str) -> Check:
    """json.go: one value at the expression (any value when none is given), compared as text."""
    from gpusched.cli import jsonpath

    parts = _split_on_single_equals(text)
    if not 1 <= len(parts) <= 2:
        raise UsageError("jsonpath wait format must be --for=jsonpath='{.status.readyReplicas}'=3 "
                         "or --for=jsonpath='{.status.readyReplicas}'")
    expression = parts[0]
    wanted = parts[1].strip("'\"") if len(parts) == 2 else None
    if wanted == "":
        raise UsageError("jsonpath wait has to have a value after equal sign, like "
                         "--for=jsonpath='{.status.readyReplicas}'=3")
    jsonpath.values(expression, {})      # refuses an expression that does not parse, at once

    def check(body: dict[str, Any] | None) -> bool:
        if body is None:
            return False
        found = jsonpath.values(expression, body)
        if not found:
            return False
        if len(found) > 1:
            raise GpuschedError("given jsonpath expression matches more than one value")
        if wanted is None:
            return True
        if isinstance(found[0], (dict, list)):
            raise GpuschedError("jsonpath leads to a nested object or list which is not supported")
        return jsonpath.go_text(found[0]).strip() == wanted.strip()
    return check


def _split_on_single_equals(text: str) -> list[str]:
    """wait.go splitJSONPathInput: split on ``=``, a doubled ``==`` stays in its part."""
    parts, current, i = [], "", 0
    while i < len(text):
        if text[i] == "=" and text[i + 1:i + 2] == "=":
            current, i = current + "==", i + 2
            continue
        if text[i] == "=":
            parts.append(current)
            current = ""
        else:
            current += text[i]
        i += 1
    return parts + [current]


class _Waiter:
    """One command's wait: one timeout for every object, the clock following the wall clock."""

    def __init__(self, cluster: Any, timeout: float) -> None:
        from gpusched.cluster.clock.wall import follow

        self.cluster = cluster
        self.timeout = timeout
        self.follower = follow(cluster)

    def until(self, info: KindInfo, name: str, namespace: str, check: Check, deleting: bool) -> bool:
        """Wait until ``check`` holds for the object; whether to print (kubectl prints nothing
        for a ``delete`` wait on an object that was never there)."""
        import time

        ns = namespace if info.namespaced else ""
        plural = f"{info.plural}.{info.group}" if info.group else info.plural
        body = self.cluster.read(lambda view: view.get(info.kind, name, ns))
        if body is None:
            if deleting:
                return False
            raise NotFoundError(plural, name)
        while True:
            if check(body):
                return True
            if self.follower.waited() >= self.timeout:
                what = "condition not met for" if not self.timeout else \
                    "timed out waiting for the condition on"
                raise GpuschedError(f"{what} {info.plural}/{name}")
            time.sleep(WATCH_POLL_SECONDS)   # polling interval of the state file, not a synchronisation
            self.follower.tick()
            body = self.cluster.read(lambda view: view.get(info.kind, name, ns))
            if body is None and not deleting:
                raise NotFoundError(plural, name)
