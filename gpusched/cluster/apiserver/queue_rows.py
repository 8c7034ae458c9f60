"""The scheduling queue's lasting state in the state file, one row per pod, written as it changes.

``scheduler.queue`` keeps, per pending pod, the epoch of the capacity log it last judged
(``View.attempts``) and its failure record (``View.queue``: failures, time, rejecting plugins,
...). Encoding both maps whole into the ``meta`` table at every write cost about 5 ms at 1,000
pending pods, most of a write that adds one pod. :class:`QueueRows` keeps what the file holds
(a parsed copy, independent of the live records, which the queue changes in place) and, at a
write, stores only the pods whose attempt or record differ from it (``==``, compared in C; a
value equal to the stored one under ``==`` is not rewritten) and deletes the rows of the pods
the queue forgot: a write's cost follows the pods it changed, not the pending pods.

A state file from before the ``scheduling_queue`` table (schema version 2) still holds the two
maps as the ``meta`` values ``attempts`` and ``queue``: they are read once more, and the next
write moves them into rows and deletes the two values.

Neighbours: ``apiserver.view`` (loads and writes through it), ``apiserver.store`` (the table).
"""

from __future__ import annotations

import json
from typing import Any

from gpusched.cluster.apiserver.store import Store, dumps

LEGACY_KEYS = ("attempts", "queue")      # the meta values of schema version 2


def _parse_all(texts: dict[str, str]) -> dict[str, Any]:
    """uid -> JSON text, parsed in one ``json.loads`` of the joined array (one call per row
    costs several times more)."""
    if not texts:
        return {}
    return dict(zip(texts, json.loads("[" + ",".join(texts.values()) + "]")))


class QueueRows:
    """What the state file holds of the queue (see the module docstring)."""

    def __init__(self, attempts: dict[str, int], record_texts: dict[str, str], legacy: bool) -> None:
        self.attempts = dict(attempts)
        self._texts: dict[str, str] | None = record_texts    # parsed at the first write
        self._records: dict[str, Any] = {}
        self.legacy = legacy

    @property
    def records(self) -> dict[str, Any]:
        """The stored records, parsed (again: independent of the view's) when a write needs them;
        a command that only reads never pays for it."""
        if self._texts is not None:
            self._records, self._texts = _parse_all(self._texts), None
        return self._records

    @classmethod
    def empty(cls) -> QueueRows:
        """A view not loaded from a store: every row it writes is new."""
        return cls({}, {}, False)

    @classmethod
    def read(cls, store: Store, meta: dict[str, str]
             ) -> tuple[QueueRows, dict[str, int], dict[str, dict[str, Any]]]:
        """(the stored state, the view's ``attempts``, the view's ``queue``), each independent."""
        attempts: dict[str, int] = {}
        texts: dict[str, str] = {}
        for uid, attempt, record in store.read_queue():
            if attempt is not None:
                attempts[uid] = int(attempt)
            if record is not None:
                texts[uid] = record
        legacy = any(key in meta for key in LEGACY_KEYS)
        if legacy:
            attempts.update(json.loads(meta.get("attempts", "{}")))
            texts.update((uid, dumps(r)) for uid, r in json.loads(meta.get("queue", "{}")).items())
        return cls(attempts, texts, legacy), dict(attempts), _parse_all(texts)

    def write(self, store: Store, attempts: dict[str, int], queue: dict[str, dict[str, Any]]) -> None:
        """Store the pods whose attempt or record changed; delete the rows of forgotten pods."""
        rows: list[tuple[str, int | None, str | None]] = []
        stored = self.records
        for uid in attempts.keys() | queue.keys():
            attempt, record = attempts.get(uid), queue.get(uid)
            if attempt == self.attempts.get(uid) and record == stored.get(uid) and not self.legacy:
                continue
            text = None if record is None else dumps(record)
            rows.append((uid, attempt, text))
            self._keep(self.attempts, uid, attempt)
            self._keep(stored, uid, None if text is None else json.loads(text))
        gone = [uid for uid in self.attempts.keys() | stored.keys()
                if uid not in attempts and uid not in queue]
        for uid in gone:
            self.attempts.pop(uid, None)
            stored.pop(uid, None)
        store.write_queue(sorted(rows), sorted(gone))
        if self.legacy:
            store.delete_meta(*LEGACY_KEYS)
            self.legacy = False

    @staticmethod
    def _keep(kept: dict[str, Any], uid: str, value: Any) -> None:
        if value is None:
            kept.pop(uid, None)
        else:
            kept[uid] = value
