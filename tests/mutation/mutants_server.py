"""Named mutants of the fake API server's watch fault paths and watch semantics."""

WATCH_FAULTS = "tests/unit/test_watch_faults.py"
APISERVER = "tests/unit/test_apiserver.py"

MUTANTS = [
    dict(
        name="slow-consumer-never-closed",
        path="kubesim/apiserver/watch.py",
        old=(
            '"Forcing watcher close due to unresponsiveness".\n'
            "            self.end(WatchEnd.CLOSED)"
        ),
        new='"Forcing watcher close due to unresponsiveness".\n            pass',
        tests=[
            f"{WATCH_FAULTS}::test_a_watcher_whose_client_does_not_read_is_closed_once_its_buffer"
            "_is_exceeded",
            "tests/integration/test_slow_consumer.py::test_the_official_watch_loop_resumes_after"
            "_the_server_closes_it_as_slow",
        ],
        why="a watcher whose client does not read buffers without bound instead of being closed",
    ),
    dict(
        name="slow-consumer-dropped",
        path="kubesim/apiserver/watch.py",
        old=(
            '"Forcing watcher close due to unresponsiveness".\n'
            "            self.end(WatchEnd.CLOSED)"
        ),
        new=(
            '"Forcing watcher close due to unresponsiveness".\n'
            "            self.end(WatchEnd.DROPPED)"
        ),
        tests=[
            f"{WATCH_FAULTS}::test_a_watcher_whose_client_does_not_read_is_closed_once_its_buffer"
            "_is_exceeded",
        ],
        why="the slow-consumer close cuts the connection instead of ending the stream cleanly",
    ),
    dict(
        name="slow-consumer-off-by-one",
        path="kubesim/apiserver/watch.py",
        old="if self.buffer_limit is not None and self.backlog > self.buffer_limit:",
        new="if self.buffer_limit is not None and self.backlog >= self.buffer_limit:",
        tests=[
            f"{WATCH_FAULTS}::test_a_watcher_whose_client_does_not_read_is_closed_once_its_buffer"
            "_is_exceeded",
        ],
        why="a watcher is closed when its buffer is merely full, not exceeded",
    ),
    dict(
        name="replay-counts-towards-buffer",
        path="kubesim/apiserver/watch.py",
        old="        if self._replaying:\n",
        new="        if False:\n",
        tests=[
            f"{WATCH_FAULTS}::test_a_watch_resumed_from_further_back_than_its_buffer_replays_at"
            "_the_clients_pace",
        ],
        why="a watch resumed from far back is closed as slow before its client can read",
    ),
    dict(
        name="expire-watches-drops",
        path="kubesim/apiserver/watch_cache.py",
        old='return self._end_all(WatchEnd.CLOSED, "expire_watches")',
        new='return self._end_all(WatchEnd.DROPPED, "expire_watches")',
        tests=[f"{APISERVER}::test_expire_watches_ends_every_watch_cleanly"],
        why="expire_watches cuts connections instead of ending them cleanly",
    ),
    dict(
        name="drop-watches-closes",
        path="kubesim/apiserver/watch_cache.py",
        old='return self._end_all(WatchEnd.DROPPED, "drop_watches")',
        new='return self._end_all(WatchEnd.CLOSED, "drop_watches")',
        tests=[f"{APISERVER}::test_drop_watches_cuts_the_stream_without_a_clean_end"],
        why="drop_watches ends streams cleanly, so the abrupt-drop fault never happens",
    ),
    dict(
        name="no-synthetic-added",
        path="kubesim/apiserver/watch_cache.py",
        old='send_initial_events = rv_text in ("", "0")',
        new="send_initial_events = False",
        tests=[
            f"{WATCH_FAULTS}::test_a_watch_without_rv_starts_with_synthetic_added_events_in_key"
            "_order_with_rvs",
        ],
        why="a watch without resourceVersion does not start with ADDED for existing objects",
    ),
    dict(
        name="compacted-watch-served",
        path="kubesim/apiserver/watch_cache.py",
        old="if start < storage.compacted_rv:",
        new="if False:",
        tests=[
            f"{WATCH_FAULTS}::test_a_watch_from_a_compacted_rv_ends_right_after_its_one_410_error"
            "_event",
            f"{APISERVER}::test_after_compaction_a_watch_from_an_old_rv_gets_one_410_error_then_a"
            "_clean_end",
        ],
        why="a watch from a compacted resourceVersion is served instead of getting 410 Expired",
    ),
    dict(
        name="410-error-without-close",
        path="kubesim/apiserver/watch_cache.py",
        old=(
            "                watcher.push_line(self._expired_line(start))\n"
            "                watcher.close_when_drained()\n"
        ),
        new="                watcher.push_line(self._expired_line(start))\n",
        tests=[
            f"{WATCH_FAULTS}::test_a_watch_from_a_compacted_rv_ends_right_after_its_one_410_error"
            "_event",
        ],
        why="the watch stays open after its 410 ERROR event (until its timeout)",
    ),
    dict(
        name="selector-flip-out-not-deleted",
        path="kubesim/apiserver/watch.py",
        old="elif was and event.old is not None:",
        new="elif False:",
        tests=[
            f"{WATCH_FAULTS}::test_a_selector_watch_sees_flips_out_as_deleted_and_flips_in_as"
            "_added",
        ],
        why="an object whose labels leave a watch's selector is never DELETED for that watch",
    ),
    dict(
        name="selector-flip-in-not-added",
        path="kubesim/apiserver/watch.py",
        old="        elif now:\n",
        new="        elif False:\n",
        tests=[
            f"{WATCH_FAULTS}::test_a_selector_watch_sees_flips_out_as_deleted_and_flips_in_as"
            "_added",
        ],
        why="an object whose labels enter a watch's selector is never ADDED for that watch",
    ),
    dict(
        name="future-rv-watch-sends-the-rv-itself",
        path="kubesim/apiserver/watch.py",
        old="if self.ended is not None or event.rv <= self.after_rv or self.silent:",
        new="if self.ended is not None or event.rv < self.after_rv or self.silent:",
        tests=[f"{WATCH_FAULTS}::test_a_watch_from_a_future_rv_sends_only_events_after_it"],
        why="a watch from resourceVersion r also sends the event at r",
    ),
    dict(
        name="bookmarks-not-sent",
        path="kubesim/apiserver/watch_cache.py",
        old="if watcher.allow_bookmarks and not watcher.has_ready():",
        new="if False:",
        tests=[f"{APISERVER}::test_bookmarks_arrive_only_when_allowed"],
        why="the periodic BOOKMARK never reaches watches that allow bookmarks",
    ),
    dict(
        name="uuid-block-drops-leftover-draws",
        path="kubesim/_core/choices.py",
        old="laid_out = self._uuid_bytes + values.tobytes()",
        new="laid_out = values.tobytes()",
        tests=[
            "tests/unit/test_core.py::test_uuid_blocks_continue_one_stream",
            "tests/unit/test_core.py::test_a_uuid_is_four_draws_and_the_seeded_source_reads_them"
            "_ahead_in_blocks",
        ],
        why="uids read ahead in blocks stop being the uids a seed draws one at a time",
    ),
    dict(
        name="uuid-block-keeps-rejected-attempts",
        path="kubesim/_core/choices.py",
        old="_KEPT = bytes(int(top < 0x80) for top in range(256))",
        new="_KEPT = bytes(int(top <= 0x80) for top in range(256))",
        tests=["tests/unit/test_core.py::test_uuid_blocks_continue_one_stream"],
        why="an attempt randrange(2**32) rejects becomes a uid word",
    ),
    dict(
        name="metadata-in-the-order-sent",
        path="kubesim/apiserver/encoding.py",
        old="for key in sorted(meta, key=_RANK)",
        new="for key in list(meta)",
        tests=[
            "tests/unit/test_encoding.py::test_metadata_is_ordered_as_go_declares_it_with_maps"
            "_sorted"
        ],
        why="the same object sent with its metadata in another order is stored as other bytes",
    ),
    dict(
        name="aggregation-repeats-rules",
        path="kubesim/cluster/role_aggregation.py",
        old="                    if rule not in rules:\n",
        new="                    if True:\n",
        tests=[
            "tests/unit/test_rbac.py::test_a_custom_aggregation_follows_its_selectors_in_order"
            "_each_rule_once"
        ],
        why="a rule two selected roles share is written twice into the aggregated role",
    ),
    dict(
        name="aggregation-gathers-its-own-rules",
        path="kubesim/cluster/role_aggregation.py",
        old='if source["metadata"]["name"] == name:',
        new="if False:",
        tests=[
            "tests/unit/test_rbac.py::test_a_custom_aggregation_follows_its_selectors_in_order"
            "_each_rule_once"
        ],
        why="an aggregated role labelled like what it selects keeps its own stale rules",
    ),
    dict(
        name="aggregation-of-nothing-clears-rules",
        path="kubesim/cluster/role_aggregation.py",
        old='if not rules or rules == role.get("rules"):',
        new='if rules == role.get("rules"):',
        tests=[
            "tests/unit/test_rbac.py::test_an_aggregation_that_selects_no_rules_leaves_the_roles_own"
        ],
        why="a role whose selectors pick nothing loses the rules it was created with",
    ),
    dict(
        name="aggregation-not-requeued-by-other-roles",
        path="kubesim/cluster/workloads.py",
        old="            for key in self.role_aggregation.aggregating():\n",
        new='            for key in [event.key] if event.new.obj.get("aggregationRule") else []:\n',
        tests=[
            "tests/unit/test_rbac.py::test_an_operators_role_labelled_for_view_reaches_view_edit"
            "_and_admin_and_leaves_them"
        ],
        why="a role labelled aggregate-to-view no longer reaches view until view itself is written",
    ),
    dict(
        name="crd-prune-keeps-unknown-fields",
        path="kubesim/apiserver/crd_schema.py",
        old="            elif not preserve:\n",
        new="            elif False:\n",
        tests=[
            "tests/unit/test_crd_schema.py::test_pruning_drops_what_the_schema_does_not_declare"
            "_and_names_each_path",
            "tests/conformance/test_crds.py::test_a_custom_resource_is_pruned_defaulted_and"
            "_validated_by_its_schema",
        ],
        why="a field a CRD's schema does not declare is stored instead of pruned",
    ),
    dict(
        name="crd-defaults-not-applied",
        path="kubesim/apiserver/crd_schema.py",
        old='                value[key] = copy.deepcopy(prop["default"])\n',
        new="                pass\n",
        tests=[
            "tests/unit/test_crd_schema.py::test_defaults_fill_what_is_absent_and_leave_what"
            "_was_sent"
        ],
        why="an absent property with a schema default stays absent",
    ),
    dict(
        name="crd-type-not-checked",
        path="kubesim/apiserver/crd_schema.py",
        old="    if types and not _type_fits(value, types):\n",
        new="    if False:\n",
        tests=["tests/unit/test_crd_schema.py::test_each_failure_reads_as_the_api_servers"],
        why="a string where the schema says integer is stored",
    ),
    dict(
        name="crd-schema-not-enforced-by-the-server",
        path="kubesim/apiserver/registry.py",
        old="            causes += crd_schema.validate(obj, dict(resource.openapi_schema))\n",
        new="            pass\n",
        tests=[
            "tests/unit/test_crd_schema.py::test_the_server_refuses_an_invalid_custom_resource"
            "_with_the_causes"
        ],
        why="the server stores a custom resource its CRD's schema refuses",
    ),
    dict(
        name="job-backoff-limit-ignored",
        path="kubesim/cluster/jobs.py",
        old="        if not suspended and not done and len(failed) > backoff_limit:\n",
        new="        if False:\n",
        tests=["tests/unit/test_jobs.py::test_a_job_whose_pods_fail_past_its_backoff_limit_fails"],
        why="a Job whose pods keep failing makes pods for ever instead of failing",
    ),
    dict(
        name="job-suspend-keeps-pods",
        path="kubesim/cluster/jobs.py",
        old="        if suspended:\n            for pod in active:\n",
        new="        if suspended:\n            for pod in []:\n",
        tests=[
            "tests/unit/test_jobs.py::test_suspending_deletes_the_active_pods_and_resuming_runs"
            "_them_again"
        ],
        why="a suspended Job's pods keep running",
    ),
    dict(
        name="job-index-run-twice",
        path="kubesim/cluster/jobs.py",
        old="        taken = _indexes(succeeded) | _indexes(active)\n",
        new="        taken = _indexes(active)\n",
        tests=[
            "tests/unit/test_jobs.py::test_an_indexed_job_runs_each_index_once_and_lists_the"
            "_completed_ones"
        ],
        why="an Indexed Job runs an index that already succeeded again",
    ),
    dict(
        name="cron-days-always-and",
        path="kubesim/apiserver/cron.py",
        old="        return day or weekday\n",
        new="        return day and weekday\n",
        tests=[
            "tests/unit/test_cronjobs.py::test_a_schedule_fires_at_the_first_matching_minute_after"
        ],
        why="a schedule restricting both day of month and day of week fires on fewer days",
    ),
    dict(
        name="cronjob-runs-every-missed-time",
        path="kubesim/cluster/cronjobs.py",
        old="        while t is not None and t <= now:\n            due = t\n",
        new="        while t is not None and t <= now:\n            due = due or t\n",
        tests=[
            "tests/unit/test_cronjobs.py::test_a_suspended_cron_job_runs_nothing_and_a_late_one"
            "_misses_its_deadline"
        ],
        why="a CronJob resumed after missed times runs the oldest, not the most recent",
    ),
    dict(
        name="cronjob-forbid-allows",
        path="kubesim/cluster/cronjobs.py",
        old='        if policy == "Forbid" and active:\n',
        new='        if policy == "Forbid" and not active and False:\n',
        tests=[
            "tests/unit/test_cronjobs.py::test_forbid_skips_a_time_while_a_job_runs_and_replace"
            "_deletes_it"
        ],
        why="concurrencyPolicy Forbid starts a second Job while one runs",
    ),
    dict(
        name="cronjob-history-kept",
        path="kubesim/cluster/cronjobs.py",
        old="            for job in finished[: max(0, len(finished) - as_int(limit, 0))]:\n",
        new="            for job in finished[:0]:\n",
        tests=[
            "tests/unit/test_cronjobs.py::test_completed_jobs_leave_active_and_old_ones_go_past"
            "_the_history_limit"
        ],
        why="finished Jobs pile up past the CronJob's history limits",
    ),
    dict(
        name="template-creation-timestamp-left-out",
        path="kubesim/apiserver/defaults.py",
        old='        ordered["creationTimestamp"] = None\n',
        new="",
        tests=[
            "tests/unit/test_template_metadata.py::test_a_template_shows_a_null_creation_timestamp"
            "_first_in_go_order"
        ],
        why="a Deployment's template lacks the creationTimestamp: null a cluster shows",
    ),
    dict(
        name="limit-range-max-unchecked",
        path="kubesim/admission/limit_ranges.py",
        old="        elif limit.value > enforced.value:\n",
        new="        elif False:\n",
        tests=[
            "tests/unit/test_limit_ranges.py::test_a_pod_outside_the_bounds_is_forbidden_with"
            "_the_plugins_words"
        ],
        why="a pod whose limit exceeds its namespace's LimitRange max is created",
    ),
    dict(
        name="limit-range-defaults-not-applied",
        path="kubesim/admission/limit_ranges.py",
        old="            if key not in limits:\n",
        new="            if False:\n",
        tests=[
            "tests/unit/test_limit_ranges.py::test_a_pod_gets_the_defaults_it_lacks_and_says_so"
            "_in_an_annotation"
        ],
        why="a pod in a namespace with a default limit is created without it",
    ),
    dict(
        name="quantity-binary-printed-decimal",
        path="kubesim/apiserver/quantity.py",
        old="        if -1024 < value < 1024 or value.denominator != 1:\n",
        new="        if True:\n",
        tests=["tests/unit/test_limit_ranges.py::test_a_quantity_prints_in_canonical_form"],
        why="1.5Gi prints as 1610612736 instead of 1536Mi",
    ),
    dict(
        name="quota-not-enforced",
        path="kubesim/admission/resource_quotas.py",
        old="            if limit is not None and current.value + amount.value > limit.value:\n",
        new="            if limit is not None and current.value > limit.value:\n",
        tests=[
            "tests/unit/test_resource_quotas.py::test_a_create_past_the_quota_is_forbidden_with"
            "_what_was_asked_used_and_limited"
        ],
        why="a create that takes a namespace past its quota is admitted",
    ),
    dict(
        name="quota-counts-finished-pods",
        path="kubesim/admission/resource_quotas.py",
        old='    return phase not in ("Succeeded", "Failed") and not deleting(pod)\n',
        new="    return not deleting(pod)\n",
        tests=[
            "tests/unit/test_resource_quotas.py::test_the_controller_reports_hard_and_what_the"
            "_namespace_uses"
        ],
        why="a finished pod keeps counting against its namespace's quota",
    ),
    dict(
        name="followed-log-outlives-its-container",
        path="kubesim/apiserver/log_follow.py",
        old="if event.type == DELETED or not container_running(event.new.obj, self.container):",
        new="if event.type == DELETED:",
        tests=[
            "tests/unit/test_log_follow.py::test_a_followed_log_ends_when_its_container_exits"
            "_though_the_pod_stays"
        ],
        why="a followed log stays open after its container stopped, until the pod is gone",
    ),
    dict(
        name="followed-log-counts-as-a-watch",
        path="kubesim/apiserver/watch_cache.py",
        old="        if not self._log_followers:\n            return list(self._watchers.values())",
        new="        if True:\n            return list(self._watchers.values())",
        tests=[
            "tests/unit/test_log_follow.py::test_a_followed_log_stays_open_while_the_container"
            "_runs_and_ends_when_it_stops"
        ],
        why="a store that follows a log is judged as if it watched every pod of the namespace",
    ),
    dict(
        name="followed-log-held-by-a-stalled-cache",
        path="kubesim/apiserver/watch_cache.py",
        old="        for follower in self._log_followers:\n            follower.offer(event)\n",
        new="",
        tests=[
            "tests/unit/test_log_follow.py::test_a_stalled_watch_cache_does_not_hold_a_log_open"
        ],
        why="a followed log never learns its container stopped (or only once the cache resumes)",
    ),
    dict(
        name="urllib3-retries-count-as-store-retries",
        path="kubesim/apiserver/faults.py",
        old="            if now != self._refused_at:",
        new="            if True:",
        tests=[
            "tests/unit/test_connection_faults.py::test_a_retry_a_second_through_a_restart_is"
            "_backing_off_though_urllib3_tries_four_times"
        ],
        why="a store retrying once a second through a restart is called a hot loop",
    ),
]
