"""The client libraries' leaf functions, run untraced inside a run.

A store's thread spends most of its time in its client library: the official client turns
every list and every watch event into model objects (through pydantic since kubernetes 37: a
6-pod list takes about a millisecond), encodes bodies and builds requests. None of that calls
the store's code, and none of it has scheduling points (only the store's files are traced).
But on Python 3.10 and 3.11 a thread with a trace function runs *every* frame on the
interpreter's slow tracing path, which about doubles what that library code costs.

:func:`untraced_leaves` wraps those functions with
:func:`~kubesim._core.untraced.untraced_leaf` for the length of a run: no point, no schedule
and no trace changes; the store's own code is traced as before. Only functions that cannot
reach the store's code are listed (a generator such as ``Watch.stream`` is not: the store's
loop body runs between its items; an API method is not: a store may subclass ``ApiClient``).
A library that is not imported, or a version without one of the functions, is skipped.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator

from kubesim._core.untraced import leaf_of, untraced_leaf

# (module, class, method): pure transformations of data the library owns.
LEAVES: tuple[tuple[str, str, str], ...] = (
    # The official client: decoding answers into models, encoding bodies, building requests.
    ("kubernetes.client.api_client", "ApiClient", "__init__"),
    ("kubernetes.client.api_client", "ApiClient", "deserialize"),
    ("kubernetes.client.api_client", "ApiClient", "response_deserialize"),
    ("kubernetes.client.api_client", "ApiClient", "sanitize_for_serialization"),
    ("kubernetes.client.api_client", "ApiClient", "param_serialize"),
    ("kubernetes.watch.watch", "Watch", "__init__"),
    ("kubernetes.watch.watch", "Watch", "unmarshal_event"),
    ("kubernetes.watch.watch", "Watch", "get_return_type"),
    ("kubernetes.watch.watch", "Watch", "get_watch_argument_name"),
    # kubernetes_asyncio: the same, synchronous, functions.
    ("kubernetes_asyncio.client.api_client", "ApiClient", "deserialize"),
    ("kubernetes_asyncio.client.api_client", "ApiClient", "sanitize_for_serialization"),
    ("kubernetes_asyncio.watch.watch", "Watch", "unmarshal_event"),
    ("kubernetes_asyncio.watch.watch", "Watch", "get_return_type"),
    ("kubernetes_asyncio.watch.watch", "Watch", "get_watch_argument_name"),
    # requests (pykube-ng, plain scripts): each request's merge of the environment's proxy
    # settings, which reads every environment variable (a quarter of a pykube store's CPU).
    ("requests.sessions", "Session", "merge_environment_settings"),
    # pykube-ng: every object it builds keeps a deep copy of its dict (a third of its CPU).
    ("pykube.objects", "APIObject", "set_obj"),
    # httpx and httpx2 (lightkube, kr8s): building a request (URL parsing, headers, the body).
    ("httpx._client", "BaseClient", "build_request"),
    ("httpx2._client", "BaseClient", "build_request"),
)


@contextlib.contextmanager
def untraced_leaves() -> Iterator[None]:
    """Within the block, every :data:`LEAVES` function of an imported library runs untraced
    in a controlled thread; everything is put back afterwards."""
    saved: list[tuple[type, str, object]] = []
    for module_name, class_name, name in LEAVES:
        module = sys.modules.get(module_name)
        if module is None and module_name.partition(".")[0] in sys.modules:
            # The library is loaded but not this module of it yet: a store may import it in
            # its constructor, inside the block.
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                continue  # not in this version of the library
        cls = getattr(module, class_name, None)
        function = getattr(cls, "__dict__", {}).get(name)
        if not isinstance(cls, type) or function is None or leaf_of(function) is not None:
            continue  # not imported, not in this version, or wrapped already (nested runs)
        saved.append((cls, name, function))
        setattr(cls, name, untraced_leaf(function))
    try:
        yield
    finally:
        for cls, name, function in reversed(saved):
            setattr(cls, name, function)
