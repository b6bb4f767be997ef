"""kubesim for test suites: Hypothesis strategies, ``check_store`` and the pytest plugin."""
