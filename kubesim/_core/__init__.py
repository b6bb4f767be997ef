"""The deterministic core: one choice source, one virtual clock, one trace.

This package imports nothing else of kubesim; every other layer may import it.
"""

from kubesim._core.choices import (
    ChoiceSource,
    RecordingChoices,
    ReplayChoices,
    ReplayExhausted,
    SeededChoices,
    choose,
    format_uuid4,
    integers,
    uniform,
    uuid4_drawer,
)
from kubesim._core.clock import Clock, Timer, VirtualClock
from kubesim._core.trace import Trace

__all__ = [
    "ChoiceSource",
    "Clock",
    "RecordingChoices",
    "ReplayChoices",
    "ReplayExhausted",
    "SeededChoices",
    "Timer",
    "Trace",
    "VirtualClock",
    "choose",
    "format_uuid4",
    "integers",
    "uniform",
    "uuid4_drawer",
]
