"""Named mutants of the race oracles (kubesim/checks/races.py and its object helpers)."""

T = "tests/unit/test_race_oracles.py::"

MUTANTS = [
    dict(
        name="isolation-top-level-only",
        path="kubesim/checks/races.py",
        old="for prefix, container in chain(handout.obj, change[0][:-1]):",
        new="for prefix, container in chain(handout.obj, ()):",
        tests=[
            T + "test_a_consumer_writing_into_a_shallow_copys_shared_labels_is_caught",
            T + "test_the_store_mutating_a_shared_nested_map_on_its_next_event_is_caught",
            T + "test_a_nested_map_handed_to_two_readers_is_shared_after_the_store_lets_go",
        ],
        why="isolation judges only the handed-out object, not the nested maps it shares",
    ),
    dict(
        name="isolation-ignores-what-the-store-holds",
        path="kubesim/checks/races.py",
        old="            if key in held:\n",
        new="            if False:\n",
        tests=[
            T + "test_the_store_mutating_a_shared_nested_map_on_its_next_event_is_caught",
            T + "test_an_object_the_store_still_holds_counts_as_shared",
        ],
        why="a container the store still holds no longer counts as shared",
    ),
    dict(
        name="isolation-flags-private-copies",
        path="kubesim/checks/races.py",
        old='                return f"handed out {len(handouts)} times", handouts\n'
        "            return None\n",
        new='                return f"handed out {len(handouts)} times", handouts\n'
        '            return "private", handouts\n',
        tests=[
            T + "test_nested_private_copies_may_be_changed_by_their_holder",
            T + "test_a_private_copy_may_be_changed_by_its_holder",
        ],
        why="a reader changing its own deep copy is reported (false positive)",
    ),
    dict(
        name="server-versions-history-only",
        path="kubesim/checks/races.py",
        old="            server.commit_listeners.append(self._on_commit)\n",
        new="",
        tests=[
            T + "test_reads_after_a_compaction_match_on_a_correct_store",
            T + "test_snapshot_reads_know_every_state_after_a_compaction",
        ],
        why="versions come only from what the server held at attach, so compaction loses them",
    ),
    dict(
        name="model-unknown-fields-are-torn",
        path="kubesim/checks/_objects.py",
        old="                continue  # a field this client's model drops\n",
        new="                pass\n",
        tests=[
            T + "test_fields_a_model_does_not_know_are_not_torn",
            T + "test_the_diff_of_a_model_drops_the_fields_its_class_does_not_declare",
        ],
        why="a field the client's model drops is reported as a torn read",
    ),
    dict(
        name="model-timestamps-with-offset",
        path="kubesim/checks/_objects.py",
        old='    return value.strftime("%Y-%m-%dT%H:%M:%SZ")\n',
        new="    return value.isoformat()\n",
        tests=[T + "test_model_timestamps_render_as_the_server_writes_them"],
        why="model datetimes render as +00:00, not as the server writes them",
    ),
    dict(
        name="describe-by-address",
        path="kubesim/checks/_objects.py",
        old='    return f"a {type(obj).__name__} without metadata.name"',
        new='    return f"object at {id(obj):#x}"',
        tests=[T + "test_messages_about_objects_without_metadata_name_no_address"],
        why="messages name objects by address, so the trace differs between identical runs",
    ),
    dict(
        name="snapshot-read-may-miss-objects",
        path="kubesim/checks/races.py",
        old="mismatch = (len(wanted) - matched) + duplicates + (0 if subset else size - matched)",
        new="mismatch = (len(wanted) - matched) + duplicates",
        tests=[
            T + "test_snapshot_reads_know_every_state_after_a_compaction",
            T + "test_a_relist_torn_under_a_reader_mixes_two_resource_versions",
        ],
        why="a whole-cache read that misses objects of the state still matches it",
    ),
    dict(
        name="snapshot-read-any-state-once-true",
        path="kubesim/checks/races.py",
        old="        if next_rv > lo and consider(max(rv, lo)):\n",
        new="        if consider(max(rv, lo)):\n",
        tests=[T + "test_snapshot_reads_know_every_state_after_a_compaction"],
        why="a read may match a state from before the read began (not_before ignored)",
    ),
    dict(
        name="snapshot-read-unsynced-empty-flagged",
        path="kubesim/checks/races.py",
        old="        if not wanted and not read.listed:\n",
        new="        if False:\n",
        tests=[
            T + "test_an_empty_read_before_the_first_list_is_a_cache_not_synced_yet",
            T + "test_a_store_restarted_into_a_failing_list_reads_empty_without_a_false_alarm",
        ],
        why="a correct store restarted into a failing list is reported as a torn read",
    ),
    dict(
        name="snapshot-read-unsynced-anything-passes",
        path="kubesim/checks/races.py",
        old="        if not wanted and not read.listed:\n",
        new="        if not read.listed:\n",
        tests=[T + "test_an_empty_read_before_the_first_list_is_a_cache_not_synced_yet"],
        why="a torn read by a store that has not listed yet passes",
    ),
]
