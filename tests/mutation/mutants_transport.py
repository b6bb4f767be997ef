"""Named mutants of how the in-process transport surfaces watch drops and socket shutdowns."""

MUTANTS = [
    {
        "name": "inprocess-drop-ends-cleanly",
        "path": "kubesim/transport/kubernetes_client.py",
        "old": "                raise _premature_end() from exc",
        "new": "                return",
        "tests": [
            "tests/integration/test_kubernetes_inprocess.py::"
            "test_an_abrupt_drop_surfaces_as_a_urllib3_protocol_error",
            "tests/integration/test_inprocess_live.py::"
            "test_a_drop_raises_exactly_what_urllib3_raises_for_a_cut_socket",
        ],
        "why": "a server-side drop must reach the official client as urllib3's ProtocolError",
    },
    {
        "name": "inprocess-socket-shutdown-ends-cleanly",
        "path": "kubesim/transport/kubernetes_client.py",
        "old": "                if self._socket_shut_down:  # woken by the shutdown",
        "new": "                if False:  # woken by the shutdown",
        "tests": [
            "tests/integration/test_inprocess_live.py::"
            "test_watch_stop_from_another_thread_ends_a_blocked_stream",
            "tests/integration/test_inprocess_live.py::"
            "test_watch_stop_ends_a_blocked_stream_inside_a_simulation",
        ],
        "why": "Watch.stop() under a blocked read raises as on a real socket, not a clean end",
    },
]
