"""Named mutants of the property layer: its oracles and the runner's fault paths."""

ORACLES = "tests/unit/test_store_oracles.py::"
SCENARIO = "tests/unit/test_scenario.py::"
THREADS = "tests/unit/test_scenario_threads.py::"
CRASH_LOOP = "tests/unit/test_crash_loop.py::"
IDENTITY = "tests/unit/test_campaign_identity.py::"
STORE_LOG = "tests/unit/test_store_log.py::"
REPLAY_EQUALS = "tests/integration/test_replay_equals_campaign.py::"
EVERY_VERB = "tests/unit/test_faults_on_every_verb.py::"

MUTANTS = [
    {
        "name": "restart-failure-is-a-usage-error",
        "path": "kubesim/scenario/run.py",
        "old": "        instance = self._instance = _Instance(restarts=self._instances > 1)",
        "new": "        instance = self._instance = _Instance(restarts=False)",
        "tests": [
            f"{CRASH_LOOP}test_a_restart_while_errors_are_pending_is_retried_with_crashloop_backoff"
        ],
        "why": "a correct store whose constructor meets a pending error would end the campaign",
    },
    {
        "name": "crash-loop-without-backoff-growth",
        "path": "kubesim/scenario/run.py",
        "old": (
            "                delay = min(2 * delay, CRASH_LOOP_MAX_BACKOFF)\n"
            "            if not accept"
        ),
        "new": (
            "                delay = min(delay, CRASH_LOOP_MAX_BACKOFF)\n            if not accept"
        ),
        "tests": [
            f"{CRASH_LOOP}test_a_restart_while_errors_are_pending_is_retried_with_crashloop_backoff"
        ],
        "why": "restarts must be spaced as the kubelet spaces them",
    },
    {
        "name": "never-restarted-store-passes",
        "path": "kubesim/scenario/run.py",
        "old": (
            "        if instance.store is None and instance.failed_starts:\n            when, error"
        ),
        "new": "        if False:\n            when, error",
        "tests": [
            f"{CRASH_LOOP}test_a_store_that_never_comes_up_again_is_a_restart_finding_with_its_frames"
        ],
        "why": "a store that can never start again would end the run with no verdict",
    },
    {
        "name": "fresh-store-meets-faults",
        "path": "kubesim/scenario/run.py",
        "old": "self.server.request_failures.exempt = lambda: self.sim.group_of_current() == FRESH",
        "new": "self.server.request_failures.exempt = lambda: False",
        "tests": [f"{CRASH_LOOP}test_the_fresh_store_group_is_exempt_and_its_threads_inherit_it"],
        "why": "the history oracle's instrument would fail on faults meant for the store",
    },
    {
        "name": "thread-group-not-inherited",
        "path": "kubesim/sched/scheduler.py",
        "old": '        ct.group = parent.group if parent is not None else ""',
        "new": '        ct.group = ""',
        "tests": [f"{CRASH_LOOP}test_the_fresh_store_group_is_exempt_and_its_threads_inherit_it"],
        "why": "a fresh store's worker threads would meet the faults its main thread escapes",
    },
    {
        "name": "tail-sizes-never-compared",
        "path": "kubesim/checks/bounded.py",
        "old": "            if len(set(values)) > 1:",
        "new": "            if False:",
        "tests": [
            f"{ORACLES}test_bounded_flags_a_structure_that_changes_in_the_tail_whatever_its_bytes",
        ],
        "why": "a structure that grows every restart with a constant live set would pass",
    },
    {
        "name": "one-time-step-judged-a-leak",
        "path": "kubesim/checks/bounded.py",
        "old": "    return tails[first - 1 :] if len(tails) > first else tails",
        "new": "    return tails",
        "tests": [f"{ORACLES}test_bounded_judges_growth_that_goes_on_not_a_one_time_step"],
        "why": "a store whose memory steps up once after the first relist would be a leak",
    },
    {
        "name": "tail-gap-not-spread",
        "path": "kubesim/checks/bounded.py",
        "old": "        growths.extend([(b - a) / (j - i)] * (j - i))",
        "new": "        growths.extend([float(b - a)] * (j - i))",
        "tests": [f"{ORACLES}test_bounded_spreads_growth_over_a_tail_round_that_was_not_walked"],
        "why": "a tail whose middle walk was left out would see twice the growth: false leaks",
    },
    {
        "name": "tail-extension-half-walked",
        "path": "kubesim/scenario/run.py",
        "old": "        return not (first == 1 and last == 3 and tail == 2)",
        "new": "        return tail != first + 1",
        "tests": [
            f"{SCENARIO}test_a_leak_the_store_does_not_report_is_found_in_its_retained_bytes_and_named"
        ],
        "why": "the extension's median would be taken over a gap: a one-time step judged a leak",
    },
    {
        "name": "tail-never-extended",
        "path": "kubesim/scenario/run.py",
        "old": "        if check_bounded(self.recording) is not None:",
        "new": "        if False:",
        "tests": [f"{SCENARIO}test_the_kubearmor_shape_grows_in_the_tail_and_keeps_a_phantom"],
        "why": "growth would be judged over three rounds, a one-time step with it",
    },
    {
        "name": "phantoms-not-counted",
        "path": "kubesim/checks/state.py",
        "old": "    phantoms = [k for k in view if k not in server]",
        "new": "    phantoms: list[str] = []",
        "tests": [
            f"{ORACLES}test_converge_names_phantoms_missing_and_stale_versions",
            f"{SCENARIO}test_the_kubearmor_shape_grows_in_the_tail_and_keeps_a_phantom",
        ],
        "why": "a missed delete (a phantom backend) would pass convergence",
    },
    {
        "name": "resurrection-not-seen",
        "path": "kubesim/checks/state.py",
        "old": "            if seen.uid is not None and seen.uid in dropped:",
        "new": "            if False:",
        "tests": [f"{ORACLES}test_monotone_catches_a_version_going_back_and_a_resurrection"],
        "why": "a relist served by a lagging cache could bring deleted objects back unnoticed",
    },
    {
        "name": "duplicate-effects-allowed",
        "path": "kubesim/checks/effects.py",
        "old": "        if n > 1 and not _after_a_refused_write(recording, instance, key)",
        "new": "        if n > 2 and not _after_a_refused_write(recording, instance, key)",
        "tests": [f"{ORACLES}test_effects_once_counts_the_duplicates"],
        "why": "a handler that runs twice per change (reconnect = relist) would pass",
    },
    {
        "name": "store-that-returns-passes",
        "path": "kubesim/scenario/run.py",
        "old": "        if self.sim.store_finished and not self._store_threads_running():",
        "new": "        if False:",
        "tests": [f"{SCENARIO}test_a_store_that_lists_once_is_an_error_not_a_pass"],
        "why": "a store whose run() lists once and returns would be judged by the oracles",
    },
    {
        "name": "readers-read-once",
        "path": "kubesim/scenario/run.py",
        "old": "                while True:\n                    go = threading.Event()",
        "new": "                for _ in range(1):\n                    go = threading.Event()",
        "tests": [f"{THREADS}test_readers_overlap_the_next_step_and_their_reads_are_judged"],
        "why": "a reader would never overlap a later relist (torn relists would go unseen)",
    },
    {
        "name": "preemptions-not-rebased-per-settle",
        "path": "kubesim/scenario/run.py",
        "old": "            rebase(self.sim.scheduler.steps)",
        "new": "            pass",
        "tests": [f"{THREADS}test_the_schedule_is_counted_again_from_every_steps_settle"],
        "why": "drawn preemptions would land in a relist's short window far less often",
    },
    {
        "name": "lock-cycles-not-reported",
        "path": "kubesim/sim/simulation.py",
        "old": "            if cycle is not None:",
        "new": "            if False:",
        "tests": [f"{THREADS}test_two_locks_taken_in_opposite_orders_are_a_deadlock"],
        "why": "two store threads stuck on each other's locks would look quiescent forever",
    },
    {
        "name": "injected-failures-never-served",
        "path": "kubesim/wire/routes.py",
        "old": "            if injected is not None:",
        "new": "            if False:",
        "tests": [
            "tests/unit/test_server_faults.py::"
            "test_a_429_carries_retry_after_in_the_status_and_the_header",
        ],
        "why": "fail_requests would inject nothing: HTTP error handling would go untested",
    },
    {
        "name": "stalled-cache-lists-are-fresh",
        "path": "kubesim/apiserver/lists.py",
        "old": "if stalled_at is not None and rv is not None and (rv == 0 or not exact):",
        "new": "if False:",
        "tests": [
            "tests/unit/test_server_faults.py::"
            "test_a_stalled_cache_serves_stale_lists_for_resource_version_zero",
        ],
        "why": "a stalled watch cache would serve fresh lists: stale relists could not be found",
    },
    {
        "name": "reader-names-count-across-examples",
        "path": "kubesim/scenario/run.py",
        "old": "        self._readers = itertools.count(1)",
        "new": (
            '        self._readers = globals().setdefault("_READERS_OF_EVERY_RUN", '
            "itertools.count(1))"
        ),
        "tests": [
            f"{REPLAY_EQUALS}test_each_example_replays_alone_with_the_trace_the_campaign_saw"
        ],
        "why": "state an example leaves would reach the next: a replay's trace would differ",
    },
    {
        "name": "database-key-ignores-max-steps",
        "path": "kubesim/testing/check.py",
        "old": '                "max_steps": max_steps,\n',
        "new": "",
        "tests": [
            f"{IDENTITY}test_a_campaign_saves_its_failure_where_one_drawn_otherwise_does_not_look"
        ],
        "why": "saved bytes would be read as another scenario by a campaign drawing otherwise",
    },
    {
        "name": "replay-judges-with-every-oracle",
        "path": "kubesim/cli/check.py",
        "old": "    verdict = judge(result.recording, only=replay.oracles)",
        "new": "    verdict = judge(result.recording)",
        "tests": [f"{IDENTITY}test_a_replay_judges_with_the_oracles_its_campaign_judged_with"],
        "why": "a replay would report violations its campaign was never asked about",
    },
    {
        "name": "store-output-not-captured",
        "path": "kubesim/scenario/store_log.py",
        "old": "    sys.stdout = sys.stderr = stream\n",
        "new": "",
        "tests": [
            f"{STORE_LOG}test_prints_and_records_are_held_line_by_line_and_everything_is_put_back"
        ],
        "why": "a store's prints would go to the terminal, between the progress and the verdict",
    },
    {
        "name": "outage-spares-all-but-lists-and-watches",
        "path": "kubesim/scenario/steps.py",
        "old": "            code=self.code, verbs=FAILABLE_VERBS, seconds=self.seconds,",
        "new": "            code=self.code, verbs=LIST_AND_WATCH, seconds=self.seconds,",
        "tests": [f"{EVERY_VERB}test_an_outage_fails_a_pollers_gets_and_writes_while_it_lasts"],
        "why": "a store that polls with get or writes would sail through every outage",
    },
    {
        "name": "http-error-only-on-lists-and-watches",
        "path": "kubesim/scenario/steps.py",
        "old": "        return (sent[self.verb % len(sent)],)",
        "new": "        return LIST_AND_WATCH",
        "tests": [f"{EVERY_VERB}test_a_poller_meets_the_http_error_on_the_verb_drawn"],
        "why": "a poller's get and a controller's patch would never meet an HTTP error",
    },
    {
        "name": "opt-in-kinds-drawn-by-default",
        "path": "kubesim/testing/strategies.py",
        "old": "tuple(row.kind for row in STEP_KINDS if row.default)",
        "new": "tuple(row.kind for row in STEP_KINDS)",
        "tests": [
            SCENARIO + "test_an_opt_in_kind_is_drawn_when_named",
        ],
        "why": "a new kind changes what every default campaign draws before it was measured",
    },
    {
        "name": "restart-window-not-an-outage",
        "path": "kubesim/scenario/run.py",
        "old": 'if step.kind in ("outage", "refused"):',
        "new": 'if step.kind in ("outage",):',
        "tests": [
            "tests/unit/test_connection_faults.py::test_a_retry_every_tenth_of_a_second_through"
            "_a_restart_is_a_hot_loop"
        ],
        "why": "a store hammering a restarting API server every tenth of a second passes",
    },
    {
        "name": "pinned-objects-deleted-anyway",
        "path": "kubesim/scenario/workload.py",
        "old": "        if not self._pinned:\n            return live\n",
        "new": "        return live\n",
        "tests": [
            "tests/unit/test_pinned_objects.py::"
            "test_a_pinned_reference_is_never_deleted_or_terminated",
        ],
        "why": "a store standing on its own pod would be failed by a workload no cluster runs",
    },
    {
        "name": "hot-loop-silent-on-the-410-it-repeats",
        "path": "kubesim/scenario/run.py",
        "old": "    if version.isdigit() and int(version) < server.storage.compacted_rv:\n",
        "new": "    if False:\n",
        "tests": [
            "tests/unit/test_hot_loop_reasons.py::"
            "test_a_rewatch_loop_after_a_410_names_the_version_and_the_410",
        ],
        "why": "a re-watch loop after a 410 would be reported with no word of the 410",
    },
    {
        "name": "fired-oracle-listed-as-skipped",
        "path": "kubesim/checks/store.py",
        "old": "    fired = {v.property for v in violations} - set(ran)\n",
        "new": "    fired: set[str] = set()\n",
        "tests": [
            "tests/unit/test_hot_loop_reasons.py::"
            "test_a_rewatch_loop_after_a_410_names_the_version_and_the_410",
        ],
        "why": "a report would say progress was skipped in the run progress failed",
    },
    {
        "name": "server-keys-without-their-resource",
        "path": "kubesim/scenario/run.py",
        "old": (
            "        if not self._several_kinds and isinstance(view, Mapping) and "
            "of_several_kinds(view):\n"
            "            self._several_kinds = True\n"
        ),
        "new": "",
        "tests": [
            "tests/unit/test_view_of_several_kinds.py::"
            "test_a_correct_store_of_two_kinds_is_judged_by_converge_and_monotone",
        ],
        "why": "a correct store of services and pods would differ from the server on every key",
    },
    {
        "name": "monotone-silent-on-the-lagging-replica",
        "path": "kubesim/checks/state.py",
        "old": "    older = sorted({rv for rv in served if rv < held})\n",
        "new": "    older: list[int] = []\n",
        "tests": [
            "tests/unit/test_monotone_reasons.py::"
            "test_a_relist_answered_by_a_lagging_replica_is_named_as_the_cause",
        ],
        "why": "a store taken back by a replica's stale list would be told only 'backwards'",
    },
    {
        "name": "history-silent-on-the-backlog",
        "path": "kubesim/scenario/run.py",
        "old": "            backlog=backlog(self.store),\n",
        "new": "",
        "tests": [
            "tests/unit/test_backlog_reason.py::"
            "test_a_history_difference_names_the_queue_still_holding_items",
        ],
        "why": "a worker behind its queue would be reported as a store that lost history",
    },
]
