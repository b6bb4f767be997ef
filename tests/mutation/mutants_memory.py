"""Named mutants of the memory oracle (kubesim/checks/memory.py, retained.py, sizes.py) and of
the restarts verdict; each must be killed by the listed fast tests."""

ORACLE = "tests/unit/test_memory_oracle.py"

MUTANTS = [
    {
        "name": "default-tolerance-x10",
        "path": "kubesim/checks/memory.py",
        "old": "return max(DEFAULT_TOLERANCE_BYTES,",
        "new": "return 10 * max(DEFAULT_TOLERANCE_BYTES,",
        "tests": [
            f"{ORACLE}::test_a_store_that_keeps_the_servers_own_bytes_is_flagged_and_the_list_is_named"
        ],
        "why": "a store keeping one ~1.9 kB line per restart must not hide under a looser default",
    },
    {
        "name": "sizes-left-out-of-the-verdict",
        "path": "kubesim/sim/restarts.py",
        "old": "return self.violation is not None or bool(self.sizes_violations)",
        "new": "return self.violation is not None",
        "tests": [
            f"{ORACLE}::test_an_index_that_grows_while_the_live_set_does_not_is_flagged_by_sizes_alone"
        ],
        "why": "an index growing in a straight line is a leak whatever the byte tolerance",
    },
    {
        "name": "sizes-ignore-the-live-set-ratio",
        "path": "kubesim/checks/sizes.py",
        "old": "if values[-1] * first.live > values[0] * last.live or last.live <= first.live:",
        "new": "if last.live <= first.live:",
        "tests": [f"{ORACLE}::test_the_sizes_oracle_compares_with_the_live_set"],
        "why": "a structure growing faster than a growing live set still leaks",
    },
    {
        "name": "walk-enters-the-server",
        "path": "kubesim/checks/retained.py",
        "old": '    "kubesim.apiserver",\n',
        "new": "",
        "tests": [f"{ORACLE}::test_retained_memory_is_counted_once_and_stops_at_the_harness"],
        "why": "what the API server keeps must never be charged to the store",
    },
    {
        "name": "walk-batches-across-owners",
        "path": "kubesim/checks/retained.py",
        "old": "                    and owners[end] == owner\n",
        "new": "",
        "tests": [f"{ORACLE}::test_the_level_batched_walk_gives_the_one_at_a_time_figures"],
        "why": "a container's bytes must be those first reached through it, not its neighbour's",
    },
    {
        "name": "set-sized-with-its-table-history",
        "path": "kubesim/checks/retained.py",
        "old": "getsizeof(set(obj) if kind is set else obj)",
        "new": "getsizeof(obj)",
        "tests": [f"{ORACLE}::test_a_set_is_sized_by_its_items_not_by_the_history_of_its_table"],
        "why": "a work queue's churned set grows with its keys' hashes: a false leak",
    },
    {
        "name": "stopped-store-judged-on-memory",
        "path": "kubesim/sim/restarts.py",
        "old": """        if self.failure is not None:
            return CRASHED if self.failure.kind == "crashed" else STOPPED""",
        "new": """        if False:
            return CRASHED if self.failure.kind == "crashed" else STOPPED""",
        "tests": [
            f"{ORACLE}::test_a_store_that_lists_once_and_returns_stopped_watching",
            f"{ORACLE}::test_a_protocol_error_escaping_run_is_a_crash_that_names_the_fault_and_the_fix",
        ],
        "why": "a store whose run() returned or raised is an error, never BOUNDED",
    },
]
