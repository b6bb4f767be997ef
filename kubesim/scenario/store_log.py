"""What a store prints and logs while kubesim runs it, kept for the report instead of the terminal.

A store under test logs: the official client's warnings, kopf's and kubespawner's own loggers,
a ``print`` in a handler, Python's report of an exception a thread did not catch. Left alone,
that output (thousands of lines in a campaign of a hundred examples) goes to the terminal
between kubesim's progress and its verdict, and what it says about the one example that failed
is lost among what every other example said. :func:`captured` holds it for the length of one
run: records that reach the root logger, and whatever is written to ``sys.stdout`` and
``sys.stderr``. A campaign keeps the failing example's (:attr:`kubesim.testing.check.Found.log`)
and the report shows its end.

What is captured is what the process would have shown: loggers keep their levels (a store's
``logger.info`` with no logging configured is no more shown here than on a terminal), and a
logger that does not propagate to the root (one with handlers of its own) still writes where
it was told to.
"""

from __future__ import annotations

import io
import logging
import sys
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from kubesim._core.paths import readable_traceback

# Lines kept per run: the end of a long log is the part about the failure.
KEEP = 200
# The format of a record held: the level, the logger, the message.
FORMAT = "%(levelname)s %(name)s: %(message)s"


@dataclass
class StoreLog:
    """The last :data:`KEEP` lines of what one run printed and logged, and how many in all."""

    lines: deque[str] = field(default_factory=lambda: deque(maxlen=KEEP))
    total: int = 0

    def add(self, line: str) -> None:
        # A traceback's paths as kubesim shows them anywhere: the same on every machine.
        self.lines.append(readable_traceback(line) if 'File "' in line else line)
        self.total += 1

    def tail(self, count: int) -> list[str]:
        return list(self.lines)[-count:] if count > 0 else []


class _Lines(io.TextIOBase):
    """A text stream that keeps whole lines in a :class:`StoreLog` (a partial line waits for
    its end, or for the end of the run)."""

    def __init__(self, log: StoreLog) -> None:
        super().__init__()
        self._log = log
        self._partial = ""

    # What code that prints asks of sys.stdout (click, rich, logging's StreamHandler).
    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        *complete, self._partial = (self._partial + text).split("\n")
        for line in complete:
            self._log.add(line)
        return len(text)

    def close_line(self) -> None:
        if self._partial:
            self._log.add(self._partial)
            self._partial = ""


class _Handler(logging.Handler):
    def __init__(self, stream: _Lines, formatter: logging.Formatter) -> None:
        super().__init__()
        self._stream = stream
        self.setFormatter(formatter)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._stream.write(self.format(record) + "\n")
        except Exception:  # logging's own contract: a handler reports, never raises
            self.handleError(record)


@contextmanager
def captured() -> Iterator[StoreLog]:
    """Hold what is printed and logged to the root logger until the block ends, in the
    :class:`StoreLog` it yields, records as ``LEVEL logger: message``. Root handlers already
    configured are set aside for the block and restored after it, as are the streams."""
    log = StoreLog()
    stream = _Lines(log)
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers = [_Handler(stream, logging.Formatter(FORMAT))]
    out, err = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = stream
    try:
        yield log
    finally:
        sys.stdout, sys.stderr = out, err
        root.handlers = saved
        stream.close_line()
