"""The store oracles as pure functions of hand-made recordings: each breaks, each has numbers."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

from kubesim.checks.bounded import check_bounded, per_round_growth
from kubesim.checks.effects import check_effects_once
from kubesim.checks.progress import BURST, OUTAGE_BURST, PER_MINUTE, check_progress
from kubesim.checks.recording import (
    Observed,
    ReadScope,
    Recording,
    Round,
    normalise_view,
    observe,
)
from kubesim.checks.state import check_converged, check_monotone
from kubesim.checks.store import judge
from kubesim.checks.violation import Violation


def obs(uid: str, rv: int) -> Observed:
    return Observed(uid, rv)


def round_(
    index: int,
    *,
    server: dict[str, Observed],
    view: dict[str, Observed] | None = None,
    phase: str = "step",
    sizes: dict[str, int] | None = None,
    requests: int = 0,
    time: float = 0.0,
    retained: int | None = None,
    refused: int = 0,
) -> Round:
    return Round(
        index=index,
        step=f"step {index}",
        phase=phase,
        time=time,
        requests=requests,
        server=server,
        view=view,
        sizes=sizes or {},
        retained_bytes=retained,
        refused=refused,
    )


A, B = obs("uid-a", 5), obs("uid-b", 6)


def test_views_are_normalised_from_dicts_model_like_objects_and_tuples() -> None:
    class Meta:
        uid, resource_version = "u", "7"

    class Model:
        metadata = Meta()

    view = normalise_view(
        {("ns", "a"): {"metadata": {"uid": "u", "resourceVersion": "7"}}, "ns/b": Model(), "c": 1}
    )
    assert view == {"ns/a": obs("u", 7), "ns/b": obs("u", 7), "c": Observed(None, None)}
    assert observe({"metadata": {"resourceVersion": "x"}}) == Observed(None, None)


def test_converge_names_phantoms_missing_and_stale_versions() -> None:
    recording = Recording(hooks=frozenset({"view"}))
    recording.rounds.append(
        round_(
            1,
            server={"ns/a": obs("uid-a", 9), "ns/c": obs("uid-c", 3)},
            view={"ns/a": A, "ns/b": B},
        )
    )
    found = check_converged(recording)
    assert found is not None
    text = str(found)
    assert "(2 held, 2 on the server)" in text
    assert "1 phantom(s) the server no longer has (missed deletes): ns/b" in text
    assert "1 object(s) the view lacks: ns/c" in text
    assert "ns/a at resourceVersion 5 while the server has 9" in text
    recording.rounds.append(round_(2, server={"ns/a": A}, view={"ns/a": A}))
    assert check_converged(recording) is None


def test_converge_is_judged_at_the_quiesce_round_and_every_tail_round_not_only_the_last() -> None:
    # A relist that loses objects, which the tail rounds then rewrite into the view again.
    recording = Recording(hooks=frozenset({"view"}))
    server = {"ns/a": A, "ns/b": B}
    recording.rounds += [
        round_(0, server=server, view=server, phase="setup"),
        round_(1, server={"ns/a": A}, view={}, phase="step"),  # mid-scenario: not judged
        round_(2, server=server, view={"ns/b": B}, phase="quiesce"),
        round_(3, server=server, view=server, phase="tail"),
        round_(4, server=server, view=server, phase="tail"),
    ]
    found = check_converged(recording)
    assert found is not None
    assert "(1 held, 2 on the server)" in str(found)
    assert found.details[:2] == ("at round 2: step 2", "1 object(s) the view lacks: ns/a")
    recording.rounds[2] = round_(2, server=server, view=server, phase="quiesce")
    assert check_converged(recording) is None
    recording.rounds[3] = round_(3, server=server, view={"ns/a": A}, phase="tail")
    found = check_converged(recording)
    assert found is not None
    assert found.details[0] == "at round 3: step 3"


def test_monotone_catches_a_version_going_back_and_a_resurrection() -> None:
    recording = Recording(hooks=frozenset({"view"}))
    rounds = [
        round_(0, server={"ns/a": obs("uid-a", 7), "ns/b": B}, view={"ns/a": obs("uid-a", 7)}),
        round_(1, server={"ns/a": obs("uid-a", 7)}, view={"ns/a": obs("uid-a", 5), "ns/b": B}),
        round_(2, server={"ns/a": obs("uid-a", 7)}, view={"ns/a": obs("uid-a", 7)}),
        round_(3, server={"ns/a": obs("uid-a", 7)}, view={"ns/a": obs("uid-a", 7), "ns/b": B}),
    ]
    recording.rounds.extend(rounds)
    found = check_monotone(recording)
    assert found is not None
    assert "ns/a went back from resourceVersion 7 to 5 at round 1" in str(found)
    assert "ns/b (uid uid-b) came back at round 3" in str(found)
    assert "dropped it at round 2" in str(found)


def test_monotone_accepts_a_recreated_object_under_the_same_name() -> None:
    recording = Recording(hooks=frozenset({"view"}))
    recording.rounds.extend(
        [
            round_(0, server={"ns/a": A}, view={"ns/a": A}),
            round_(1, server={}, view={}),
            round_(2, server={"ns/a": obs("uid-new", 2)}, view={"ns/a": obs("uid-new", 2)}),
        ]
    )
    assert check_monotone(recording) is None


def test_monotone_does_not_count_a_restarted_store_still_syncing_as_letting_go() -> None:
    # The store held a and b; b is deleted while it is down; it restarts, shows nothing at the
    # next round (its first list in flight), then lists from a watch cache that still has b.
    # Against what it showed before the restart b never went away; an empty view of a store
    # that is syncing is not a drop.
    def rounds(synced: bool) -> Recording:
        recording = Recording(hooks=frozenset({"view"}))
        recording.rounds.extend(
            [
                round_(0, server={"ns/a": A, "ns/b": B}, view={"ns/a": A, "ns/b": B}),
                round_(1, server={"ns/a": A}, view={}),
                round_(2, server={"ns/a": A}, view={"ns/a": A, "ns/b": B}),
            ]
        )
        recording.rounds[1] = dataclasses.replace(recording.rounds[1], synced=synced)
        return recording

    assert check_monotone(rounds(synced=False)) is None
    found = check_monotone(rounds(synced=True))  # a synced store that let b go, then took it back
    assert found is not None
    assert "ns/b (uid uid-b) came back at round 2" in str(found)


def test_effects_once_counts_the_duplicates() -> None:
    recording = Recording(hooks=frozenset({"effects"}))
    recording.effects = [("a", "5"), ("b", "6"), ("a", "5")]
    found = check_effects_once(recording)
    assert found is not None
    assert "1 side effect(s) performed more than once (1 extra, 3 in all)" in str(found)
    assert "('a', '5') performed 2 times" in str(found)
    recording.effects = [("a", "5"), ("a", "6")]  # two changes, one effect each
    assert check_effects_once(recording) is None
    recording.effects = [["unhashable"]]
    found = check_effects_once(recording)
    assert found is not None
    assert "hashable keys" in found.summary


def test_progress_allows_a_burst_and_a_trickle_per_minute_and_no_more() -> None:
    recording = Recording(hooks=frozenset())
    allowed = BURST + PER_MINUTE * 10  # ten virtual minutes
    recording.rounds.extend(
        [
            round_(0, server={}, requests=0, time=0),
            round_(1, server={}, requests=int(allowed), time=600),
        ]
    )
    assert check_progress(recording) is None
    recording.rounds.append(round_(2, server={}, requests=int(allowed) + BURST + 1, time=600))
    found = check_progress(recording)
    assert found is not None
    assert f"{BURST + 1} requests in 0 virtual seconds at round 2" in str(found)


def test_an_outage_allows_each_watch_loop_its_own_retry_a_second() -> None:
    # Two informers (ConfigMaps and pods, as Patroni runs them) retrying once a second each
    # back off as well as one does: the budget is per loop, and one loop over it is still
    # found.
    def outage(refused: int, scopes: list[ReadScope]) -> Violation | None:
        recording = Recording(hooks=frozenset(), read_scopes=scopes)
        recording.rounds.extend(
            [round_(0, server={}, time=0), round_(1, server={}, time=30, refused=refused)]
        )
        recording.outage_rounds.append(1)
        return check_progress(recording)

    two = [ReadScope("configmaps", None, (("default", None),)), ReadScope("pods")]
    assert outage(60, two) is None
    found = outage(60, [ReadScope("pods")])
    assert found is not None
    assert "60 requests refused in a 30 s outage" in str(found)
    over = outage(2 * (OUTAGE_BURST + 30) + 1, two)
    assert over is not None
    assert "for 2 watch loops" in str(over)


def _tail(
    sizes: list[int], retained: list[int | None], live: int = 3, *, tail_rounds: int = 0
) -> Recording:
    server = {f"ns/p{i}": obs(f"u{i}", i + 1) for i in range(live)}
    recording = Recording(hooks=frozenset({"sizes"}), tail_rounds=tail_rounds)
    recording.rounds.append(round_(0, server=server, phase="setup", sizes={"cache": live}))
    for n, (size, kept) in enumerate(zip(sizes, retained, strict=True), 1):
        phase = "quiesce" if n == 1 else "tail"
        recording.rounds.append(
            round_(n, server=server, phase=phase, sizes={"cache": size}, retained=kept)
        )
    return recording


def test_bounded_flags_a_structure_that_changes_in_the_tail_whatever_its_bytes() -> None:
    assert check_bounded(_tail([3, 3, 3, 3], [1000, 1000, 1000, 1000])) is None
    found = check_bounded(_tail([3, 4, 5, 6], [1000, 1000, 1000, 1000]))
    assert found is not None
    assert "sizes()['cache'] changed over the tail rounds" in str(found)
    assert "4 -> 5 -> 6" in str(found)


def test_bounded_flags_retained_bytes_that_grow_beyond_the_tolerance() -> None:
    found = check_bounded(_tail([3, 3, 3, 3], [1000, 5000, 9000, 13000]), tolerance_bytes=512)
    assert found is not None
    assert "retained bytes grew 4,000 per round over the tail rounds (tolerance 512)" in str(found)
    assert check_bounded(_tail([3] * 4, [1000, 1100, 1200, 1300]), tolerance_bytes=512) is None


def test_bounded_judges_growth_that_goes_on_not_a_one_time_step() -> None:
    # Three tail rounds grew once (a pool that opened one more connection after the first
    # relist), so the runner played three more: flat, so no leak.
    step = _tail([3] * 7, [1000, 1000, 5000, 5000, 5000, 5000, 5000], tail_rounds=3)
    assert check_bounded(step) is None
    stepped_sizes = _tail([3, 3, 4, 4, 4, 4, 4], [1000] * 7, tail_rounds=3)
    assert check_bounded(stepped_sizes) is None
    # The same growth going on over the extension is a leak, judged over the extension only.
    leak = _tail([3, 3, 4, 5, 6, 7, 8], [1000, 1000, 2000, 3000, 4000, 5000, 6000], tail_rounds=3)
    found = check_bounded(leak, tolerance_bytes=512)
    assert found is not None
    assert "sizes()['cache'] changed over the last 3 tail rounds" in str(found)
    assert "5 -> 6 -> 7 -> 8" in str(found)
    assert "grew 1,000 per round over the last 3 tail rounds" in str(found)


def test_bounded_spreads_growth_over_a_tail_round_that_was_not_walked() -> None:
    # The runner leaves out the middle walk of a first tail of three rounds: the median of two
    # growths is their mean, so the verdict is the one the middle figure would have given,
    # whatever it was.
    for last, verdict in ((3000, "found"), (1900, None)):
        for middle in (1000, 1400, 2000, 2600, 3000):
            full = check_bounded(
                _tail([3] * 4, [900, 1000, middle, last], tail_rounds=3), tolerance_bytes=512
            )
            assert (full and "found") == verdict, (middle, last)
        gap = check_bounded(
            _tail([3] * 4, [900, 1000, None, last], tail_rounds=3), tolerance_bytes=512
        )
        assert (gap and "found") == verdict, last
    found = check_bounded(
        _tail([3] * 4, [None, 1000, None, 3000], tail_rounds=3), tolerance_bytes=512
    )
    assert found is not None
    assert "grew 1,000 per round over the tail rounds (tolerance 512)" in str(found)
    assert "1,000 -> - -> 3,000" in str(found)
    # Without the last round's figure there is no growth to judge.
    assert per_round_growth(_tail([3] * 4, [900, 1000, 5000, None]).rounds[2:]) == []
    assert per_round_growth(_tail([3] * 4, [900, 1000, None, 3000]).rounds[2:]) == [1000, 1000]


def test_judge_skips_oracles_visibly_when_hooks_are_missing() -> None:
    recording = Recording(hooks=frozenset())
    recording.rounds.append(round_(0, server={}, phase="setup"))
    verdict = judge(recording)
    skipped = dict(verdict.skipped)
    assert skipped["converge"] == "needs the store's view() hook"
    assert skipped["effects-once"] == "needs the store's effects() hook"
    assert skipped["snapshot-reads"] == "needs the store's read() hook"
    assert "failure" in verdict.ran
    assert verdict.ok


def test_effects_once_excuses_a_repeat_after_a_refused_write_and_only_then() -> None:
    # A store that records what it did on the object (kopf's progress annotation) does it again
    # when that write is refused: at least once, as no store can do an outside effect and
    # record it atomically. A repeat with no refused write in between is still counted.
    def recording(refused_writes: list[int]) -> Recording:
        done = Recording(hooks=frozenset({"effects"}))
        done.effects = [("a", "5"), ("a", "5")]
        done.effect_rounds = [1, 3]
        done.effect_instances = [1, 1]
        for index, refused in enumerate(refused_writes):
            done.rounds.append(replace(round_(index, server={}), refused_writes=refused))
        return done

    assert check_effects_once(recording([0, 0, 1, 1])) is None  # refused in round 2
    assert check_effects_once(recording([0, 1, 1, 1])) is None  # in the round of the first
    found = check_effects_once(recording([0, 0, 0, 0]))
    assert found is not None
    assert "('a', '5') performed 2 times" in str(found)
    found = check_effects_once(recording([1, 1, 1, 1]))  # refused before the first: no excuse
    assert found is not None
