"""Throughput benchmarks for kubesim's watch and list paths (``python bench/run.py``).

Not part of the installed package: the modules here import kubesim from the checkout.
"""
