"""Shared fixtures. Test tiers: unit/ (fast, per layer), conformance/ (raw HTTP against
``kubesim serve``), integration/ (real clients: the official client, kubectl), quality/ (kubesim
finds the known bugs in models/ and passes the fixed ones)."""

from __future__ import annotations

import os
import sys

import pytest

# models/ lives at the repository root, beside the package; tests import it by name.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from kubesim import APIServer  # noqa: E402


@pytest.fixture
def server() -> APIServer:
    return APIServer(seed=1)
