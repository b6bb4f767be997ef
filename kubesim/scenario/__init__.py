"""Scenarios: steps as data, and the runner that applies them to a store."""
