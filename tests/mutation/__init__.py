"""The mutation check: named mutants of kubesim's detectors, each of which a test must kill.

See README.md in this folder for how it works and how to add a mutant.
"""
