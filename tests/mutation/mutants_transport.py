"""Named mutants of how the transports surface watch drops and socket shutdowns, and of who
the HTTP transport lets in."""

MUTANTS = [
    {
        "name": "plain-urllib3-ignores-retry",
        "path": "kubesim/transport/urllib3_pool.py",
        "old": "return retried(lambda: serve(method, url, **kw), method, url, retries)",
        "new": "return serve(method, url, **kw)",
        "tests": [
            "tests/conformance/test_transports.py::"
            "test_errors_in_a_row_reach_the_client_as_over_a_socket[urllib3-429]",
        ],
        "why": "Patroni's DCS would meet 429s that urllib3 absorbs over a socket",
    },
    {
        "name": "inprocess-client-ignores-urllib3-retry",
        "path": "kubesim/transport/kubernetes_client.py",
        "old": "if not policy.is_retry(method.upper(), response.status, has_retry_after):",
        "new": "if True:",
        "tests": [
            "tests/integration/test_urllib3_retries.py::"
            "test_in_process_and_over_a_socket_the_client_sees_the_same_answers",
            "tests/conformance/test_transports.py::"
            "test_errors_in_a_row_reach_the_client_as_over_a_socket",
        ],
        "why": "a store would meet 429s that urllib3 absorbs on a cluster: verdicts on no bug",
    },
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
    {
        "name": "http-accepts-any-bearer-token",
        "path": "kubesim/transport/http.py",
        "old": "            return reviews.token_user(api, header) is not None",
        "new": "            return True",
        "tests": [
            "tests/integration/test_security.py::"
            "test_without_token_anonymous_requests_pass_and_bad_bearer_tokens_are_refused",
            "tests/integration/test_security.py::"
            "test_a_service_account_token_the_server_issued_is_accepted_and_names_the_account",
        ],
        "why": "a forged or foreign bearer token gets in, with or without --token",
    },
    dict(
        name="protobuf-keeps-go-zero-values",
        path="kubesim/wire/protobuf.py",
        old='if label == "omitempty" and out[name] in (0, False):',
        new="if False:",
        tests=[
            "tests/unit/test_protobuf.py::test_zero_values_go_leaves_out_of_json_are_dropped_and"
            "_pointers_at_zero_kept"
        ],
        why="kubectl 1.32+ creates store stdin: false, which a cluster leaves out",
    ),
    {
        "name": "connection-errors-never-retried",
        "path": "kubesim/transport/kubernetes_client.py",
        "old": "policy = policy.increment(method.upper(), url, error=error, _pool=POOL)",
        "new": "raise error",
        "tests": [
            "tests/conformance/test_transports.py::"
            "test_a_reset_connection_is_the_librarys_error_and_retried_as_over_a_socket"
            "[kubernetes-one reset list]",
        ],
        "why": "a reset list the official client's urllib3 retries over a socket would fail it",
    },
    {
        "name": "asyncio-session-never-asks-again",
        "path": "kubesim/transport/kubernetes_asyncio_client.py",
        "old": "attempts = 2 if request.method in AIOHTTP_IDEMPOTENT else 1",
        "new": "attempts = 1",
        "tests": [
            "tests/conformance/test_transports.py::"
            "test_a_reset_connection_is_the_librarys_error_and_retried_as_over_a_socket"
            "[kubernetes_asyncio-one reset list]",
        ],
        "why": "kubernetes_asyncio would fail on a reset aiohttp asks again over a socket",
    },
    {
        "name": "socket-reset-is-a-clean-close",
        "path": "kubesim/transport/http.py",
        "old": "self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_ZERO)",
        "new": "pass",
        "tests": [
            "tests/conformance/test_transports.py::"
            "test_a_reset_connection_is_the_librarys_error_and_retried_as_over_a_socket"
            "[httpx-one reset create]",
        ],
        "why": "kubesim serve would answer a reset with a FIN: the client reads a disconnect",
    },
    {
        "name": "refused-connections-reach-the-server",
        "path": "kubesim/transport/routing.py",
        "old": (
            "    refused = refusal(server)\n    if refused is not None:\n"
            "        return refused\n    catch_up"
        ),
        "new": "    catch_up",
        "tests": [
            "tests/conformance/test_transports.py::"
            "test_a_refused_connection_is_the_librarys_error_as_against_a_closed_port[requests]",
        ],
        "why": "a refused request would be served as if the server were up",
    },
]
