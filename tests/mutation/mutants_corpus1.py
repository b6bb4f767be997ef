"""Named mutants of the detectors the first corpus half leans on: convergence judged after the
forced relist (not only at the end), and the scope of a store with one watch per namespace."""

ORACLES = "tests/unit/test_store_oracles.py::"
CORPUS = "tests/quality/test_corpus1.py::"

MUTANTS = [
    {
        "name": "converge-judged-only-at-the-end",
        "path": "kubesim/checks/state.py",
        "old": '    judged = [r for r in recording.rounds if r.phase in ("quiesce", "tail")]',
        "new": "    judged = []",
        "tests": [
            f"{ORACLES}test_converge_is_judged_at_the_quiesce_round_and_every_tail_round_"
            "not_only_the_last",
            f"{CORPUS}test_a_relist_that_wipes_another_namespace_is_found_though_the_tail_"
            "rewrites_it",
        ],
        "why": "a relist that loses a namespace the tail rounds rewrite (ksm #942) would pass",
    },
    {
        "name": "scope-only-the-watches-open-now",
        "path": "kubesim/scenario/run.py",
        "old": "                    self._scopes[scope] = watcher",
        "new": "                    self._scopes[scope] = watcher\n"
        "            self._scopes = {k: w for k, w in self._scopes.items() if w.ended is None}",
        "tests": [
            f"{CORPUS}test_a_reflector_backing_off_does_not_take_its_namespace_out_of_the_store_"
            "scope",
        ],
        "why": "a namespace whose reflector backs off would look deleted, and its relist resurrect",
    },
]
