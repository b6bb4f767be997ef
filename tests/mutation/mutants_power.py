"""Named mutants of the detectors the power work added: the history oracle, effects-expected,
coverage, per-scope and filtered snapshot reads, hot preemptions, the outage's backoff, silent
connections and read timeouts, server versions, stop() during a list, usage errors, and the
lagging replica."""

POWER = "tests/unit/test_power.py::"

MUTANTS = [
    dict(
        name="history-ignores-the-past",
        path="kubesim/checks/history.py",
        old="    past = provenance.explain(found.old)\n    if past:",
        new='    past = ""\n    if past:',
        tests=[f"{POWER}test_history_names_the_index_entry_a_fresh_store_does_not_have"],
        why="an index entry for a label value no pod has would pass: a fresh store lacks it",
    ),
    dict(
        name="history-misses-duplicates",
        path="kubesim/checks/history.py",
        old="    if found.have and provenance.live_of(found.old):",
        new="    if False:",
        tests=[f"{POWER}test_history_counts_duplicates_and_leaves_declared_history_alone"],
        why="KubeArmor's endpoints, appended once per re-sent ADDED, would pass the comparison",
    ),
    dict(
        name="fresh-store-compared-before-a-read",
        path="kubesim/scenario/run.py",
        old='            reads = (self._call_from_driver("read"), self._hook(fresh, "read"))',
        new="            reads = None",
        tests=[f"{POWER}test_a_structure_read_refreshes_is_compared_after_a_read_on_both_stores"],
        why="a structure a read computes would be compared stale against an empty one",
    ),
    dict(
        name="declared-history-compared",
        path="kubesim/scenario/run.py",
        old='        skip = frozenset(f"store.{name}" for name in declared)',
        new="        skip: frozenset[str] = frozenset()",
        tests=[f"{POWER}test_history_counts_duplicates_and_leaves_declared_history_alone"],
        why="a stalled consumer's queue of pending work would be reported as a leak",
    ),
    dict(
        name="replacements-get-fresh-addresses",
        path="kubesim/scenario/steps.py",
        old="_pod_on(world, key, ip)",
        new="_pod_on(world, key, None)",
        tests=[
            f"{POWER}test_a_relist_that_hands_an_address_on_loses_the_new_holder_until_the_next"
        ],
        why="an address handed on while the store is away would never meet its old holder",
    ),
    dict(
        name="history-only-after-the-final-relist",
        path="kubesim/scenario/run.py",
        old="        self.compare_with_fresh(before_relist=True)\n",
        new="        pass\n",
        tests=[
            f"{POWER}test_a_relist_that_hands_an_address_on_loses_the_new_holder_until_the_next"
        ],
        why="derived state a relist breaks and the next one heals would never be compared",
    ),
    dict(
        name="expected-effects-never-missed",
        path="kubesim/checks/effects.py",
        old="    missed = [e for e in expected if e.key not in performed]",
        new="    missed: list[Expected] = []",
        tests=[f"{POWER}test_a_cleanup_never_run_for_a_delete_discovered_on_relist_is_missed"],
        why="a cleanup never run for a pod deleted while the watch was down would pass",
    ),
    dict(
        name="unexercised-counts-as-passed",
        path="kubesim/checks/store.py",
        old="        if why is not None:\n            unexercised.append((oracle.name, why))",
        new="        if False:\n            unexercised.append((oracle.name, why))",
        tests=[f"{POWER}test_an_oracle_with_nothing_to_judge_is_not_exercised_not_passed"],
        why="isolation would be reported passed by a campaign that never read",
    ),
    dict(
        name="reads-judged-against-pods",
        path="kubesim/checks/store.py",
        old='    read_scopes = recording.read_scopes or [ReadScope("pods")]\n',
        new='    read_scopes = [ReadScope("pods")]\n',
        tests=[
            "tests/unit/test_workload_kinds.py::"
            "test_reads_of_another_kind_are_judged_against_that_kind"
        ],
        why="a correct cache of Jobs or ConfigMaps would be called torn on every read",
    ),
    dict(
        name="outage-budget-per-store",
        path="kubesim/checks/progress.py",
        old="    loops = watch_loops(recording)\n",
        new="    loops = 1\n",
        tests=[
            "tests/unit/test_store_oracles.py::"
            "test_an_outage_allows_each_watch_loop_its_own_retry_a_second"
        ],
        why="a store of two informers retrying once a second each would be called a hot loop",
    ),
    dict(
        name="shown-to-any-instance",
        path="kubesim/scenario/run.py",
        old="        self._shown = set()\n",
        new="",
        tests=[
            "tests/unit/test_expectations_per_process.py::"
            "test_a_restarted_store_owes_nothing_for_what_only_its_predecessor_saw"
        ],
        why="a restarted store would owe reactions to what only the crashed process saw",
    ),
    dict(
        name="discarded-answer-shown",
        path="kubesim/apiserver/lists.py",
        old="        delivered = not (took and ASKS_AGAIN.get())\n",
        new="        delivered = True\n",
        tests=[
            "tests/unit/test_expectations_per_process.py::"
            "test_an_answer_the_client_will_ask_again_for_shows_it_nothing"
        ],
        why="a list answer the client never got would count as shown to it",
    ),
    dict(
        name="snapshot-reads-across-scopes",
        path="kubesim/checks/store.py",
        old="        if len(judged.scopes) < 2:",
        new="        if True:",
        tests=[f"{POWER}test_snapshot_reads_judge_each_namespace_at_its_own_resource_version"],
        why="a correct store with one reflector per namespace would be called torn",
    ),
    dict(
        name="filtered-reads-judged-whole",
        path="kubesim/checks/store.py",
        old="    subset = recording.partial_reads is not None\n",
        new="    subset = False\n",
        tests=[f"{POWER}test_a_filtered_read_is_judged_as_a_part_of_a_state"],
        why="a read that serves only running pods would be called torn when a pod terminates",
    ),
    dict(
        name="hot-points-never-preempt",
        path="kubesim/sched/strategies.py",
        old="            if self._hot_pending and hot >= self._hot_pending[0]:",
        new="            if False:",
        tests=[
            "tests/unit/test_scheduler_turns.py::"
            "test_a_hot_preemption_switches_at_its_hot_point_and_at_a_fraction_of_a_relist"
        ],
        why="a relist applied in place under a lock-free reader would never be seen half done",
    ),
    dict(
        name="outage-counts-like-any-round",
        path="kubesim/checks/progress.py",
        old="        if after.index in recording.outage_rounds:",
        new="        if False:",
        tests=[f"{POWER}test_an_outage_is_retried_with_backoff_or_reported"],
        why="a store retrying an outage every tenth of a second would pass",
    ),
    dict(
        name="read-timeout-never-fires",
        path="kubesim/transport/routing.py",
        old="        response.body.read_timeout = read_timeout\n",
        new="        response.body.read_timeout = None\n",
        tests=[f"{POWER}test_a_silent_connection_meets_the_clients_read_timeout"],
        why="a watch loop that dies on its read timeout would never meet one",
    ),
    dict(
        name="old-servers-say-expired",
        path="kubesim/apiserver/versions.py",
        old="            server.expired_reason = self.expired_reason",
        new='            server.expired_reason = "Expired"',
        tests=[f"{POWER}test_an_older_server_says_gone_and_a_store_that_knows_only_expired_loops"],
        why="a store that knows only reason Expired would pass against a 1.17 server",
    ),
    dict(
        name="stop-never-during-a-list",
        path="kubesim/scenario/run.py",
        old="        if self._stop_armed and listing:",
        new="        if False:",
        tests=[f"{POWER}test_stop_during_a_list_leaves_a_thread_running_in_the_informer_shape"],
        why="stop() would only come between steps, where the informer shape stops cleanly",
    ),
    dict(
        name="stop-never-inside-a-handler",
        path="kubesim/scenario/run.py",
        old="        self._stop_on_event = False\n        # Created in a controlled thread",
        new="        return\n        # Created in a controlled thread",
        tests=[f"{POWER}test_stop_while_a_handler_runs_meets_a_join_under_the_handlers_lock"],
        why="stop() would wait for the store to be idle: a join under a handler's lock passes",
    ),
    dict(
        name="factory-errors-are-findings",
        path="kubesim/scenario/run.py",
        old="                        instance.problems.append(_factory_failed(self.spec, error))\n"
        "                        return\n",
        new="                        raise\n",
        tests=[f"{POWER}test_a_factory_that_raises_is_a_usage_error"],
        why="a factory that cannot build the store would be shrunk and reported as a bug",
    ),
    dict(
        name="replica-never-serves",
        path="kubesim/apiserver/fault_injection.py",
        old="        if replica is None:\n            return self.watch_cache\n",
        new="        if True:\n            return self.watch_cache\n",
        tests=[
            f"{POWER}test_a_relist_served_by_a_lagging_replica_takes_the_store_back_in_time",
            "tests/unit/test_lagging_replica.py::"
            "test_lists_from_the_cache_go_back_in_time_when_the_replica_answers",
        ],
        why="a lagging replica would never answer: the time travel of kubernetes#59848 passes",
    ),
    dict(
        name="replica-lags-nothing",
        path="kubesim/apiserver/watch_cache.py",
        old="        rv = max(rv, self.storage.compacted_rv)\n",
        new="        rv = self.storage.rv\n",
        tests=[f"{POWER}test_a_relist_served_by_a_lagging_replica_takes_the_store_back_in_time"],
        why="the replica would be up to date: its lists would never be the past",
    ),
    dict(
        name="replica-never-catches-up",
        path="kubesim/scenario/run.py",
        old="        server.catch_up_replica()\n",
        new="",
        tests=[f"{POWER}test_a_relist_served_by_a_lagging_replica_takes_the_store_back_in_time"],
        why="a correct store refusing the replica's past would be judged unconverged at the end",
    ),
]
