"""Conformance suite: raw HTTP against ``kubesim serve``, checked against k8s-wire.md."""
