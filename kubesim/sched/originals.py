"""The real threading objects, captured before any controlled run patches them.

:mod:`kubesim.sched.patches` replaces ``threading.Thread.start``, ``join`` and ``Condition``
while a run is controlled; the scheduler itself still needs the real ones (to start the OS
thread behind each controlled thread, to join it, to wait on a real condition). Both take them
from here: this module is imported with :mod:`kubesim.sched`, never during a run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

ORIGINAL_THREAD = threading.Thread
ORIGINAL_START: Callable[[threading.Thread], None] = threading.Thread.start
ORIGINAL_JOIN = threading.Thread.join
ORIGINAL_CONDITION = threading.Condition
