"""Transports: adapters that put the fake API server behind a client's wire.

- :mod:`kubesim.transport.kubernetes_client`: in-process, for the official ``kubernetes`` package.
- :mod:`kubesim.transport.kubernetes_asyncio_client`: in-process, for ``kubernetes_asyncio``.
- :mod:`kubesim.transport.http`: a real HTTP/1.1 server (chunked watches) for kubectl
  and any client.
"""
