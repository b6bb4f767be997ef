"""The trace of a run: an ordered record of what happened, with a stable hash.

Two runs with the same seed must produce the same trace hash (the determinism contract in
docs/explanation/architecture.md). Records are tuples of str/int/float/None; the hash is
sha256 over a canonical encoding, updated as records arrive, so a long run does not have to
keep every record in memory. The most recent records are kept for failure reports;
``keep_all=True`` keeps every record (``records``), for diagnosing where two runs that should
agree diverge.
"""

from __future__ import annotations

import hashlib
import re
from collections import deque
from collections.abc import Iterator

Field = str | int | float | bool | None

# A memory address in a repr (``<Scheduler object at 0x7f...>``): different in every process.
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
# Records hashed together (see Trace.record).
_BATCH = 256


def stable(text: str) -> str:
    """``text`` with memory addresses blanked, fit for a trace record: libraries name tasks
    and threads after ``repr(self)``, whose address differs from run to run."""
    return _ADDRESS.sub("0x?", text)


class Trace:
    """The ordered record of a run and its running sha256 (:meth:`hexdigest`).

    ``record(kind, *fields)`` appends one record; the last ``keep_last`` are kept in
    ``recent`` for failure reports, all of them in ``records`` with ``keep_all=True``.
    """

    def __init__(self, *, keep_last: int = 200, keep_all: bool = False) -> None:
        self._hasher = hashlib.sha256()
        # Records not hashed yet: hashing a batch at once costs a fraction of hashing each
        # record as it comes (the server records every write). The digest is the same. The
        # batch also feeds ``recent`` and ``records``, so a record is one append.
        self._pending: list[tuple[Field, ...]] = []
        self._hashed = 0
        self._recent: deque[tuple[Field, ...]] = deque(maxlen=keep_last)
        # Every record, in order: only for diagnosis (a long run makes this large).
        self._records: list[tuple[Field, ...]] | None = [] if keep_all else None

    def record(self, kind: str, *fields: Field) -> None:
        pending = self._pending
        pending.append((kind, *fields))
        if len(pending) >= _BATCH:
            self._hash_pending()

    def _hash_pending(self) -> None:
        # Each record hashes as its repr() and a newline: repr() of these primitive types is
        # canonical and version-stable.
        pending = self._pending
        if not pending:
            return
        self._hasher.update("".join([f"{entry!r}\n" for entry in pending]).encode())
        self._hashed += len(pending)
        self._recent.extend(pending)
        if self._records is not None:
            self._records.extend(pending)
        pending.clear()

    @property
    def count(self) -> int:
        """How many records there have been."""
        return self._hashed + len(self._pending)

    @property
    def recent(self) -> deque[tuple[Field, ...]]:
        """The last ``keep_last`` records, oldest first."""
        self._hash_pending()
        return self._recent

    @property
    def records(self) -> list[tuple[Field, ...]] | None:
        """Every record, in order, with ``keep_all=True``; else None."""
        self._hash_pending()
        return self._records

    def hexdigest(self) -> str:
        self._hash_pending()
        return self._hasher.copy().hexdigest()

    def short_hash(self) -> str:
        return self.hexdigest()[:16]

    def __iter__(self) -> Iterator[tuple[Field, ...]]:
        return iter(self.recent)

    def __repr__(self) -> str:
        return f"<Trace {self.count} records hash={self.short_hash()}>"
