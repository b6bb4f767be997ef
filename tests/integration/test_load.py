"""Load over loopback: a thousand watches held on one ``kubesim serve`` model, a hundred
connections opening at once, and every watcher receiving every event, in order.

Bounded in count and time (generous hang guards; no timing is asserted: bench/run.py
``--only fanout`` measures the rates and latencies).
"""

from __future__ import annotations

import pytest

from bench.fanout import run_fanout

pytestmark = pytest.mark.timeout(300)


def test_a_thousand_watches_each_get_every_event_in_order() -> None:
    result = run_fanout(watches=1000, events=20, deadline=120.0)
    assert result.watches == 1000
    assert len(result.latencies) >= 1000 * 20
