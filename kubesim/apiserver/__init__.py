"""The API server core: storage, resourceVersions, watch caches, selectors, patches, faults.

Start at :class:`~kubesim.apiserver.server.APIServer`. This package imports nothing from the
admission plugins, the cluster or the wire above it; they plug in through
:mod:`kubesim.apiserver.extensions`.
"""
