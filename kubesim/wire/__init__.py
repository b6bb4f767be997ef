"""The wire: requests in, bytes out, as kube-apiserver's HTTP handlers answer them.

Routes (:mod:`kubesim.wire.routes`) map a request onto the core's verbs; around them content
negotiation, protobuf, tables and printers, discovery and OpenAPI, health checks. Transports
(:mod:`kubesim.transport`: in-process adapters, the HTTP server) sit in front.
"""
