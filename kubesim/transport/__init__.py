"""Transports: adapters that put the fake API server behind a client's wire.

- :mod:`kubesim.transport.kubernetes_client`: in-process, for the official ``kubernetes`` package.
- :mod:`kubesim.transport.kubernetes_asyncio_client`: in-process, for ``kubernetes_asyncio``.
- :mod:`kubesim.transport.kopf_sessions`: kopf's API sessions, in-process.
- :mod:`kubesim.transport.http_clients`: every other Python client (lightkube, kr8s, pykube-ng,
  plain calls) through its HTTP library's own seam: :mod:`~kubesim.transport.httpx_transport`
  (httpx and httpx2), :mod:`~kubesim.transport.requests_adapter`,
  :mod:`~kubesim.transport.aiohttp_connector`; :mod:`~kubesim.transport.routing` says which
  server a request reaches and :mod:`~kubesim.transport.kubeconfig_env` points ``KUBECONFIG``
  at it.
- :mod:`kubesim.transport.http`: a real HTTP/1.1 server (chunked watches) for kubectl
  and any client.
"""
